/* SPDX-License-Identifier: MIT */
/*
 * The timeline from a decode result with times (the decoder fills
 * btrace_block.time_ns and btrace_call.time_ns from timing packets): a
 * synthetic result of three threads whose calls interleave in a known
 * order, and the same without times.
 *
 *	test-timeline                 TAP: the report model's timeline
 *	test-timeline --write DIR     write what the renderers make of both
 *	                              (DIR/{timed,untimed}.{txt,json,
 *	                              chrome.json,html}) for check-timeline.py
 *
 * Timed, the events are (time, thread):
 *	100 A main  200 B b1  250 C c1  300 A a1  400 B b2  500 A main
 *	(return)  600 B syscall  700 A a2  [A gap, time unknown]  800 B b1
 *	(return)  900 A a3  950 A fault; B's b3 at 1000 ran after the fault.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/decode.h>
#include <btrace/report.h>
#include <btrace/snapshot.h>

#include "cli.h"

static int n, failed;

static void ok(int cond, const char *what)
{
	printf("%sok %d - %s\n", cond ? "" : "not ", ++n, what);
	if (!cond)
		failed++;
}

/* A call entry and its first block (@kind: a block, else a gap). */
struct ent {
	int32_t depth;
	const char *fn;            /* NULL: a gap */
	uint64_t t;
	uint32_t ninsn;
	int far;                   /* a system call block after it */
};

#define MOD "/usr/bin/timeline-prog"
/* a name no page may let out of its element, and a byte not UTF-8 */
#define EVIL "evil</script><script>window.bad=1</script>\xff"

static struct btrace_symbol syms[16];
static size_t nsyms;
static struct btrace_gap gap = { .kind = BTRACE_GAP_OVERFLOW, .offset = 4096,
				 .reason = "the trace buffer overflowed" };

static const struct btrace_symbol *sym(const char *fn, uint64_t ip)
{
	for (size_t i = 0; i < nsyms; i++)
		if (!strcmp(syms[i].function, fn))
			return &syms[i];
	syms[nsyms] = (struct btrace_symbol){ .module = MOD, .function = fn,
		.outer = fn, .file = "/src/prog.c", .line = 10 + (int)nsyms,
		.module_offset = ip - 0x400000 };
	return &syms[nsyms++];
}

/* Thread @tid from @e (@ne entries); @fault_t: a fault after the last
 * entry at that time (0: no fault; -1 with @timed 0). */
static void thread(struct btrace_thread *t, int32_t tid, const struct ent *e,
		   size_t ne, uint64_t fault_t, int timed, int has_fault)
{
	size_t nb = 0;

	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->cpu = -1;
	t->blocks = calloc(2 * ne + 2, sizeof(*t->blocks));
	t->calls = calloc(ne, sizeof(*t->calls));
	t->gaps = &gap;
	t->ngaps = 1;
	for (size_t i = 0; i < ne; i++) {
		struct btrace_call *c = &t->calls[i];
		struct btrace_block *b = &t->blocks[nb];
		uint64_t ip = 0x401000 + 0x100 * (uint64_t)(e[i].fn ? e[i].fn[0] +
			      e[i].fn[strlen(e[i].fn) - 1] : 0);
		c->depth = e[i].depth;
		c->first_block = nb;
		c->nblocks = 1;
		c->ninsn = e[i].ninsn;
		if (!e[i].fn) {
			c->flags = BTRACE_CALL_GAP;
			b->kind = BTRACE_ITEM_GAP;
		} else {
			c->ip = ip;
			c->end_ip = ip + 0x20;
			c->sym = sym(e[i].fn, ip);
			c->time_ns = timed ? e[i].t : 0;
			c->end_time_ns = timed ? e[i].t + 10 : 0;
			c->time_flags = timed ? BTRACE_TIME_PACKET : 0;
			b->kind = BTRACE_ITEM_BLOCK;
			b->ip = ip;
			b->end_ip = ip + 0x20;
			b->ninsn = e[i].ninsn;
			b->sym = c->sym;
			b->time_ns = c->time_ns;
			b->time_flags = c->time_flags;
		}
		nb++;
		if (e[i].far) {
			b = &t->blocks[nb++];
			b->kind = BTRACE_ITEM_FAR;
			b->ip = ip + 0x20;
			b->end_ip = ip + 0x22;
			b->time_ns = timed ? e[i].t + 200 : 0;
			b->time_flags = timed ? BTRACE_TIME_INTERPOLATED : 0;
		}
		t->ninsn += e[i].ninsn;
	}
	t->ncalls = ne;
	if (has_fault) {
		struct btrace_block *b = &t->blocks[nb];
		struct btrace_fault *f = &t->fault;
		b->kind = BTRACE_ITEM_FAULT;
		b->ip = t->calls[ne - 1].ip + 0x8;
		b->time_ns = timed ? fault_t : 0;
		b->time_flags = timed ? BTRACE_TIME_PACKET : 0;
		f->found = 1;
		/* not exact: the report's origin (values.c) needs a result
		 * of btrace_decode(), with its code, which this is not */
		f->exact = 0;
		f->block_ip = f->block_end_ip = b->ip;
		f->block_end_sym = *t->calls[ne - 1].sym;
		f->ip = b->ip;
		f->how = "trace: the block holding the fault";
		f->sym = *t->calls[ne - 1].sym;
		f->sym.offset = 8;
		strcpy(f->insn, "mov dword ptr [rax], 1");
		f->block_index = nb;
		t->crashed = 1;
		nb++;
	}
	t->nblocks = nb;
	t->complete = 1;
}

static struct btrace_signal sig = { .tid = 101, .signo = 11, .code = 1,
				    .exit_status = -1 };
static struct btrace_snapshot snap = { .signal = &sig };

static struct btrace_decode_result *result(int timed)
{
	static const struct ent a[] = {
		{ 0, "main", 100, 5, 0 }, { 1, "a1", 300, 7, 0 },
		{ 0, "main", 500, 3, 0 }, { 1, "a2", 700, 9, 0 },
		{ 1, NULL, 0, 0, 0 }, { 1, "a3", 900, 4, 0 },
	};
	static const struct ent b[] = {
		{ 0, "b1", 200, 6, 0 }, { 1, "b2", 400, 8, 1 },
		{ 0, "b1", 800, 2, 0 }, { 1, "b3", 1000, 3, 0 },
	};
	static const struct ent c[] = {
		{ 0, EVIL, 250, 11, 0 },
	};
	struct btrace_decode_result *r = calloc(1, sizeof(*r));

	r->backend = BTRACE_BACKEND_QEMU;
	r->kind = BTRACE_TRACE_PT;
	r->pid = 101;
	r->command = "timeline-prog";
	r->signal = &sig;
	r->signal_name = "SIGSEGV";
	r->nthreads = 3;
	r->threads = calloc(3, sizeof(*r->threads));
	r->crashed_thread = 0;
	thread(&r->threads[0], 101, a, 6, 950, timed, 1);
	thread(&r->threads[1], 102, b, 4, 0, timed, 0);
	thread(&r->threads[2], 103, c, 1, 0, timed, 0);
	return r;
}

/* Call @k of @t (and its block) at time @ns. */
static void tie(struct btrace_thread *t, size_t k, uint64_t ns)
{
	t->calls[k].time_ns = ns;
	t->calls[k].end_time_ns = ns + 10;
	t->blocks[t->calls[k].first_block].time_ns = ns;
}

static void free_result(struct btrace_decode_result *r)
{
	for (size_t i = 0; i < r->nthreads; i++) {
		free(r->threads[i].blocks);
		free(r->threads[i].calls);
	}
	free(r->threads);
	free(r);
}

/* The event of call entry @cl is in the timeline with time 0, right
 * after the event before it in its thread (nothing of that thread between
 * them), and the known times are in order. */
static int untimed_in_place(const struct btrace_report *rep,
			    const struct btrace_call *cl)
{
	const struct btrace_report_thread *th = NULL;
	size_t at = SIZE_MAX;
	uint64_t last = 0;

	for (size_t i = 0; i < rep->ntimeline; i++) {
		const struct btrace_report_event *e = &rep->timeline[i];

		if (e->time_ns && e->time_ns < last)
			return 0;
		if (e->time_ns)
			last = e->time_ns;
		if (e->call == cl) {
			at = i;
			th = e->thread;
		}
	}
	if (at == SIZE_MAX || rep->timeline[at].time_ns)
		return 0;
	/* the event of cl's thread before it in the timeline is the entry
	 * before cl */
	for (size_t i = at; i-- > 0;)
		if (rep->timeline[i].thread == th)
			return rep->timeline[i].call == cl - 1;
	return cl == th->thread->calls;
}

/* "tid:kind:function" of each timeline event, space-separated. */
static const char *order(const struct btrace_report *rep)
{
	static char buf[4096];
	size_t k = 0;

	buf[0] = 0;
	for (size_t i = 0; i < rep->ntimeline; i++) {
		const struct btrace_report_event *e = &rep->timeline[i];
		const char *fn = btrace_symbol_name(e->sym, 0);
		k += (size_t)snprintf(buf + k, sizeof(buf) - k, "%s%d:%s:%s",
				      k ? " " : "", e->thread->thread->tid,
				      btrace_event_kind_name(e->kind),
				      fn == NULL ? "-" : fn == (const char *)EVIL ||
				      !strcmp(fn, EVIL) ? "evil" : fn);
	}
	return buf;
}

static void check_model(void)
{
	struct btrace_decode_result *r = result(1);
	struct btrace_report *rep;
	struct btrace_error err;
	const char *want_timed =
		"101:start:main 102:start:b1 103:start:evil 101:call:a1 "
		"102:call:b2 101:return:main 102:syscall:b2 101:call:a2 "
		"101:gap:- 102:return:b1 101:start:a3 101:fault:a3";
	const char *want_untimed =
		"102:start:b1 102:call:b2 102:syscall:b2 102:return:b1 "
		"102:call:b3 103:start:evil 101:start:main 101:call:a1 "
		"101:return:main 101:call:a2 101:gap:- 101:start:a3 "
		"101:fault:a3";

	ok(btrace_report_build(&snap, r, &rep, &err) == 0, "timed: report built");
	ok(rep->timeline_timed == 1, "timed: the timeline is in time order");
	ok(!strcmp(order(rep), want_timed), "timed: threads merged by time, "
	   "the gap after the event before it, the fault last, what ran "
	   "after it in other threads left out");
	if (strcmp(order(rep), want_timed))
		printf("# got  %s\n# want %s\n", order(rep), want_timed);
	ok(rep->ntimeline && rep->timeline[rep->ntimeline - 1].time_ns == 950 &&
	   rep->timeline[0].time_ns == 100, "timed: times of the first event "
	   "and of the fault");
	btrace_report_free(rep);
	free_result(r);

	r = result(0);
	ok(btrace_report_build(&snap, r, &rep, &err) == 0, "untimed: report built");
	ok(rep->timeline_timed == 0, "untimed: no order across threads claimed");
	ok(!strcmp(order(rep), want_untimed), "untimed: thread after thread, "
	   "each in its own order, the crashed thread last");
	if (strcmp(order(rep), want_untimed))
		printf("# got  %s\n# want %s\n", order(rep), want_untimed);
	int zero = 1;
	for (size_t i = 0; i < rep->ntimeline; i++)
		zero &= rep->timeline[i].time_ns == 0;
	ok(zero, "untimed: every time unknown (0)");
	btrace_report_free(rep);
	free_result(r);

	/* one event without a time: still merged by time (its thread has
	 * others), the event in its thread's order with no time */
	r = result(1);
	r->threads[0].calls[2].time_ns = 0;
	ok(btrace_report_build(&snap, r, &rep, &err) == 0 &&
	   rep->timeline_timed == 1 && untimed_in_place(rep,
	   &r->threads[0].calls[2]), "one event without a time: merged by "
	   "time, it follows the event before it in its thread, time 0");
	btrace_report_free(rep);
	free_result(r);

	/* a time whose flags do not say how it was obtained is not one (the
	 * bytes of memory nobody wrote) */
	r = result(1);
	r->threads[1].calls[1].time_flags = 0xb3b3b3b3;
	ok(btrace_report_build(&snap, r, &rep, &err) == 0 &&
	   untimed_in_place(rep, &r->threads[1].calls[1]),
	   "a time with invalid flags is unknown");
	btrace_report_free(rep);
	free_result(r);

	/* ties: a1 (the crashed thread 101), b2 (102) and evil (103) all at
	 * 300 ns, and b1's second call at 500 with main's return in 101: equal
	 * times go in thread order, the crashed thread last (its events are
	 * built last), and each thread's own events keep their order */
	r = result(1);
	tie(&r->threads[1], 1, 300);
	tie(&r->threads[2], 0, 300);
	tie(&r->threads[1], 2, 500);
	ok(btrace_report_build(&snap, r, &rep, &err) == 0 &&
	   rep->timeline_timed == 1, "ties: merged by time");
	{
		const char *want_ties =
			"101:start:main 102:start:b1 102:call:b2 "
			"103:start:evil 101:call:a1 102:return:b1 "
			"101:return:main 102:syscall:b2 101:call:a2 "
			"101:gap:- 101:start:a3 101:fault:a3";

		ok(!strcmp(order(rep), want_ties), "ties: equal times in "
		   "thread order (the crashed thread last), each thread in "
		   "its own order");
		if (strcmp(order(rep), want_ties))
			printf("# got  %s\n# want %s\n", order(rep), want_ties);
	}
	btrace_report_free(rep);
	free_result(r);

	/* a thread with no time at all: the order across threads is not known */
	r = result(1);
	for (size_t k = 0; k < r->threads[2].ncalls; k++)
		r->threads[2].calls[k].time_ns = 0;
	for (size_t k = 0; k < r->threads[2].nblocks; k++)
		r->threads[2].blocks[k].time_ns = 0;
	ok(btrace_report_build(&snap, r, &rep, &err) == 0 &&
	   rep->timeline_timed == 0, "a thread without any time: not merged "
	   "by time");
	btrace_report_free(rep);
	free_result(r);
	ok(btrace_time_known(5, BTRACE_TIME_PACKET) == 5 &&
	   btrace_time_known(5, BTRACE_TIME_INTERPOLATED) == 5 &&
	   btrace_time_known(5, BTRACE_TIME_AFTER) == 5 &&
	   btrace_time_known(5, 0) == 0 && btrace_time_known(5, 0x8) == 0 &&
	   btrace_time_known(5, 0x5) == 0, "btrace_time_known()");
}

static int write_file(const char *dir, const char *name,
		      const struct btrace_report *rep, int what)
{
	char path[4096];
	FILE *f;
	int rc = 0;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (!f)
		return -1;
	switch (what) {
	case 0: cli_report_text(f, "synthetic.btrace", rep, 16, 16); break;
	case 1: cli_report_json(f, rep, 16, 16); break;
	case 2: cli_timeline_chrome(f, rep); break;
	case 3: rc = cli_view_page(f, "synthetic.btrace", rep); break;
	}
	return fclose(f) || rc ? -1 : 0;
}

static int write_all(const char *dir)
{
	static const char *const ext[] = { "txt", "json", "chrome.json", "html" };

	for (int timed = 0; timed < 2; timed++) {
		struct btrace_decode_result *r = result(timed);
		struct btrace_report *rep;
		struct btrace_error err;
		char name[64];

		if (btrace_report_build(&snap, r, &rep, &err) < 0)
			return 1;
		for (int w = 0; w < 4; w++) {
			snprintf(name, sizeof(name), "%s.%s",
				 timed ? "timed" : "untimed", ext[w]);
			if (write_file(dir, name, rep, w) < 0) {
				fprintf(stderr, "test-timeline: write %s/%s failed\n",
					dir, name);
				return 1;
			}
		}
		btrace_report_free(rep);
		free_result(r);
	}
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 3 && !strcmp(argv[1], "--write"))
		return write_all(argv[2]);
	check_model();
	printf("1..%d\n", n);
	return failed ? 1 : 0;
}
