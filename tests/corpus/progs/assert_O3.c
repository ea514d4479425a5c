// SPDX-License-Identifier: MIT
/* assert() fails in a function -O3 inlines into a loop it also unrolls and
 * vectorizes: abort() from __assert_fail, the caller's frames made of
 * inline ones. */
#include <assert.h>
#include <stdio.h>

static inline int checked_avg(const int *v, int n)
{
	long s = 0;

	for (int i = 0; i < n; i++)
		s += v[i];
	assert(s < 1000 && "average out of range");
	return (int)(s / n);
}

__attribute__((noinline)) static int window_avg(const int *v, int n, int w)
{
	int best = 0;

	for (int i = 0; i + w <= n; i++) {
		int a = checked_avg(v + i, w);
		best = a > best ? a : best;
	}
	return best;
}

int main(void)
{
	static int v[32];

	for (int i = 0; i < 32; i++)
		v[i] = i * i;
	printf("averaging\n");
	fflush(stdout);
	printf("best %d\n", window_avg(v, 32, 8));
	return 0;
}
