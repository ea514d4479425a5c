// SPDX-License-Identifier: MIT
/* A qsort() comparator (libc calling back into the program) that reads
 * through a NULL pointer of one of the records it compares: the stack is
 * cmp_rec <- glibc's msort (inline frames) <- qsort <- main. */
#include <stdio.h>
#include <stdlib.h>

struct rec { const char *name; const int *weight; };

__attribute__((noinline)) static int cmp_rec(const void *a, const void *b)
{
	const struct rec *x = a, *y = b;

	return *x->weight - *y->weight;
}

int main(void)
{
	static const int w[4] = {7, 3, 9, 1};
	struct rec recs[5] = {
		{"a", &w[0]}, {"b", &w[1]}, {"c", NULL}, {"d", &w[2]},
		{"e", &w[3]},
	};

	printf("sorting %d records\n", 5);
	fflush(stdout);
	qsort(recs, 5, sizeof(recs[0]), cmp_rec);
	printf("not reached %s\n", recs[0].name);
	return 0;
}
