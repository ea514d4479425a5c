// SPDX-License-Identifier: MIT
/* A failed assertion: abort() in libc, whose pthread_kill has inlined
 * functions gdb shows as frames. */
#include <assert.h>
#include <stdio.h>

__attribute__((noinline)) static int check_balance(int balance)
{
	assert(balance >= 0);
	return balance;
}

int main(void)
{
	int total = 0;

	for (int i = 5; i >= -1; i--)
		total += check_balance(i);
	printf("%d\n", total);
	return 0;
}
