// SPDX-License-Identifier: MIT
/* Dies on an int3 (SIGTRAP) two calls below main, as a program with a
 * leftover breakpoint or an assertion macro built on int3 does. */
#include <stdio.h>

__attribute__((noinline)) static int check(int v)
{
	if (v > 2)
		__asm__ volatile("int3"); /* behav: trap */
	return v + 1;
}

__attribute__((noinline)) static int walk(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += check(i);
	return s;
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("%d\n", walk(argc + 4));
	return 0;
}
