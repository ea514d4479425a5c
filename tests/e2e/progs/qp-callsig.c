// SPDX-License-Identifier: MIT
/*
 * A signal taken right after a direct call, before the callee's first
 * instruction, then the callee runs and returns: the pattern Go's
 * asynchronous preemption (SIGURG) hits at random.  Here it is
 * deterministic: the callee's page is not executable until the SIGSEGV
 * handler makes it so (code loaded lazily), so the guest gets the signal
 * at the callee's address with the call done and its return address
 * pushed.
 *
 * Each of ROUNDS rounds maps a fresh pair of pages of code:
 *   page A:  call B   e8 rel32       (B = A + 4096)
 *            ret      c3
 *   page B:  lea 1(%rdi),%eax  8d 47 01
 *            ret      c3              (still PROT_NONE when called)
 * and calls A from C (nested, so that the return after A's is one a
 * return-compressing encoder compresses).  Then it crashes in C.
 * Writes "jit=0x... jit=0x... ..." (every page A) to argv[1].
 */
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define ROUNDS 32
#define PAGE 4096

static unsigned char *lazy[ROUNDS];
static volatile int nfaults;
int *volatile null_ptr;

static void on_segv(int sig, siginfo_t *si, void *uc)
{
	uintptr_t a = (uintptr_t)si->si_addr;

	(void)sig;
	(void)uc;
	for (int i = 0; i < ROUNDS; i++) {
		uintptr_t b = (uintptr_t)lazy[i];

		if (lazy[i] && a >= b && a < b + PAGE) {
			nfaults++;
			if (mprotect(lazy[i], PAGE, PROT_READ | PROT_EXEC))
				_exit(2);
			return;
		}
	}
	_exit(3);
}

__attribute__((noinline)) static int call_jit(int (*fn)(int), int v)
{
	int r = fn(v);

	__asm__ volatile("" ::: "memory");
	return r + 1;
}

__attribute__((noinline)) static int round_trip(int (*fn)(int), int v)
{
	int r = call_jit(fn, v);

	__asm__ volatile("" ::: "memory");
	return r * 2;
}

__attribute__((noinline)) static void crash_after(int v)
{
	*null_ptr = v; /* e2e: fault */
}

int main(int argc, char **argv)
{
	static const unsigned char a_code[] = {
		0xe8, (PAGE - 5) & 0xff, (PAGE - 5) >> 8, 0, 0,
		0xc3,
	};
	static const unsigned char b_code[] = { 0x8d, 0x47, 0x01, 0xc3 };
	struct sigaction sa;
	FILE *f = argc > 1 ? fopen(argv[1], "w") : NULL;
	int v = 0;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_segv;
	sa.sa_flags = SA_SIGINFO;
	if (sigaction(SIGSEGV, &sa, NULL))
		return 1;
	for (int i = 0; i < ROUNDS; i++) {
		unsigned char *m = mmap(NULL, 2 * PAGE, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		if (m == MAP_FAILED)
			return 1;
		memcpy(m, a_code, sizeof(a_code));
		memcpy(m + PAGE, b_code, sizeof(b_code));
		if (mprotect(m, PAGE, PROT_READ | PROT_EXEC) ||
		    mprotect(m + PAGE, PAGE, PROT_NONE))
			return 1;
		lazy[i] = m + PAGE;
		if (f)
			fprintf(f, "jit=%p\n", (void *)m);
		v = round_trip((int (*)(int))(void *)m, v);
	}
	if (f)
		fclose(f);
	if (nfaults != ROUNDS)
		return 4;
	signal(SIGSEGV, SIG_DFL);
	crash_after(v);
	return 0;
}
