// SPDX-License-Identifier: MIT
/*
 * Print a snapshot's decoded times for scripts (tests/qemu/time.py,
 * tests/export/perf-time.py): the clock, then one line per block and per
 * call entry of every thread:
 *   clock=NAME | clock=none
 *   steps=TEXT
 *   B TID INDEX IP NINSN TIME_NS FLAGS END_IP
 *   I TID INDEX KIND IP TIME_NS FLAGS    (other items: far, async, ...)
 *   C TID INDEX DEPTH TIME_NS END_TIME_NS FLAGS SYMBOL
 * FLAGS is a hex number of BTRACE_TIME_*.
 */
#include <stdio.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>

int main(int argc, char **argv)
{
	struct btrace_snapshot *s;
	struct btrace_decode_result *r;
	struct btrace_error err;

	if (argc != 2) {
		fprintf(stderr, "usage: qemu-timedump FILE.btrace\n");
		return 2;
	}
	if (btrace_snapshot_read(argv[1], 0, &s, &err)) {
		fprintf(stderr, "qemu-timedump: %s\n", err.msg);
		return 1;
	}
	if (btrace_decode(s, NULL, &r, &err)) {
		fprintf(stderr, "qemu-timedump: %s\n", err.msg);
		btrace_snapshot_free(s);
		return 1;
	}
	printf("clock=%s\n", r->clock ? r->clock : "none");
	if (r->time_steps)
		printf("steps=%s\n", r->time_steps);
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct btrace_thread *t = &r->threads[i];

		for (size_t k = 0; k < t->nblocks; k++) {
			const struct btrace_block *b = &t->blocks[k];

			if (b->kind != BTRACE_ITEM_BLOCK) {
				printf("I %d %zu %u 0x%llx %llu %x\n", t->tid,
				       k, b->kind, (unsigned long long)b->ip,
				       (unsigned long long)b->time_ns,
				       b->time_flags);
				continue;
			}
			printf("B %d %zu 0x%llx %u %llu %x 0x%llx\n", t->tid,
			       k, (unsigned long long)b->ip, b->ninsn,
			       (unsigned long long)b->time_ns, b->time_flags,
			       (unsigned long long)b->end_ip);
		}
		for (size_t k = 0; k < t->ncalls; k++) {
			const struct btrace_call *c = &t->calls[k];

			printf("C %d %zu %d %llu %llu %x %s\n", t->tid, k,
			       c->depth, (unsigned long long)c->time_ns,
			       (unsigned long long)c->end_time_ns,
			       c->time_flags,
			       c->sym && c->sym->function ? c->sym->function : "?");
		}
	}
	btrace_decode_result_free(r);
	btrace_snapshot_free(s);
	return 0;
}
