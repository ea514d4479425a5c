// SPDX-License-Identifier: MIT
/* The fault is in a function inlined into one inlined into another (-O2):
 * gdb shows read_cell <- row_sum <- grid_total as frames. */
#include <stdio.h>

struct grid { int rows, cols; int **cell; };

static inline __attribute__((always_inline)) int read_cell(const struct grid *g, int r, int c)
{
	return g->cell[r][c];
}

static inline __attribute__((always_inline)) int row_sum(const struct grid *g, int r)
{
	int s = 0;

	for (int c = 0; c < g->cols; c++)
		s += read_cell(g, r, c);
	return s;
}

__attribute__((noinline)) int grid_total(const struct grid *g)
{
	int s = 0;

	for (int r = 0; r < g->rows; r++)
		s += row_sum(g, r);
	return s;
}

int main(void)
{
	int r0[2] = {1, 2};
	int *rows[2] = {r0, NULL};
	struct grid g = {2, 2, rows};

	printf("total %d\n", grid_total(&g));
	return 0;
}
