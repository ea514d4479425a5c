// SPDX-License-Identifier: MIT
/* A thread pool: four workers wait on a condition variable for jobs; main
 * queues jobs and waits on another condition variable for them to be done.
 * The fifth job has no buffer: the worker that takes it stores through
 * NULL while main and the other workers sleep in pthread_cond_wait. */
#include <pthread.h>
#include <stdio.h>

#define NJOBS 8

struct job { int id; int *out; };

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t have_job = PTHREAD_COND_INITIALIZER;
static pthread_cond_t job_done = PTHREAD_COND_INITIALIZER;
static struct job queue[NJOBS];
static int head, tail, done;
static int results[NJOBS];

__attribute__((noinline)) static void run_job(const struct job *j)
{
	*j->out = j->id * j->id;
	__asm__ volatile("" ::: "memory");
}

static void *worker(void *arg)
{
	(void)arg;
	for (;;) {
		struct job j;

		pthread_mutex_lock(&mu);
		while (head == tail)
			pthread_cond_wait(&have_job, &mu);
		j = queue[head++ % NJOBS];
		pthread_mutex_unlock(&mu);
		run_job(&j);
		pthread_mutex_lock(&mu);
		done++;
		pthread_cond_signal(&job_done);
		pthread_mutex_unlock(&mu);
	}
	return NULL;
}

int main(void)
{
	pthread_t t[4];

	for (int i = 0; i < 4; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	printf("queueing %d jobs\n", NJOBS);
	fflush(stdout);
	pthread_mutex_lock(&mu);
	for (int i = 0; i < NJOBS; i++) {
		queue[tail % NJOBS] = (struct job){i, i == 4 ? NULL : &results[i]};
		tail++;
		pthread_cond_signal(&have_job);
		/* one job at a time: the fifth is the one that crashes */
		while (done <= i)
			pthread_cond_wait(&job_done, &mu);
	}
	pthread_mutex_unlock(&mu);
	printf("not reached %d\n", results[3]);
	return 0;
}
