// SPDX-License-Identifier: MIT
/* -O3 -flto across two files: process() and score() (inline-lto-score.c)
 * are inlined into main by the link-time optimiser.  gdb's bt:
 *   score <- process <- main */
#include <stdio.h>

int process(const int *v, int n);

int main(int argc, char **argv)
{
	int data[4] = { 1, 2, 3, argc };
	int r = process(argc > 5 ? data : NULL, argc + 3);  /* e2e: call process */
	printf("%d\n", r);
	(void)argv;
	return r == 77;
}
