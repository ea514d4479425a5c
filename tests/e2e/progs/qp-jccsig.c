/* SPDX-License-Identifier: MIT */
/* A fault right after a block's last conditional branch, handled, then a
 * crash: QEMU's block records do not say which way the Jcc went (its
 * target is in a page the SIGSEGV handler makes executable), so the
 * signal frame holds the Jcc and the handler's rt_sigreturn goes to its
 * target.  The target jumps on to crash_after (a tail call by an indirect
 * jump: nothing returns through the code that was interrupted), which
 * faults, and the handler puts the default action back and returns: the
 * store faults again and the process dies of SIGSEGV.  The
 * report's fault is crash_after's, and the stack at it has no frame of
 * the first, handled, episode: crash_after <- outer <- main. */
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define PAGE 4096

static unsigned char *lazy;
int *volatile null_ptr;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	(void)sig;
	(void)uc;
	if (lazy && (uintptr_t)si->si_addr >= (uintptr_t)lazy &&
	    (uintptr_t)si->si_addr < (uintptr_t)lazy + PAGE) {
		mprotect(lazy, PAGE, PROT_READ | PROT_EXEC);
		return;
	}
	signal(SIGSEGV, SIG_DFL);
}

__attribute__((noinline)) static void crash_after(int v)
{
	*null_ptr = v;
}

__attribute__((noinline)) static int outer(int (*fn)(int), int v)
{
	return fn(v) + 1;   /* fn ends in crash_after, which does not return */
}

int main(void)
{
	/* A: test edi,edi; jne B (rel32); xor eax,eax; ret
	 * B (next page): movabs rax, crash_after; jmp *rax */
	unsigned char a[] = { 0x85, 0xff, 0x0f, 0x85, 0, 0, 0, 0, 0x31, 0xc0,
			      0xc3 };
	unsigned char b[] = { 0x48, 0xb8, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xe0 };
	uint64_t to = (uint64_t)(uintptr_t)crash_after;
	int32_t rel = PAGE - 8;
	struct sigaction sa;
	unsigned char *m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		return 3;
	memcpy(a + 4, &rel, sizeof(rel));
	memcpy(b + 2, &to, sizeof(to));
	memcpy(m, a, sizeof(a));
	memcpy(m + PAGE, b, sizeof(b));
	mprotect(m, PAGE, PROT_READ | PROT_EXEC);
	mprotect(m + PAGE, PAGE, PROT_NONE);
	lazy = m + PAGE;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	sigaction(SIGSEGV, &sa, NULL);
	return outer((int (*)(int))(void *)m, 1);
}
