// SPDX-License-Identifier: MIT
/*
 * A program whose exit status depends on what its forked children did:
 *   fork-status N [crash]
 * forks N children one after the other; child i runs a few thousand
 * function calls and blocks (enough trace to fill pages of its ring) and
 * exits with status i+1; with "crash", the last child dereferences NULL
 * instead.  The parent waits for each and exits with the count of
 * children whose status was what they meant (exit i+1, or SIGSEGV for the
 * crashing one), so any child that died differently (SIGBUS from a ring
 * that could not be backed) changes the parent's status.  Prints one line
 * per unexpected child status on stderr.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static unsigned step(unsigned x, int i)
{
	return x * 2654435761u + (unsigned)i + (x >> 7);
}

__attribute__((noinline)) static unsigned work(int n)
{
	unsigned x = 1;

	for (int i = 0; i < n; i++) {
		x = step(x, i);
		if (x & 1)
			x ^= 0x5bd1e995u;
	}
	return x;
}

__attribute__((noinline)) static void crash(int *p)
{
	*(volatile int *)p = (int)work(1000);
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4, good = 0;
	int crash_last = argc > 2 && !strcmp(argv[2], "crash");
	int *volatile bad = NULL;

	for (int i = 0; i < n; i++) {
		int st = 0, want_crash = crash_last && i == n - 1;
		pid_t pid = fork();

		if (pid < 0) {
			perror("fork");
			return 100;
		}
		if (pid == 0) {
			volatile unsigned sink = work(200000);

			(void)sink;
			if (want_crash)
				crash(bad);
			_exit(i + 1);
		}
		if (waitpid(pid, &st, 0) != pid) {
			perror("waitpid");
			return 101;
		}
		if (want_crash ? WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV :
				 WIFEXITED(st) && WEXITSTATUS(st) == i + 1)
			good++;
		else
			fprintf(stderr, "fork-status: child %d: wait status %#x\n",
				i, st);
	}
	return good;
}
