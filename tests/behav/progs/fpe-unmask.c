// SPDX-License-Identifier: MIT
/* Unmasks FP exceptions with feenableexcept(), then divides by zero:
 * natively SIGFPE (FPE_FLTDIV); "x87" uses long double (fldcw path). */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <fenv.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	volatile double z = 0.0, one = 1.0;
	volatile long double lz = 0.0L, lone = 1.0L;

	feenableexcept(FE_DIVBYZERO);
	if (argc > 1 && !strcmp(argv[1], "x87")) {
		volatile long double r = lone / lz;

		printf("x87 %Lf\n", r);
	} else {
		volatile double r = one / z;

		printf("sse %f\n", r);
	}
	return 0;
}
