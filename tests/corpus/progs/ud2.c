// SPDX-License-Identifier: MIT
/* __builtin_trap(): ud2, SIGILL ILL_ILLOPN. */
#include <stdio.h>

__attribute__((noinline)) int unreachable_state(int s)
{
	if (s > 2)
		__builtin_trap();
	return s + 1;
}

int main(void)
{
	int s = 0;

	for (int i = 0; i < 5; i++)
		s = unreachable_state(s);
	printf("%d\n", s);
	return 0;
}
