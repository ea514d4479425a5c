// SPDX-License-Identifier: MIT
/* An integer division by zero: SIGFPE FPE_INTDIV. */
#include <stdio.h>

__attribute__((noinline)) int average(int sum, int count)
{
	return sum / count;
}

int main(int argc, char **argv)
{
	(void)argv;
	printf("%d\n", average(10, argc + 1));
	printf("%d\n", average(10, argc - 1));
	return 0;
}
