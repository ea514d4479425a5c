// SPDX-License-Identifier: MIT
/* Several busy threads; one of them dereferences NULL. */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

static volatile int stop;

__attribute__((noinline)) static long spin_work(long x)
{
	for (int i = 0; i < 1000; i++)
		x = x * 31 + (x >> 3) + i;
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
	*p = (int)spin_work(7);  /* e2e: fault */
}

static void *crasher(void *arg)
{
	usleep(20000);
	worker_crash((int *)arg);
	return NULL;
}

int main(void)
{
	pthread_t t[4];

	for (long i = 0; i < 3; i++)
		pthread_create(&t[i], NULL, busy, (void *)i);
	pthread_create(&t[3], NULL, crasher, NULL);
	for (int i = 0; i < 4; i++)
		pthread_join(t[i], NULL);
	return 0;
}
