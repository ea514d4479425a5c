// SPDX-License-Identifier: MIT
/*
 * A program that says what happened to it, for tests of what btrace does
 * around it (tests/qemu/btrace-signals.py):
 *
 *   sig-report signals REPORT
 *     handles SIGHUP SIGINT SIGQUIT SIGUSR1 SIGUSR2 SIGTERM; writes
 *     "ready PID" to REPORT, then one line "SIGNAME" per signal it gets, as
 *     it gets it.  At SIGTERM it writes "exit" and exits with the number of
 *     signals it got (each sent once: 6).
 *
 *   sig-report forks REPORT
 *     writes "ready PID", then forks a child that exits 3 and waits for it,
 *     over and over, writing "fork N MS" (the fork-to-reaped time) after
 *     each, until the file REPORT.stop exists; then "exit" and exits 7, or
 *     exits 100 + a child's unexpected wait status (SIGBUS: 107).
 *
 * REPORT is reopened for every line (O_APPEND), so a reader sees each line
 * as soon as it is written.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* sigabbrev_np */
#endif
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static const char *report;
static volatile sig_atomic_t got[65];

static void say(const char *fmt, ...)
{
	char line[256];
	va_list ap;
	int fd, n;

	va_start(ap, fmt);
	n = vsnprintf(line, sizeof(line) - 1, fmt, ap);
	va_end(ap);
	line[n++] = '\n';
	fd = open(report, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	if (fd < 0)
		return;
	if (write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}

static void on_signal(int sig)
{
	got[sig]++;
}

static int signals(void)
{
	static const int sigs[] = { SIGHUP, SIGINT, SIGQUIT, SIGUSR1, SIGUSR2,
				    SIGTERM };
	struct sigaction sa;
	sigset_t all, none;
	int total = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_signal;
	sigemptyset(&sa.sa_mask);
	sigemptyset(&all);
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
		sigaction(sigs[i], &sa, NULL);
		sigaddset(&all, sigs[i]);
	}
	/* Handlers run only inside sigsuspend(): no signal is missed
	 * between a check and the wait. */
	sigprocmask(SIG_BLOCK, &all, &none);
	sigdelset(&none, SIGKILL);
	say("ready %d", (int)getpid());
	for (int done = 0; !done && total < 64;) {
		sigsuspend(&none);
		for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
			while (got[sigs[i]]) {
				got[sigs[i]]--;
				total++;
				say("%s", sigabbrev_np(sigs[i]));
				/* SIGTERM ends it, once reported. */
				done |= sigs[i] == SIGTERM;
			}
		}
	}
	say("exit");
	return total;
}

static int forks(void)
{
	char stop[4096];

	snprintf(stop, sizeof(stop), "%s.stop", report);
	say("ready %d", (int)getpid());
	for (int n = 0; access(stop, F_OK); n++) {
		struct timespec a, b;
		int st = 0;
		pid_t pid;

		clock_gettime(CLOCK_MONOTONIC, &a);
		pid = fork();
		if (pid < 0)
			return 99;
		if (pid == 0)
			_exit(3);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		clock_gettime(CLOCK_MONOTONIC, &b);
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 3) {
			say("child %d: wait status %#x", (int)pid, st);
			return 100 + (WIFSIGNALED(st) ? WTERMSIG(st) : 50);
		}
		say("fork %d %ld", n, (long)((b.tv_sec - a.tv_sec) * 1000 +
					    (b.tv_nsec - a.tv_nsec) / 1000000));
		usleep(20000);
	}
	say("exit");
	return 7;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: sig-report signals|forks REPORT\n");
		return 2;
	}
	report = argv[2];
	if (!strcmp(argv[1], "signals"))
		return signals();
	if (!strcmp(argv[1], "forks"))
		return forks();
	fprintf(stderr, "sig-report: unknown mode %s\n", argv[1]);
	return 2;
}
