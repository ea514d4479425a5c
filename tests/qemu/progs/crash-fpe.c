// SPDX-License-Identifier: MIT
#include <stdlib.h>

__attribute__((noinline)) static int divide(int a, int b)
{
	return a / b;  /* e2e: fault */
}

int main(int argc, char **argv)
{
	return divide(100, argc - 1);
}
