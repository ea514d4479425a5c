// SPDX-License-Identifier: MIT
/* Built with -fno-plt and linked against libc-noplt.so (also -fno-plt):
 * lib_measure's third name is NULL, the fault is in libc's strlen, below
 * lib_len and lib_measure, all reached through GOT calls. */
#include <stdio.h>

int lib_measure(const char *const *names, int n);

int main(void)
{
	static const char *const names[] = {"alpha", "beta", NULL, "delta"};

	printf("measuring\n");
	fflush(stdout);
	printf("not reached %d\n", lib_measure(names, 4));
	return 0;
}
