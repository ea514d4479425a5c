// SPDX-License-Identifier: MIT
/*
 * The streamed history (btrace_decode_opts.sink, btrace_decode_thread(),
 * what `btrace decode` prints from) against the whole one (btrace_decode()
 * with keep 0: every block and call kept in the result), on recorded
 * multi-thread and long snapshots (fixtures/recorded, QEMU backend): the
 * same items and call entries, in the same order, with the same indices,
 * symbols and fault item, for every unit, whole and tail-only.  The
 * streamed side runs with a small window (keep 16), so that items and calls
 * leave it many times.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>

#include "bt-test.h"

struct seen {
	const struct btrace_thread *t;   /* pass 1: the thread streamed */
	struct btrace_block *items;
	size_t nitems, citems;
	struct btrace_call *calls;
	struct btrace_block *firsts;     /* the first item given with each call */
	int *have_first;
	uint64_t *call_index;
	size_t ncalls, ccalls;
	uint64_t fault_item;
	int begins, ends, bad_index;
};

struct coll {
	struct seen s[64];
	size_t n;
};

static struct seen *find(struct coll *c, const struct btrace_thread *t)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->s[i].t == t)
			return &c->s[i];
	if (c->n == 64)
		return NULL;
	memset(&c->s[c->n], 0, sizeof(c->s[0]));
	c->s[c->n].t = t;
	return &c->s[c->n++];
}

static int on_begin(void *arg, const struct btrace_thread *t)
{
	struct seen *s = find(arg, t);

	if (!s)
		return -1;
	s->nitems = s->ncalls = 0;
	s->fault_item = UINT64_MAX;
	s->begins++;
	return 0;
}

static int on_item(void *arg, const struct btrace_thread *t,
		   const struct btrace_block *b, uint64_t index)
{
	struct seen *s = find(arg, t);

	if (!s)
		return -1;
	if (index != s->nitems)
		s->bad_index++;
	if (s->nitems == s->citems) {
		s->citems = s->citems ? 2 * s->citems : 1024;
		s->items = realloc(s->items, s->citems * sizeof(*s->items));
		if (!s->items)
			return -1;
	}
	s->items[s->nitems++] = *b;
	return 0;
}

static int on_call(void *arg, const struct btrace_thread *t,
		   const struct btrace_call *c, uint64_t index,
		   const struct btrace_block *first)
{
	struct seen *s = find(arg, t);

	if (!s)
		return -1;
	if (index != s->ncalls)
		s->bad_index++;
	if (s->ncalls == s->ccalls) {
		s->ccalls = s->ccalls ? 2 * s->ccalls : 256;
		s->calls = realloc(s->calls, s->ccalls * sizeof(*s->calls));
		s->firsts = realloc(s->firsts, s->ccalls * sizeof(*s->firsts));
		s->have_first = realloc(s->have_first, s->ccalls * sizeof(int));
		if (!s->calls || !s->firsts || !s->have_first)
			return -1;
	}
	s->calls[s->ncalls] = *c;
	s->have_first[s->ncalls] = first != NULL;
	if (first)
		s->firsts[s->ncalls] = *first;
	s->ncalls++;
	return 0;
}

static int on_end(void *arg, const struct btrace_thread *t, uint64_t fault_item)
{
	struct seen *s = find(arg, t);

	if (!s)
		return -1;
	s->fault_item = fault_item;
	s->ends++;
	return 0;
}

static void seen_free(struct seen *s)
{
	free(s->items);
	free(s->calls);
	free(s->firsts);
	free(s->have_first);
	memset(s, 0, sizeof(*s));
}

/* symbols of two results: the same by content (each result has its own) */
static int same_str(const char *a, const char *b)
{
	return a == b || (a && b && !strcmp(a, b));
}

static int same_sym(const struct btrace_symbol *a, const struct btrace_symbol *b)
{
	if (!a || !b)
		return a == b;
	return same_str(a->module, b->module) && same_str(a->function, b->function) &&
	       a->offset == b->offset && same_str(a->file, b->file) &&
	       a->line == b->line && same_str(a->outer, b->outer) &&
	       a->module_offset == b->module_offset;
}

static int same_item(const struct btrace_block *a, const struct btrace_block *b)
{
	return a->kind == b->kind && a->gap == b->gap && a->ip == b->ip &&
	       a->end_ip == b->end_ip && a->ninsn == b->ninsn &&
	       (a->kind != BTRACE_ITEM_BLOCK ||
		(a->iclass == b->iclass && a->end_size == b->end_size &&
		 same_sym(a->sym, b->sym))) &&
	       a->depth == b->depth;
}

/* thread @i of the streamed result against the whole one */
static void compare(struct bt_test *t, const char *what,
		    const struct btrace_thread *w, const struct seen *p1,
		    const struct seen *s)
{
	size_t bad = 0;
	int64_t shift = 0;

	bt_test_diag("%s: thread %d: %zu items, %zu calls", what, w->tid,
		     s->nitems, s->ncalls);
	BT_EQ_INT(t, 0, w->dropped_blocks);
	BT_EQ_INT(t, 1, s->begins);
	BT_EQ_INT(t, 1, s->ends);
	BT_EQ_INT(t, 0, s->bad_index);
	BT_EQ_U64(t, w->nblocks, s->nitems);
	BT_EQ_U64(t, w->ncalls, s->ncalls);
	/* pass 1 (btrace_decode with the sink) saw the same history */
	BT_EQ_U64(t, s->nitems, p1->nitems);
	BT_EQ_U64(t, s->ncalls, p1->ncalls);
	BT_EQ_U64(t, w->fault.found ? w->fault.block_index : UINT64_MAX,
		  s->fault_item);
	BT_EQ_U64(t, s->fault_item, p1->fault_item);
	for (size_t k = 0; k < s->nitems && k < w->nblocks; k++)
		if (!same_item(&w->blocks[k], &s->items[k]) ||
		    (k < p1->nitems && (p1->items[k].ip != s->items[k].ip ||
					p1->items[k].kind != s->items[k].kind)))
			if (!bad++)
				bt_test_fail(t, __FILE__, __LINE__,
					     "%s: thread %d: item %zu differs",
					     what, w->tid, k);
	if (s->ncalls)
		shift = (int64_t)s->calls[0].depth - w->calls[0].depth;
	for (size_t k = 0; k < s->ncalls && k < w->ncalls; k++) {
		const struct btrace_call *a = &w->calls[k], *b = &s->calls[k];
		int ok = a->flags == b->flags && a->ip == b->ip &&
			 a->end_ip == b->end_ip && a->first_block == b->first_block &&
			 a->nblocks == b->nblocks && a->ninsn == b->ninsn &&
			 a->gap == b->gap && same_sym(a->sym, b->sym) &&
			 (int64_t)b->depth - a->depth == shift;
		if (!(a->flags & BTRACE_CALL_GAP))
			ok = ok && s->have_first[k] && a->first_block < w->nblocks &&
			     same_item(&w->blocks[a->first_block], &s->firsts[k]);
		if (!ok && !bad++)
			bt_test_fail(t, __FILE__, __LINE__,
				     "%s: thread %d: call %zu differs", what,
				     w->tid, k);
	}
	BT_EQ_INT(t, 0, bad);
}

static void check_file(struct bt_test *t, const char *rel, uint32_t unit,
		       uint64_t last, int min_threads)
{
	const char *dir = getenv("BT_FIXTURES");
	char path[4096], what[256];
	struct btrace_snapshot *snap = NULL;
	struct btrace_decode_result *whole = NULL, *r = NULL;
	struct btrace_error err;
	static struct coll c1, c2;
	struct btrace_decode_sink sink = {
		.sz = sizeof(sink), .begin = on_begin, .item = on_item,
		.call = on_call, .end = on_end,
	};
	struct btrace_decode_opts o = { .sz = sizeof(o), .unit = unit,
					.last = last };

	BT_REQUIRE(t, dir != NULL);
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	snprintf(what, sizeof(what), "%s unit %u last %llu", rel, unit,
		 (unsigned long long)last);
	BT_REQUIRE(t, btrace_snapshot_read(path, 0, &snap, &err) == 0);
	BT_REQUIRE(t, btrace_decode(snap, &o, &whole, &err) == 0);
	BT_CHECK(t, (int)whole->nthreads >= min_threads);
	c1.n = 0;
	o.keep = 16;
	o.sink = &sink;
	sink.arg = &c1;
	sink.flags = BTRACE_SINK_NO_SYMS;
	if (BT_CHECK(t, btrace_decode(snap, &o, &r, &err) == 0)) {
		BT_EQ_U64(t, whole->nthreads, r->nthreads);
		for (size_t i = 0; i < r->nthreads && i < whole->nthreads; i++) {
			const struct btrace_thread *w = &whole->threads[i];
			const struct btrace_thread *rt = &r->threads[i];
			struct seen *p1 = find(&c1, rt);

			BT_EQ_INT(t, w->tid, rt->tid);
			BT_EQ_U64(t, w->ninsn, rt->ninsn);
			BT_EQ_INT(t, w->truncated, rt->truncated);
			BT_EQ_U64(t, w->nblocks, rt->nblocks + rt->dropped_blocks);
			/* the window stays small */
			BT_CHECK(t, rt->nblocks <= 8192);
			c2.n = 0;
			sink.arg = &c2;
			sink.flags = 0;
			BT_CHECK(t, btrace_decode_thread(r, i, &sink, &err) == 0);
			BT_REQUIRE(t, c2.n == 1);
			compare(t, what, w, p1, &c2.s[0]);
			seen_free(&c2.s[0]);
		}
		/* misuse is an error, not a crash */
		BT_CHECK(t, btrace_decode_thread(r, r->nthreads, &sink, &err) < 0);
		BT_CHECK(t, btrace_decode_thread(r, 0, NULL, &err) < 0);
	}
	for (size_t i = 0; i < c1.n; i++)
		seen_free(&c1.s[i]);
	btrace_decode_result_free(r);
	btrace_decode_result_free(whole);
	btrace_snapshot_free(snap);
}

static void test_threads_blocks(struct bt_test *t)
{
	check_file(t, "thread/crash-thread.btrace", BTRACE_UNIT_BLOCKS, 0, 4);
}

static void test_threads_calls(struct bt_test *t)
{
	check_file(t, "thread/crash-thread.btrace", BTRACE_UNIT_CALLS, 0, 4);
}

static void test_threads_insns(struct bt_test *t)
{
	check_file(t, "thread/crash-thread.btrace", BTRACE_UNIT_INSNS, 0, 4);
}

static void test_threads_tail(struct bt_test *t)
{
	check_file(t, "thread/crash-thread.btrace", BTRACE_UNIT_CALLS, 300, 4);
	check_file(t, "thread/crash-thread.btrace", BTRACE_UNIT_INSNS, 20000, 4);
}

static void test_long_run(struct bt_test *t)
{
	check_file(t, "long-run/long-run.btrace", BTRACE_UNIT_BLOCKS, 0, 1);
	check_file(t, "long-run/long-run.btrace", BTRACE_UNIT_CALLS, 5000, 1);
}

/*
 * Blocks end where the code branches or an event is, never at a straight
 * instruction the next block goes on from: libipt's block cache cuts
 * blocks there depending on what it decoded before (pt.c, next_block()),
 * and such a cut would make the same bytes decode differently from one
 * decode to the next in a process (the streamed pass above decodes again
 * with the sections' block caches warm).
 */
static void check_whole_blocks(struct bt_test *t, const char *rel)
{
	const char *dir = getenv("BT_FIXTURES");
	char path[4096];
	struct btrace_snapshot *snap = NULL;
	struct btrace_decode_result *r = NULL;
	struct btrace_error err;
	struct btrace_decode_opts o = { .sz = sizeof(o),
					.unit = BTRACE_UNIT_BLOCKS };
	size_t blocks = 0, cut = 0;

	BT_REQUIRE(t, dir != NULL);
	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	BT_REQUIRE(t, btrace_snapshot_read(path, 0, &snap, &err) == 0);
	BT_REQUIRE(t, btrace_decode(snap, &o, &r, &err) == 0);
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct btrace_thread *th = &r->threads[i];

		for (size_t k = 0; k + 1 < th->nblocks; k++) {
			const struct btrace_block *a = &th->blocks[k];
			const struct btrace_block *n = &th->blocks[k + 1];

			if (a->kind != BTRACE_ITEM_BLOCK)
				continue;
			blocks++;
			if (n->kind == BTRACE_ITEM_BLOCK &&
			    a->iclass == BTRACE_INSN_OTHER && a->end_size &&
			    n->ip == a->end_ip + a->end_size && !cut++)
				bt_test_diag("%s: thread %d: block %zu (0x%llx-0x%llx) ends at a straight instruction and block %zu goes on from it",
					     rel, th->tid, k,
					     (unsigned long long)a->ip,
					     (unsigned long long)a->end_ip, k + 1);
		}
	}
	bt_test_diag("%s: %zu blocks, %zu cut at a straight instruction", rel,
		     blocks, cut);
	BT_CHECK(t, blocks > 1000);
	BT_EQ_U64(t, 0, cut);
	btrace_decode_result_free(r);
	btrace_snapshot_free(snap);
}

static void test_blocks_end_at_branches(struct bt_test *t)
{
	check_whole_blocks(t, "thread/crash-thread.btrace");
	check_whole_blocks(t, "long-run/long-run.btrace");
}

BT_TESTS(test_threads_blocks, test_threads_calls, test_threads_insns,
	 test_threads_tail, test_long_run, test_blocks_end_at_branches)
