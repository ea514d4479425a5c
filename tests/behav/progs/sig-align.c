// SPDX-License-Identifier: MIT
/*
 * Signal handlers that need the ABI's stack alignment: at a handler's
 * entry rsp + 8 is a multiple of 16 (the kernel's get_sigframe() and
 * align_sigframe(), arch/x86/kernel/signal.c), so the compiler's aligned
 * SSE stores to the handler's locals (movaps) and snprintf("%f") work.
 *
 *   sig-align            SA_SIGINFO handler for SIGUSR1, raised 3 times,
 *                        and a nested SIGUSR2 from inside it
 *   sig-align altstack   the same on a sigaltstack (SA_ONSTACK)
 *   sig-align skip       a SIGSEGV handler steps over the faulting load by
 *                        changing the ucontext's rip
 *   sig-align plain      signal(): a handler without SA_SIGINFO
 *   sig-align late       the handler runs once as an ordinary function
 *                        before it is installed
 *   sig-align again      a SIGSEGV handler restores the default action
 *                        and returns: the load faults again and the
 *                        process dies there (SIGSEGV), as a runtime's
 *                        overflow check does for a fault not its own
 *   sig-align cancel     pthread_cancel of a thread in asynchronous mode:
 *                        glibc's SIGCANCEL handler unwinds it (the unwinder
 *                        saves registers with aligned SSE stores) and runs
 *                        its cleanup handler
 *
 * Each handler entry prints its rsp modulo 16; the program exits 0.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include <xmmintrin.h>

volatile uintptr_t entry_rsp;
static volatile int nested;
static const char *mode = "";

void handle(int sig, siginfo_t *si, void *uc);
void probe(int sig, siginfo_t *si, void *uc);
void plain_probe(int sig);    /* the same code, for signal() */

/* Notes rsp exactly as the handler was entered, then runs handle(). */
__asm__(".text\n.globl probe\n.type probe, @function\nprobe:\n"
	"plain_probe:\n"
	"\tmov %rsp, entry_rsp(%rip)\n"
	"\tjmp handle\n.size probe, .-probe\n");

__attribute__((noinline)) static void sse_store(volatile __m128 *out,
						 float f)
{
	*out = _mm_set1_ps(f);
}

void handle(int sig, siginfo_t *si, void *uc)
{
	uintptr_t sp = entry_rsp;
	volatile __m128 v __attribute__((aligned(16)));
	char buf[64];
	ucontext_t *u = uc;

	sse_store(&v, (float)sig);     /* movaps to the handler's frame */
	snprintf(buf, sizeof(buf), "%.3f", (double)sig / 4.0 + v[0]);
	printf("handler %d: entry rsp %% 16 = %lu, %s\n", sig,
	       (unsigned long)(sp % 16), buf);
	if (si && strcmp(mode, "plain") && si->si_signo != sig) {
		printf("siginfo says %d\n", si->si_signo);
		exit(3);
	}
	if (sig == SIGSEGV && !strcmp(mode, "again")) {
		signal(SIGSEGV, SIG_DFL);
		return;
	}
	if (sig == SIGSEGV && u) {
		/* mov (%rax),%eax is 2 bytes (the load in main) */
		u->uc_mcontext.gregs[REG_RIP] += 2;
		return;
	}
	if (sig == SIGUSR1 && !nested) {
		nested = 1;
		raise(SIGUSR2);
	}
}

/* The load that faults: its block is the load and the ret. */
__attribute__((noinline)) int load(const int *p);
__attribute__((noinline)) int load(const int *p)
{
	return *(const volatile int *)p;   /* behav: again */
}

static void cleanup(void *arg)
{
	printf("cleanup %s %.2f\n", (const char *)arg, 1.0 / 3);
}

static void *spin(void *arg)
{
	pthread_setcanceltype(PTHREAD_CANCEL_ASYNCHRONOUS, NULL);
	pthread_cleanup_push(cleanup, "spin");
	for (volatile unsigned long i = 0;; i++)
		;
	pthread_cleanup_pop(0);
	return arg;
}

static int cancel(void)
{
	pthread_t t;
	void *r = NULL;

	if (pthread_create(&t, NULL, spin, NULL))
		return 1;
	usleep(100000);
	pthread_cancel(t);
	pthread_join(t, &r);
	printf("joined: %s\n", r == PTHREAD_CANCELED ? "canceled" : "?");
	return r == PTHREAD_CANCELED ? 0 : 1;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	volatile double keep = 2.5;
	static char alt[1 << 16] __attribute__((aligned(16)));

	setvbuf(stdout, NULL, _IONBF, 0);
	mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "cancel"))
		return cancel();
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = probe;
	sa.sa_flags = SA_SIGINFO;
	if (!strcmp(mode, "late"))
		probe(0, NULL, NULL);
	if (!strcmp(mode, "altstack")) {
		stack_t st = { .ss_sp = alt, .ss_size = sizeof(alt) };

		sigaltstack(&st, NULL);
		sa.sa_flags |= SA_ONSTACK;
	}
	if (!strcmp(mode, "plain")) {
		signal(SIGUSR1, plain_probe);
		signal(SIGUSR2, plain_probe);
	} else {
		sigaction(SIGUSR1, &sa, NULL);
		sigaction(SIGUSR2, &sa, NULL);
		sigaction(SIGSEGV, &sa, NULL);
	}
	if (!strcmp(mode, "again")) {
		int *volatile bad = NULL;

		printf("load %d\n", load(bad));
	}
	if (!strcmp(mode, "skip")) {
		int r;

		__asm__ volatile("xor %%eax, %%eax\n\tmov (%%rax), %%eax"
				 : "=a"(r) : : "memory");
		printf("stepped over the fault\n");
	}
	for (int i = 0; i < 3; i++)
		raise(SIGUSR1);
	printf("done %.1f\n", keep * 2);
	return 0;
}
