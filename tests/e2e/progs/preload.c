// SPDX-License-Identifier: MIT
/* Preloaded by e2e-exec: says which program it was loaded into. */
#include <stdio.h>
#include <unistd.h>

__attribute__((constructor)) static void say_where(void)
{
	char exe[4096];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);

	exe[n > 0 ? n : 0] = 0;
	fprintf(stderr, "e2e-preload: loaded into %s\n", exe);
}
