// SPDX-License-Identifier: MIT
/* Stack overflow through alloca(): each level of the recursion takes
 * 256 KiB of stack with alloca and writes its first byte; the 8 MiB stack
 * runs out after some 30 levels (deep enough for the frames check, shallow
 * enough for the history to hold every call). */
#include <alloca.h>
#include <stdio.h>
#include <string.h>

__attribute__((noinline)) static int nest(int depth, size_t n)
{
	char *buf;

	if (depth > 1000000)
		return 0;
	buf = alloca(n);

	buf[0] = (char)depth;
	__asm__ volatile("" : : "r"(buf) : "memory");
	return nest(depth + 1, n) + buf[0];
}

int main(void)
{
	printf("nesting\n");
	fflush(stdout);
	printf("not reached %d\n", nest(0, 256 << 10));
	return 0;
}
