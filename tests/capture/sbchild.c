/* SPDX-License-Identifier: MIT */
/*
 * Target program for the capture kernel tests.
 *   sbchild exec LIB N    exec itself as "run LIB N" (a COMM exec record)
 *   sbchild run LIB N     dlopen LIB, start and join N threads, exit 0
 *   sbchild crash         null pointer write (SIGSEGV)
 *   sbchild handler       SIGSEGV handler that re-raises with SIG_DFL
 *   sbchild sleep SEC     sleep (attach tests), SIGSEGV on SIGUSR1
 *   sbchild threads N SEC start N threads that sleep, then crash in thread 1
 *   sbchild loop N        N calls of a small function, then crash (a trace
 *                         that wraps a small ring)
 *   sbchild faults N      three rounds of N fresh page faults, 100 ms apart,
 *                         then crash
 *   sbchild busy N MS     N threads spinning; after MS ms thread 1 runs
 *                         busy_crash (a loop of step() calls) and crashes
 *                         while the others keep spinning
 *   sbchild remap LIB     map LIB executable, map it again over the same
 *                         range at another offset, then crash
 */
#include <dlfcn.h>
#include <stdint.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static volatile int sink;

static void *worker(void *arg)
{
	for (int i = 0; i < 1000; i++)
		sink += i + (int)(long)arg;
	return NULL;
}

__attribute__((noinline)) static void crash_here(void)
{
	*(volatile int *)(uintptr_t)sink = 1;
}

__attribute__((noinline)) static int step(int i)
{
	return (i & 3) ? i * 3 : i / 2;
}

static void on_segv(int sig)
{
	signal(sig, SIG_DFL);
	raise(sig);
}

static void on_usr1(int sig)
{
	(void)sig;
	crash_here();
}

static int secs;
static volatile int busy_ms;

/* The crashing thread's last work: 2000 calls of step(), then the fault. */
__attribute__((noinline)) static void busy_crash(void)
{
	for (int i = 0; i < 2000; i++)
		sink += step(i);
	crash_here();
}

static void *spinner(void *arg)
{
	long id = (long)arg;
	struct timespec t0, t;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (unsigned i = 0;; i++) {
		sink += step((int)i);
		if (id != 1 || (i & 0xfff))
			continue;
		clock_gettime(CLOCK_MONOTONIC, &t);
		if ((t.tv_sec - t0.tv_sec) * 1000 +
		    (t.tv_nsec - t0.tv_nsec) / 1000000 >= busy_ms)
			busy_crash();
	}
	return NULL;
}

static void *sleeper(void *arg)
{
	long id = (long)arg;

	if (id == 1) {
		sleep((unsigned)secs);
		crash_here();
	}
	pause();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc >= 4 && !strcmp(argv[1], "exec")) {
		char *nargv[] = { argv[0], "run", argv[2], argv[3], NULL };

		execv(argv[0], nargv);
		perror("execv");
		return 2;
	}
	if (argc >= 4 && !strcmp(argv[1], "run")) {
		int n = atoi(argv[3]);
		pthread_t th[16];
		void *h = dlopen(argv[2], RTLD_NOW);
		int (*fn)(int);

		if (!h) {
			fprintf(stderr, "dlopen: %s\n", dlerror());
			return 3;
		}
		fn = (int (*)(int))dlsym(h, "bt_sblib_answer");
		if (!fn || fn(6) != 42)
			return 4;
		for (int i = 0; i < n && i < 16; i++)
			pthread_create(&th[i], NULL, worker, (void *)(long)i);
		for (int i = 0; i < n && i < 16; i++)
			pthread_join(th[i], NULL);
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "crash")) {
		for (int i = 0; i < 100; i++)
			worker((void *)(long)i);
		crash_here();
		return 0;
	}
	if (argc >= 2 && !strcmp(argv[1], "handler")) {
		signal(SIGSEGV, on_segv);
		crash_here();
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "sleep")) {
		signal(SIGUSR1, on_usr1);
		for (int i = 0; i < atoi(argv[2]) * 10; i++)
			usleep(100000);
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "threads")) {
		int n = atoi(argv[2]);
		pthread_t th;

		secs = atoi(argv[3]);
		for (long i = 1; i <= n; i++)
			pthread_create(&th, NULL, sleeper, (void *)i);
		pause();
		return 0;
	}
	if (argc >= 4 && !strcmp(argv[1], "busy")) {
		int n = atoi(argv[2]);
		pthread_t th;

		busy_ms = atoi(argv[3]);
		for (long i = 1; i <= n; i++)
			pthread_create(&th, NULL, spinner, (void *)i);
		pause();
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "loop")) {
		long n = atol(argv[2]);

		for (long i = 0; i < n; i++)
			sink += step((int)i);
		crash_here();
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "faults")) {
		size_t n = (size_t)atoi(argv[2]);

		for (int round = 0; round < 3; round++) {
			char *p = mmap(NULL, n * 4096, PROT_READ | PROT_WRITE,
				       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

			if (p == MAP_FAILED)
				return 5;
			for (size_t i = 0; i < n; i++)
				p[i * 4096] = 1;
			usleep(100000);
		}
		crash_here();
		return 0;
	}
	if (argc >= 3 && !strcmp(argv[1], "remap")) {
		int fd = open(argv[2], O_RDONLY);
		char *p, *q;

		if (fd < 0)
			return 6;
		p = mmap(NULL, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
		if (p == MAP_FAILED)
			return 7;
		usleep(100000);
		q = mmap(p, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE | MAP_FIXED,
			 fd, 4096);
		if (q != p)
			return 8;
		usleep(100000);
		crash_here();
		return 0;
	}
	fprintf(stderr, "usage: sbchild exec|run|crash|handler|sleep|threads|loop|faults|remap ...\n");
	return 2;
}
