// SPDX-License-Identifier: MIT
/*
 * 16 threads (the main one waits): 15 busy, and after argv[1] ms (default
 * 300) the 16th dereferences NULL.  Used to time the snapshot of a
 * 16-thread death (bench/qemu-snapshot-time.sh) and by the qemu suite.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

static volatile int stop;

__attribute__((noinline)) static long spin_work(long x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 31 + (x >> 3) + (x & 1 ? i : -i);
	return x;
}

static void *busy(void *arg)
{
	long x = (long)arg;

	while (!stop)
		x = spin_work(x);
	return (void *)x;
}

__attribute__((noinline)) static void worker_crash(int *p)
{
	*(volatile int *)p = (int)spin_work(7);
}

static void *crasher(void *arg)
{
	int *volatile bad = NULL;

	usleep((useconds_t)(long)arg * 1000);
	worker_crash(bad);
	return NULL;
}

int main(int argc, char **argv)
{
	long ms = argc > 1 ? atol(argv[1]) : 300;
	pthread_t t[16];

	for (long i = 0; i < 15; i++)
		pthread_create(&t[i], NULL, busy, (void *)i);
	pthread_create(&t[15], NULL, crasher, (void *)ms);
	for (int i = 0; i < 16; i++)
		pthread_join(t[i], NULL);
	return 0;
}
