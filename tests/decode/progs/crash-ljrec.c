/* SPDX-License-Identifier: MIT */
/* Fixture program: longjmp lands in the innermost frame of a recursive
 * function (the one that called setjmp), then a crash there: the stack
 * keeps the outer frames of the recursion. */
#include <setjmp.h>

static jmp_buf env;
static volatile int sink;

__attribute__((noinline)) static void crash(volatile int *p)
{
	*p = sink;   /* faults */
}

__attribute__((noinline)) static void deep2(void)
{
	sink++;
	longjmp(env, 1);
}

__attribute__((noinline)) static void jumper(void)
{
	deep2();
	sink++;
}

__attribute__((noinline)) static void rec(int n)
{
	if (n == 0) {
		if (!setjmp(env))
			jumper();
		crash((volatile int *)0);
		sink++;
		return;
	}
	rec(n - 1);
	sink++;
}

int main(void)
{
	rec(3);
	return 0;
}
