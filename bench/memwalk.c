// SPDX-License-Identifier: MIT
/*
 * The memory-bound workload of bench/qemu-accesses.sh: passes over a
 * 4 MiB array of 64-bit words, each element loaded, mixed and stored
 * back, and a strided read of another element.  Usage: memwalk [PASSES]
 * (default 40; bench/qemu-accesses.sh runs 200).
 */
#include <stdio.h>
#include <stdlib.h>

#define WORDS (1u << 19)

int main(int argc, char **argv)
{
	unsigned long passes = argc > 1 ? strtoul(argv[1], NULL, 0) : 40;
	unsigned long long *a = malloc(WORDS * sizeof(*a)), sum = 0;

	if (!a)
		return 1;
	for (unsigned i = 0; i < WORDS; i++)
		a[i] = i * 0x9e3779b97f4a7c15ull;
	for (unsigned long p = 0; p < passes; p++)
		for (unsigned i = 0; i < WORDS; i++) {
			unsigned long long v = a[i] ^ (a[i] >> 7);

			a[i] = v + p;
			sum += a[(i * 9) & (WORDS - 1)];
		}
	printf("%llu\n", sum);
	free(a);
	return 0;
}
