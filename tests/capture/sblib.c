/* SPDX-License-Identifier: MIT */
/* A tiny library the kernel tests dlopen() to see its MMAP2 record. */
int bt_sblib_answer(int x);

__attribute__((visibility("default"))) int bt_sblib_answer(int x)
{
	return x * 6 + 6;
}
