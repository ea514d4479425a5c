// SPDX-License-Identifier: MIT
/* Runs long enough to wrap the trace ring many times, then crashes. */
#include <stdlib.h>

static unsigned int seed = 1;

__attribute__((noinline)) static int classify(unsigned int v)
{
	if (v & 1)
		return v % 7 ? 1 : 2;
	if (v & 2)
		return 3;
	return v % 5 ? 4 : 0;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 2000000;
	int hist[5] = { 0 };
	int *volatile bad = NULL;

	for (long i = 0; i < n; i++) {
		seed = seed * 1103515245u + 12345u;
		hist[classify(seed >> 8)]++;
	}
	if (argc > 2)
		return hist[0] & 0x7f;   /* the benchmark mode: exit normally */
	return *bad + hist[0];  /* e2e: fault */
}
