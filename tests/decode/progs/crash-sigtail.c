/* SPDX-License-Identifier: MIT */
/* Fixture program: a SIGUSR1 handler whose last act is a tail call (note),
 * so the handler's return comes from the function it jumped to; after it
 * returned (rt_sigreturn back into outer), outer calls store, which
 * stores through NULL.  The stack at the fault is store <- outer <- main,
 * with no trace of the handler. */
#include <signal.h>
#include <string.h>

static volatile int sink;

__attribute__((noipa)) static void note(int sig)
{
	sink += sig;
}

__attribute__((noipa)) static void handler(int sig)
{
	sink = 1;
	note(sig);   /* a tail call */
}

__attribute__((noipa)) static void store(int *p, int v)
{
	*p = v;   /* faults when p is NULL */
}

__attribute__((noipa)) static void outer(int *p)
{
	raise(SIGUSR1);
	sink++;
	store(p, sink);
	sink++;
}

int main(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigaction(SIGUSR1, &sa, NULL);
	outer((int *)0);
	return 0;
}
