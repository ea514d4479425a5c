/* SPDX-License-Identifier: MIT */
/*
 * e2e-accread SNAPSHOT [values]: a snapshot's access logs through the
 * public reader, as text:
 *   signal TID RSP FAULT_IP       (the signal's thread and registers)
 *   log TID FLAGS N               (each "accesses" section)
 *   IP ADDR SIZE W|R              (its records, oldest first)
 * With "values": then "values NINSN KNOWN CONFLICTS LAST LAST_KNOWN" of
 * the crashed thread (btrace_values_build(): instructions on the path
 * (the steps that stand for folded loop turns are not counted), register
 * values known before them and at the fault, derivations that disagreed;
 * the last LAST instructions of them (at most 1,000) and the register
 * values known before those).  Exit 2 when the
 * snapshot cannot be read or decoded.
 */
#include <stdio.h>
#include <string.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>
#include <btrace/values.h>

int main(int argc, char **argv)
{
	struct btrace_snapshot *s = NULL;
	struct btrace_error err = { 0 };
	int rc = 0;

	if (argc < 2 || btrace_snapshot_read(argv[1], 0, &s, &err)) {
		fprintf(stderr, "e2e-accread: %s\n", argc < 2 ? "usage" : err.msg);
		return 2;
	}
	if (s->signal)
		printf("signal %d 0x%llx 0x%llx\n", (int)s->signal->tid,
		       (unsigned long long)s->signal->regs[BTRACE_REG_RSP],
		       (unsigned long long)s->signal->fault_ip);
	for (size_t i = 0; i < s->naccess_logs; i++) {
		const struct btrace_access_log *l = &s->access_logs[i];

		printf("log %d %u %llu\n", (int)l->tid, l->flags,
		       (unsigned long long)l->n);
		for (uint64_t k = 0; k < l->n; k++)
			printf("0x%llx 0x%llx %u %s\n",
			       (unsigned long long)l->entries[k].ip,
			       (unsigned long long)l->entries[k].addr,
			       l->entries[k].size,
			       l->entries[k].flags & BTRACE_ACCESS_FOLD ? "F" :
			       l->entries[k].flags & BTRACE_ACCESS_STORE ? "W" : "R");
	}
	if (argc > 2 && !strcmp(argv[2], "values")) {
		struct btrace_decode_opts o = { .sz = sizeof(o) };
		struct btrace_decode_result *res = NULL;
		struct btrace_values *v = NULL;
		unsigned long long known = 0, last_known = 0;
		size_t ninsn = 0, last = 0;

		if (btrace_decode(s, &o, &res, &err) < 0 ||
		    res->crashed_thread < 0 ||
		    btrace_values_build(res, (size_t)res->crashed_thread, 0,
					&v, &err) < 0) {
			fprintf(stderr, "e2e-accread: %s\n", res &&
				res->crashed_thread < 0 ? "no crashed thread" :
				err.msg);
			rc = 2;
		} else {
			for (size_t i = v->ninsn + 1; i-- > 0;) {
				unsigned k = (unsigned)__builtin_popcount(v->known[i]);
				if (i < v->ninsn && v->folded[i])
					continue;
				known += k;
				if (i == v->ninsn)
					continue;
				ninsn++;
				if (last < 1000) {
					last++;
					last_known += k;
				}
			}
			printf("values %zu %llu %llu %zu %llu\n", ninsn, known,
			       (unsigned long long)v->conflicts, last, last_known);
		}
		btrace_values_free(v);
		btrace_decode_result_free(res);
	}
	btrace_snapshot_free(s);
	return rc;
}
