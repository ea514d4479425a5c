// SPDX-License-Identifier: MIT
/* Print a snapshot's signal and the load address of a file as key=value
 * lines, for scripts (gdb-compare.sh) until `btrace report --json` exists. */
#include <stdio.h>
#include <string.h>

#include <btrace/snapshot.h>

int main(int argc, char **argv)
{
	struct btrace_snapshot *s;
	struct btrace_error err;

	if (argc < 3) {
		fprintf(stderr, "usage: qemu-snapinfo FILE.btrace BASENAME\n");
		return 2;
	}
	if (btrace_snapshot_read(argv[1], 0, &s, &err)) {
		fprintf(stderr, "qemu-snapinfo: %s\n", err.msg);
		return 1;
	}
	if (s->signal)
		printf("signo=%d\ntid=%d\nfault_ip=0x%llx\nfault_source=%u\n",
		       s->signal->signo, s->signal->tid,
		       (unsigned long long)s->signal->fault_ip,
		       s->signal->fault_source);
	/* The file holding the fault and the fault's offset from its base. */
	for (size_t i = 0; s->signal && i < s->nmappings; i++) {
		const struct btrace_mapping *m = &s->mappings[i];

		if (s->signal->fault_ip < m->start || s->signal->fault_ip >= m->end ||
		    !m->path)
			continue;
		for (size_t k = 0; k < s->nmappings; k++)
			if (s->mappings[k].path &&
			    !strcmp(s->mappings[k].path, m->path) &&
			    s->mappings[k].pgoff == 0) {
				printf("fault_file=%s\nfault_off=0x%llx\n",
				       strrchr(m->path, '/') ?
				       strrchr(m->path, '/') + 1 : m->path,
				       (unsigned long long)(s->signal->fault_ip -
							    s->mappings[k].start));
				break;
			}
		break;
	}
	for (size_t i = 0; i < s->nmappings; i++) {
		const char *p = s->mappings[i].path;
		const char *b = p ? strrchr(p, '/') : NULL;

		if (b && !strcmp(b + 1, argv[2]) && s->mappings[i].pgoff == 0) {
			printf("base=0x%llx\n",
			       (unsigned long long)s->mappings[i].start);
			break;
		}
	}
	btrace_snapshot_free(s);
	return 0;
}
