/* SPDX-License-Identifier: MIT */
/*
 * e2e-memread SNAPSHOT ADDRESS LENGTH: the LENGTH bytes at ADDRESS of a
 * snapshot's memory section (through the public reader), as
 * "TID HEXBYTES" (TID of the range that holds them: 0 for the process's
 * memory); "none" and exit 1 when no range holds them all; exit 2 when
 * the snapshot cannot be read.
 */
#include <stdio.h>
#include <stdlib.h>

#include <btrace/snapshot.h>

int main(int argc, char **argv)
{
	struct btrace_snapshot *s = NULL;
	struct btrace_error err = { 0 };
	unsigned long long addr, len;

	if (argc != 4)
		return 2;
	addr = strtoull(argv[2], NULL, 0);
	len = strtoull(argv[3], NULL, 0);
	if (btrace_snapshot_read(argv[1], 0, &s, &err)) {
		fprintf(stderr, "e2e-memread: %s\n", err.msg);
		return 2;
	}
	for (size_t i = 0; i < s->nmemory; i++) {
		const struct btrace_memory *m = &s->memory[i];

		if (addr < m->vaddr || addr - m->vaddr > m->size ||
		    len > m->size - (addr - m->vaddr))
			continue;
		printf("%d ", (int)m->tid);
		for (unsigned long long k = 0; k < len; k++)
			printf("%02x", m->data[addr - m->vaddr + k]);
		printf("\n");
		btrace_snapshot_free(s);
		return 0;
	}
	printf("none\n");
	btrace_snapshot_free(s);
	return 1;
}
