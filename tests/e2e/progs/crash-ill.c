// SPDX-License-Identifier: MIT
/* A copy of tests/qemu/progs/<same name> for the end-to-end tests (tests/e2e):
 * the line the program faults on carries the marker "e2e: fault". */
__attribute__((noinline)) static void do_trap(int v)
{
	if (v > 0)
		__builtin_trap();  /* e2e: fault */
}

int main(int argc, char **argv)
{
	do_trap(argc);
	return 0;
}
