// SPDX-License-Identifier: MIT
/*
 * JIT: writes machine code into anonymous memory and crashes inside it.
 * argv[1]: "rwx" (mmap RWX) or "rx" (mmap RW, write, mprotect RX).
 * Writes "code=0x... fault=0x..." to argv[2].
 */
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>

/* int f(int x) { int r = 0; if (x) r++; *(int *)0 = 42; return r; } */
static const unsigned char code[] = {
	0x31, 0xc0,                   /* xor  %eax,%eax */
	0x85, 0xff,                   /* test %edi,%edi */
	0x74, 0x02,                   /* je   +2 */
	0xff, 0xc0,                   /* inc  %eax */
	0xc7, 0x04, 0x25, 0, 0, 0, 0, /* movl $42, 0x0 */
	0x2a, 0, 0, 0,
	0xc3,                         /* ret */
};
#define FAULT_OFF 8

int main(int argc, char **argv)
{
	int rwx = argc < 2 || strcmp(argv[1], "rx") != 0;
	unsigned char *m;
	int (*fn)(int);
	FILE *f;

	m = mmap(NULL, 4096, PROT_READ | PROT_WRITE | (rwx ? PROT_EXEC : 0),
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (m == MAP_FAILED)
		return 1;
	/* Some padding before, so the code is not at the page start. */
	memset(m, 0x90, 64);
	memcpy(m + 64, code, sizeof(code));
	if (!rwx && mprotect(m, 4096, PROT_READ | PROT_EXEC))
		return 1;
	if (argc > 2 && (f = fopen(argv[2], "w"))) {
		fprintf(f, "code=%p fault=%p\n", (void *)(m + 64),
			(void *)(m + 64 + FAULT_OFF));
		fclose(f);
	}
	fn = (int (*)(int))(void *)(m + 64);
	return fn(argc);
}
