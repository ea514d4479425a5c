/* SPDX-License-Identifier: MIT */
/* Fixture program: contexts switched by an indirect jump, as a runtime's
 * scheduler resumes a goroutine (Go's gogo) or a coroutine library does:
 * the switch saves the caller's stack pointer and return address and goes
 * on in the other context with `jmp *`, into the middle of the function
 * that stopped there, never with a ret.  The crash is in the coroutine,
 * whose stack has nothing of run()'s or main()'s. */
#include <stdint.h>

struct ctx {
	uint64_t sp, ip, rbx, rbp, r12, r13, r14, r15;
};

/* void ctx_switch(struct ctx *from, struct ctx *to): the caller goes on
 * where @to stopped; @from resumes at the caller's return address. */
void ctx_switch(struct ctx *from, struct ctx *to);
__asm__(".text\n"
	".globl ctx_switch\n"
	".type ctx_switch, @function\n"
	"ctx_switch:\n"
	"	mov (%rsp), %rax\n"
	"	mov %rax, 8(%rdi)\n"
	"	lea 8(%rsp), %rax\n"
	"	mov %rax, 0(%rdi)\n"
	"	mov %rbx, 16(%rdi)\n"
	"	mov %rbp, 24(%rdi)\n"
	"	mov %r12, 32(%rdi)\n"
	"	mov %r13, 40(%rdi)\n"
	"	mov %r14, 48(%rdi)\n"
	"	mov %r15, 56(%rdi)\n"
	"	mov 16(%rsi), %rbx\n"
	"	mov 24(%rsi), %rbp\n"
	"	mov 32(%rsi), %r12\n"
	"	mov 40(%rsi), %r13\n"
	"	mov 48(%rsi), %r14\n"
	"	mov 56(%rsi), %r15\n"
	"	mov 0(%rsi), %rsp\n"
	"	jmp *8(%rsi)\n"
	".size ctx_switch, .-ctx_switch\n");

static struct ctx main_ctx, co_ctx;
static uint64_t co_stack[8192] __attribute__((aligned(16)));
static volatile int sink;

__attribute__((noinline)) static void boom(int *p)
{
	*p = sink;   /* faults */
}

__attribute__((noinline)) static void co_body(void)
{
	sink++;
	ctx_switch(&co_ctx, &main_ctx);   /* yield */
	sink++;
	boom((int *)(uintptr_t)(sink & 0x100));
	sink++;
	for (;;)
		;
}

__attribute__((noinline)) static void run(void)
{
	ctx_switch(&main_ctx, &co_ctx);   /* start it */
	sink++;
	ctx_switch(&main_ctx, &co_ctx);   /* resume it: it crashes */
	sink++;
}

int main(void)
{
	/* the coroutine starts at co_body's entry with a 16-byte aligned
	 * stack less a return address (it never returns) */
	co_stack[8190] = 0;
	co_ctx.sp = (uint64_t)(uintptr_t)&co_stack[8190];
	co_ctx.ip = (uint64_t)(uintptr_t)co_body;
	run();
	return 0;
}
