// SPDX-License-Identifier: MIT
/* An int3 with no debugger and no handler: SIGTRAP, si_code SI_KERNEL. */
#include <stdio.h>

__attribute__((noinline)) int checkpoint(int v)
{
	if (v > 1)
		__asm__ volatile("int3");
	return v * 2;
}

int main(void)
{
	int v = 0;

	for (int i = 0; i < 4; i++)
		v += checkpoint(i);
	printf("%d\n", v);
	return 0;
}
