// SPDX-License-Identifier: MIT
__attribute__((noinline)) static int lib_inner(int *p, int v)
{
	return *p + v;  /* e2e: fault */
}

__attribute__((visibility("default"))) int lib_crash(int *p);
int lib_crash(int *p)
{
	return lib_inner(p, 5);
}
