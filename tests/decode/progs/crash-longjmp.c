/* SPDX-License-Identifier: MIT */
/* Fixture program: longjmp out of three frames, then a crash. */
#include <setjmp.h>

static jmp_buf env;
static volatile int sink;

__attribute__((noinline)) static void deep(int n)
{
	if (n == 0)
		longjmp(env, 1);
	sink += n;
	deep(n - 1);
	sink--;
}

__attribute__((noinline)) static void crash(volatile int *p)
{
	*p = sink;
}

int main(void)
{
	if (!setjmp(env))
		deep(3);
	crash((volatile int *)0);
	return 0;
}
