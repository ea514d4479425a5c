// SPDX-License-Identifier: MIT
/*
 * The C workload of bench/qemu-overhead.sh: per iteration an xorshift, a
 * branchy classify(), an indirect call through a function table and a
 * data-dependent if.  Usage: branchy [ITERATIONS] (default 50 M).
 */
#include <stdio.h>
#include <stdlib.h>

static unsigned long long state = 88172645463325252ull;

static unsigned long long xorshift(void)
{
	state ^= state << 13;
	state ^= state >> 7;
	state ^= state << 17;
	return state;
}

__attribute__((noinline)) static int classify(unsigned long long v)
{
	if (v & 1) {
		if (v & 2)
			return 0;
		return v & 4 ? 1 : 2;
	}
	if ((v >> 3) % 3 == 0)
		return 3;
	return v & 16 ? 1 : 3;
}

__attribute__((noinline)) static long op_add(long a, long b) { return a + b; }
__attribute__((noinline)) static long op_sub(long a, long b) { return a - b; }
__attribute__((noinline)) static long op_xor(long a, long b) { return a ^ b; }
__attribute__((noinline)) static long op_mul(long a, long b) { return a * (b | 1); }

static long (*const ops[4])(long, long) = { op_add, op_sub, op_xor, op_mul };

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 50000000;
	long acc = 0, odd = 0;

	for (long i = 0; i < n; i++) {
		unsigned long long v = xorshift();
		int c = classify(v);

		acc = ops[c](acc, (long)(v >> 32));
		if ((v >> 20) & 1)
			odd++;
	}
	printf("%ld %ld\n", acc, odd);
	return 0;
}
