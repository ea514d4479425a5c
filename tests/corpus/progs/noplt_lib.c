// SPDX-License-Identifier: MIT
/* A shared library built with -fno-plt that c-noplt links against: calls
 * between its exported (interposable) functions and into libc go through
 * the GOT (call *GOT(%rip)), with no PLT stub.  lib_measure(NULL) reaches
 * strlen(NULL). */
#include <string.h>

__attribute__((noinline)) size_t lib_len(const char *s)
{
	return strlen(s) + 1;
}

int lib_measure(const char *const *names, int n)
{
	size_t total = 0;

	for (int i = 0; i < n; i++)
		total += lib_len(names[i]);
	return (int)total;
}
