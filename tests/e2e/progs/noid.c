/* SPDX-License-Identifier: MIT */
/* A crash in a program linked without a build ID (e2e-noid); built twice,
 * the second time with -DOTHER: other bytes, the same names. */
#include <stdio.h>

volatile int *target;

__attribute__((noinline)) int crash_here(int x)
{
#ifdef OTHER
	x = x * 3 + 1;
#endif
	return *target + x;   /* e2e: fault */
}

__attribute__((noinline)) int middle(int x)
{
	return crash_here(x + 1) + 2;
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("%d\n", middle(argc));
	return 0;
}
