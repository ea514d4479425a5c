// SPDX-License-Identifier: MIT
/*
 * A JIT that patches code it ran, runs the patched code, then poisons it
 * (as a JIT that frees code does) and crashes in C right after: the trace
 * runs through code whose bytes at the end are no longer those that ran.
 * The code writes to its own page too (self-modifying, a counter next to
 * the code), which QEMU resolves by itself.
 * Writes "jit=0x... fault=0x..." to argv[1].
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/*
 * int f(int x) { counter++; if (x > K) x -= K; return x + 1; }
 *   incl  counter(%rip)      ff 05 rel32   (counter: 64 bytes after)
 *   cmp   $K,%edi            83 ff K
 *   jle   +3                 7e 03
 *   sub   $K,%edi            83 ef K
 *   lea   1(%rdi),%eax       8d 47 01
 *   ret                      c3
 */
static unsigned char code[] = {
	0xff, 0x05, 0, 0, 0, 0,
	0x83, 0xff, 0x10,
	0x7e, 0x03,
	0x83, 0xef, 0x10,
	0x8d, 0x47, 0x01,
	0xc3,
};
#define COUNTER_OFF 64

int *volatile null_ptr;

__attribute__((noinline)) static void crash_after_jit(int v)
{
	*null_ptr = v; /* e2e: fault */
}

int main(int argc, char **argv)
{
	unsigned char *m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int (*fn)(int) = (int (*)(int))(void *)m;
	int rel = COUNTER_OFF - 6, v = 0;
	FILE *f;

	if (m == MAP_FAILED)
		return 1;
	if (argc > 1 && (f = fopen(argv[1], "w"))) {
		fprintf(f, "jit=%p fault=%p\n", (void *)m,
			(void *)crash_after_jit);
		fclose(f);
	}
	memcpy(code + 2, &rel, 4);
	memcpy(m, code, sizeof(code));
	for (int i = 0; i < 40; i++)
		v += fn(i);
	m[8] = 0x20;   /* patch K in place: cmp $0x20 */
	m[13] = 0x20;  /*                   sub $0x20 */
	for (int i = 0; i < 40; i++)
		v += fn(i);
	memset(m, 0xcc, sizeof(code));   /* poison: the JIT dropped it */
	crash_after_jit(v);
	return 0;
}
