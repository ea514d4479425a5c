// SPDX-License-Identifier: MIT
/* Faults a program handles and goes on from, then (argv[1]):
 *   exit   nothing more: exit(1), a normal exit (no crash);
 *   segv   a real fault later: a NULL store with the default disposition
 *          back (SIGSEGV);
 *   fpe    a real fault later: an integer division by zero (SIGFPE);
 *   skip   the handled fault's handler returns past the faulting load
 *          (sigreturn, as a runtime's null checks do), then a NULL store
 *          with the default disposition back (SIGSEGV);
 *   alrm   no handled fault: a SIGALRM handler interrupts a busy loop and
 *          dereferences NULL inside the handler (SIGSEGV in the handler).
 * The fault of the report is the last, fatal one: gdb's stop at it. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>

static sigjmp_buf env;
static int *volatile nowhere;
static volatile int zero;
static volatile long spins;

static void on_jump(int sig)
{
	siglongjmp(env, sig);
}

/* The load below is `mov (%rdi), %eax` (2 bytes): returns past it. */
static void on_skip(int sig, siginfo_t *si, void *ctx)
{
	ucontext_t *uc = ctx;

	(void)sig;
	(void)si;
	uc->uc_mcontext.gregs[REG_RIP] += 2;
}

/* Whether @p can be read: a probe with a handler and siglongjmp. */
__attribute__((noinline)) static int readable(const volatile int *p)
{
	struct sigaction sa = {.sa_handler = on_jump}, old;
	int ok = 1;

	sigaction(SIGSEGV, &sa, &old);
	if (!sigsetjmp(env, 1))
		(void)*p;
	else
		ok = 0;
	sigaction(SIGSEGV, &old, NULL);
	return ok;
}

/* A load the handler steps over: returns 0 for an unreadable @p. */
__attribute__((noinline)) static int skipped_load(const int *p)
{
	int v = 0;

	__asm__ volatile("mov (%1), %0" : "+a"(v) : "D"(p) : "memory");
	return v;
}

__attribute__((noinline)) static void store_null(int v)
{
	*nowhere = v;
}

__attribute__((noinline)) static int divide(int v)
{
	return v / zero;
}

__attribute__((noinline)) static void on_alarm(int sig)
{
	*nowhere = sig;
}

__attribute__((noinline)) static void busy(void)
{
	for (;;)
		spins++;
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "exit";

	if (!strcmp(m, "alrm")) {
		signal(SIGALRM, on_alarm);
		alarm(1);
		busy();
	}
	if (!strcmp(m, "skip")) {
		struct sigaction sa = {.sa_sigaction = on_skip,
				       .sa_flags = SA_SIGINFO};

		sigaction(SIGSEGV, &sa, NULL);
		printf("load %d\n", skipped_load((const int *)16));
		signal(SIGSEGV, SIG_DFL);
	} else {
		printf("readable %d\n", readable((const int *)16));
	}
	fflush(stdout);
	if (!strcmp(m, "segv") || !strcmp(m, "skip"))
		store_null(3);
	if (!strcmp(m, "fpe"))
		printf("%d\n", divide(7));
	exit(1);
}
