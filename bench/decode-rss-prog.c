// SPDX-License-Identifier: MIT
/*
 * The program of bench/decode-rss.sh: NBUSY threads (argv[1], default 16)
 * run a loop of small calls (into the C library too, through its PLT) and,
 * after MS ms (argv[2], default 1000), one more thread dereferences NULL.
 * NBUSY 0: the main thread runs the loop itself for MS ms, then crashes.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static volatile int stop;

__attribute__((noinline)) static long mix(long x, int i)
{
	return x * 31 + (x >> 3) + (x & 1 ? i : -i);
}

__attribute__((noinline)) static long work(long x)
{
	char buf[32];

	for (int i = 0; i < 16; i++)
		x = mix(x, i);
	memset(buf, (int)(x & 0x7f) | 1, sizeof(buf) - 1);
	buf[sizeof(buf) - 1] = 0;
	return x + (long)strlen(buf);
}

static void *busy(void *arg)
{
	long x = (long)arg;

	while (!stop)
		x = work(x);
	return (void *)x;
}

__attribute__((noinline)) static void crash(int *p)
{
	*(volatile int *)p = (int)work(7);
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 16;
	long ms = argc > 2 ? atol(argv[2]) : 1000;
	int *volatile bad = NULL;
	pthread_t t[256];
	long x = 1;

	if (n <= 0) {
		double end = now_ms() + (double)ms;
		while (now_ms() < end)
			for (int k = 0; k < 1000; k++)
				x = work(x);
		crash(bad);
		return (int)x;
	}
	if (n > 256)
		n = 256;
	for (long i = 0; i < n; i++)
		pthread_create(&t[i], NULL, busy, (void *)i);
	usleep((useconds_t)ms * 1000);
	crash(bad);
	return 0;
}
