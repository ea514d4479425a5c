/* SPDX-License-Identifier: MIT */
/*
 * Test program for the QEMU backend's guest core: a fault in the middle of
 * a block (consume+N, not the block's first instruction), reached in the
 * conditions where a core in the working directory could not be written.
 *
 *   crash-core plain        main faults
 *   crash-core slow         main faults after 3 seconds
 *   crash-core rmcwd        the working directory is deleted first
 *   crash-core pexit        main calls pthread_exit(), then a worker faults
 *   crash-core overflow     unbounded recursion into the stack's guard
 *   crash-core abort        abort()
 *   crash-core quit         raise(SIGQUIT)
 *   crash-core manymaps     main faults with 20,000 more mappings (a page
 *                           each, protections alternating): a guest core
 *                           with more than 4,096 program headers
 *   crash-core limits       prints RLIMIT_CORE as the legacy getrlimit
 *                           system call gives it (signals unblocked, then
 *                           all blocked) and as getrlimit() does, exits 0
 *   crash-core daemon PIDFILE GOFILE
 *                           exits 0 at once; a grandchild in a session of
 *                           its own writes its pid to PIDFILE, waits until
 *                           GOFILE exists, then faults
 *
 * Every mode keeps the environment variable BTRACE_TEST_SECRET in memory
 * (on the stack, as every process does, and copied to the heap), so a core
 * anyone can read would give it away.
 */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static char *secret_copy;

/* Three arithmetic instructions, then the load that faults: the fault is
 * not at the start of the block. */
__attribute__((noinline)) int consume(volatile int *p, int n)
{
	int s = n * 3;

	s ^= n >> 1;
	s += n * 7;
	s += *p;   /* e2e: fault */
	return s;
}

__attribute__((noinline)) static int recurse(int n)
{
	volatile char frame[256];

	frame[0] = (char)n;
	return recurse(n + 1) + frame[0];
}

static void *worker(void *arg)
{
	usleep(200000);   /* main is gone by now */
	printf("%d\n", consume((volatile int *)arg, 3));
	return NULL;
}

static int daemon_mode(const char *pidfile, const char *gofile)
{
	pid_t p = fork();

	if (p < 0)
		return 1;
	if (p > 0)
		return 0;   /* the launched process exits 0 */
	if (setsid() < 0)
		_exit(1);
	p = fork();
	if (p != 0)
		_exit(p < 0);
	/* The grandchild: reparented, in its own session. */
	{
		FILE *f = fopen(pidfile, "w");
		struct stat st;

		if (!f)
			_exit(1);
		fprintf(f, "%d\n", (int)getpid());
		fclose(f);
		for (int i = 0; i < 6000 && stat(gofile, &st); i++)
			usleep(10000);
		_exit(consume(NULL, 5));
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "plain";
	const char *secret = getenv("BTRACE_TEST_SECRET");

	secret_copy = strdup(secret ? secret : "none");
	if (!strcmp(mode, "slow")) {
		sleep(3);
	} else if (!strcmp(mode, "rmcwd")) {
		char dir[] = "/tmp/crash-core-XXXXXX";

		if (!mkdtemp(dir) || chdir(dir) || rmdir(dir))
			return 2;
	} else if (!strcmp(mode, "pexit")) {
		pthread_t t;

		if (pthread_create(&t, NULL, worker, NULL))
			return 2;
		pthread_exit(NULL);
	} else if (!strcmp(mode, "overflow")) {
		return recurse(0);
	} else if (!strcmp(mode, "manymaps")) {
		long pg = sysconf(_SC_PAGESIZE);
		char *m = mmap(NULL, 20000 * (size_t)pg, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return 2;
		for (int i = 0; i < 20000; i += 2)
			if (mprotect(m + (size_t)i * pg, (size_t)pg, PROT_READ))
				return 2;
	} else if (!strcmp(mode, "abort")) {
		abort();
	} else if (!strcmp(mode, "quit")) {
		raise(SIGQUIT);
		return 3;
	} else if (!strcmp(mode, "limits")) {
		struct rlimit r;
		sigset_t all;

		syscall(SYS_getrlimit, RLIMIT_CORE, &r);
		printf("getrlimit syscall: %llu %llu\n",
		       (unsigned long long)r.rlim_cur,
		       (unsigned long long)r.rlim_max);
		sigfillset(&all);
		sigprocmask(SIG_SETMASK, &all, NULL);
		syscall(SYS_getrlimit, RLIMIT_CORE, &r);
		printf("getrlimit syscall, signals blocked: %llu %llu\n",
		       (unsigned long long)r.rlim_cur,
		       (unsigned long long)r.rlim_max);
		getrlimit(RLIMIT_CORE, &r);
		printf("getrlimit: %llu %llu\n", (unsigned long long)r.rlim_cur,
		       (unsigned long long)r.rlim_max);
		return 0;
	} else if (!strcmp(mode, "daemon")) {
		return argc > 3 ? daemon_mode(argv[2], argv[3]) : 2;
	}
	printf("%d\n", consume(argc > 10 ? (volatile int *)argv : NULL, argc));
	return 0;
}
