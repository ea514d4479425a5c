// SPDX-License-Identifier: MIT
/*
 * A program that goes back and forth between its own code and the C
 * library (bench/decode-speed.sh): qsort() calling the program's
 * comparator, snprintf(), strlen(), in a loop; then it reads through a
 * NULL pointer.  With THREADS > 0, that many more threads run the same
 * loop and wait while the first one crashes.
 *   libc-pingpong [ITERATIONS [THREADS]]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int iterations = 20000;
static int done;

static int cmp(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	return (x > y) - (x < y);
}

static unsigned long work(int seed)
{
	unsigned long sum = 0;
	char buf[128];
	int v[64];

	for (int i = 0; i < iterations; i++) {
		for (int j = 0; j < 64; j++)
			v[j] = (j * 7919 + i + seed) % 101;
		qsort(v, 64, sizeof(int), cmp);
		snprintf(buf, sizeof(buf), "%d %d %s", v[0], v[63], "x");
		sum += strlen(buf);
	}
	return sum;
}

static void *worker(void *arg)
{
	work((int)(long)arg);
	__atomic_add_fetch(&done, 1, __ATOMIC_SEQ_CST);
	for (;;)
		pause();
	return NULL;
}

int main(int argc, char **argv)
{
	int threads = argc > 2 ? atoi(argv[2]) : 0;
	unsigned long sum;

	if (argc > 1)
		iterations = atoi(argv[1]);
	for (int t = 0; t < threads; t++) {
		pthread_t th;

		if (pthread_create(&th, NULL, worker, (void *)(long)(t + 1)))
			return 1;
	}
	sum = work(0);
	while (__atomic_load_n(&done, __ATOMIC_SEQ_CST) < threads)
		usleep(1000);
	volatile int *p = (volatile int *)(sum & 0);
	return *p;
}
