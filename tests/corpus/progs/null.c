// SPDX-License-Identifier: MIT
/* A store through a NULL pointer two calls below main; built at every -O
 * level, with gcc and clang, static, static-pie and stripped. */
#include <stdio.h>

struct item { int id; int *slot; };

__attribute__((noinline)) void store(struct item *it, int v)
{
	*it->slot = v * 3 + it->id;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline)) void fill(struct item *items, int n)
{
	for (int i = 0; i < n; i++)
		store(&items[i], i);
}

int main(void)
{
	int a = 0, b = 0;
	struct item items[3] = {{1, &a}, {2, &b}, {3, NULL}};

	printf("filling %d items\n", 3);
	fflush(stdout);
	fill(items, 3);
	printf("not reached %d %d\n", a, b);
	return 0;
}
