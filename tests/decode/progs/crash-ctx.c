/* SPDX-License-Identifier: MIT */
/* Fixture program: a coroutine by hand with swapcontext; the crash is in
 * the coroutine, whose stack has nothing of main's. */
#include <ucontext.h>

static ucontext_t main_ctx, co_ctx;
static char co_stack[65536];
static volatile int sink;

__attribute__((noinline)) static void boom(int *p)
{
	*p = sink;   /* faults */
}

__attribute__((noinline)) static void co_body(void)
{
	sink++;
	swapcontext(&co_ctx, &main_ctx);   /* yield */
	sink++;
	boom((int *)0);
	sink++;
}

__attribute__((noinline)) static void run(void)
{
	swapcontext(&main_ctx, &co_ctx);   /* start it */
	sink++;
	swapcontext(&main_ctx, &co_ctx);   /* resume it */
	sink++;
}

int main(void)
{
	getcontext(&co_ctx);
	co_ctx.uc_stack.ss_sp = co_stack;
	co_ctx.uc_stack.ss_size = sizeof(co_stack);
	co_ctx.uc_link = &main_ctx;
	makecontext(&co_ctx, co_body, 0);
	run();
	return 0;
}
