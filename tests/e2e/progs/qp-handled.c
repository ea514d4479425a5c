// SPDX-License-Identifier: MIT
/*
 * Signals taken as part of normal work, then a normal exit with status
 * argv[2] (default 0).  argv[1]:
 *   segv  probe unmapped memory with a SIGSEGV handler (siglongjmp back)
 *   ill   execute ud2, the handler skips it
 *   trap  execute int3, the handler returns (rip is already past it)
 *   fpe   divide by zero, the handler skips the idiv
 *   jit   write code into RWX memory, run it, patch it in place, run it
 *         again (QEMU write-protects pages it translated: its own faults)
 *   all   every one of the above
 * Prints "ok N" with the number of signals handled.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

static sigjmp_buf env;
static volatile int handled;

static void on_segv(int sig)
{
	handled++;
	siglongjmp(env, 1);
}

/* Skip the faulting instruction: @len bytes. */
static void skip(void *ucv, int len)
{
	ucontext_t *uc = ucv;

	uc->uc_mcontext.gregs[REG_RIP] += len;
}

static void on_ill(int sig, siginfo_t *si, void *uc)
{
	handled++;
	skip(uc, 2);   /* ud2 */
}

static void on_trap(int sig, siginfo_t *si, void *uc)
{
	handled++;     /* int3 traps after the instruction */
}

static void on_fpe(int sig, siginfo_t *si, void *uc)
{
	handled++;
	skip(uc, 2);   /* idiv %ecx (f7 f9) */
}

static int probe(volatile char *p)
{
	if (sigsetjmp(env, 1))
		return 0;   /* not readable */
	return *p + 1;
}

static void do_segv(void)
{
	signal(SIGSEGV, on_segv);
	for (unsigned long a = 0x1000; a < 0x10000; a += 0x1000)
		probe((volatile char *)a);
}

static void install(int sig, void (*fn)(int, siginfo_t *, void *))
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = fn;
	sa.sa_flags = SA_SIGINFO;
	sigaction(sig, &sa, NULL);
}

static void do_ill(void)
{
	install(SIGILL, on_ill);
	__asm__ volatile("ud2");
}

static void do_trap(void)
{
	install(SIGTRAP, on_trap);
	__asm__ volatile("int3");
}

static void do_fpe(void)
{
	int q;

	install(SIGFPE, on_fpe);
	__asm__ volatile("xor %%edx,%%edx\n\tmov $7,%%eax\n\txor %%ecx,%%ecx\n\t"
			 "idiv %%ecx\n\tmov %%eax,%0" : "=r"(q) : :
			 "eax", "ecx", "edx");
	(void)q;
}

static void do_jit(void)
{
	/* mov $N,%eax; ret */
	unsigned char code[] = { 0xb8, 1, 0, 0, 0, 0xc3 };
	unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int (*fn)(void) = (int (*)(void))(void *)m;
	int sum = 0;

	if (m == MAP_FAILED)
		exit(1);
	for (int v = 1; v <= 5; v++) {
		code[1] = (unsigned char)v;
		memcpy(m, code, sizeof(code));   /* patch the code that ran */
		for (int i = 0; i < 100; i++)
			sum += fn();
	}
	if (sum != 100 * 15)
		exit(1);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "all";
	int all = !strcmp(what, "all");

	if (all || !strcmp(what, "segv"))
		do_segv();
	if (all || !strcmp(what, "ill"))
		do_ill();
	if (all || !strcmp(what, "trap"))
		do_trap();
	if (all || !strcmp(what, "fpe"))
		do_fpe();
	if (all || !strcmp(what, "jit"))
		do_jit();
	printf("ok %d\n", handled);
	fflush(stdout);
	return argc > 2 ? atoi(argv[2]) : 0;
}
