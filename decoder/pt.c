/* SPDX-License-Identifier: MIT */
/*
 * Intel PT decoding with libipt's block decoder: sync at a PSB, drain
 * events, collect blocks, turn errors and overflows into gaps and resync at
 * the next PSB.  Tail-only decoding starts at a PSB near the end of the
 * buffer, found by scanning backwards for the PSB pattern.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include "decode-internal.h"
#include "pt.h"
#include "util.h"

static const uint8_t psb_pattern[16] = {
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
	0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
};

static int is_psb(const uint8_t *d, uint64_t size, uint64_t off)
{
	return off + 16 <= size && !memcmp(d + off, psb_pattern, 16);
}

/* Offset of the last PSB starting before @before, or -1. */
int64_t bt_pt_psb_before(const uint8_t *d, uint64_t size, uint64_t before)
{
	if (before > size)
		before = size;
	if (before < 16)
		return -1;
	for (uint64_t off = before - 1;; off--) {
		/* look for 0x82 bytes cheaply, then check the pattern */
		if (d[off] == 0x82 && off >= 15 && is_psb(d, size, off - 15)) {
			uint64_t p = off - 15;
			/* a longer run of 02 82: the PSB is its last 16 bytes,
			 * which is where we are. */
			return (int64_t)p;
		}
		if (off == 0)
			break;
	}
	return -1;
}

/* Offset of the first PSB at or after @from, or -1. */
int64_t bt_pt_psb_after(const uint8_t *d, uint64_t size, uint64_t from)
{
	for (uint64_t off = from; off + 16 <= size; off++) {
		const uint8_t *p = memchr(d + off, 0x02, size - off);
		if (!p)
			return -1;
		off = (uint64_t)(p - d);
		if (is_psb(d, size, off))
			return (int64_t)off;
	}
	return -1;
}

static void config_cpu(struct bt_ctx *c, struct pt_config *cfg)
{
	const struct btrace_snapshot *s = c->snap;

	if (!s->has_config || s->config.cpu_vendor != BTRACE_CPU_INTEL)
		return;
	cfg->cpu.vendor = pcv_intel;
	cfg->cpu.family = s->config.cpu_family;
	cfg->cpu.model = s->config.cpu_model;
	cfg->cpu.stepping = s->config.cpu_stepping;
	if (pt_cpu_errata(&cfg->errata, &cfg->cpu) < 0)
		memset(&cfg->errata, 0, sizeof(cfg->errata));
	cfg->cpuid_0x15_eax = s->config.cpuid_0x15_eax;
	cfg->cpuid_0x15_ebx = s->config.cpuid_0x15_ebx;
	cfg->nom_freq = (uint8_t)s->config.nom_freq;
	cfg->mtc_freq = (uint8_t)s->config.mtc_freq;
}

struct pt_state {
	struct bt_ctx *c;
	struct bt_thread_build *b;
	struct pt_block_decoder *dec;
	uint64_t last_ip;        /* last instruction decoded */
	uint64_t blk_off;        /* trace offset given to blocks */
	int blk_left;            /* blocks that take blk_off before the next
				  * query, -1: query at the next block */
	uint64_t still;          /* blocks decoded since the position last
				  * moved (counted at each query) */
	struct pt_block ahead;   /* next_block(): read ahead, not returned yet */
	int ahead_status;
	int have_ahead;
};

/* Blocks the decoder may give without reading a packet: direct calls and
 * jumps need none, so code that runs in a circle of them (a snapshot
 * whose code does not match its trace) would give blocks forever.  Real
 * code never runs this far with no conditional or indirect branch; past
 * it the trace is taken as out of step with the code there, a decode
 * error, and decoding resumes at the next PSB: every pass of the loop
 * then moves forward in the trace, so the decode is bounded by its
 * size. */
#define BT_PT_STILL_BLOCKS (1u << 20)

/* A block's offset is "near which it was decoded": the decoder's position
 * is queried at every event and gap, and for blocks once every
 * BT_PT_OFFSET_EVERY blocks (the query is a library call per block,
 * about 5% of the decode otherwise). */
#define BT_PT_OFFSET_EVERY 16

static uint64_t cur_offset(struct pt_state *st)
{
	uint64_t off = 0;

	if (pt_blk_get_offset(st->dec, &off) < 0)
		off = 0;
	st->still = off == st->blk_off ? st->still + BT_PT_OFFSET_EVERY : 0;
	st->blk_off = off;
	st->blk_left = BT_PT_OFFSET_EVERY - 1;
	return off;
}

static inline uint64_t block_offset(struct pt_state *st)
{
	if (__builtin_expect(--st->blk_left < 0, 0))
		return cur_offset(st);
	return st->blk_off;
}

/* The block-end cache on a miss: classify the instruction. */
static __attribute__((noinline)) const struct bt_bend *
bend_fill(struct bt_ctx *c, uint64_t end_ip)
{
	struct bt_bend *e = &c->bend[bt_bend_slot(end_ip)];
	const struct bt_insn_info *ii = bt_insn_classify(c, end_ip);

	e->end_ip = end_ip;
	e->target = ii->target;
	e->tail[0] = ii->cls;
	e->tail[1] = ii->size;
	e->tail[2] = e->tail[3] = 0;
	switch (ii->cls) {
	case BTRACE_INSN_CALL:
		/* a call of the next instruction: the PIC idiom, not a call */
		e->next = ii->target == end_ip + ii->size ? 0 : BT_NEXT_START;
		break;
	case BTRACE_INSN_CALL_IND:
		e->next = BT_NEXT_START;
		break;
	case BTRACE_INSN_RET:
		e->next = BT_NEXT_RET;
		break;
	case BTRACE_INSN_JMP:
	case BTRACE_INSN_JMP_IND:
		e->next = BT_NEXT_JUMP;
		break;
	default:
		e->next = 0;
		break;
	}
	return e;
}

/* The common block (decode-internal.h, struct bt_fast): returns 1 when it
 * was taken, 0 when nothing was changed and the general path has to take
 * it. */
static inline int bt_block_fast(struct bt_ctx *c, struct bt_fast *h,
				const struct pt_block *blk, uint64_t offset)
{
	uint64_t end_ip = blk->end_ip, i = h->i;
	const struct bt_bend *e = &h->bend[bt_bend_slot(end_ip)];
	struct btrace_block *r = h->rec;
	size_t nfr = h->nfr;
	int32_t depth = h->depth;

	if (__builtin_expect(e->end_ip != end_ip, 0))
		e = bend_fill(c, end_ip);
	if (__builtin_expect(r >= h->rend, 0))
		return 0;
	if (h->next) {
		struct btrace_call *cl = h->cnext;
		struct bt_frame *f;
		uint32_t flags = 0;

		if ((h->next & (BT_NEXT_JUMP | BT_NEXT_HOLD)) || cl >= h->cend)
			return 0;
		f = &h->fr[nfr - 1];
		if (h->next & BT_NEXT_RET) {
			/* back to the frame just below the top */
			if (nfr < 2 || f->ret != blk->ip)
				return 0;
			nfr--;
			f--;
			depth = f->depth;
			flags = f->flags & BTRACE_CALL_PARTIAL;
			if (!f->func)
				return 0;
			if (depth < h->min_depth)
				h->min_depth = depth;
			h->nfr = nfr;
			h->depth = depth;
		} else if (!f->func) {
			return 0;
		}
		/* taken: the current entry ends, this block opens one */
		h->cur->ninsn = h->tot - h->ent_base;
		h->cur->nblocks = i - h->cur->first_block;
		h->cur->end_ip = h->ent_end;
		cl->depth = depth;
		cl->flags = flags;
		cl->ip = blk->ip;
		cl->first_block = i;   /* an item index until the end */
		cl->gap = 0;
		cl->reserved = 0;      /* sym: bt_analyze_thread() */
		/* times: thread.c (compact(), call_time()) */
		cl->time_ns = cl->end_time_ns = 0;
		cl->time_flags = cl->reserved2 = 0;
		h->cur = cl;
		h->cnext = cl + 1;
		h->ent_base = h->tot;
	}
	/* sym: bt_analyze_thread(), for the blocks kept */
	r->kind = BTRACE_ITEM_BLOCK;
	r->gap = 0;
	memcpy(&r->ip, &blk->ip, 2 * sizeof(r->ip));   /* ip, end_ip */
	r->offset = offset;
	r->ninsn = blk->ninsn;
	memcpy(&r->iclass, e->tail, sizeof(e->tail));
	r->depth = depth;
	/* time_ns, time_flags, reserved2: 0 (a trace with time stamps the
	 * block after this) */
	memset(&r->time_ns, 0, 16);
	h->rec = r + 1;
	h->i = i + 1;
	h->tot += blk->ninsn;
	h->ent_end = end_ip;
	h->next = e->next;
	if (e->next == BT_NEXT_START) {
		/* a call: a new frame (the ip of the one below is not read
		 * again before it is the top and has a new one) */
		h->fr[nfr] = (struct bt_frame){ end_ip + e->tail[1], end_ip,
						e->target, 0, 0, depth + 1 };
		h->nfr = ++nfr;
		h->depth = depth + 1;
		if (nfr == h->cfr)   /* the general path makes room */
			h->next = BT_NEXT_START | BT_NEXT_HOLD;
	}
	return 1;
}

/* the copy of ip and end_ip above */
_Static_assert(offsetof(struct pt_block, end_ip) ==
	       offsetof(struct pt_block, ip) + sizeof(uint64_t) &&
	       offsetof(struct btrace_block, end_ip) ==
	       offsetof(struct btrace_block, ip) + sizeof(uint64_t),
	       "ip and end_ip follow each other");

/*
 * The next block from libipt, whole.  Where libipt ends a block is not
 * only where the code branches: its block cache ends one at a straight
 * instruction too (a trampoline entry, the end of a cache fill, a section
 * switch), and the cache's contents depend on what was decoded before in
 * the process: with sections kept in the image section cache, the same
 * bytes decode into differently cut blocks depending on what came before
 * them.  A block that ends at an instruction that is not a branch, with no
 * event after it, goes on at the next instruction: the next block is read
 * ahead and joined to it, so blocks end where the code branches or an
 * event is, whatever the cache held.
 */
static int next_block(struct bt_ctx *c, struct pt_state *st,
		      struct pt_block *blk)
{
	int status;

	if (st->have_ahead) {
		st->have_ahead = 0;
		*blk = st->ahead;
		return st->ahead_status;
	}
	status = pt_blk_next(st->dec, blk, sizeof(*blk));
	while (status >= 0 && !(status & (pts_event_pending | pts_eos)) &&
	       blk->ninsn && !blk->truncated &&
	       bt_insn_classify(c, blk->end_ip)->cls == BTRACE_INSN_OTHER) {
		const struct bt_insn_info *ii = bt_insn_classify(c, blk->end_ip);
		struct pt_block *more = &st->ahead;
		int s2 = pt_blk_next(st->dec, more, sizeof(*more));

		if (!more->ninsn || more->truncated || !ii->size ||
		    more->ip != blk->end_ip + ii->size ||
		    more->mode != blk->mode ||
		    (uint32_t)blk->ninsn + more->ninsn > UINT16_MAX) {
			st->ahead_status = s2;
			st->have_ahead = 1;
			break;
		}
		blk->end_ip = more->end_ip;
		blk->ninsn = (uint16_t)(blk->ninsn + more->ninsn);
		blk->iclass = more->iclass;
		status = s2;
	}
	return status;
}

/* bt_fast_load() and bt_fast_store() through a copy: the block path's
 * struct bt_fast stays a local of the decode loop that nothing else sees,
 * so that the compiler can keep its fields in registers. */
static inline int fast_load(struct bt_ctx *c, struct bt_thread_build *b,
			    struct bt_fast *h)
{
	struct bt_fast tmp;
	int ret = bt_fast_load(c, b, &tmp);

	*h = tmp;
	return ret;
}

static inline void fast_store(struct pt_state *st, struct bt_fast *h)
{
	struct bt_fast tmp = *h;

	if (bt_fast_store(st->b, &tmp))
		st->last_ip = tmp.ent_end;
}

static int add_item(struct pt_state *st, uint32_t kind, uint64_t ip,
		    uint64_t end_ip)
{
	struct btrace_block it = { 0 };

	it.kind = kind;
	it.ip = ip;
	it.end_ip = end_ip;
	it.offset = cur_offset(st);
	return bt_thread_add_block(st->c, st->b, &it);
}

/* An ITEM_FAR / ITEM_ASYNC whose end_ip (where execution went on) comes
 * with a later TIP.PGE. */
static int64_t hold_item(struct pt_state *st, uint32_t kind, uint64_t ip)
{
	struct btrace_block it = { 0 };

	it.kind = kind;
	it.ip = ip;
	it.offset = cur_offset(st);
	return bt_thread_hold(st->c, st->b, &it);
}

/*
 * The time after a block: the timing packets libipt read to find where
 * the block ends (its branch's TNT or TIP) are behind it, so a new time
 * belongs to this block (docs/format.md, "Time").  Not after a block that
 * ends at an event: to report the event, libipt reads on past it (a far
 * transfer's TIP.PGD, the TIP.PGE and the timing packet after it), so the
 * time would be the return's; the events carry their own (pt_event.tsc).
 */
static void block_time(struct pt_state *st, int status)
{
	uint64_t tsc = 0;
	uint32_t lost_mtc, lost_cyc;

	if (!(status & pts_event_pending) &&
	    pt_blk_time(st->dec, &tsc, &lost_mtc, &lost_cyc) >= 0 && tsc)
		bt_thread_tsc(st->b, tsc);
}

/* A block the block path took (bt_block_fast(): its time is 0): its time. */
static __attribute__((noinline)) void block_stamp(struct pt_state *st,
						  int status,
						  struct btrace_block *r)
{
	block_time(st, status);
	bt_thread_stamp(st->b, r);
}

static int handle_event(struct pt_state *st, const struct pt_event *ev)
{
	struct bt_thread_build *b = st->b;
	int64_t ret = 0;

	if (st->c->timed && ev->has_tsc && ev->tsc)
		bt_thread_tsc(b, ev->tsc);
	switch (ev->type) {
	case ptev_enabled: {
		int kind = bt_thread_complete(st->c, b, ev->variant.enabled.ip);
		if (kind < -1)
			return kind;
		if (kind != BTRACE_ITEM_FAR)
			ret = add_item(st, BTRACE_ITEM_ENABLED, ev->variant.enabled.ip, 0);
		b->ended_async = 0;
		break;
	}
	case ptev_disabled:
		/* A synchronous disable at a far branch (syscall). */
		ret = hold_item(st, BTRACE_ITEM_FAR, st->last_ip);
		b->ended_async = 0;
		break;
	case ptev_async_disabled:
		ret = hold_item(st, BTRACE_ITEM_ASYNC, ev->variant.async_disabled.at);
		b->last_async_ip = ev->variant.async_disabled.at;
		b->last_async_block = ret;
		b->last_async_kernel = 0;
		b->ended_async = 1;
		break;
	case ptev_async_branch:
		if (!bt_is_kernel(ev->variant.async_branch.from) &&
		    bt_is_kernel(ev->variant.async_branch.to)) {
			ret = add_item(st, BTRACE_ITEM_ASYNC,
				       ev->variant.async_branch.from,
				       ev->variant.async_branch.to);
			b->last_async_ip = ev->variant.async_branch.from;
			b->last_async_block = (int64_t)b->nitems - 1;
			b->last_async_kernel = 1;
			b->ended_async = 1;
		}
		break;
	case ptev_overflow:
		ret = bt_thread_add_gap(st->c, b, BTRACE_GAP_OVERFLOW,
					-BTRACE_ERR_OVERFLOW, cur_offset(st),
					ev->ip_suppressed ? 0 : ev->variant.overflow.ip,
					0, "trace overflow: the hardware dropped trace");
		b->ended_async = 0;
		break;
	default:
		break;
	}
	return ret < 0 ? (int)ret : 0;
}

static int drain(struct pt_state *st, int status)
{
	while (status & pts_event_pending) {
		struct pt_event ev;
		status = pt_blk_event(st->dec, &ev, sizeof(ev));
		if (status < 0)
			return status;
		int r = handle_event(st, &ev);
		if (r < 0)
			return r;
	}
	return status;
}

static int add_error_gap(struct pt_state *st, int status, uint64_t ip)
{
	struct bt_ctx *c = st->c;
	int code = pt_errcode(status);
	uint64_t off = cur_offset(st);
	uint32_t kind = BTRACE_GAP_DECODE;
	int err = -BTRACE_ERR_BAD_PACKET;
	const char *why;

	if (code == pte_nomap) {
		kind = bt_is_kernel(ip) ? BTRACE_GAP_KERNEL : BTRACE_GAP_NOIMAGE;
		err = -BTRACE_ERR_NOMAP;
		why = bt_image_why_missing(c, ip);
	} else {
		why = bt_ctx_printf(c, "decode error at trace offset %llu, ip 0x%llx: %s",
				    (unsigned long long)off,
				    (unsigned long long)ip, pt_errstr(code));
	}
	st->b->ended_async = 0;
	return bt_thread_add_gap(c, st->b, kind, err, off, ip, 0, why);
}

/* The decoder went BT_PT_STILL_BLOCKS blocks without reading the trace. */
static int still_gap(struct pt_state *st, uint64_t ip)
{
	struct bt_ctx *c = st->c;
	uint64_t off = cur_offset(st);

	st->still = 0;
	st->b->ended_async = 0;
	return bt_thread_add_gap(c, st->b, BTRACE_GAP_DECODE,
				 -BTRACE_ERR_BAD_PACKET, off, ip, 0,
				 bt_ctx_printf(c, "decode error at trace offset "
					       "%llu, ip 0x%llx: the code runs "
					       "%u blocks on direct branches "
					       "alone, no packet read (the "
					       "code does not match the trace)",
					       (unsigned long long)off,
					       (unsigned long long)ip,
					       BT_PT_STILL_BLOCKS));
}

int bt_pt_decode_from(struct bt_ctx *c, const struct btrace_buffer *buf,
		      struct bt_thread_build *b, uint64_t start)
{
	struct pt_config cfg;
	struct pt_state st = { .c = c, .b = b, .blk_left = -1 };
	struct bt_fast h;
	int status, ret = 0;
	uint64_t sync_off = start;
	const int timed = c->timed;

	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf->data;
	cfg.end = (uint8_t *)buf->data + buf->size;
	config_cpu(c, &cfg);
	/* Blocks end at every call and jump: contiguous instructions, and the
	 * call structure stays visible. */
	cfg.flags.variant.block.end_on_call = 1;
	cfg.flags.variant.block.end_on_jump = 1;
	if (!c->bend) {
		c->bend = malloc(BT_BEND_SLOTS * sizeof(*c->bend));
		if (!c->bend)
			return bt_error(c->err, -ENOMEM, "decode: out of memory");
		for (size_t i = 0; i < BT_BEND_SLOTS; i++)
			c->bend[i].end_ip = UINT64_MAX;
	}
	st.dec = pt_blk_alloc_decoder(&cfg);
	if (!st.dec)
		return bt_error(c->err, -ENOMEM,
				"trace of thread %d: allocating a decoder failed",
				buf->tid);
	status = pt_blk_set_image(st.dec, c->image);
	if (status >= 0)
		status = pt_blk_sync_set(st.dec, start);
	if (status < 0)
		status = pt_blk_sync_forward(st.dec);
	if (status < 0) {
		ret = bt_thread_add_gap(c, b, BTRACE_GAP_DECODE, -BTRACE_ERR_NOSYNC,
					start, 0, buf->size - start,
					"no PSB in the trace: nothing could be decoded");
		goto out;
	}
	pt_blk_get_sync_offset(st.dec, &sync_off);

	for (;;) {
		struct pt_block blk;

		status = drain(&st, status);
		if (status >= 0 && (status & pts_eos))
			break;
		if (status >= 0) {
			/* blocks until an event, the end or an error: the block
			 * path, and the general one for what it does not take */
			ret = fast_load(c, b, &h);
			if (ret < 0)
				goto out;
			do {
				/* pt_blk_next() zeroes the block first, errors
				 * included */
				status = next_block(c, &st, &blk);
				if (!blk.ninsn)
					break;
				uint64_t off = block_offset(&st);

				if (bt_block_fast(c, &h, &blk, off)) {
					if (__builtin_expect(timed, 0))
						block_stamp(&st, status, h.rec - 1);
					continue;
				}
				fast_store(&st, &h);
				if (timed)
					block_time(&st, status);
				ret = bt_thread_add_insns(c, b, blk.ip, blk.end_ip,
							  blk.ninsn, off);
				if (ret < 0)
					goto out;
				st.last_ip = blk.end_ip;
				b->ended_async = 0;
				ret = fast_load(c, b, &h);
				if (ret < 0)
					goto out;
			} while (!(status & (pts_event_pending | pts_eos | INT_MIN)) &&
				 st.still < BT_PT_STILL_BLOCKS);
			fast_store(&st, &h);
			if (st.still >= BT_PT_STILL_BLOCKS) {
				ret = still_gap(&st, blk.ninsn ? blk.end_ip : blk.ip);
			} else {
				if (status >= 0)
					continue;
				if (pt_errcode(status) == pte_eos)
					break;
				ret = add_error_gap(&st, status,
						    blk.ninsn ? blk.end_ip : blk.ip);
			}
		} else {
			if (pt_errcode(status) == pte_eos)
				break;
			ret = add_error_gap(&st, status, st.last_ip);
		}
		if (ret < 0)
			goto out;
		/* Resync at the next PSB; stop when it no longer advances. */
		uint64_t prev = sync_off;
		status = pt_blk_sync_forward(st.dec);
		if (status < 0)
			break;
		pt_blk_get_sync_offset(st.dec, &sync_off);
		st.blk_left = -1;   /* query at the next block */
		if (sync_off <= prev)
			break;
		b->t->gaps[b->t->ngaps - 1].bytes = sync_off - b->t->gaps[b->t->ngaps - 1].offset;
	}
out:
	if (ret >= 0)
		ret = bt_thread_flush(c, b);
	pt_blk_free_decoder(st.dec);
	return ret;
}

int bt_pt_decode(struct bt_ctx *c, const struct btrace_buffer *buf,
		 struct bt_thread_build *b)
{
	int64_t first = bt_pt_psb_after(buf->data, buf->size, 0);

	if (first < 0)
		return bt_thread_add_gap(c, b, BTRACE_GAP_DECODE, -BTRACE_ERR_NOSYNC,
					 0, 0, buf->size,
					 "no PSB in the trace: nothing could be decoded");
	b->t->unusable_bytes = (uint64_t)first;
	if (first > 0) {
		int ret = bt_thread_add_gap(c, b, BTRACE_GAP_UNUSABLE, 0, 0, 0,
					    (uint64_t)first,
					    bt_ctx_printf(c, "%lld bytes before the first PSB are unusable (ring wrapped mid-packet)",
							  (long long)first));
		if (ret < 0)
			return ret;
	}
	b->t->decoded_bytes = buf->size - (uint64_t)first;
	return bt_pt_decode_from(c, buf, b, (uint64_t)first);
}
