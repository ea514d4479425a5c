/* SPDX-License-Identifier: MIT */
/* Test program: unbounded recursion until the stack's guard is hit.  With
 * the argument "handler", a SIGSEGV handler on an alternate stack says so
 * and restores the default action: the access faults again and kills. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int down(int n)
{
	volatile char frame[512];

	frame[0] = (char)n;
	return down(n + 1) + frame[0];   /* e2e: fault */
}

static void on_segv(int sig)
{
	static const char msg[] = "stack overflow\n";

	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(4);
	signal(sig, SIG_DFL);
}

int main(int argc, char **argv)
{
	static char alt[64 * 1024];

	if (argc > 1 && !strcmp(argv[1], "handler")) {
		stack_t ss = { .ss_sp = alt, .ss_size = sizeof(alt) };
		struct sigaction sa;

		memset(&sa, 0, sizeof(sa));
		sa.sa_handler = on_segv;
		sa.sa_flags = SA_ONSTACK;
		sigaltstack(&ss, NULL);
		sigaction(SIGSEGV, &sa, NULL);
	}
	return down(0);
}
