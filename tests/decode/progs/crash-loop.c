/* SPDX-License-Identifier: MIT */
/* Fixture program: a long loop of calls (for wrapped rings and tail-only
 * decoding), then a NULL store. */
#include <stdlib.h>

static volatile int sink;

__attribute__((noinline)) static int step(int i)
{
	return (i & 3) ? i * 3 : i / 2;
}

__attribute__((noinline)) static void boom(int *p)
{
	*p = sink;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2000;

	for (int i = 0; i < n; i++)
		sink += step(i);
	boom(NULL);
	return 0;
}
