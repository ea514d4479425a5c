// SPDX-License-Identifier: MIT
/* Export test program: direct and indirect calls, recursion deeper than
 * the PT return stack, a jump table, libc (qsort with a callback, printf:
 * PLT lazy binding and a write syscall), then a NULL write. */
#include <stdio.h>
#include <stdlib.h>

static int cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static int rec(int n)
{
	return n <= 0 ? 0 : 1 + rec(n - 1);
}

__attribute__((noinline)) static int pick(int k, int x)
{
	switch (k % 7) {
	case 0: return x + 3;
	case 1: return x * 5;
	case 2: return x - 7;
	case 3: return x ^ 0x55;
	case 4: return x << 2;
	case 5: return x / 3;
	default: return -x;
	}
}

static int (*volatile op)(int, int) = pick;

int main(int argc, char **argv)
{
	int v[24], sum = 0;
	volatile int *p = NULL;

	for (int i = 0; i < 24; i++)
		v[i] = (i * 7919 + argc) % 101;
	qsort(v, 24, sizeof(v[0]), cmp);
	for (int i = 0; i < 40; i++)
		sum += op(i, v[i % 24]);
	sum += rec(80);
	printf("sum %d %s\n", sum, argv[0] ? "ok" : "");
	fflush(stdout);
	*p = sum;
	return 0;
}
