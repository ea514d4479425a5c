// SPDX-License-Identifier: MIT
/*
 * Short loops that make a system call on every turn, then a crash.
 *
 * loop2() is a cycle of two blocks, loop3() one of three, loop4() one of
 * four, each ending in a short backward branch (the kind of loop the QEMU
 * plugin may fold).  loop2() is one block of the program (no branch but
 * the closing one); QEMU ends a block at every system call, so it runs as
 * two.  A cycle of one block cannot make a system call: the system call
 * would end the block.  loop2j() is two blocks of the program, the system
 * call's block jumping forward to the closing one (three blocks for QEMU):
 *
 *   loop2:  A: 1: mov $39,%eax; syscall       (getpid)
 *           L: dec %rdx; jnz 1b               (back to A)
 *   loop2j: A as above, then
 *           J: jmp 2f                         (a direct jump forward)
 *           L: 2: dec %rdx; jnz 1b
 *   loop3:  A: mov $39,%eax; syscall          (getpid; the block ends at
 *                                              the system call)
 *           B: test %rax,%rax; jns 2f         (taken: getpid() > 0)
 *           L: 2: dec %rdx; jnz 1b            (back to A)
 *   loop4:  A, B as above, then
 *           C: cmp $0,%rax; jne 3f            (taken)
 *           L: 3: dec %rdx; jnz 1b
 *
 * Written in assembly so that the blocks are exactly these (a compiler's
 * loop, or a call to syscall(), would not be a foldable cycle at all).
 * Each runs TURNS (15) turns: the history must hold 15 system calls of
 * each loop, since the kernel ran each of them (a loop whose turns enter
 * the kernel is never folded).  Then a NULL store in main.
 */
#include <stdio.h>

#define TURNS 15

/* Block A (getpid: the block ends at the system call), then @BETWEEN,
 * then the loop block L (dec, back to A while turns remain). */
#define SYSCALL_LOOP(BETWEEN)						\
	__asm__ volatile("1:\n\t"					\
			 "mov $39, %%eax\n\t"				\
			 "syscall\n\t"					\
			 BETWEEN						\
			 "dec %%rdx\n\t"				\
			 "jnz 1b\n\t"					\
			 "mov %%rax, %0"				\
			 : "=r"(pid), "+d"(n)				\
			 :						\
			 : "rax", "rcx", "r11", "memory", "cc")

/* A, block B (a forward branch taken: getpid() > 0), then @MORE, then L. */
#define SYSLOOP(MORE)							\
	SYSCALL_LOOP("test %%rax, %%rax\n\t"				\
		     "jns 2f\n\t"					\
		     "nop\n"						\
		     "2:\n\t"						\
		     MORE)

/* A then L: the smallest loop that enters the kernel. */
__attribute__((noinline)) long loop2(long n)
{
	long pid = 0;

	SYSCALL_LOOP("");
	return pid;
}

/* A, J (a jump forward over a byte never run), then L. */
__attribute__((noinline)) long loop2j(long n)
{
	long pid = 0;

	SYSCALL_LOOP("jmp 2f\n\t"
		     "nop\n"
		     "2:\n\t");
	return pid;
}

__attribute__((noinline)) long loop3(long n)
{
	long pid = 0;

	SYSLOOP("");
	return pid;
}

__attribute__((noinline)) long loop4(long n)
{
	long pid = 0;

	/* block C: another forward branch taken */
	SYSLOOP("cmp $0, %%rax\n\t"
		"jne 3f\n\t"
		"nop\n"
		"3:\n\t");
	return pid;
}

int main(void)
{
	long a = loop2(TURNS), b = loop2j(TURNS);
	long c = loop3(TURNS), d = loop4(TURNS);

	printf("pids %ld %ld %ld %ld\n", a, b, c, d);
	fflush(stdout);
	*(volatile int *)0 = (int)(a + b + c + d);
	return 0;
}
