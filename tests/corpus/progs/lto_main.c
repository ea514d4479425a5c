// SPDX-License-Identifier: MIT
/* With -O3 -flto score() (lto_score.c) is inlined into process(), itself
 * inlined into main: gdb shows score <- process <- main. */
#include <stdio.h>

int score(const int *weights, int i);

static int process(const int *weights, int n)
{
	int total = 0;

	for (int i = 0; i < n; i++)
		total += score(weights, i);
	return total;
}

int main(int argc, char **argv)
{
	static int w[4] = {3, 1, 4, 1};
	const int *volatile table = argc > 5 ? w : NULL;

	(void)argv;
	puts("scoring");
	fflush(stdout);
	printf("%d\n", process(table, 4));
	return 0;
}
