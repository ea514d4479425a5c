/* SPDX-License-Identifier: MIT */
/* Fixture program: a SIGSEGV handler on an alternate signal stack
 * siglongjmps away; the program gives up later with abort(), so it dies
 * of SIGABRT, not of the fault that started it. */
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

static sigjmp_buf env;
static volatile int sink;
static char altstack[65536];

static void handler(int sig)
{
	(void)sig;
	sink++;
	siglongjmp(env, 1);
}

__attribute__((noinline)) static void poke(int *p, int n)
{
	for (int i = 0; i < n; i++)
		sink += i;
	*p = n;   /* faults */
}

__attribute__((noinline)) static void outer(int *p)
{
	poke(p, 3);
	sink++;
}

__attribute__((noinline)) static void give_up(void)
{
	sink++;
	abort();
}

int main(void)
{
	struct sigaction sa;
	stack_t ss;

	memset(&ss, 0, sizeof(ss));
	ss.ss_sp = altstack;
	ss.ss_size = sizeof(altstack);
	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGSEGV, &sa, NULL);
	if (!sigsetjmp(env, 1))
		outer((int *)0);
	give_up();
	return 0;
}
