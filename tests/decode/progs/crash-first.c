/* SPDX-License-Identifier: MIT */
/* Fixture program: the faulting instruction is the first of its block
 * (the entry of load()). */
static volatile int sink;

__attribute__((noinline)) static int load(volatile int *p)
{
	return *p;   /* faults: the function's first instruction */
}

int main(int argc, char **argv)
{
	(void)argv;
	for (int i = 0; i < 3; i++)
		sink += i;
	return load(argc > 5 ? (volatile int *)&sink : (volatile int *)0);
}
