// SPDX-License-Identifier: MIT
/* The crash happens in a library loaded with dlopen(). */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
	void *h = dlopen(argc > 1 ? argv[1] : "./libcrashlib.so", RTLD_NOW);
	int (*fn)(int *);

	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	fn = (int (*)(int *))dlsym(h, "lib_crash");
	return fn ? fn(NULL) : 3;
}
