/* SPDX-License-Identifier: MIT */
/*
 * bt-stress: traced programs that behave badly, for the bad-input tests.
 *   bt-stress close-stdio [crash]   close stdin, stdout and stderr, exit 3
 *   bt-stress ignore-term READY GO  ignore SIGTERM, create READY, wait for
 *                                   GO to exist (30 s at most), exit 7
 *   bt-stress fork N [crash]        fork N children, each exits with its
 *                                   index & 0x7f; exit 0 if every status
 *                                   came back right, else 1
 *   bt-stress threads N [crash]     start N short-lived threads (50 at a
 *                                   time), exit 0
 *   bt-stress sigflood N [crash]    send itself N SIGUSR1 and fill the
 *                                   real-time signal queue while blocked,
 *                                   then take them all; exit 0 if counts add up
 *   bt-stress heap MB [crash]       fill MB MiB of heap with pseudo-random
 *                                   bytes (a large, slow snapshot), exit 0
 *   bt-stress wait GO [crash]       wait for GO to exist (30 s at most),
 *                                   exit 0
 *   bt-stress pgrp                  print the process's view of its process
 *                                   group, session and terminal:
 *                                   "leader=L fg=F setsid=R" (L: 1 when it
 *                                   leads its group; F: 1 when its group
 *                                   is the terminal's foreground group, -1
 *                                   without a terminal on stdin; R: setsid()'s
 *                                   result, "ok" or the errno name), exit 0
 *   bt-stress sigchld               print "sigchld=ign" or "sigchld=dfl"
 *                                   (the disposition it was started with)
 *                                   and "reaped=1" when a child it forks is
 *                                   reaped by the kernel (no zombie), exit 0
 * With "crash" the program dies of SIGSEGV at the end instead of exiting.
 */
#include <errno.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

static volatile sig_atomic_t usr1, rt;
static volatile int *nowhere;
static uint64_t *volatile heap_kept;   /* the heap stays live */

static int finish(int crash, int status)
{
	if (crash)
		return *nowhere;    /* SIGSEGV */
	return status;
}

static void on_usr1(int sig)
{
	(void)sig;
	usr1++;
}

static void on_rt(int sig)
{
	(void)sig;
	rt++;
}

static void *thread_fn(void *arg)
{
	volatile long x = (long)arg;

	for (int i = 0; i < 100; i++)
		x += i;
	return (void *)x;
}

static int sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000 };

	return nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	int crash = argc > 3 ? !strcmp(argv[3], "crash") :
		    argc > 2 && !strcmp(argv[2], "crash");
	long n = argc > 2 ? atol(argv[2]) : 0;

	if (!strcmp(mode, "close-stdio")) {
		close(0);
		close(1);
		close(2);
		return finish(crash, 3);
	}
	if (!strcmp(mode, "ignore-term") && argc == 4) {
		struct stat st;
		FILE *f;

		signal(SIGTERM, SIG_IGN);
		f = fopen(argv[2], "w");
		if (!f)
			return 2;
		fclose(f);
		for (int i = 0; i < 3000 && stat(argv[3], &st); i++)
			sleep_ms(10);
		return 7;
	}
	if (!strcmp(mode, "fork")) {
		int bad = 0;

		for (long i = 0; i < n; i++) {
			pid_t p = fork();
			int st;

			if (p < 0) {
				perror("bt-stress: fork");
				return 1;
			}
			if (!p)
				_exit((int)(i & 0x7f));
			if (waitpid(p, &st, 0) != p || !WIFEXITED(st) ||
			    WEXITSTATUS(st) != (i & 0x7f))
				bad++;
		}
		if (bad)
			fprintf(stderr, "bt-stress: %d children came back wrong\n", bad);
		return finish(crash, bad ? 1 : 0);
	}
	if (!strcmp(mode, "threads")) {
		pthread_t t[50];

		for (long i = 0; i < n; i += 50) {
			long k = n - i < 50 ? n - i : 50;

			for (long j = 0; j < k; j++)
				if (pthread_create(&t[j], NULL, thread_fn,
						   (void *)(i + j))) {
					fprintf(stderr, "bt-stress: pthread_create failed\n");
					return 1;
				}
			for (long j = 0; j < k; j++)
				pthread_join(t[j], NULL);
		}
		return finish(crash, 0);
	}
	if (!strcmp(mode, "sigflood")) {
		sigset_t set, old;
		union sigval v = { 0 };
		long queued = 0;

		signal(SIGUSR1, on_usr1);
		signal(SIGRTMIN, on_rt);
		for (long i = 0; i < n; i++)
			kill(getpid(), SIGUSR1);
		sigemptyset(&set);
		sigaddset(&set, SIGRTMIN);
		sigprocmask(SIG_BLOCK, &set, &old);
		while (queued < 1000000 && sigqueue(getpid(), SIGRTMIN, v) == 0)
			queued++;
		if (errno != EAGAIN && queued < 1000000) {
			perror("bt-stress: sigqueue");
			return 1;
		}
		sigprocmask(SIG_SETMASK, &old, NULL);
		if (usr1 < 1 || rt != queued) {
			fprintf(stderr, "bt-stress: %d SIGUSR1 handled, %d of %ld SIGRTMIN\n",
				(int)usr1, (int)rt, queued);
			return 1;
		}
		return finish(crash, 0);
	}
	if (!strcmp(mode, "heap") && n > 0) {
		size_t len = (size_t)n << 20;
		uint64_t *p = malloc(len), x = 88172645463325252ull;

		if (!p)
			return 1;
		for (size_t i = 0; i < len / 8; i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			p[i] = x;
		}
		heap_kept = p;
		return finish(crash, 0);
	}
	if (!strcmp(mode, "wait") && argc > 2) {
		struct stat st;

		for (int i = 0; i < 3000 && stat(argv[2], &st); i++)
			sleep_ms(10);
		return finish(crash, 0);
	}
	if (!strcmp(mode, "pgrp")) {
		int fg = isatty(0) ? tcgetpgrp(0) == getpgrp() : -1;
		int leader = getpgrp() == getpid();
		const char *r;

		errno = 0;
		r = setsid() >= 0 ? "ok" : errno == EPERM ? "EPERM" :
		    strerror(errno);

		printf("leader=%d fg=%d setsid=%s\n", leader, fg, r);
		return 0;
	}
	if (!strcmp(mode, "sigchld")) {
		struct sigaction sa;
		pid_t p;
		int st;

		sigaction(SIGCHLD, NULL, &sa);
		printf("sigchld=%s\n", sa.sa_handler == SIG_IGN ? "ign" : "dfl");
		fflush(stdout);
		p = fork();
		if (p < 0)
			return 1;
		if (!p)
			_exit(5);
		/* an ignored SIGCHLD: the kernel reaps it, wait fails ECHILD */
		if (waitpid(p, &st, 0) < 0 && errno == ECHILD)
			printf("reaped=1\n");
		else
			printf("reaped=0 status=%d\n", WIFEXITED(st) ? WEXITSTATUS(st) : -1);
		return 0;
	}
	fprintf(stderr, "usage: bt-stress close-stdio|ignore-term|fork|threads|sigflood|heap|wait|pgrp|sigchld ...\n");
	return 2;
}
