/* SPDX-License-Identifier: MIT */
/* Fixture program: calls through libc (qsort with a callback, memset),
 * a tail call, then a NULL store three calls deep. */
#include <stdlib.h>
#include <string.h>

static volatile int sink;

static int cmp(const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

__attribute__((noinline)) static void store(int *p, int v)
{
	*p = v;   /* faults when p is NULL */
}

__attribute__((noinline)) static void tail(int *p, int v)
{
	sink = v;
	store(p, v + 1);   /* a tail call at -O2 */
}

__attribute__((noinline)) static int leaf(const int *arr, int n, int *out)
{
	int sum = 0;

	for (int i = 0; i < n; i++)
		sum += arr[i] & 1 ? arr[i] : -arr[i];
	tail(out, sum);
	return sum;
}

__attribute__((noinline)) static int middle(int *arr, int n, int *out)
{
	qsort(arr, (size_t)n, sizeof(*arr), cmp);
	return leaf(arr, n, out) + 1;
}

int main(int argc, char **argv)
{
	int arr[16], x = 0;
	int rounds = argc > 1 ? atoi(argv[1]) : 3;

	(void)argv;
	for (int r = 0; r < rounds; r++) {
		memset(arr, 0, sizeof(arr));
		for (int i = 0; i < 16; i++)
			arr[i] = (i * 7919 + r) % 97;
		sink = middle(arr, 16, r == rounds - 1 ? NULL : &x);
	}
	return x;
}
