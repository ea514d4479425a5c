// SPDX-License-Identifier: MIT
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
