/* SPDX-License-Identifier: MIT */
/* Test program (e2e-memory): stores known patterns in a global and in a
 * heap block, says their addresses on standard error ("global 0x...",
 * "heap 0x..."), then stores through NULL.  Pattern: byte i of the global
 * is 0xa5 ^ i, of the heap block 0x3c ^ (7 * i), 256 bytes each. */
#include <stdio.h>
#include <stdlib.h>

unsigned char memory_global[256];

int main(void)
{
	unsigned char *heap = malloc(256);

	if (!heap)
		return 1;
	for (int i = 0; i < 256; i++) {
		memory_global[i] = (unsigned char)(0xa5 ^ i);
		heap[i] = (unsigned char)(0x3c ^ (7 * i));
	}
	fprintf(stderr, "global %p\nheap %p\n", (void *)memory_global,
		(void *)heap);
	fflush(stderr);
	*(volatile unsigned char *)0 = heap[1];   /* e2e: fault */
	return 0;
}
