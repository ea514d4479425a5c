// SPDX-License-Identifier: MIT
/* Unbounded recursion into the stack guard: SIGSEGV SEGV_MAPERR at an
 * address just below the stack. */
#include <stdio.h>

__attribute__((noinline)) int walk(int depth)
{
	volatile char frame[512];

	frame[0] = (char)depth;
	return walk(depth + 1) + frame[0];
}

int main(void)
{
	puts("recursing");
	fflush(stdout);
	return walk(0);
}
