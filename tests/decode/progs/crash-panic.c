/* SPDX-License-Identifier: MIT */
/* Fixture program: a SIGSEGV handler that reports at length, as a
 * runtime's panic does (thousands of calls, more than a report keeps), then
 * dies of the signal again; with the argument "exit", exits 2 instead. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

static volatile int sink;
static int exit_instead;

__attribute__((noinline)) static void print_frame(int i)
{
	sink += i;
}

__attribute__((noinline)) static void print_line(int i)
{
	sink ^= i;
}

/* Called through a pointer: a trace packet for every call. */
static void (*volatile const printers[2])(int) = { print_frame, print_line };

static void handler(int sig)
{
	for (int i = 0; i < 40000; i++)
		printers[i & 1](i);
	if (exit_instead)
		_exit(2);
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

int main(int argc, char **argv)
{
	struct sigaction sa;

	exit_instead = argc > 1 && !strcmp(argv[1], "exit");
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sigaction(SIGSEGV, &sa, NULL);
	work((int *)0);
	return 0;
}
