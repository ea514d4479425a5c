// SPDX-License-Identifier: MIT
/* A copy of tests/qemu/progs/<same name> for the end-to-end tests (tests/e2e):
 * the line the program faults on carries the marker "e2e: fault". */
#include <stdlib.h>

__attribute__((noinline)) static void check(int v)
{
	if (v != 3)
		abort();  /* e2e: fault */
}

int main(int argc, char **argv)
{
	check(argc);
	return 0;
}
