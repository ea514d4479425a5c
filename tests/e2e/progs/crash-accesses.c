/* SPDX-License-Identifier: MIT */
/*
 * Test program (e2e-accesses): known memory accesses right before a crash.
 * fill() stores 0 .. 63 into accesses_arr[] in a short loop (one the QEMU
 * plugin folds); store_then_crash() stores 0x5eed1234 into the global
 * accesses_global (8 bytes) and 0x600dcafe into a local on its stack,
 * then loads through NULL, a pointer main() computes from what bump()
 * returns: bump() reads a[5] of main's stack array (7) before a short
 * loop (folded too) stores 0 .. 15 into a[], so the memory at the fault
 * holds 5 there, and returns what it read.  slash() looks back along a
 * path for its last '/' as dirname does, in a loop whose closing block
 * makes no access and whose other block loads.  With the argument "twice",
 * twice() (below) runs first.  pushrun() (below), before bump(),
 * pushes and pops four values.  On standard error first:
 * "global 0x...",
 * "arr 0x...", "func 0x..." (store_then_crash's address; its size is the
 * ELF symbol's).
 */
#include <stdio.h>

long accesses_global;
int accesses_arr[64];

__attribute__((noinline)) void fill(void)
{
	for (int i = 0; i < 64; i++)
		((volatile int *)accesses_arr)[i] = i;
}

__attribute__((noinline)) long bump(volatile long *a)
{
	long before = a[5];

	for (int i = 0; i < 16; i++)
		a[i] = i;
	return before;
}

__attribute__((noinline)) long slash(const volatile char *s, long n)
{
	while (n > 1 && s[n - 1] != '/')
		n--;
	return n;
}

/*
 * twice(n): a loop whose block B (.Lb, closing with a backward jmp) runs in
 * short turns (X, B: the plugin folds them) while rcx < n, then once more
 * after a long turn of six blocks (too long to fold), none of them touching
 * memory: B runs twice between the fold mark and the next access (the
 * ret), so which run the folded turns ran before is not known.  Returns
 * n + 1.
 */
long twice(long n);
__asm__(".text\n"
	".globl twice\n"
	".type twice, @function\n"
	"twice:\n"
	"	xor %ecx, %ecx\n"
	"	xor %eax, %eax\n"
	"	jmp .Lx\n"
	".Lx:\n"
	"	add $1, %rcx\n"
	"	cmp %rdi, %rcx\n"
	"	jae .Ly1\n"
	".Lb:\n"
	"	nop\n"
	"	jmp .Lx\n"
	".Ly1:\n"
	"	cmp $1, %rax\n"
	"	jae .Lout\n"
	"	add $1, %rax\n"
	"	jmp .Ly2\n"
	".Ly2:\n"
	"	mov %rcx, %rdx\n"
	"	jmp .Ly3\n"
	".Ly3:\n"
	"	add %rcx, %rdx\n"
	"	jmp .Ly4\n"
	".Ly4:\n"
	"	jmp .Lb\n"
	".Lout:\n"
	"	mov %rcx, %rax\n"
	"	ret\n"
	".size twice, .-twice\n");

/* A run of pushes and pops (a prologue's and an epilogue's): the QEMU
 * backend logs the first's stack slot alone (the others' follow from it). */
long pushrun(void);
__asm__(".text\n"
	".globl pushrun\n"
	".type pushrun, @function\n"
	"pushrun:\n"
	"	push %rbx\n"
	"	push %rbp\n"
	"	push %r12\n"
	"	push $7\n"
	"	pop %rax\n"
	"	pop %r12\n"
	"	pop %rbp\n"
	"	pop %rbx\n"
	"	ret\n"
	".size pushrun, .-pushrun\n");

__attribute__((noinline)) long store_then_crash(const long *p)
{
	volatile long local;

	accesses_global = 0x5eed1234;
	local = 0x600dcafe;
	return *(volatile const long *)p + local;   /* e2e: fault */
}

int main(int argc, char **argv)
{
	fprintf(stderr, "global %p\narr %p\nfunc %p\n", (void *)&accesses_global,
		(void *)accesses_arr, (void *)store_then_crash);
	fflush(stderr);
	if (argc > 1 && argv[1][0] == 't' && twice(5) != 6)
		return 4;
	if (pushrun() != 7)
		return 5;
	volatile long a[16];
	a[5] = 7;
	long b = bump(a);
	char path[] = "/usr/lib/x86_64-linux-gnu/libexample.so.1";
	if (slash(path, (long)sizeof(path) - 1) != 26)
		return 3;
	fill();
	return (int)store_then_crash(argc > 99 ? (const long *)argv :
				     (const long *)(b - 7));
}
