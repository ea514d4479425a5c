// SPDX-License-Identifier: MIT
/* Floating-point exceptions unmasked with feenableexcept(): 1.0/0.0 traps
 * (SIGFPE FPE_FLTDIV). */
#define _GNU_SOURCE
#include <fenv.h>
#include <stdio.h>

__attribute__((noinline)) double ratio(double a, double b)
{
	return a / b;
}

int main(int argc, char **argv)
{
	(void)argv;
	feenableexcept(FE_DIVBYZERO | FE_INVALID);
	printf("%g\n", ratio(1.0, argc));
	printf("%g\n", ratio(1.0, argc - 1));
	puts("no trap");
	return 0;
}
