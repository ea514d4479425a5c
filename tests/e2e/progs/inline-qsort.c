// SPDX-License-Identifier: MIT
/* A comparator that dereferences a NULL element, called by glibc's qsort:
 * with libc6-dbg, gdb shows glibc's own inline frames (msort_with_tmp
 * inlined into msort_with_tmp and into __qsort_r). */
#include <stdio.h>
#include <stdlib.h>

static int by_value(const void *a, const void *b)
{
	const int *x = *(int *const *)a, *y = *(int *const *)b;

	return (*x > *y) - (*x < *y);  /* e2e: fault */
}

int main(int argc, char **argv)
{
	int one = 1, two = 2;
	int *v[4] = { &two, &one, argc > 5 ? &one : NULL, &two };

	(void)argv;
	qsort(v, 4, sizeof(v[0]), by_value);
	printf("%d\n", *v[0]);
	return 0;
}
