// SPDX-License-Identifier: MIT
/* A library the corpus dlopen()s; lib_parse reads through NULL. */
__attribute__((noinline)) static int lib_field(const int *rec)
{
	return rec[2];
}

int lib_parse(const int *rec)
{
	return lib_field(rec) + 1;
}
