// SPDX-License-Identifier: MIT
/* A copy of tests/qemu/progs/<same name> for the end-to-end tests (tests/e2e):
 * the line the program faults on carries the marker "e2e: fault". */
#include <stdlib.h>

__attribute__((noinline)) static int divide(int a, int b)
{
	return a / b;  /* e2e: fault */
}

int main(int argc, char **argv)
{
	return divide(100, argc - 1);
}
