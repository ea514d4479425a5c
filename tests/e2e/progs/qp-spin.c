// SPDX-License-Identifier: MIT
/*
 * Some work with calls, then a loop that never ends, until a signal from
 * outside.  argv[1]: "self" (a one-block loop, `for (;;)`), "cycle" (a
 * loop of a few blocks: a branch inside).  Prints "spinning" once it is
 * in the loop.
 */
#include <stdio.h>
#include <string.h>

volatile unsigned long sink;

__attribute__((noinline)) void before_loop_step(unsigned long i)
{
	sink += i * 3;
}

__attribute__((noinline)) void before_loop(void)
{
	for (unsigned long i = 0; i < 50; i++)
		before_loop_step(i);
}

__attribute__((noinline)) void spin_self(void)
{
	puts("spinning");
	fflush(stdout);
	for (;;)
		sink++;
}

__attribute__((noinline)) void spin_cycle(void)
{
	unsigned long x = 0;

	puts("spinning");
	fflush(stdout);
	for (;;) {
		if (x & 1)
			sink += x;
		else
			sink ^= x;
		x++;
	}
}

int main(int argc, char **argv)
{
	before_loop();
	if (argc > 1 && !strcmp(argv[1], "cycle"))
		spin_cycle();
	spin_self();
	return 0;
}
