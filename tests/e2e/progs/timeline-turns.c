/* SPDX-License-Identifier: MIT */
/*
 * Two threads take turns through two pipes, so that the order of their
 * steps is certain: a1 b1 a2 b2 a3 b3, then thread b faults (e2e-timeline:
 * the merged timeline must put them in that order).
 */
#include <pthread.h>
#include <unistd.h>

static int ab[2], ba[2];
static volatile int sink;

#define STEP(name) \
	__attribute__((noinline)) void name(void); \
	__attribute__((noinline)) void name(void) \
	{ for (int i = 0; i < 50; i++) sink += i; }
STEP(step_a1) STEP(step_a2) STEP(step_a3)
STEP(step_b1) STEP(step_b2) STEP(step_b3)

static void pass(int fd)
{
	char c = 't';
	if (write(fd, &c, 1) != 1)
		_exit(3);
}

static void wait_turn(int fd)
{
	char c;
	if (read(fd, &c, 1) != 1)
		_exit(4);
}

static void *thread_a(void *arg)
{
	(void)arg;
	step_a1();
	pass(ab[1]);
	wait_turn(ba[0]);
	step_a2();
	pass(ab[1]);
	wait_turn(ba[0]);
	step_a3();
	pass(ab[1]);
	return NULL;
}

__attribute__((noinline)) static void crash_b(void)
{
	*(volatile int *)0 = sink;   /* e2e: fault */
}

static void *thread_b(void *arg)
{
	(void)arg;
	wait_turn(ab[0]);
	step_b1();
	pass(ba[1]);
	wait_turn(ab[0]);
	step_b2();
	pass(ba[1]);
	wait_turn(ab[0]);
	step_b3();
	crash_b();
	return NULL;
}

int main(void)
{
	pthread_t a, b;

	if (pipe(ab) || pipe(ba))
		return 2;
	pthread_create(&b, NULL, thread_b, NULL);
	pthread_create(&a, NULL, thread_a, NULL);
	pthread_join(a, NULL);
	pthread_join(b, NULL);
	return 0;
}
