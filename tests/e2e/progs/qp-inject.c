/* SPDX-License-Identifier: MIT */
/* Signal handlers that send the interrupted context somewhere else, as
 * Go's runtime does, then a crash:
 * - a signal sent to itself (tgkill) whose handler pushes the interrupted
 *   address and sends the context to preempt_stub, which returns there
 *   (Go's asynchronous preemption: SIGURG, runtime.asyncPreempt), 8 times,
 *   one of them delivered as the first handler's rt_sigreturn returns;
 * - a return into a page that is not executable at that moment: the
 *   SIGSEGV handler makes it executable and returns; QEMU's records do
 *   not say where the return went (the signal frame holds the ret), and
 *   rt_sigreturn goes to the return address, 8 times, the last time with
 *   the rest of the program called from that page;
 * then a NULL store in crash_here (called by outer) whose handler sends
 * the context to panic_entry as if crash_here had called it (Go's
 * sigpanic); it calls panic_fn, which is preempted 4 times more by a
 * timer while it spins, then aborts.  The fault is crash_here's store
 * (SIGSEGV), the process dies of SIGABRT, and the stack at the fault is
 * crash_here <- outer <- (the lazy page) <- main, with no signal frame. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <ucontext.h>
#include <unistd.h>

#define PAGE 4096

static unsigned char *lazy;
int *volatile null_ptr;
volatile long preempt_count;

void preempt_stub(void);
long do_tgkill(long pid, long tid, long sig);
void spin(void);
extern const char spin_end[];
void panic_entry(void);
/* Neither uses the red zone: the handler pushes a return address below
 * the interrupted stack pointer. */
__asm__(".text\n"
	".globl preempt_stub\n"
	"preempt_stub:\n"
	"	pushfq\n"
	"	lock incq preempt_count(%rip)\n"
	"	popfq\n"
	"	ret\n"
	".globl do_tgkill\n"
	"do_tgkill:\n"
	"	mov $234, %eax\n"
	"	syscall\n"
	"	ret\n"
	".globl spin\n"
	"spin:\n"
	"	cmpq $12, preempt_count(%rip)\n"
	"	jl spin\n"
	"	ret\n"
	".globl spin_end\n"
	"spin_end:\n"
	/* entered from anywhere: align the stack for C, never return */
	".globl panic_entry\n"
	"panic_entry:\n"
	"	and $-16, %rsp\n"
	"	call panic_fn\n"
	"	ud2\n");

/* Go's panic path is preempted too: more episodes after the fault's,
 * asynchronous ones (a timer's SIGALRM while it spins) */
__attribute__((noinline)) void panic_fn(void)
{
	struct itimerval it = { { 0, 100 }, { 0, 100 } };

	setitimer(ITIMER_REAL, &it, NULL);
	spin();
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	abort();
}

static void inject(ucontext_t *uc, void (*to)(void))
{
	greg_t *g = uc->uc_mcontext.gregs;

	g[REG_RSP] -= 8;
	*(greg_t *)g[REG_RSP] = g[REG_RIP];
	g[REG_RIP] = (greg_t)(uintptr_t)to;
}

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	if (lazy && (uintptr_t)si->si_addr >= (uintptr_t)lazy &&
	    (uintptr_t)si->si_addr < (uintptr_t)lazy + PAGE) {
		mprotect(lazy, PAGE, PROT_READ | PROT_EXEC);
		return;
	}
	inject(uc, panic_entry);
}

static void on_urg(int sig, siginfo_t *si, void *uc)
{
	static int resend = 1;
	uintptr_t ip = (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];

	(void)si;
	/* once: a SIGURG sent while SIGURG is blocked here is delivered as
	 * this handler's rt_sigreturn returns, before the context it
	 * restores (preempt_stub's entry) runs an instruction; that
	 * handler leaves it as it is */
	if (sig == SIGURG && resend) {
		resend = 0;
		do_tgkill(getpid(), gettid(), SIGURG);
	}
	/* the timer's: only in spin (other code may use the red zone) */
	if ((sig == SIGURG && ip != (uintptr_t)preempt_stub) ||
	    (ip >= (uintptr_t)spin && ip < (uintptr_t)spin_end))
		inject(uc, preempt_stub);
}

/* Called from the lazy page: takes its execute right away before
 * returning into it. */
__attribute__((noinline)) void unmap_lazy(void)
{
	mprotect(lazy, PAGE, PROT_NONE);
}

__attribute__((noinline)) void crash_here(int v)
{
	*null_ptr = v;
}

__attribute__((noinline)) int outer(int v)
{
	crash_here(v);
	return v + 1;
}

__attribute__((noinline)) int noop(int v)
{
	return v;
}

int main(void)
{
	/* the lazy page: push %rsi; call *%rdi; mov (%rsp),%rsi; call *%rsi;
	 * pop %rsi; ret */
	static const unsigned char code[] = { 0x56, 0xff, 0xd7, 0x48, 0x8b,
					      0x34, 0x24, 0xff, 0xd6, 0x5e,
					      0xc3 };
	struct sigaction sa;
	unsigned char *m = mmap(NULL, PAGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void (*page)(void (*)(void), int (*)(int)) = (void *)m;

	if (m == MAP_FAILED)
		return 3;
	memcpy(m, code, sizeof(code));
	mprotect(m, PAGE, PROT_READ | PROT_EXEC);
	lazy = m;
	memset(&sa, 0, sizeof(sa));
	sa.sa_flags = SA_SIGINFO;
	sa.sa_sigaction = on_segv;
	sigaction(SIGSEGV, &sa, NULL);
	sa.sa_sigaction = on_urg;
	sigaction(SIGURG, &sa, NULL);
	sigaction(SIGALRM, &sa, NULL);
	/* 8 injections (the SIGURG the first handler sends is delivered on
	 * preempt_stub's entry and injects nothing) */
	for (int i = 0; i < 8; i++)
		do_tgkill(getpid(), gettid(), SIGURG);
	if (preempt_count != 8)
		return 4;
	for (int i = 0; i < 7; i++)
		page(unmap_lazy, noop);
	page(unmap_lazy, outer);
	return 5;
}
