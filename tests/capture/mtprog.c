/* SPDX-License-Identifier: MIT */
/*
 * mtprog: the traced program of capture-aux-threads.  Main starts two
 * workers, works a while, starts two more (late), and works on; the last
 * late worker dies of SIGSEGV after @crash_at rounds (argv[1]) while the
 * others are still running.  No locks and no blocking system calls after
 * the start (the test single-steps one thread at a time: a thread that
 * waited for a stopped one would hang the test).
 */
#include <pthread.h>
#include <stdlib.h>

#define NEARLY 2
#define NLATE 2

static volatile unsigned long acc[NEARLY + NLATE + 1];
static long crasher = NEARLY + NLATE;
static unsigned long crash_at = 40;

__attribute__((noinline)) static unsigned long mix(unsigned long x, int k)
{
	for (int i = 0; i < k; i++)
		x = (x ^ (x >> 7)) * 0x9e3779b97f4a7c15ul + (unsigned long)i;
	return x;
}

__attribute__((noinline)) static unsigned long add1(unsigned long x) { return x + 1; }
__attribute__((noinline)) static unsigned long twice(unsigned long x) { return x * 2; }
static unsigned long (*volatile ops[2])(unsigned long) = { add1, twice };

__attribute__((noinline)) static void crash_here(volatile int *p)
{
	*p = 1;
}

static void *worker(void *arg)
{
	long id = (long)arg;
	unsigned long x = (unsigned long)id;

	for (unsigned long n = 0;; n++) {
		x = mix(x, (int)(x & 7));
		x = ops[x & 1](x);              /* an indirect call */
		acc[id] = x;
		if (id == crasher && n == crash_at)
			crash_here(NULL);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	unsigned long x = 0;

	if (argc > 1)
		crash_at = strtoul(argv[1], NULL, 0);
	for (long i = 1; i <= NEARLY; i++)
		if (pthread_create(&t, NULL, worker, (void *)i))
			return 1;
	for (int i = 0; i < 150; i++) {
		x = mix(x, i & 7);
		acc[0] = x;
	}
	for (long i = NEARLY + 1; i <= NEARLY + NLATE; i++)
		if (pthread_create(&t, NULL, worker, (void *)i))
			return 1;
	for (;;) {
		x = mix(x, (int)(x & 7));
		acc[0] = x;
	}
}
