// SPDX-License-Identifier: MIT
/* Coroutines by hand: main and a producer switch with swapcontext(); the
 * producer faults on its third turn, in its own context. */
#include <stdio.h>
#include <ucontext.h>

static ucontext_t main_ctx, prod_ctx;
static int *slots[3];
static int value, a, b;

__attribute__((noinline)) void produce_one(int turn)
{
	*slots[turn] = turn * 10;
}

static void producer(void)
{
	for (int turn = 0; turn < 3; turn++) {
		produce_one(turn);
		value = turn;
		swapcontext(&prod_ctx, &main_ctx);
	}
}

__attribute__((noinline)) void consume_all(void)
{
	for (int i = 0; i < 3; i++) {
		swapcontext(&main_ctx, &prod_ctx);
		printf("got %d\n", value);
		fflush(stdout);
	}
}

int main(void)
{
	static char stack[64 * 1024];

	slots[0] = &a;
	slots[1] = &b;
	getcontext(&prod_ctx);
	prod_ctx.uc_stack.ss_sp = stack;
	prod_ctx.uc_stack.ss_size = sizeof(stack);
	prod_ctx.uc_link = &main_ctx;
	makecontext(&prod_ctx, producer, 0);
	consume_all();
	return 0;
}
