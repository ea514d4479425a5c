// SPDX-License-Identifier: MIT
/* clock_gettime() into an unmapped address: natively the vDSO's code
 * faults (SIGSEGV in the vDSO); the system call would return EFAULT. */
#include <stdio.h>
#include <time.h>

__attribute__((noinline)) int stamp(struct timespec *ts)
{
	return clock_gettime(CLOCK_MONOTONIC, ts);
}

int main(void)
{
	puts("reading the clock");
	fflush(stdout);
	printf("clock_gettime returned %d\n", stamp((struct timespec *)8));
	return 4;
}
