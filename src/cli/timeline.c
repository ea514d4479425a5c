/* SPDX-License-Identifier: MIT */
/*
 * The timeline of a report in the Chrome Trace Event format (the JSON that
 * Perfetto's UI and chrome://tracing load): per thread, the call entries
 * as nested slices (B/E events: the function, its module and source line
 * as arguments), gaps as slices of category "gap", the fault as an
 * instant event with the signal, process and thread names (the crashed
 * thread sorted first).  btrace export --timeline writes it, btrace view
 * embeds it.  docs/export.md, "Timeline".
 *
 * The time axis: with times (btrace_report.timeline_timed) nanoseconds of
 * the snapshot's clock from the earliest event, one axis for all threads.
 * Without, each thread's instructions (1 instruction = 1 us on the axis),
 * every thread's kept history ending at the same point (the end of the
 * recording): the threads are not aligned in time, and the trace says so
 * in "otherData" and in each thread's name.
 */
#include <stdlib.h>
#include <string.h>

#include <btrace/decode.h>
#include <btrace/report.h>
#include <btrace/snapshot.h>

#include "cli.h"

/* An open slice: a call entry (its function) or a gap (@gap). */
struct slice {
	int32_t depth;
	int gap;
	const struct btrace_symbol *sym;
};

struct chrome {
	struct json *j;
	const struct btrace_report *rep;
	int32_t pid, tid;
	int timed;
	uint64_t t0;               /* timed: the earliest time */
	uint64_t now;              /* the thread's clock (ns on the axis) */
	uint64_t insns;            /* untimed: instructions so far (from the
				    * thread's offset: all threads end at
				    * @total) */
	uint64_t total;            /* untimed: the most instructions of a
				    * thread's call entries */
	struct slice *st;
	size_t n, cap;
	int oom;
};

static void ev_head(struct chrome *c, const char *ph, uint64_t ts)
{
	json_begin_object(c->j, NULL);
	json_str(c->j, "ph", ph);
	json_int(c->j, "pid", c->pid);
	json_int(c->j, "tid", c->tid);
	json_micros(c->j, "ts", ts);
}

/* The name a slice gets: the function, else module+offset, else the
 * address. */
static const char *slice_name(char *buf, size_t len, uint64_t ip,
			      const struct btrace_symbol *s)
{
	const char *fn = btrace_symbol_name(s, 0);
	const char *m = s ? s->module : NULL, *b = m ? strrchr(m, '/') : NULL;

	if (fn)
		return fn;
	if (m)
		snprintf(buf, len, "%s+0x%llx", b ? b + 1 : m,
			 (unsigned long long)s->module_offset);
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)ip);
	return buf;
}

static void sym_args(struct json *j, uint64_t ip, const struct btrace_symbol *s)
{
	json_hex(j, "ip", ip);
	json_str(j, "module", s ? s->module : NULL);
	json_str(j, "file", s ? s->file : NULL);
	if (s && s->line)
		json_int(j, "line", s->line);
	else
		json_null(j, "line");
}

static void pop(struct chrome *c)
{
	ev_head(c, "E", c->now);
	json_end_object(c->j);
	c->n--;
}

/* Open slice @s (before its B event is written); -1 out of memory. */
static int push(struct chrome *c, struct slice s)
{
	if (c->n == c->cap) {
		size_t nc = c->cap ? 2 * c->cap : 32;
		struct slice *p = realloc(c->st, nc * sizeof(*p));
		if (!p) {
			c->oom = 1;
			return -1;
		}
		c->st = p;
		c->cap = nc;
	}
	c->st[c->n++] = s;
	return 0;
}

/* The axis time of something at @time_ns (0: not known, now). */
static void advance(struct chrome *c, uint64_t time_ns)
{
	uint64_t t = c->timed ? (time_ns > c->t0 ? time_ns - c->t0 : 0) :
		     c->insns * 1000;

	if (c->timed && !time_ns)
		t = c->now;
	if (t > c->now)
		c->now = t;
}

static void gap_slice(struct chrome *c, const char *name, const char *reason,
		      uint64_t n)
{
	while (c->n)
		pop(c);
	if (push(c, (struct slice){ .depth = -1, .gap = 1 }))
		return;
	ev_head(c, "B", c->now);
	json_str(c->j, "name", name);
	json_str(c->j, "cat", "gap");
	json_begin_object(c->j, "args");
	json_str(c->j, "reason", reason);
	if (n)
		json_uint(c->j, "calls", n);
	json_end_object(c->j);
	json_end_object(c->j);
}

static int same_fn(const struct btrace_symbol *a, const struct btrace_symbol *b)
{
	const char *x = btrace_symbol_name(a, 0), *y = btrace_symbol_name(b, 0);

	return a == b || (x && y && !strcmp(x, y));
}

/* Call entry @i of @t. */
static void call_entry(struct chrome *c, const struct btrace_thread *t,
		       size_t i)
{
	const struct btrace_call *cl = &t->calls[i];
	char buf[160], name[64];

	advance(c, btrace_time_known(cl->time_ns, cl->time_flags));
	if (cl->flags & BTRACE_CALL_GAP) {
		const struct btrace_gap *g = &t->gaps[cl->gap];
		snprintf(name, sizeof(name), "gap: %s",
			 btrace_gap_kind_name(g->kind));
		gap_slice(c, name, g->reason, 0);
	} else {
		int back = i > 0 && !(cl[-1].flags & BTRACE_CALL_GAP) &&
			   cl[-1].depth > cl->depth;
		while (c->n && (c->st[c->n - 1].gap ||
				c->st[c->n - 1].depth > cl->depth))
			pop(c);
		if (c->n && c->st[c->n - 1].depth == cl->depth) {
			/* back in the caller whose slice is open: it goes on */
			if (!back || !same_fn(c->st[c->n - 1].sym, cl->sym))
				pop(c);
		}
		if (!c->n || c->st[c->n - 1].depth < cl->depth) {
			const char *via = btrace_call_via(t, cl);
			if (push(c, (struct slice){ .depth = cl->depth,
						    .sym = cl->sym }))
				return;
			ev_head(c, "B", c->now);
			json_str(c->j, "name", slice_name(buf, sizeof(buf),
							  cl->ip, cl->sym));
			json_str(c->j, "cat", cl->flags & BTRACE_CALL_SIGNAL ?
				 "signal handler" : "call");
			json_begin_object(c->j, "args");
			sym_args(c->j, cl->ip, cl->sym);
			if (via)
				json_str(c->j, "via", via);
			if (cl->flags & BTRACE_CALL_TAILCALL)
				json_bool(c->j, "tail_call", true);
			if (cl->flags & BTRACE_CALL_PARTIAL)
				json_bool(c->j, "partial", true);
			json_end_object(c->j);
			json_end_object(c->j);
		}
	}
	c->insns += cl->ninsn;
	/* (the end of an entry has the time of its start's kind) */
	advance(c, btrace_time_known(cl->end_time_ns, cl->time_flags));
}

/* The fault of @rt as an instant event, with the signal. */
static void fault_event(struct chrome *c, const struct btrace_report_thread *rt)
{
	const struct btrace_thread *t = rt->thread;
	const struct btrace_fault *ft = &t->fault;
	const struct btrace_report *rep = c->rep;
	const char *sig = rep->has_signal ? rep->signal.name : NULL;
	uint64_t ip = rt->fault_in_block ? ft->block_ip : ft->ip;
	char buf[160], name[256];

	if (ft->block_index < t->nblocks)
		advance(c, btrace_time_known(t->blocks[ft->block_index].time_ns,
					     t->blocks[ft->block_index].time_flags));
	snprintf(name, sizeof(name), "%s%s in %s",
		 t->crashed && sig ? sig : "",
		 ft->kind == BTRACE_FAULT_KIND_SENT ? " (sent)" :
		 t->crashed && sig ? ": fault" : "fault",
		 slice_name(buf, sizeof(buf), ip, &ft->sym));
	ev_head(c, "i", c->now);
	json_str(c->j, "name", name);
	json_str(c->j, "cat", "fault");
	json_str(c->j, "s", "t");
	json_begin_object(c->j, "args");
	json_str(c->j, "signal", t->crashed ? sig : NULL);
	json_str(c->j, "code", t->crashed && rep->has_signal ?
		 rep->signal.code_name : NULL);
	if (t->crashed && rep->has_signal && rep->signal.has_address)
		json_hex(c->j, "address", rep->signal.address);
	json_str(c->j, "function", btrace_symbol_name(&ft->sym, 0));
	sym_args(c->j, ip, &ft->sym);
	json_str(c->j, "instruction", ft->insn[0] ? ft->insn : NULL);
	json_bool(c->j, "exact", ft->exact);
	json_str(c->j, "how", ft->how);
	json_end_object(c->j);
	json_end_object(c->j);
}

static void meta(struct chrome *c, const char *name, const char *key,
		 const char *s, long long v)
{
	json_begin_object(c->j, NULL);
	json_str(c->j, "ph", "M");
	json_int(c->j, "pid", c->pid);
	json_int(c->j, "tid", c->tid);
	json_str(c->j, "name", name);
	json_begin_object(c->j, "args");
	if (s)
		json_str(c->j, key, s);
	else
		json_int(c->j, key, v);
	json_end_object(c->j);
	json_end_object(c->j);
}

static uint64_t thread_insns(const struct btrace_thread *t)
{
	uint64_t n = 0;

	for (size_t i = 0; i < t->ncalls; i++)
		n += t->calls[i].ninsn;
	return n;
}

static void thread_events(struct chrome *c, const struct btrace_report_thread *rt,
			  size_t idx)
{
	const struct btrace_thread *t = rt->thread;
	char name[96];

	c->tid = t->tid >= 0 ? t->tid : 1000000 + t->cpu;
	c->now = 0;
	c->insns = c->total - thread_insns(t);
	if (!c->timed)
		c->now = c->insns * 1000;
	c->n = 0;
	if (t->tid >= 0)
		snprintf(name, sizeof(name), "tid %d%s", t->tid,
			 t->crashed ? " (crashed)" : "");
	else
		snprintf(name, sizeof(name), "cpu %d (per-cpu buffer)", t->cpu);
	if (!c->timed)
		snprintf(name + strlen(name), sizeof(name) - strlen(name),
			 ": instructions, not time");
	meta(c, "thread_name", "name", name, 0);
	meta(c, "thread_sort_index", "sort_index", NULL, (long long)idx);
	for (size_t i = 0; i < t->ncalls && !c->oom; i++) {
		if (i == rt->calls_end && t->fault.found)
			fault_event(c, rt);
		if (t->omitted_calls && i == t->omit_call_at) {
			char g[64];
			snprintf(g, sizeof(g), "%llu calls left out",
				 (unsigned long long)t->omitted_calls);
			gap_slice(c, g, "a long path after the fault is not "
				  "kept whole", t->omitted_calls);
		}
		call_entry(c, t, i);
	}
	if (rt->calls_end >= t->ncalls && t->fault.found)
		fault_event(c, rt);
	while (c->n)
		pop(c);
}

void cli_timeline_chrome(FILE *f, const struct btrace_report *rep)
{
	const struct btrace_decode_result *r = rep->decode;
	struct chrome c = { .rep = rep, .timed = rep->timeline_timed,
			    .t0 = UINT64_MAX };
	struct json j;
	char pname[128];

	json_init(&j, f, false);
	c.j = &j;
	c.pid = r->pid;
	for (size_t i = 0; c.timed && i < rep->ntimeline; i++)
		if (rep->timeline[i].time_ns && rep->timeline[i].time_ns < c.t0)
			c.t0 = rep->timeline[i].time_ns;
	for (size_t i = 0; c.timed && i < rep->nthreads; i++) {
		const struct btrace_thread *t = rep->threads[i].thread;
		uint64_t t1 = t->ncalls ? btrace_time_known(t->calls[0].time_ns,
					  t->calls[0].time_flags) : 0;
		if (t1 && t1 < c.t0)
			c.t0 = t1;
	}
	if (c.t0 == UINT64_MAX)
		c.t0 = 0;
	for (size_t i = 0; !c.timed && i < rep->nthreads; i++) {
		uint64_t n = thread_insns(rep->threads[i].thread);
		if (n > c.total)
			c.total = n;
	}
	json_begin_object(&j, NULL);
	json_begin_array(&j, "traceEvents");
	snprintf(pname, sizeof(pname), "%.100s (pid %d)",
		 r->command ? r->command : "?", r->pid);
	c.tid = 0;
	meta(&c, "process_name", "name", pname, 0);
	/* the crashed thread first: decode results put it first */
	for (size_t i = 0; i < rep->nthreads && !c.oom; i++)
		thread_events(&c, &rep->threads[i], i);
	json_end_array(&j);
	json_str(&j, "displayTimeUnit", "ns");
	json_begin_object(&j, "otherData");
	json_str(&j, "generator", "btrace export --timeline");
	json_str(&j, "time_axis", c.timed ? "ns" : "instructions");
	json_str(&j, "time_note", c.timed ?
		 "times from the trace's timing packets, one clock for all "
		 "threads; 0 is the earliest event" :
		 "the trace has no times: each thread is placed by its own "
		 "instruction count (1 instruction = 1 us on the axis), every "
		 "thread's kept history ending at the same point; the order "
		 "across threads is not known");
	json_str(&j, "signal", rep->has_signal ? rep->signal.name : NULL);
	if (rep->crashed && rep->crashed->thread->tid >= 0)
		json_int(&j, "crashed_tid", rep->crashed->thread->tid);
	else
		json_null(&j, "crashed_tid");
	json_bool(&j, "complete", !c.oom);
	json_end_object(&j);
	json_end_object(&j);
	json_finish(&j);
	free(c.st);
}

int cli_timeline_decode(const char *cmd, const struct btrace_snapshot *snap,
			struct btrace_decode_opts *d, uint64_t last,
			struct btrace_decode_result **r,
			struct btrace_report **rep)
{
	struct btrace_error err;

	*r = NULL;
	*rep = NULL;
	/* the last @last call entries of each thread, bounded memory */
	d->unit = BTRACE_UNIT_CALLS;
	d->last = last;
	d->keep = last;
	if (btrace_decode(snap, d, r, &err) < 0 ||
	    btrace_report_build(snap, *r, rep, &err) < 0) {
		btrace_decode_result_free(*r);
		*r = NULL;
		return cli_fail(cmd, &err);
	}
	if (d->tid && !(*r)->nthreads) {
		btrace_report_free(*rep);
		btrace_decode_result_free(*r);
		*r = NULL;
		*rep = NULL;
		return cli_failf(cmd, "btrace info FILE lists the buffers and "
				 "their threads", "no trace buffer for thread %d",
				 d->tid);
	}
	return 0;
}
