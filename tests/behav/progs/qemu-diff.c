// SPDX-License-Identifier: MIT
/*
 * What the kernel does and QEMU 7.2's user mode does not, one mode each;
 * each prints what it saw and exits 0 when it saw the kernel's behaviour:
 *
 *   clone3        a raw clone3() of a child (exit 7); 2 on ENOSYS
 *   threads       pthread_create (glibc tries clone3 and falls back)
 *   io_uring      io_uring_setup(4); 2 on ENOSYS
 *   traceme       a forked child's ptrace(PTRACE_TRACEME); 2 on failure
 *   comm          prints /proc/self/comm
 *   die N         raise(N) with the default action: dies of signal N
 *   rt N          a handler for signal N, raise(N): prints the signal the
 *                 handler got; 2 when raise() failed, 3 when no handler ran
 *   wait FILE N   a handler for signal N, "ready" into FILE, then waits
 *                 (30 s at most) for it: prints the signal the handler got
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <linux/sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile sig_atomic_t got;

static void on_sig(int sig)
{
	got = sig;
}

static void *thread_main(void *arg)
{
	return arg;
}

static int catch_sig(int sig)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_sig;
	return sigaction(sig, &sa, NULL);
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "";
	int st = 0;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (!strcmp(m, "clone3")) {
		struct clone_args ca;
		long r;

		memset(&ca, 0, sizeof(ca));
		ca.exit_signal = SIGCHLD;
		r = syscall(SYS_clone3, &ca, sizeof(ca));
		if (r == 0)
			_exit(7);
		if (r < 0) {
			printf("clone3: %s\n", strerror(errno));
			return 2;
		}
		waitpid((pid_t)r, &st, 0);
		printf("clone3: child exited %d\n", WEXITSTATUS(st));
		return 0;
	}
	if (!strcmp(m, "threads")) {
		pthread_t t;

		if (pthread_create(&t, NULL, thread_main, NULL))
			return 2;
		pthread_join(t, NULL);
		printf("threads: joined\n");
		return 0;
	}
	if (!strcmp(m, "io_uring")) {
		char params[120];   /* struct io_uring_params */
		long r;

		memset(params, 0, sizeof(params));
		r = syscall(425, 4, params);
		if (r < 0) {
			printf("io_uring_setup: %s\n", strerror(errno));
			return 2;
		}
		printf("io_uring_setup: a descriptor\n");
		return 0;
	}
	if (!strcmp(m, "traceme")) {
		pid_t c = fork();

		if (c == 0) {
			long r = ptrace(PTRACE_TRACEME, 0, NULL, NULL);

			printf("traceme: %s\n", r ? strerror(errno) : "0");
			_exit(r ? 2 : 0);
		}
		waitpid(c, &st, 0);
		return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
	}
	if (!strcmp(m, "comm")) {
		char name[32] = "";
		FILE *f = fopen("/proc/self/comm", "r");

		if (!f || !fgets(name, sizeof(name), f))
			return 1;
		printf("comm: %s", name);
		return 0;
	}
	if (!strcmp(m, "die") && argc > 2) {
		int sig = atoi(argv[2]);

		signal(sig, SIG_DFL);
		if (raise(sig))
			printf("raise(%d): %s\n", sig, strerror(errno));
		return 2;
	}
	if (!strcmp(m, "rt") && argc > 2) {
		int sig = atoi(argv[2]);

		catch_sig(sig);
		if (raise(sig)) {
			printf("raise(%d): %s\n", sig, strerror(errno));
			return 2;
		}
		printf("handler got %d\n", (int)got);
		return got == sig ? 0 : 3;
	}
	if (!strcmp(m, "wait") && argc > 3) {
		int sig = atoi(argv[3]);
		FILE *f;

		catch_sig(sig);
		f = fopen(argv[2], "w");
		if (!f)
			return 1;
		fputs("ready\n", f);
		fclose(f);
		for (int i = 0; i < 3000 && !got; i++)
			usleep(10000);
		printf("handler got %d\n", (int)got);
		return got == sig ? 0 : 3;
	}
	fprintf(stderr, "usage: qemu-diff MODE [ARGS]\n");
	return 64;
}
