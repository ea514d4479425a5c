/* SPDX-License-Identifier: MIT */
/* Fixture program: a SIGSEGV handler installed with SA_NODEFER that
 * restores the default action and re-raises: the signal is not blocked,
 * so the process dies inside the handler (in raise()). */
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
	poke(p, 4);
	sink++;
}

int main(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_NODEFER;
	sigaction(SIGSEGV, &sa, NULL);
	outer((int *)0);
	return 0;
}
