/* SPDX-License-Identifier: MIT */
/*
 * Fixture program for the recovery of values (decoder/values.c): in its
 * last instructions, conditional moves and sets whose conditions come from
 * compares (cmov, setcc, sbb), a signal handler that returns (rt_sigreturn
 * restores every register from the signal frame on the stack), and calls
 * made below a stack buffer of a size not known from the code (the stack
 * pointer lost, as after alloca), a spill overwritten by a vector store
 * (capstone 4 gives the EVEX store `vmovdqu64 [mem], ymm16` as a read of
 * its memory), bit scans and a division, a read-only page read and then
 * replaced by another with mmap(MAP_FIXED) (the memory at the fault is not
 * what the load read), a 32-bit store of a register whose upper half is
 * not zero, then a store through NULL; after the handler, string
 * instructions without rep (movsq up, then down after std) and with it
 * (rep stosb).  Linked with -z now: no
 * lazy binding in the window.
 */
#include <alloca.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static volatile long sink;

__attribute__((noinline)) static long pick(long a, long b, long c, long d)
{
	return a < b ? c : d;               /* cmp; cmovl */
}

__attribute__((noinline)) static int same(long a, long b)
{
	return a == b;                      /* cmp; sete */
}

__attribute__((noinline)) static unsigned long borrow(unsigned long a,
						      unsigned long b)
{
	return a < b ? ~0ul : 0;            /* cmp; sbb */
}

static void on_usr1(int sig)
{
	sink += sig;
}

__attribute__((noinline)) static long mix(long i)
{
	return pick(i, 7, i * 3, i * 5) + same(i, 4) + (long)borrow((unsigned long)i, 3);
}

__attribute__((noinline)) static long fill(char *buf, long n)
{
	long acc = 0;

	for (long i = 0; i < n; i++) {
		buf[i] = (char)i;
		acc += mix(i);
	}
	return acc;
}

__attribute__((noinline)) static long below(long n)
{
	/* a buffer of a size the path does not tell (a system call's
	 * result): the stack pointer is lost below it */
	char *buf = alloca((size_t)n + 16 * (size_t)(getpid() & 7));

	return fill(buf, n) + buf[n / 2];
}

/* 0x5eed stored to a slot, the slot overwritten with zeros by an EVEX
 * store (AVX-512VL; without it, by a plain one), and loaded back: 0. */
__attribute__((noinline, target("avx512vl"))) static long evex_store(long *p)
{
	long v;

	__asm__ volatile("movq $0x5eed, %[v]\n\t"
			 "movq %[v], 8(%[p])\n\t"
			 "vpxorq %%xmm16, %%xmm16, %%xmm16\n\t"
			 "vmovdqu64 %%ymm16, (%[p])\n\t"
			 "movq 8(%[p]), %[v]"
			 : [v] "=&r"(v) : [p] "r"(p) : "memory", "xmm16");
	return v;
}

__attribute__((noinline)) static long overwrite(void)
{
	long slot[4] = { 0 }, v;

	if (__builtin_cpu_supports("avx512vl"))
		return evex_store(slot);
	__asm__ volatile("movq $0x5eed, %[v]\n\t"
			 "movq %[v], 8(%[p])\n\t"
			 "movq $0, 8(%[p])\n\t"
			 "movq 8(%[p]), %[v]"
			 : [v] "=&r"(v) : [p] "r"(slot) : "memory");
	return v;
}

/* The highest and the lowest set bit of a value with several (bsr, bsf),
 * and a division's quotient and remainder. */
__attribute__((noinline)) static long bits(unsigned long v, unsigned d)
{
	return (63 - __builtin_clzl(v)) * 100 + __builtin_ctzl(v) +
	       (long)(v / d) * 1000 + (long)(v % d);
}

/* 0x1234 read from a read-only page, the page then replaced by a page of
 * zeros at the same address (mmap with MAP_FIXED) and read again: 0x1234
 * and 0.  At an address of the code's (a pointer the path does not tell
 * would end what is known of memory). */
#define REMAP_AT ((long *)0x3e5a00000000ul)
__attribute__((noinline)) static long remapped(void)
{
	long *p = REMAP_AT;
	long v, w;

	if (mmap(p, 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS |
		 MAP_FIXED_NOREPLACE, -1, 0) != p)
		return 0;
	p[0] = 0x1234;
	mprotect(p, 4096, PROT_READ);
	v = *(volatile long *)p;
	mmap(p, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	w = *(volatile long *)p;
	return v + w;
}

/* The low half of a value whose upper half is not zero stored in 32 bits:
 * the memory tells the low half of the register only. */
__attribute__((noinline)) static long low_half(unsigned long v)
{
	volatile int slot;

	slot = (int)v;
	return (long)(v >> 32) + slot;
}

/* movsq twice upwards, twice downwards (std), then rep stosb: rsi and
 * rdi move by 8 each time, up or down as the direction flag says, and
 * by rcx bytes with rep. */
__attribute__((noinline)) static long strings(void)
{
	long src[4] = { 1, 2, 3, 4 }, dst[4], buf[2];
	long *sp = src, *dp = dst;
	void *bp = buf;
	unsigned long n = sizeof(buf);

	__asm__ volatile("movsq\n\tmovsq" : "+S"(sp), "+D"(dp) : : "memory");
	sp = src + 3;
	dp = dst + 3;
	__asm__ volatile("std\n\tmovsq\n\tmovsq\n\tcld"
			 : "+S"(sp), "+D"(dp) : : "memory", "cc");
	__asm__ volatile("rep stosb" : "+D"(bp), "+c"(n) : "a"(0) : "memory");
	return dst[0] + dst[3] + (long)(sp - src) + (long)(dp - dst) +
	       buf[1] + (long)n;
}

static long *volatile nowhere;

__attribute__((noinline)) static void crash(long v)
{
	*nowhere = v;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	long acc = 0;

	(void)argv;
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_usr1;
	sigaction(SIGUSR1, &sa, NULL);
	for (long i = 0; i < 12; i++)
		acc += mix(i);
	kill(getpid(), SIGUSR1);
	acc += strings();
	acc += below(24 + argc);
	acc += overwrite();
	acc += bits(0x90ul + (unsigned long)argc, 7u + (unsigned)argc);
	acc += remapped();
	acc += low_half((unsigned long)acc | 0x5a5a00000000ul);
	crash(acc);
	return 0;
}
