// SPDX-License-Identifier: MIT
/* NULL dereference reached through a table of function pointers. */
#include <stdio.h>
#include <stdlib.h>

typedef int (*op_fn)(int *, int);

__attribute__((noinline)) static int op_add(int *p, int v)
{
	*p += v;      /* faults when p is NULL */ /* e2e: fault */
	return *p;
}

__attribute__((noinline)) static int op_mul(int *p, int v)
{
	*p *= v;
	return *p;
}

static op_fn ops[] = { op_add, op_mul };

__attribute__((noinline)) static int run(int *cell, int n)
{
	int acc = 0;

	for (int i = 0; i < n; i++)
		acc += ops[i & 1](cell, i | 1);
	return acc;
}

int main(int argc, char **argv)
{
	int cell = 1;
	int n = argc > 1 ? atoi(argv[1]) : 100;
	int *volatile bad = NULL;

	fprintf(stderr, "%d\n", run(&cell, n));
	return run(bad, 3);
}
