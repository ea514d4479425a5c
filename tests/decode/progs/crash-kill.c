/* SPDX-License-Identifier: MIT */
/* Fixture program: SIGSEGV sent with kill() (si_code SI_USER), nothing
 * faults: the report says where the thread was. */
#include <signal.h>
#include <unistd.h>

static volatile int sink;

__attribute__((noinline)) static void send(void)
{
	sink++;
	kill(getpid(), SIGSEGV);
	sink++;
}

__attribute__((noinline)) static void work(int n)
{
	for (int i = 0; i < n; i++)
		sink += i;
	send();
	sink--;
}

int main(void)
{
	work(5);
	return 0;
}
