// SPDX-License-Identifier: MIT
/*
 * argv[1] threads (default 100) alive at once; thread number argv[2]
 * (default 77, counting from 1) crashes while every other one waits, after
 * writing its tid to argv[3].
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static pthread_barrier_t all_up;
static int crasher;
static const char *tid_file;

__attribute__((noinline)) static void crash_in_thread(volatile int *p)
{
	*p = 77; /* e2e: fault */
}

__attribute__((noinline)) static void *worker(void *arg)
{
	long n = (long)arg;

	pthread_barrier_wait(&all_up);
	if (n == crasher) {
		FILE *f = tid_file ? fopen(tid_file, "w") : NULL;

		if (f) {
			fprintf(f, "%d\n", (int)gettid());
			fclose(f);
		}
		crash_in_thread(NULL);
	}
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	pthread_t t;
	pthread_attr_t a;

	crasher = argc > 2 ? atoi(argv[2]) : 77;
	tid_file = argc > 3 ? argv[3] : NULL;
	pthread_barrier_init(&all_up, NULL, (unsigned)n + 1);
	pthread_attr_init(&a);
	pthread_attr_setstacksize(&a, 64 * 1024);
	for (long i = 1; i <= n; i++)
		if (pthread_create(&t, &a, worker, (void *)i))
			return 1;
	pthread_barrier_wait(&all_up);
	for (;;)
		pause();
}
