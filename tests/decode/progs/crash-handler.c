/* SPDX-License-Identifier: MIT */
/* Fixture program: a SIGSEGV handler that restores the default action and
 * re-raises, as crash reporters do. */
#include <signal.h>
#include <string.h>

static volatile int sink;

static void handler(int sig)
{
	signal(sig, SIG_DFL);
	raise(sig);
}

__attribute__((noinline)) static void poke(int *p, int n)
{
	for (int i = 0; i < n; i++)
		sink += i;
	*p = n;   /* faults */
}

__attribute__((noinline)) static void outer(int *p)
{
	poke(p, 5);
	sink++;
}

int main(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigaction(SIGSEGV, &sa, NULL);
	outer((int *)0);
	return 0;
}
