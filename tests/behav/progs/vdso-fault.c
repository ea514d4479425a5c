// SPDX-License-Identifier: MIT
/* clock_gettime() with a bad pointer: natively the vDSO writes through it
 * and the program dies of SIGSEGV inside the vDSO. */
#include <stdio.h>
#include <time.h>

int main(void)
{
	int r = clock_gettime(CLOCK_MONOTONIC, (struct timespec *)16);

	printf("clock_gettime %d\n", r);
	return 0;
}
