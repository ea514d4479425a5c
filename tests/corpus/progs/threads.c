// SPDX-License-Identifier: MIT
/* N threads alive (argv[1], default 4); the last one created faults once
 * all have started; the others wait on a barrier that never opens. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t started;
static pthread_mutex_t hold = PTHREAD_MUTEX_INITIALIZER;
static long *volatile nowhere;

__attribute__((noinline)) void worker_fault(long id)
{
	*nowhere = id;
}

static void *waiter(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&started);
	pthread_mutex_lock(&hold);
	pthread_mutex_unlock(&hold);
	return NULL;
}

static void *crasher(void *arg)
{
	pthread_barrier_wait(&started);
	worker_fault((long)arg);
	return NULL;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 4;
	pthread_t t;

	pthread_mutex_lock(&hold);
	pthread_barrier_init(&started, NULL, (unsigned)n);
	for (int i = 0; i < n - 1; i++)
		if (pthread_create(&t, NULL, waiter, NULL))
			return 3;
	printf("%d threads\n", n);
	fflush(stdout);
	if (pthread_create(&t, NULL, crasher, (void *)(long)n))
		return 3;
	pthread_join(t, NULL);
	return 0;
}
