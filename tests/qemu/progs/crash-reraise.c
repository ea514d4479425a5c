// SPDX-License-Identifier: MIT
/* A crash reporter: catches SIGSEGV, prints, restores the default action
 * and re-raises.  The snapshot must still show the original fault. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

__attribute__((noinline)) static void crash_here(int *p)
{
	*(volatile int *)p = 42;  /* e2e: fault */
}

static void on_segv(int sig)
{
	static const char msg[] = "crash reporter: caught SIGSEGV\n";

	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	signal(sig, SIG_DFL);
	raise(sig);
}

int main(void)
{
	int *volatile p = NULL;

	signal(SIGSEGV, on_segv);
	crash_here(p);
	return 0;
}
