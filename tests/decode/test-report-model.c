/* SPDX-License-Identifier: MIT */
/*
 * The report model from C (include/btrace/report.h), against what `btrace
 * report --json` says of the same snapshot:
 *
 *	test-report-model SNAPSHOT KEY=VALUE...
 *
 * decodes SNAPSHOT as btrace report does by default (the tail, 16 calls
 * and blocks), builds the model with btrace_report_build() and checks
 * that each KEY of it has VALUE (report-model.py takes them from the JSON
 * report).  Keys: signal.number, signal.name, signal.code_name,
 * cause.kind, cause.text, native_exec, fault.tid, fault.kind, fault.ip,
 * fault.function, fault.exact, fault.how, death.after_fault,
 * death.exit_code, limits (names, comma-separated), stack (the crashed
 * thread's functions, innermost first, comma-separated), nthreads,
 * timeline_order ("time", "per_thread"), timeline.last (the last event of
 * the timeline: "tid:kind:function"), origin.operand, origin.value,
 * origin.chain (each link's ip/kind/value, comma-separated).  A
 * value "null" is a NULL string or an absent object.  Prints TAP.
 */
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/decode.h>
#include <btrace/report.h>
#include <btrace/snapshot.h>

static char buf[8192];

static const char *str(const char *s)
{
	return s ? s : "null";
}

static const char *num(long long v)
{
	snprintf(buf, sizeof(buf), "%lld", v);
	return buf;
}

static const char *hex(unsigned long long v)
{
	snprintf(buf, sizeof(buf), "0x%llx", v);
	return buf;
}

/* A list of names into buf, comma-separated. */
static void add(size_t *n, const char *s)
{
	*n += (size_t)snprintf(buf + *n, sizeof(buf) - *n, "%s%s",
			       *n ? "," : "", s ? s : "null");
	if (*n >= sizeof(buf))
		*n = sizeof(buf) - 1;
}

/* The model's value of @key, NULL when the key is not known. */
static const char *value(const struct btrace_report *rep, const char *key)
{
	const struct btrace_report_thread *ct = rep->crashed;
	const struct btrace_fault *ft = ct ? &ct->thread->fault : NULL;
	int fault = ft && ft->found;
	size_t n = 0;

	if (!strncmp(key, "signal.", 7) && !rep->has_signal)
		return "null";
	if (!strcmp(key, "signal.number"))
		return num(rep->signal.number);
	if (!strcmp(key, "signal.name"))
		return str(rep->signal.name);
	if (!strcmp(key, "signal.code_name"))
		return str(rep->signal.code_name);
	if (!strcmp(key, "cause.kind"))
		return str(rep->cause.name);
	if (!strcmp(key, "cause.text"))
		return str(rep->cause.text);
	if (!strcmp(key, "native_exec"))
		return str(rep->native_exec);
	if (!strncmp(key, "fault.", 6) && !fault)
		return "null";
	if (!strcmp(key, "fault.tid"))
		return num(ct->thread->tid);
	if (!strcmp(key, "fault.kind"))
		return ft->kind == BTRACE_FAULT_KIND_SENT ? "sent" : "fault";
	if (!strcmp(key, "fault.ip"))
		return ct->fault_in_block ? "null" : hex(ft->ip);
	if (!strcmp(key, "fault.function"))
		return str(btrace_symbol_name(&ft->sym, 0));
	if (!strcmp(key, "fault.exact"))
		return ft->exact ? "true" : "false";
	if (!strcmp(key, "fault.how"))
		return str(ft->how);
	if (!strncmp(key, "death.", 6) && !rep->death.known)
		return "null";
	if (!strcmp(key, "death.after_fault"))
		return rep->death.after_fault ? "true" : "false";
	if (!strcmp(key, "death.exit_code"))
		return rep->death.has_exit_code ? num(rep->death.exit_code) : "null";
	if (!strcmp(key, "limits")) {
		buf[0] = 0;
		for (size_t i = 0; i < rep->nlimits; i++)
			add(&n, rep->limits[i].name);
		return buf;
	}
	if (!strcmp(key, "stack")) {
		const struct btrace_thread *t = ct ? ct->thread :
			rep->nthreads ? rep->threads[0].thread : NULL;
		buf[0] = 0;
		for (size_t i = 0; t && i < t->nstack; i++)
			add(&n, btrace_symbol_name(&t->stack[i].sym,
						   t->stack[i].flags));
		return buf;
	}
	if (!strcmp(key, "nthreads"))
		return num((long long)rep->nthreads);
	if (!strcmp(key, "timeline_order"))
		return rep->timeline_timed ? "time" : "per_thread";
	if (!strcmp(key, "timeline.last")) {
		const struct btrace_report_event *e;
		if (!rep->ntimeline)
			return "null";
		e = &rep->timeline[rep->ntimeline - 1];
		snprintf(buf, sizeof(buf), "%d:%s:%s", e->thread->thread->tid,
			 btrace_event_kind_name(e->kind),
			 str(btrace_symbol_name(e->sym, 0)));
		return buf;
	}
	if (!strncmp(key, "origin.", 7) && !rep->origin)
		return "null";
	if (!strcmp(key, "origin.operand"))
		return str(rep->origin->operand);
	if (!strcmp(key, "origin.value"))
		return rep->origin->has_value ? hex(rep->origin->value) : "null";
	if (!strcmp(key, "origin.chain")) {
		char one[128];
		buf[0] = 0;
		for (size_t i = 0; i < rep->origin->nchain; i++) {
			const struct btrace_origin_link *l = &rep->origin->chain[i];
			if (l->has_value)
				snprintf(one, sizeof(one), "0x%llx/%u/0x%llx",
					 (unsigned long long)l->ip, l->kind,
					 (unsigned long long)l->value);
			else
				snprintf(one, sizeof(one), "0x%llx/%u/null",
					 (unsigned long long)l->ip, l->kind);
			add(&n, one);
		}
		return buf;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	struct btrace_decode_opts d = { .sz = sizeof(d) };
	struct btrace_snapshot *snap;
	struct btrace_decode_result *r;
	struct btrace_report *rep;
	struct btrace_error err;
	char dir[4096];
	int failed = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: test-report-model SNAPSHOT KEY=VALUE...\n");
		return 2;
	}
	if (btrace_snapshot_read(argv[1], BTRACE_READ_LENIENT, &snap, &err) < 0) {
		printf("Bail out! %s: %s\n", argv[1], err.msg);
		return 1;
	}
	snprintf(dir, sizeof(dir), "%s", argv[1]);
	d.search_dir = dirname(dir);
	d.unit = BTRACE_UNIT_CALLS;
	d.last = d.keep = 16 + 8;           /* btrace report's default */
	if (btrace_decode(snap, &d, &r, &err) < 0 ||
	    btrace_report_build(snap, r, &rep, &err) < 0) {
		printf("Bail out! %s: %s\n", argv[1], err.msg);
		return 1;
	}
	/* the model points into the result */
	if (rep->decode != r || rep->nthreads != r->nthreads ||
	    (r->crashed_thread >= 0 &&
	     rep->crashed != &rep->threads[r->crashed_thread])) {
		printf("not ok 1 - the model's threads are the result's\n");
		failed++;
	} else {
		printf("ok 1 - the model's threads are the result's\n");
	}
	for (int i = 2; i < argc; i++) {
		char *eq = strchr(argv[i], '=');
		const char *got;

		if (!eq) {
			printf("Bail out! argument %s is not KEY=VALUE\n", argv[i]);
			return 2;
		}
		*eq = 0;
		got = value(rep, argv[i]);
		if (got && !strcmp(got, eq + 1)) {
			printf("ok %d - %s = %s\n", i, argv[i], got);
		} else {
			printf("not ok %d - %s: the JSON report says '%s', the model '%s'\n",
			       i, argv[i], eq + 1, got ? got : "(unknown key)");
			failed++;
		}
	}
	printf("1..%d\n", argc - 1);
	btrace_report_free(rep);
	btrace_decode_result_free(r);
	btrace_snapshot_free(snap);
	return failed != 0;
}
