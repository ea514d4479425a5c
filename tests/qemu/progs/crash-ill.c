// SPDX-License-Identifier: MIT
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
