// SPDX-License-Identifier: MIT
/* Code the program makes at run time, at a fixed address (the same
 * natively and emulated), argv[1]:
 *   memfd    written to a memfd, mapped executable, called: it loads from
 *            address 0;
 *   rewrite  RWX page: a first version returns 7 and runs, then the same
 *            bytes are rewritten in place to a version that loads from 0;
 *   anon     an anonymous executable page that loads from 0. */
#define _GNU_SOURCE
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define JIT_ADDR ((void *)0x7e0000000000UL)

/* mov eax, 7; ret */
static const unsigned char v1[] = {0xb8, 0x07, 0x00, 0x00, 0x00, 0xc3};
/* nop; xor ecx, ecx; mov eax, [rcx]; add eax, 1; ret */
static const unsigned char v2[] = {0x90, 0x31, 0xc9, 0x8b, 0x01, 0x83,
				   0xc0, 0x01, 0xc3};

typedef int (*fn)(void);

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "anon";
	void *p;

	if (!strcmp(m, "memfd")) {
		int fd = memfd_create("corpus-jit", MFD_CLOEXEC);
		if (fd < 0 || ftruncate(fd, 4096) ||
		    pwrite(fd, v2, sizeof(v2), 0) != (ssize_t)sizeof(v2))
			return 3;
		p = mmap(JIT_ADDR, 4096, PROT_READ | PROT_EXEC,
			 MAP_PRIVATE | MAP_FIXED_NOREPLACE, fd, 0);
	} else {
		p = mmap(JIT_ADDR, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
			 MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
			 -1, 0);
		if (p == JIT_ADDR)
			memcpy(p, !strcmp(m, "rewrite") ? v1 : v2,
			       !strcmp(m, "rewrite") ? sizeof(v1) : sizeof(v2));
	}
	if (p != JIT_ADDR)
		return 3;
	if (!strcmp(m, "rewrite")) {
		printf("first version: %d\n", ((fn)p)());
		fflush(stdout);
		memcpy(p, v2, sizeof(v2));
		__builtin___clear_cache((char *)p, (char *)p + sizeof(v2));
	}
	printf("calling %s code\n", m);
	fflush(stdout);
	return ((fn)p)();
}
