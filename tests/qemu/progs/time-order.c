// SPDX-License-Identifier: MIT
/*
 * Threads that act in a known order: worker k waits for a byte on its
 * pipe, runs step_k() (a few thousand blocks), passes the byte on to
 * worker k+1 and parks; the main thread starts worker 0, waits for the
 * last one, runs main_last() and crashes.  step_0 < step_1 < step_2 <
 * step_3 < main_last in time, whatever the scheduler does (tests/qemu/
 * time.py checks the decoded times say so).
 */
#include <pthread.h>
#include <stdint.h>
#include <unistd.h>

#define NW 4

static int pipes[NW + 1][2];
static volatile uint64_t sink;

static __attribute__((noinline)) uint64_t spin(uint64_t n)
{
	uint64_t x = n;

	for (uint64_t i = 0; i < n; i++)
		x = x * 6364136223846793005ull + (x >> 7) + i;
	return x;
}

#define STEP(k)								\
	static __attribute__((noinline)) void step_##k(void)			\
	{								\
		for (int i = 0; i < 200; i++)				\
			sink += spin(20 + (uint64_t)i % 7);		\
	}
STEP(0)
STEP(1)
STEP(2)
STEP(3)

static void (*const steps[NW])(void) = { step_0, step_1, step_2, step_3 };

static __attribute__((noinline)) void main_last(void)
{
	sink += spin(100);
	*(volatile int *)(uintptr_t)sink = 1;   /* sink is never a valid address */
}

static void *worker(void *arg)
{
	int k = (int)(intptr_t)arg;
	char c;

	if (read(pipes[k][0], &c, 1) != 1)
		return NULL;
	steps[k]();
	if (write(pipes[k + 1][1], &c, 1) != 1)
		return NULL;
	for (;;)
		pause();   /* parked until the crash */
	return NULL;
}

int main(void)
{
	pthread_t t[NW];
	char c = 'x';

	for (int k = 0; k <= NW; k++)
		if (pipe(pipes[k]))
			return 1;
	for (int k = 0; k < NW; k++)
		pthread_create(&t[k], NULL, worker, (void *)(intptr_t)k);
	if (write(pipes[0][1], &c, 1) != 1 || read(pipes[NW][0], &c, 1) != 1)
		return 1;
	main_last();
	return 0;
}
