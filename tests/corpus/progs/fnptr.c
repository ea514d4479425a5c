// SPDX-License-Identifier: MIT
/* A call through a function pointer that is NULL. */
#include <stdio.h>

typedef int (*op_fn)(int, int);

static int add(int a, int b) { return a + b; }

__attribute__((noinline)) int apply(op_fn f, int a, int b)
{
	return f(a, b);
}

int main(void)
{
	op_fn ops[2] = {add, NULL};
	int r = 0;

	for (int i = 0; i < 2; i++)
		r += apply(ops[i], r, i + 1);
	printf("%d\n", r);
	return 0;
}
