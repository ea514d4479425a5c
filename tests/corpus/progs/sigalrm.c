// SPDX-License-Identifier: MIT
/* An asynchronous handler: SIGALRM, installed with SA_ONSTACK on a
 * sigaltstack, arrives while main sleeps in pause(); the handler reads
 * through a NULL entry of its table: the fault is in the handler, on the
 * alternate stack, above the signal frame and pause(). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <unistd.h>

static const int *volatile table[2];
static volatile sig_atomic_t ticks;

__attribute__((noinline)) static int tick_value(int i)
{
	return *table[i];
}

static void on_alarm(int sig)
{
	(void)sig;
	ticks += tick_value(ticks & 1);
}

int main(void)
{
	static int one = 1;
	stack_t ss = {.ss_size = 1 << 16};
	struct sigaction sa = {0};
	struct itimerval it = {{0, 0}, {0, 20000}};

	ss.ss_sp = malloc(ss.ss_size);
	if (!ss.ss_sp || sigaltstack(&ss, NULL))
		return 3;
	table[0] = NULL;
	table[1] = &one;
	sa.sa_handler = on_alarm;
	sa.sa_flags = SA_ONSTACK;
	sigemptyset(&sa.sa_mask);
	if (sigaction(SIGALRM, &sa, NULL))
		return 3;
	printf("waiting for the alarm\n");
	fflush(stdout);
	if (setitimer(ITIMER_REAL, &it, NULL))
		return 3;
	for (;;)
		pause();
}
