/* SPDX-License-Identifier: MIT */
/*
 * The thread result builder: the decoders (pt.c, bts.c) emit a thread's
 * items here one at a time; each is stored in the result's window (with
 * opts.keep a bounded window of the latest ones, the hold window around a
 * fault a handler went on after, streaming to opts.sink) and handed to the
 * walker (analyze.c) as it arrives; at the end the thread is analysed.
 * Calls go one way: decode.c -> pt.c/bts.c -> thread.c -> analyze.c ->
 * symbols, image, insn -> ctx.c.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode-internal.h"
#include "util.h"

/*
 * Time (ctx.timed).  While decoding, an item's time_ns is the raw TSC of
 * the last timing packet before it, and the first item after a new packet
 * has BT_TIME_NEW (bt_thread_stamp()).  This pass turns blocks[tfix,
 * nblocks) into nanoseconds of the snapshot's clock: an item with a new
 * packet gets its time (BTRACE_TIME_PACKET); the items between two such
 * get a time interpolated by the instructions before them
 * (BTRACE_TIME_INTERPOLATED), unless a system call (ITEM_FAR) lies
 * between the two: the time jumps there (a blocking call), so they get the
 * first packet's time as a lower bound (BTRACE_TIME_AFTER); those before the first packet, or after a
 * gap and before the next packet, have none (0).  The items after the
 * last packet wait for the next one; with @final (the end of the trace,
 * or before they leave the window) they get the last packet's time as a
 * lower bound (BTRACE_TIME_AFTER).
 */
static void time_set(struct bt_ctx *c, struct bt_thread_build *b,
		     struct btrace_block *it, uint64_t cum, uint64_t tsc,
		     uint64_t ncum, int how)
{
	uint64_t t = b->tprev_tsc;

	if (how == BTRACE_TIME_INTERPOLATED && ncum > b->tprev_cum &&
	    tsc > t)
		t += (uint64_t)((unsigned __int128)(tsc - t) *
				(cum - b->tprev_cum) / (ncum - b->tprev_cum));
	it->time_ns = bt_time_ns(&c->tconv, t);
	it->time_flags = how;
}

/* blocks[from, to) after the last packet: a lower bound, or unknown. */
static void time_tail(struct bt_ctx *c, struct bt_thread_build *b,
		      size_t from, size_t to)
{
	struct btrace_block *bl = b->t->blocks;

	for (size_t k = from; k < to; k++) {
		if (b->tprev) {
			time_set(c, b, &bl[k], 0, 0, 0, BTRACE_TIME_AFTER);
		} else {
			bl[k].time_ns = 0;
			bl[k].time_flags = 0;
		}
	}
}

static void time_pass(struct bt_ctx *c, struct bt_thread_build *b, int final)
{
	struct btrace_thread *t = b->t;
	struct btrace_block *bl = t->blocks;
	size_t pend = b->tfix;
	uint64_t cum = b->tcum, pend_cum = cum;

	if (!c->timed)
		return;
	for (size_t i = b->tfix; i < t->nblocks; i++) {
		struct btrace_block *it = &bl[i];
		uint64_t n = it->kind == BTRACE_ITEM_BLOCK ? it->ninsn : 0;

		if (it->kind == BTRACE_ITEM_GAP) {
			/* no instruction count across it */
			time_tail(c, b, pend, i + 1);
			bl[i].time_ns = 0;
			bl[i].time_flags = 0;
			b->tprev = 0;
			b->tfar = 0;
			pend = i + 1;
			pend_cum = cum;
			continue;
		}
		if (it->kind == BTRACE_ITEM_FAR)
			b->tfar = 1;
		if (it->time_flags & BT_TIME_NEW) {
			uint64_t tsc = it->time_ns;

			for (size_t k = pend; k < i; k++) {
				if (b->tprev && b->tfar) {
					/* a system call in between: the time
					 * jumps there, not evenly */
					time_set(c, b, &bl[k], 0, 0, 0,
						 BTRACE_TIME_AFTER);
				} else if (b->tprev) {
					time_set(c, b, &bl[k], pend_cum, tsc, cum,
						 BTRACE_TIME_INTERPOLATED);
				} else {
					bl[k].time_ns = 0;
					bl[k].time_flags = 0;
				}
				if (bl[k].kind == BTRACE_ITEM_BLOCK)
					pend_cum += bl[k].ninsn;
			}
			if (b->tprev && tsc < b->tprev_tsc)
				tsc = b->tprev_tsc;   /* never back in time */
			b->tprev = 1;
			b->tfar = 0;
			b->tprev_tsc = tsc;
			b->tprev_cum = cum;
			time_set(c, b, it, 0, 0, 0, BTRACE_TIME_PACKET);
			pend = i + 1;
			pend_cum = cum + n;
		}
		cum += n;
	}
	b->tfix = pend;
	b->tcum = pend_cum;
	if (final) {
		time_tail(c, b, pend, t->nblocks);
		b->tfix = t->nblocks;
		b->tcum = cum;
	}
}

/* The time of a call entry from its first and last item (@first: their
 * position in blocks[], or SIZE_MAX; @f: the first item, when it left the
 * window): only items that have their time (before blocks[b->tfix]). */
static void call_time(const struct bt_thread_build *b, struct btrace_call *x,
		      size_t first, const struct btrace_block *f)
{
	const struct btrace_thread *t = b->t;
	size_t n = b->tfix < t->nblocks ? b->tfix : t->nblocks;
	uint64_t left_ns = x->time_ns;
	uint32_t left_flags = x->time_flags;

	x->time_ns = 0;
	x->end_time_ns = 0;
	x->time_flags = 0;
	if (first < t->nblocks)
		f = first < n ? &t->blocks[first] : NULL;
	if (!f && first == SIZE_MAX) {
		/* its first item left the window with its time (compact()) */
		x->time_ns = left_ns;
		x->time_flags = left_flags;
	}
	if (f) {
		x->time_ns = f->time_ns;
		x->time_flags = f->time_flags;
	}
	if (first < n && x->nblocks && x->nblocks - 1 < n - first &&
	    !(t->omitted_blocks && first < t->omit_block_at &&
	      first + x->nblocks > t->omit_block_at))
		x->end_time_ns = t->blocks[first + x->nblocks - 1].time_ns;
}

/* Streaming (btrace_decode_opts.sink): an item to the sink, its symbol
 * set (the window's are set by bt_analyze_thread(), for what it keeps). */
static int sink_item(struct bt_ctx *c, struct bt_thread_build *b,
		     const struct btrace_block *it, uint64_t index)
{
	struct btrace_block x = *it;

	x.sym = x.kind == BTRACE_ITEM_BLOCK &&
		!(b->sink->flags & BTRACE_SINK_NO_SYMS) ?
		bt_syms_lookup(c, x.ip) : NULL;
	return b->sink->item ? b->sink->item(b->sink->arg, b->t, &x, index) : 0;
}

/* Window items up to index @upto (not included) not streamed yet. */
static int stream_items(struct bt_ctx *c, struct bt_thread_build *b,
			uint64_t upto)
{
	struct btrace_thread *t = b->t;

	for (uint64_t x = b->sent_items; x < upto; x++) {
		int ret = sink_item(c, b, &t->blocks[x - t->dropped_blocks], x);
		if (ret < 0)
			return bt_error(c->err, ret, "decode: thread %d: the sink stopped the decode",
					t->tid);
	}
	if (upto > b->sent_items)
		b->sent_items = upto;
	return 0;
}

/* calls[0, @n) not streamed yet; their first_block is an item index (it
 * is while decoding). */
static int stream_calls(struct bt_ctx *c, struct bt_thread_build *b, size_t n)
{
	struct btrace_thread *t = b->t;
	int syms = !(b->sink->flags & BTRACE_SINK_NO_SYMS);

	for (size_t m = 0; m < n; m++) {
		uint64_t idx = t->dropped_calls + m;
		struct btrace_call x = t->calls[m];
		struct btrace_block f = { 0 };
		const struct btrace_block *fp = NULL;
		int ret = 0;

		if (idx < b->sent_calls)
			continue;
		x.sym = NULL;
		if (!(x.flags & BTRACE_CALL_GAP)) {
			if (syms)
				x.sym = bt_syms_lookup(c, x.ip);
			if (x.first_block >= t->dropped_blocks &&
			    x.first_block - t->dropped_blocks < t->nblocks)
				f = t->blocks[x.first_block - t->dropped_blocks];
			else if (x.first_block == b->first_index)
				f = b->first;
			else
				f.kind = UINT32_MAX;   /* not known: never here */
			if (f.kind != UINT32_MAX) {
				f.sym = f.kind == BTRACE_ITEM_BLOCK && syms ?
					bt_syms_lookup(c, f.ip) : NULL;
				fp = &f;
			}
			call_time(b, &x, x.first_block >= t->dropped_blocks ?
				  (size_t)(x.first_block - t->dropped_blocks) :
				  SIZE_MAX, fp);
		}
		if (b->sink->call)
			ret = b->sink->call(b->sink->arg, t, &x, idx, fp);
		if (ret < 0)
			return bt_error(c->err, ret, "decode: thread %d: the sink stopped the decode",
					t->tid);
		b->sent_calls = idx + 1;
	}
	return 0;
}

/* Drop the oldest entries of blocks[] so that at least @keep units stay;
 * calls that started before the first kept block go too (but the one
 * running into it), or, counting calls, all but the last @keep.  With a
 * sink, what leaves the window is streamed first (the calls go with the
 * blocks then, whatever the unit). */
static int compact(struct bt_ctx *c, struct bt_thread_build *b)
{
	struct btrace_thread *t = b->t;
	size_t s = t->nblocks, k = 0;
	uint64_t u = 0, nd;

	while (s > 0 && u < b->keep) {
		s--;
		if (t->blocks[s].kind == BTRACE_ITEM_BLOCK)
			u += b->unit == BTRACE_UNIT_INSNS ? t->blocks[s].ninsn : 1;
	}
	nd = t->dropped_blocks + s;
	/* what leaves the window has its time */
	time_pass(c, b, 0);
	if (c->timed && b->tfix < s) {
		time_tail(c, b, b->tfix, s);
		for (; b->tfix < s; b->tfix++)
			if (t->blocks[b->tfix].kind == BTRACE_ITEM_BLOCK)
				b->tcum += t->blocks[b->tfix].ninsn;
	}
	/* an entry whose first item leaves keeps that item's time */
	for (size_t i = 0; c->timed && i < t->ncalls &&
			   t->calls[i].first_block < nd; i++) {
		struct btrace_call *x = &t->calls[i];

		if (x->first_block >= t->dropped_blocks && !x->time_flags) {
			const struct btrace_block *f =
				&t->blocks[x->first_block - t->dropped_blocks];
			x->time_ns = f->time_ns;
			x->time_flags = f->time_flags;
		}
	}
	if (b->unit != BTRACE_UNIT_CALLS || b->sink) {
		/* calls[].first_block holds item indices while decoding */
		while (k + 1 < t->ncalls && t->calls[k + 1].first_block <= nd)
			k++;
	}
	if (b->sink) {
		int ret = stream_items(c, b, nd);
		if (ret >= 0)
			ret = stream_calls(c, b, k);
		if (ret < 0)
			return ret;
		/* the entry running into the first kept block: its first item
		 * leaves the window, its entry is streamed later */
		if (k < t->ncalls && t->calls[k].first_block < nd &&
		    t->calls[k].first_block >= t->dropped_blocks &&
		    t->calls[k].first_block != b->first_index) {
			b->first = t->blocks[t->calls[k].first_block - t->dropped_blocks];
			b->first_index = t->calls[k].first_block;
		}
	}
	if (s) {
		memmove(t->blocks, t->blocks + s, (t->nblocks - s) * sizeof(*t->blocks));
		t->nblocks -= s;
		t->dropped_blocks += s;
		b->tfix -= s;
	}
	if (t->nblocks * 2 > b->trigger)
		b->trigger = t->nblocks * 2;
	if (k) {
		memmove(t->calls, t->calls + k, (t->ncalls - k) * sizeof(*t->calls));
		t->ncalls -= k;
		t->dropped_calls += k;
	}
	return 0;
}

/*
 * Hold (a signal handler went on after the fault, qemu.final_signal): the
 * fault is the first delivery of the last signal episode that counts,
 * which is known at the end only, and the path after it can be far longer
 * than the history asked for.  What is kept, in bounded memory:
 * - the window of @keep units before the latest episode's first delivery
 *   (bt_walk.handler_item: an episode begun later replaces it), moved back
 *   to the first blocks of the last @keep call entries before it (by
 *   HOLD_EXTRA items at most);
 * - the head of the path after it: its first @keep call entries (at most
 *   HOLD_EXTRA items);
 * then, once that prefix is frozen, a ring of the latest items (the same
 *   window rule, ending at the newest item: where the thread died, and the
 *   history before a later episode) and calls; what leaves the ring is
 *   only counted (hole_*).  The walk itself sees every item.
 */
#define HOLD_EXTRA 32768u

/* Item index of blocks[@p] (@p <= nblocks). */
static uint64_t hold_item(const struct bt_thread_build *b, size_t p)
{
	return b->t->dropped_blocks + p +
	       (p < b->pre_blocks ? 0 : b->hole_items);
}

/* Where a window of @keep units ending at blocks[@end] (excluded) starts,
 * not below @lo (the live part); moved back to the first block of the last
 * @keep call entries that start before it, by HOLD_EXTRA items at most. */
static size_t hold_window(const struct bt_thread_build *b, size_t lo,
			  size_t end)
{
	const struct btrace_thread *t = b->t;
	size_t s = end, m = t->ncalls;
	uint64_t u = 0, x = hold_item(b, end);

	while (s > lo && u < b->keep) {
		s--;
		if (t->blocks[s].kind == BTRACE_ITEM_BLOCK)
			u += b->unit == BTRACE_UNIT_INSNS ? t->blocks[s].ninsn : 1;
	}
	while (m > b->pre_calls && t->calls[m - 1].first_block >= x)
		m--;
	if (m > b->pre_calls) {
		size_t k = m - b->pre_calls > b->keep ? m - (size_t)b->keep :
			   b->pre_calls;
		uint64_t fb = t->calls[k].first_block, lx = hold_item(b, lo);
		uint64_t sx = hold_item(b, s);

		if (fb < lx)
			fb = lx;
		if (fb < sx && sx - fb > HOLD_EXTRA)
			fb = sx - HOLD_EXTRA;
		if (fb < sx)
			s -= (size_t)(sx - fb);
	}
	return s;
}

/* Drop the live items blocks[pre_blocks, @s) and the live call entries
 * that ended before blocks[@s] (not those from calls[@kc] on): into the
 * hole once the prefix is frozen, else out of the window. */
static void hold_drop(struct bt_thread_build *b, size_t s, size_t kc)
{
	struct btrace_thread *t = b->t;
	size_t lo = b->pre_blocks, j = b->pre_calls, nd = j;
	uint64_t xs = hold_item(b, s);
	int frozen = b->frozen_ep >= 0;

	while (nd + 1 < t->ncalls && nd < kc && t->calls[nd + 1].first_block <= xs)
		nd++;
	if (nd > j) {
		if (frozen) {
			for (size_t i = j; i < nd; i++)
				if (t->calls[i].depth < b->hole_min_depth)
					b->hole_min_depth = t->calls[i].depth;
			b->hole_calls += nd - j;
		} else {
			t->dropped_calls += nd - j;
		}
		memmove(t->calls + j, t->calls + nd,
			(t->ncalls - nd) * sizeof(*t->calls));
		t->ncalls -= nd - j;
	}
	if (s > lo) {
		if (frozen) {
			for (size_t i = lo; i < s; i++)
				b->hole_blocks += t->blocks[i].kind == BTRACE_ITEM_BLOCK;
			b->hole_items += s - lo;
		} else {
			t->dropped_blocks += s - lo;
		}
		memmove(t->blocks + lo, t->blocks + s,
			(t->nblocks - s) * sizeof(*t->blocks));
		t->nblocks -= s - lo;
	}
}

/* The frozen prefix is not the fault's: it and the hole leave the window
 * (the ring after them holds the history before the newest items). */
static void hold_unfreeze(struct bt_thread_build *b)
{
	struct btrace_thread *t = b->t;

	if (b->frozen_ep < 0)
		return;
	t->dropped_blocks += b->pre_blocks + b->hole_items;
	t->dropped_calls += b->pre_calls + b->hole_calls;
	memmove(t->blocks, t->blocks + b->pre_blocks,
		(t->nblocks - b->pre_blocks) * sizeof(*t->blocks));
	t->nblocks -= b->pre_blocks;
	memmove(t->calls, t->calls + b->pre_calls,
		(t->ncalls - b->pre_calls) * sizeof(*t->calls));
	t->ncalls -= b->pre_calls;
	b->frozen_ep = -1;
	b->pre_blocks = b->pre_calls = 0;
	b->hole_items = b->hole_blocks = b->hole_calls = 0;
	b->hole_min_depth = INT32_MAX;
}

static void compact_hold(struct bt_thread_build *b)
{
	struct btrace_thread *t = b->t;
	int64_t f = b->w ? b->w->handler_item : -1;

	if (b->frozen_ep >= 0 && f != b->frozen_ep)
		hold_unfreeze(b);
	if (b->frozen_ep < 0 && f >= 0 && (uint64_t)f >= t->dropped_blocks &&
	    (uint64_t)f < t->dropped_blocks + t->nblocks) {
		/* the latest episode began in the window: keep the history
		 * before it and what ran after it */
		size_t pf = (size_t)((uint64_t)f - t->dropped_blocks), mf = 0;
		uint64_t cut = 0;

		while (mf < t->ncalls && t->calls[mf].first_block <= (uint64_t)f)
			mf++;
		if (t->ncalls - mf > b->keep)
			cut = t->calls[mf + b->keep].first_block;
		if (t->nblocks - pf > HOLD_EXTRA &&
		    (!cut || cut > (uint64_t)f + HOLD_EXTRA))
			cut = (uint64_t)f + HOLD_EXTRA;
		hold_drop(b, hold_window(b, 0, pf), mf > b->keep ?
			  mf - (size_t)b->keep : 0);
		if (!cut) {
			/* the head is not complete yet */
			if (t->nblocks * 2 > b->trigger)
				b->trigger = t->nblocks * 2;
			return;
		}
		b->frozen_ep = f;
		b->pre_blocks = (size_t)(cut - t->dropped_blocks);
		while (b->pre_calls < t->ncalls &&
		       t->calls[b->pre_calls].first_block < cut)
			b->pre_calls++;
	}
	if (b->frozen_ep >= 0)
		hold_drop(b, hold_window(b, b->pre_blocks, t->nblocks),
			  t->ncalls > b->pre_calls + b->keep ?
			  t->ncalls - (size_t)b->keep : b->pre_calls);
	else
		hold_drop(b, hold_window(b, 0, t->nblocks),
			  t->ncalls > b->keep ? t->ncalls - (size_t)b->keep : 0);
	if (t->nblocks * 2 > b->trigger)
		b->trigger = t->nblocks * 2;
}

/* bt_analyze_thread(): the fault is item @fault_item (-1: one added at the
 * end).  A prefix frozen for another item goes; else the hole is made
 * public (struct btrace_thread omitted_*). */
void bt_thread_hold_end(struct bt_thread_build *b, int64_t fault_item)
{
	struct btrace_thread *t = b->t;

	b->hold_ended = 1;   /* the fault item, if added, is the last */
	if (b->frozen_ep < 0)
		return;
	if (fault_item != b->frozen_ep) {
		hold_unfreeze(b);
		return;
	}
	if (!b->hole_items && !b->hole_calls)
		return;
	t->omit_block_at = b->pre_blocks;
	t->omitted_blocks = b->hole_items;
	t->omit_call_at = b->pre_calls;
	t->omitted_calls = b->hole_calls;
	t->omitted_min_depth = b->hole_calls ?
			       b->hole_min_depth - b->w->min_depth : 0;
}

/* Index in blocks[] of item @x at the end of the decode (bt_thread_hold_end()
 * done): 0 before the window, nblocks in the omitted part. */
uint64_t bt_thread_position(const struct bt_thread_build *b, uint64_t x)
{
	const struct btrace_thread *t = b->t;

	if (x < t->dropped_blocks)
		return 0;
	x -= t->dropped_blocks;
	if (!t->omitted_blocks || x < t->omit_block_at)
		return x;
	if (x < t->omit_block_at + t->omitted_blocks)
		return t->nblocks;
	return x - t->omitted_blocks;
}

int bt_thread_stream_begin(struct bt_ctx *c, struct bt_thread_build *b)
{
	int ret;

	if (!b->sink || !b->sink->begin)
		return 0;
	ret = b->sink->begin(b->sink->arg, b->t);
	return ret < 0 ? bt_error(c->err, ret, "decode: thread %d: the sink stopped the decode",
				  b->t->tid) : 0;
}

/*
 * The analysis of a decoded thread (analyze.c) and what it asks of the
 * window: the held item flushed, the fault located (the hold window then
 * settled around it, and an ITEM_FAULT added when no item marks it), item
 * indices turned into indices in blocks[], then the stack, depths,
 * symbols and the fault's details.
 */
static int analyze_thread(struct bt_ctx *c, struct bt_thread_build *b)
{
	struct btrace_thread *t = b->t;
	int64_t fault_item;
	int ret, which;

	ret = bt_thread_flush(c, b);
	if (ret < 0)
		return ret;
	time_pass(c, b, 1);
	which = bt_analyze_fault(c, b, &fault_item);
	bt_thread_hold_end(b, t->fault.found ? fault_item : -2);
	b->tfix = t->nblocks;   /* all have their time, wherever they went */
	if (t->fault.found && fault_item < 0) {
		/* mark the fault at the end of the history */
		struct btrace_block it = { 0 };
		it.kind = BTRACE_ITEM_FAULT;
		it.ip = t->fault.ip;
		fault_item = (int64_t)b->nitems;
		ret = bt_thread_add_block(c, b, &it);
		if (ret < 0)
			return ret;
	}
	b->fault_item = t->fault.found ? fault_item : -1;
	time_pass(c, b, 1);   /* the fault's item */
	/* item indices -> indices in the kept window */
	for (size_t i = 0; i < t->ncalls; i++) {
		uint64_t x = t->calls[i].first_block;

		t->calls[i].first_block = bt_thread_position(b, x);
		/* its first item kept, or the copy of it that left */
		call_time(b, &t->calls[i], x >= t->dropped_blocks ?
			  (size_t)t->calls[i].first_block : SIZE_MAX,
			  x == b->first_index ? &b->first : NULL);
	}
	return bt_analyze_finish(c, b, which, fault_item);
}

/* analyze_thread(); with a sink, what the window holds is streamed
 * (the items before the analysis adds one for the fault), then end(). */
int bt_thread_finish(struct bt_ctx *c, struct bt_thread_build *b)
{
	struct btrace_thread *t = b->t;
	int ret;

	if (!b->sink)
		return analyze_thread(c, b);
	ret = bt_thread_flush(c, b);
	time_pass(c, b, 1);
	if (ret >= 0)
		ret = stream_items(c, b, t->dropped_blocks + t->nblocks);
	if (ret >= 0)
		ret = stream_calls(c, b, t->ncalls);
	if (ret >= 0)
		ret = analyze_thread(c, b);
	if (ret >= 0)
		ret = stream_items(c, b, t->dropped_blocks + t->nblocks);
	if (ret >= 0 && b->sink->end) {
		ret = b->sink->end(b->sink->arg, t, b->fault_item < 0 ? UINT64_MAX :
				   (uint64_t)b->fault_item);
		if (ret < 0)
			ret = bt_error(c->err, ret, "decode: thread %d: the sink stopped the decode",
				       t->tid);
	}
	return ret;
}

static int emit(struct bt_ctx *c, struct bt_thread_build *b,
		const struct btrace_block *src, uint64_t index)
{
	struct btrace_thread *t = b->t;
	struct btrace_block *it;
	int ret;

	if (t->nblocks >= b->trigger) {
		if (b->keep && b->hold && !b->hold_ended) {
			/* items move and leave in the middle: every item
			 * gets its time first */
			time_pass(c, b, 1);
			compact_hold(b);
			b->tfix = t->nblocks;
		} else if (b->keep) {
			ret = compact(c, b);
			if (ret < 0)
				return ret;
		} else {
			b->trigger = SIZE_MAX;
		}
	}
	if (t->nblocks == b->cblocks) {
		size_t ncap = b->cblocks ? b->cblocks * 2 : 1024;
		void *p = realloc(t->blocks, ncap * sizeof(*t->blocks));
		if (!p)
			return bt_error(c->err, -ENOMEM, "decode: out of memory");
		t->blocks = p;
		b->cblocks = ncap;
	}
	it = &t->blocks[t->nblocks];
	*it = *src;
	if (src != &b->held)
		bt_thread_stamp(b, it);
	ret = bt_walk_item(c, b, it, index);
	if (ret < 0)
		return bt_error(c->err, ret, "decode: out of memory");
	if (c->nholes && it->ip &&
	    (it->kind == BTRACE_ITEM_BLOCK || it->kind == BTRACE_ITEM_GAP))
		bt_image_mark_entered(c, it->ip, it->kind == BTRACE_ITEM_BLOCK);
	if (it->kind == BTRACE_ITEM_BLOCK)
		b->units += b->unit == BTRACE_UNIT_INSNS ? it->ninsn :
			    b->unit == BTRACE_UNIT_BLOCKS ? 1 : 0;
	t->nblocks++;
	return 0;
}

/* bt_thread_add_insns() off its fast path: a held item to emit first, or
 * blocks[] to compact or grow (the general path). */
static __attribute__((noinline)) int
add_insns_slow(struct bt_ctx *c, struct bt_thread_build *b, uint64_t ip,
	       uint64_t end_ip, uint32_t ninsn, uint64_t offset)
{
	struct btrace_block blk = { .kind = BTRACE_ITEM_BLOCK, .ip = ip,
				    .end_ip = end_ip, .offset = offset,
				    .ninsn = ninsn };

	if (b->have_held) {
		int ret = bt_thread_flush(c, b);
		if (ret < 0)
			return ret;
		/* then as if nothing had been held */
		return bt_thread_add_insns(c, b, ip, end_ip, ninsn, offset);
	}
	return emit(c, b, &blk, b->nitems++);
}

static __attribute__((noinline, cold)) int add_insns_failed(struct bt_ctx *c,
							    int ret)
{
	return bt_error(c->err, ret, "decode: out of memory");
}

int bt_thread_add_insns(struct bt_ctx *c, struct bt_thread_build *b,
			uint64_t ip, uint64_t end_ip, uint32_t ninsn,
			uint64_t offset)
{
	struct btrace_thread *t = b->t;
	struct btrace_block *it;
	int ret;

	if (__builtin_expect(b->have_held || t->nblocks >= b->trigger ||
			     t->nblocks == b->cblocks, 0))
		return add_insns_slow(c, b, ip, end_ip, ninsn, offset);
	it = &t->blocks[t->nblocks];
	*it = (struct btrace_block){ .kind = BTRACE_ITEM_BLOCK, .ip = ip,
				     .end_ip = end_ip, .offset = offset,
				     .ninsn = ninsn };
	bt_thread_stamp(b, it);
	ret = bt_walk_block(c, b, it, b->nitems++);
	if (__builtin_expect(ret < 0, 0))
		return add_insns_failed(c, ret);
	if (c->npartial)
		bt_image_mark_entered(c, ip, 1);
	b->units += b->unit == BTRACE_UNIT_INSNS ? ninsn :
		    b->unit == BTRACE_UNIT_BLOCKS;
	t->nblocks++;
	return 0;
}

int bt_fast_load(struct bt_ctx *c, struct bt_thread_build *b,
		 struct bt_fast *h)
{
	struct btrace_thread *t = b->t;
	struct bt_walk *w = b->w;

	/* room for one push, always */
	if (w->nfr == w->cfr &&
	    bt_grow((void **)&w->fr, &w->cfr, w->nfr + 1, sizeof(*w->fr)))
		return bt_error(c->err, -ENOMEM, "decode: out of memory");
	h->bend = c->bend;
	h->i = h->i0 = b->nitems;
	h->rec = h->rend = t->blocks;
	if (t->blocks) {
		h->rec += t->nblocks;
		h->rend += b->trigger < b->cblocks ? b->trigger : b->cblocks;
	}
	h->tot = h->tot0 = t->ninsn;
	h->cnext = h->cend = t->calls;
	if (t->calls) {
		h->cnext += t->ncalls;
		h->cend += b->calls_trigger < b->ccalls ? b->calls_trigger :
			   b->ccalls;
	}
	h->fr = w->fr;
	h->nfr = w->nfr;
	h->cfr = w->cfr;
	h->depth = w->depth;
	h->min_depth = w->min_depth;
	h->ent_end = 0;
	memset(&b->dummy, 0, sizeof(b->dummy));
	h->cur = &b->dummy;
	h->ent_base = 0;
	/* what the block path leaves to the general one: it takes the next
	 * block (and the ones after it while that stays so).  A new entry
	 * after a call takes the depth as it is (one more than an entry's
	 * depth, not below min_depth) and no pending flags. */
	if (b->have_held || c->npartial || !w->have_calls || !w->nfr ||
	    w->jump_pending || w->pending_flags || w->depth < w->min_depth) {
		h->next = BT_NEXT_HOLD;
		return 0;
	}
	if (w->ret_pending) {
		h->next = BT_NEXT_RET;
	} else if (w->pending) {
		h->next = BT_NEXT_START;
	} else {
		h->next = 0;
		h->cur = &t->calls[t->ncalls - 1];
		h->ent_base = t->ninsn - h->cur->ninsn;
	}
	return 0;
}

int bt_fast_store(struct bt_thread_build *b, struct bt_fast *h)
{
	struct btrace_thread *t = b->t;
	struct bt_walk *w = b->w;
	struct btrace_call *cl = h->cur;

	if (h->i == h->i0)
		return 0;
	t->nblocks = (size_t)(h->rec - t->blocks);
	b->nitems = h->i;
	if (b->unit == BTRACE_UNIT_INSNS)
		b->units += h->tot - h->tot0;
	else if (b->unit == BTRACE_UNIT_BLOCKS)
		b->units += h->i - h->i0;
	t->ninsn = h->tot;
	/* the last block taken belongs to the current entry */
	cl->ninsn = h->tot - h->ent_base;
	cl->nblocks = b->nitems - cl->first_block;
	cl->end_ip = h->ent_end;
	t->ncalls = (size_t)(h->cnext - t->calls);
	w->nfr = h->nfr;
	w->depth = h->depth;
	w->min_depth = h->min_depth;
	/* the top frame's last address (after a call: the new frame's 0) */
	if (!(h->next & BT_NEXT_START))
		w->fr[h->nfr - 1].ip = h->ent_end;
	w->pending = !!(h->next & BT_NEXT_START);
	w->ret_pending = !!(h->next & BT_NEXT_RET);
	w->jump_pending = !!(h->next & BT_NEXT_JUMP);
	w->pending_flags = 0;
	w->prev_async = 0;
	b->ended_async = 0;
	return 1;
}

int bt_thread_flush(struct bt_ctx *c, struct bt_thread_build *b)
{
	if (!b->have_held)
		return 0;
	b->have_held = 0;
	return emit(c, b, &b->held, b->held_index);
}

int bt_thread_add_block(struct bt_ctx *c, struct bt_thread_build *b,
			const struct btrace_block *blk)
{
	if (b->have_held) {
		int ret = bt_thread_flush(c, b);
		if (ret < 0)
			return ret;
	}
	return emit(c, b, blk, b->nitems++);
}

int64_t bt_thread_hold(struct bt_ctx *c, struct bt_thread_build *b,
		       const struct btrace_block *blk)
{
	int ret = bt_thread_flush(c, b);

	if (ret < 0)
		return ret;
	b->held = *blk;
	bt_thread_stamp(b, &b->held);
	b->held_index = b->nitems++;
	b->have_held = 1;
	return (int64_t)b->held_index;
}

int bt_thread_complete(struct bt_ctx *c, struct bt_thread_build *b,
		       uint64_t end_ip)
{
	int kind, ret;

	if (!b->have_held)
		return -1;
	kind = (int)b->held.kind;
	b->held.end_ip = end_ip;
	ret = bt_thread_flush(c, b);
	return ret < 0 ? ret : kind;
}

int bt_thread_add_gap(struct bt_ctx *c, struct bt_thread_build *b,
		      uint32_t kind, int error, uint64_t offset, uint64_t ip,
		      uint64_t bytes, const char *reason)
{
	struct btrace_thread *t = b->t;
	struct btrace_block it = { 0 };

	if (bt_grow((void **)&t->gaps, &b->cgaps, t->ngaps + 1, sizeof(*t->gaps)))
		return bt_error(c->err, -ENOMEM, "decode: out of memory");
	t->gaps[t->ngaps] = (struct btrace_gap){ kind, error, offset, ip, bytes,
						 reason };
	it.kind = BTRACE_ITEM_GAP;
	it.gap = (uint32_t)t->ngaps++;
	it.ip = ip;
	it.offset = offset;
	return bt_thread_add_block(c, b, &it);
}

void bt_thread_reset(struct bt_thread_build *b)
{
	struct btrace_thread *t = b->t;

	bt_walk_end(b);
	free(t->blocks);
	free(t->gaps);
	free(t->calls);
	free(t->stack);
	t->blocks = NULL;
	t->gaps = NULL;
	t->calls = NULL;
	t->stack = NULL;
	t->nblocks = t->ngaps = t->ncalls = t->nstack = 0;
	t->dropped_blocks = t->dropped_calls = 0;
	t->ninsn = 0;
	memset(&t->fault, 0, sizeof(t->fault));
	b->cblocks = b->cgaps = b->ccalls = b->cstack = 0;
	b->nitems = b->units = 0;
	b->have_held = 0;
	b->last_async_ip = 0;
	b->last_async_block = -1;
	b->last_async_kernel = 0;
	b->ended_async = 0;
	b->trigger = b->keep < 2048 ? 4096 : 2 * b->keep;
	b->calls_trigger = b->keep && b->unit == BTRACE_UNIT_CALLS && !b->sink &&
			   !b->hold ? b->trigger : SIZE_MAX;
	b->fault_item = -1;
	b->frozen_ep = -1;
	b->hold_ended = 0;
	b->pre_blocks = b->pre_calls = 0;
	b->hole_items = b->hole_blocks = b->hole_calls = 0;
	b->hole_min_depth = INT32_MAX;
	t->omitted_blocks = t->omitted_calls = 0;
	t->omit_block_at = t->omit_call_at = 0;
	t->omitted_min_depth = 0;
	b->sent_items = b->sent_calls = 0;
	b->first_index = UINT64_MAX;
	/* time: nothing seen yet */
	b->tsc = b->tcum = b->tprev_tsc = b->tprev_cum = 0;
	b->tnew = b->tprev = b->tfar = 0;
	b->tfix = 0;
}

uint64_t bt_thread_units(const struct bt_thread_build *b)
{
	return b->unit == BTRACE_UNIT_CALLS ?
	       b->t->ncalls + b->t->dropped_calls + b->hole_calls : b->units;
}

/* btrace_decode_opts.keep 0 with a sink */
#define STREAM_KEEP 4096u

void bt_thread_init(struct bt_ctx *c, struct bt_thread_build *b)
{
	b->sink = c->opts.sink;
	b->keep = c->opts.keep;
	if (b->sink && !b->keep)
		b->keep = STREAM_KEEP;
	b->unit = c->opts.unit;
}
