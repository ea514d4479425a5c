// SPDX-License-Identifier: MIT
/* Waits to be killed from outside: prints "pid N", then argv[1]:
 *   sleep  sleeps in nanosleep() two calls below main;
 *   spin   calls a small function in an endless loop;
 *   tight  a `for (;;);` that touches no memory and calls nothing. */
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

__attribute__((noinline)) void wait_for_work(void)
{
	struct timespec ts = {3600, 0};

	for (;;)
		nanosleep(&ts, NULL);
}

static volatile unsigned long counter;

__attribute__((noinline)) void step(void)
{
	counter = counter * 33 + 1;
}

__attribute__((noinline)) void busy(void)
{
	for (;;)
		step();
}

__attribute__((noinline)) void stuck(void)
{
	for (;;)
		__asm__ volatile("");
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "sleep";

	printf("pid %d\n", (int)getpid());
	fflush(stdout);
	if (!strcmp(m, "spin"))
		busy();
	else if (!strcmp(m, "tight"))
		stuck();
	else
		wait_for_work();
	return 0;
}
