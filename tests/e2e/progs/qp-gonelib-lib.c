// SPDX-License-Identifier: MIT
/* The library of qp-gonelib: a few calls, then a NULL store. */
int *volatile gone_null;

__attribute__((noinline)) int gone_inner(int v)
{
	if (v > 2)
		*gone_null = v; /* e2e: fault */
	return v;
}

__attribute__((noinline, visibility("default"))) int gone_crash(int v)
{
	return gone_inner(v + 1) + 1;
}
