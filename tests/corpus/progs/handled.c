// SPDX-License-Identifier: MIT
/* Signals taken as part of normal work: the program recovers from each and
 * exits 0, so no crash snapshot is due.  argv[1]: "segv" probes memory
 * with a handler and siglongjmp, "ill" skips a ud2 by moving the PC,
 * "trap" steps over int3, "fpe" recovers from a division by zero, "all"
 * all four. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>

static sigjmp_buf env;

static void on_jump(int sig)
{
	siglongjmp(env, sig);
}

static void on_skip_ud2(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	(void)sig;
	(void)si;
	uc->uc_mcontext.gregs[REG_RIP] += 2;
}

static void on_trap(int sig)
{
	(void)sig;
}

__attribute__((noinline)) int probe(const volatile int *p)
{
	struct sigaction sa = {.sa_handler = on_jump};

	sigaction(SIGSEGV, &sa, NULL);
	if (sigsetjmp(env, 1))
		return 0;
	(void)*p;
	return 1;
}

__attribute__((noinline)) int divide(volatile int a, volatile int b)
{
	struct sigaction sa = {.sa_handler = on_jump};

	sigaction(SIGFPE, &sa, NULL);
	if (sigsetjmp(env, 1))
		return -1;
	return a / b;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "all";
	int all = !strcmp(m, "all");
	static int x = 5;

	if (all || !strcmp(m, "segv"))
		printf("probe NULL: %d, probe &x: %d\n", probe(NULL),
		       probe(&x));
	if (all || !strcmp(m, "ill")) {
		struct sigaction sa = {.sa_sigaction = on_skip_ud2,
				       .sa_flags = SA_SIGINFO};
		sigaction(SIGILL, &sa, NULL);
		__asm__ volatile("ud2");
		puts("stepped over ud2");
	}
	if (all || !strcmp(m, "trap")) {
		signal(SIGTRAP, on_trap);
		__asm__ volatile("int3");
		puts("resumed after int3");
	}
	if (all || !strcmp(m, "fpe"))
		printf("10/0 -> %d, 10/2 -> %d\n", divide(10, 0),
		       divide(10, 2));
	return 0;
}
