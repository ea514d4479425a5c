// SPDX-License-Identifier: MIT
/* A copy of tests/qemu/progs/<same name> for the end-to-end tests (tests/e2e):
 * the line the program faults on carries the marker "e2e: fault". */
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
