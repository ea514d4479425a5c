// SPDX-License-Identifier: MIT
/* Export test program: time calls that run in the vDSO, then abort(). */
#include <stdlib.h>
#include <time.h>

int main(void)
{
	struct timespec ts;
	long s = 0;

	for (int i = 0; i < 3; i++) {
		clock_gettime(CLOCK_MONOTONIC, &ts);
		s += ts.tv_nsec & 1;
	}
	if (s < 100)
		abort();
	return (int)s;
}
