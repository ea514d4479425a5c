/* SPDX-License-Identifier: MIT */
/* Fixture program: a SIGSEGV handler that reports at length, as a
 * runtime's panic does (thousands of calls, more than a report keeps), then
 * dies of the signal again. */
#include <signal.h>
#include <string.h>

static volatile int sink;

__attribute__((noinline)) static void print_frame(int i)
{
	sink += i;
}

static void handler(int sig)
{
	for (int i = 0; i < 6000; i++)
		print_frame(i);
	signal(sig, SIG_DFL);
	raise(sig);
}

__attribute__((noinline)) static void deref(int *p)
{
	*p = sink;   /* faults */
}

__attribute__((noinline)) static void work(int *p)
{
	deref(p);
	sink++;
}

int main(void)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigaction(SIGSEGV, &sa, NULL);
	work((int *)0);
	return 0;
}
