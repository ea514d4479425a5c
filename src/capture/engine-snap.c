/* SPDX-License-Identifier: MIT */
/* Snapshot writing: trace buffers, sideband, code, signal. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "capture-internal.h"
#include "engine-internal.h"
#include "snapbuild.h"
#include "aux-ring.h"
#include "util.h"

struct flag_ctx {
	uint32_t *flags;
	uint64_t *records_lost;
	struct bt_aux_marks *marks;
	struct bt_cpu_slices *slices;   /* a catch-all CPU ring, else NULL */
};

/* sample_id of the catch-all events: { u32 pid, tid; u64 time; } last */
#define CATCH_ALL_SAMPLE_ID 16

static void add_slice(struct bt_cpu_slices *sl, const struct bt_rec *rec,
		      uint64_t head)
{
	const uint8_t *p = rec->data;
	struct bt_slice *v;

	if (rec->size < 32 + CATCH_ALL_SAMPLE_ID)
		return;
	if (sl->n == BT_SLICES_MAX) {
		size_t half = BT_SLICES_MAX / 2;

		memmove(sl->v, sl->v + half, (sl->n - half) * sizeof(*sl->v));
		sl->n -= half;
		sl->dropped += half;
	}
	if (bt_grow((void **)&sl->v, &sl->cap, sl->n, sizeof(*sl->v)) < 0) {
		sl->dropped++;
		return;
	}
	v = &sl->v[sl->n++];
	v->head = head;
	v->tid = (int32_t)bt_le32(p + rec->size - 12);
	v->time = bt_le64(p + rec->size - 8);
	/* records were lost since the previous AUX record: the bytes since
	 * its offset may be several threads' (their sched-outs' records are
	 * the ones lost), so none of them is given to this record's thread */
	if (sl->lost_before) {
		v->tid = -1;
		sl->unknown++;
		sl->lost_before = false;
	}
}

/*
 * The trace event's data ring carries PERF_RECORD_AUX (flags for the AUX
 * stream at an offset) and, when it overflows itself, PERF_RECORD_LOST.
 * A LOST record counts records of that data ring, not trace bytes: it
 * says AUX marks may be missing, it is no gap in the trace.
 */
static int trace_rec(const struct bt_rec *rec, void *arg)
{
	struct flag_ctx *f = arg;
	struct bt_sb_event ev;
	uint64_t fl;

	if (bt_sideband_parse(rec, &ev) < 0)
		return 0;
	if (rec->type == PERF_RECORD_AUX) {
		fl = ev.aux_flags & (PERF_AUX_FLAG_TRUNCATED | PERF_AUX_FLAG_PARTIAL |
				     PERF_AUX_FLAG_COLLISION);
		if (ev.aux_flags & PERF_AUX_FLAG_TRUNCATED)
			*f->flags |= BTRACE_BUF_TRUNCATED;
		if (ev.aux_flags & PERF_AUX_FLAG_PARTIAL)
			*f->flags |= BTRACE_BUF_PARTIAL;
		if (ev.aux_flags & PERF_AUX_FLAG_COLLISION)
			*f->flags |= BTRACE_BUF_LOST;
		if (f->slices)
			add_slice(f->slices, rec, ev.aux_offset);
		if (fl) {
			unsigned i = (unsigned)(f->marks->seen++ % BT_AUX_MARKS);

			f->marks->m[i].offset = ev.aux_offset;
			f->marks->m[i].size = ev.aux_size;
			f->marks->m[i].flags = ev.aux_flags;
		}
	} else if (rec->type == PERF_RECORD_LOST) {
		*f->records_lost += ev.lost;
		if (f->slices)
			f->slices->lost_before = true;
	}
	return 0;
}

static void drain_ring(struct bt_engine *e, struct bt_perf_ring *r,
		       uint32_t *flags, uint64_t *records_lost,
		       struct bt_aux_marks *marks, struct bt_cpu_slices *slices)
{
	struct flag_ctx f = { flags, records_lost, marks, slices };
	uint64_t head, tail;
	bool corrupt;

	/* an overwrite (read-only) ring has no tail to move: legacy BTS */
	if (!r->base || !r->data_size || !r->writable)
		return;
	head = bt_perf_data_head(r);
	tail = bt_ring_iterate(r->base + sysconf(_SC_PAGESIZE), r->data_size,
			       r->tail, head, e->scratch, trace_rec, &f,
			       &corrupt);
	bt_perf_data_set_tail(r, tail);
}

void bt_engine_drain_trace(struct bt_engine *e)
{
	for (size_t i = 0; i < e->ntev; i++)
		if (e->tevs[i].per_task)
			drain_ring(e, &e->tevs[i].ring, &e->tevs[i].flags,
				   &e->tevs[i].records_lost, &e->tevs[i].marks,
				   NULL);
	if (e->cpu_rings_open)
		for (int c = 0; c < e->ncpus; c++)
			drain_ring(e, &e->cpu_rings[c], &e->cpu_flags[c],
				   &e->cpu_records_lost[c], &e->cpu_marks[c],
				   &e->cpu_slices[c]);
}

static void each_fd(struct bt_engine *e, int (*fn)(int), pid_t only,
		    pid_t skip)
{
	for (size_t i = 0; i < e->ntev; i++) {
		struct bt_tev *t = &e->tevs[i];

		if ((only && t->tid != only) || (skip && t->tid == skip))
			continue;
		if (t->per_task && t->ring.fd >= 0)
			fn(t->ring.fd);
		if (!t->per_task && t->cpu_fds)
			for (int c = 0; c < e->ncpus; c++)
				if (t->cpu_fds[c] >= 0)
					fn(t->cpu_fds[c]);
	}
}

void bt_engine_disable_all(struct bt_engine *e)
{
	each_fd(e, bt_perf_disable, 0, 0);
}

void bt_engine_disable_siblings_first(struct bt_engine *e, pid_t tid)
{
	each_fd(e, bt_perf_disable, 0, tid);
	each_fd(e, bt_perf_disable, tid, 0);
}

void bt_engine_enable_all(struct bt_engine *e)
{
	each_fd(e, bt_perf_enable, 0, 0);
}

static int add_buffer(struct bt_engine *e, struct bt_snapbuild *w,
		      struct bt_perf_ring *r, pid_t tid, int cpu,
		      uint32_t flags, uint64_t lost, struct btrace_error *err)
{
	struct btrace_buffer b;
	uint64_t size;

	if (!r->aux && e->o->bts_samples && r->base) {
		struct bt_bts_samples st;
		uint8_t *data;
		int ret;

		memset(&b, 0, sizeof(b));
		b.flags = flags;
		ret = bt_perf_bts_samples_buffer(r, &b, &data, &st);
		if (ret < 0)
			return bt_error(err, ret, "thread %d: BTS samples: %s",
					(int)tid, strerror(-ret));
		b.tid = tid;
		b.cpu = cpu;
		b.requested_size = e->o->history;
		b.lost = lost;
		ret = bt_snapbuild_add_buffer(w, &b);
		free(data);
		return ret;
	}
	if (!r->aux)
		return 0;
	memset(&b, 0, sizeof(b));
	b.flags = flags;
	size = bt_aux_buffer(e->o->cfg.trace_kind, r->aux, r->aux_size,
			     bt_perf_aux_head(r), &b);
	b.tid = tid;
	b.cpu = cpu;
	b.requested_size = e->plan.ring.history;
	b.pad = e->plan.ring.pad;
	b.lost = lost;
	return bt_snapbuild_add_ring(w, &b, r->aux, size);
}

/* --- splitting a catch-all CPU ring by thread --- */

static int meta(struct bt_snapbuild *w, const char *k, const char *v,
		struct btrace_error *err);

struct piece {
	int32_t tid;              /* -1: not attributed */
	int c;                    /* index into e->cpus */
	uint64_t last_time;       /* of its newest slice */
	uint8_t *data;
	uint64_t size;
};

struct range {
	uint64_t start, end;      /* in the linearised ring */
	int32_t tid;
	uint64_t time;
};

/* @b - @a in a ring whose hardware wraps at @hw_end: offsets are in
 * [0, hw_end] (a BTS index may be published at the trimmed end itself,
 * which is the base). */
static uint64_t ring_dist(uint64_t a, uint64_t b, uint64_t hw_end)
{
	a %= hw_end;
	b %= hw_end;
	return b >= a ? b - a : hw_end - a + b;
}

/*
 * Give each byte of CPU ring @c a thread.  The records' offsets are ring
 * offsets (overwrite mode: pt_event_stop() / bts_event_stop() publish the
 * write offset, and perf_aux_output_end() reports it as aux_offset);
 * walking back from the newest, the slice of record i is
 * (head[i-1], head[i]], head[-1] being the ring's start when no record was
 * forgotten or lost.  Distances are taken modulo @hw_end, where the
 * hardware wraps: the ring size for PT, the size trimmed to whole 24-byte
 * records for BTS (bts_buffer_setup_aux()).  A slice longer than the ring
 * cannot be told from a short one: older owners may be wrong then.
 */
static size_t split_ranges(const struct bt_cpu_slices *sl, bool certain_start,
			   uint64_t hw_end, uint64_t head, uint64_t len,
			   struct range *out)
{
	uint64_t end = len;
	size_t nr = 0;

	if (!sl->n || !hw_end) {
		out[nr++] = (struct range){ 0, len, -1, 0 };
		return nr;
	}
	{
		uint64_t gap = ring_dist(sl->v[sl->n - 1].head, head, hw_end);

		if (gap > end)
			gap = end;
		if (gap)
			out[nr++] = (struct range){ end - gap, end, -1, 0 };
		end -= gap;
	}
	for (size_t i = sl->n; i-- > 0 && end > 0;) {
		uint64_t prev, slen, start;

		if (i == 0 && !certain_start)
			break;
		prev = i ? sl->v[i - 1].head : 0;
		slen = ring_dist(prev, sl->v[i].head, hw_end);
		start = end > slen ? end - slen : 0;
		if (slen)
			out[nr++] = (struct range){ start, end, sl->v[i].tid,
						    sl->v[i].time };
		end = start;
	}
	if (end > 0)
		out[nr++] = (struct range){ 0, end, -1, 0 };
	return nr;
}

static int by_recency(const void *a, const void *b)
{
	const struct piece *x = a, *y = b;

	if ((x->tid < 0) != (y->tid < 0))
		return x->tid < 0 ? 1 : -1;
	if (x->last_time != y->last_time)
		return x->last_time > y->last_time ? -1 : 1;
	return x->c - y->c;
}

static int write_cpu_rings(struct bt_engine *e, struct bt_snapbuild *w,
			   struct btrace_error *err)
{
	struct piece *pc = NULL;
	size_t npc = 0, cpc = 0;
	uint64_t unattributed_total = 0;
	char split[1024];
	size_t slen = 0;
	int r = 0;

	split[0] = '\0';
	for (int c = 0; c < e->ncpus && r == 0; c++) {
		struct bt_perf_ring *ring = &e->cpu_rings[c];
		const struct bt_cpu_slices *sl = &e->cpu_slices[c];
		struct bt_aux_span span;
		struct range *rg = NULL;
		uint8_t *lin = NULL;
		uint64_t unattributed = 0;
		size_t nr, nthreads = 0;

		if (!ring->aux)
			continue;
		/* BTS wraps at the trimmed end: the never-written tail is no
		 * part of the trace, and offsets count up to that end */
		bt_aux_locate_kind(e->o->cfg.trace_kind, ring->aux, ring->aux_size,
				   bt_perf_aux_head(ring), &span);
		lin = malloc(span.len ? span.len : 1);
		rg = malloc((sl->n + 2) * sizeof(*rg));
		if (!lin || !rg) {
			free(lin);
			free(rg);
			r = bt_error(err, -ENOMEM, "snapshot: splitting the ring of CPU %d failed: out of memory",
				     e->cpus[c]);
			break;
		}
		bt_aux_linearize(ring->aux, &span, lin);
		nr = split_ranges(sl, !sl->dropped && !e->cpu_records_lost[c],
				  span.end, span.head, span.len, rg);
		/* one piece per thread: its slices oldest first (rg is newest first) */
		for (size_t i = 0; i < nr && r == 0; i++) {
			struct piece *p = NULL;

			for (size_t k = 0; k < npc; k++)
				if (pc[k].c == c && pc[k].tid == rg[i].tid)
					p = &pc[k];
			if (p)
				continue;
			if (bt_grow((void **)&pc, &cpc, npc, sizeof(*pc)) < 0) {
				r = bt_error(err, -ENOMEM, "snapshot: out of memory");
				break;
			}
			p = &pc[npc++];
			memset(p, 0, sizeof(*p));
			p->tid = rg[i].tid;
			p->c = c;
			if (p->tid >= 0)
				nthreads++;
			for (size_t k = 0; k < nr; k++)
				if (rg[k].tid == p->tid)
					p->size += rg[k].end - rg[k].start;
			p->data = malloc(p->size ? p->size : 1);
			if (!p->data) {
				r = bt_error(err, -ENOMEM, "snapshot: out of memory");
				break;
			}
			p->size = 0;
			for (size_t k = nr; k-- > 0;) {
				if (rg[k].tid != p->tid)
					continue;
				memcpy(p->data + p->size, lin + rg[k].start,
				       rg[k].end - rg[k].start);
				p->size += rg[k].end - rg[k].start;
				if (rg[k].time > p->last_time)
					p->last_time = rg[k].time;
			}
			if (p->tid < 0)
				unattributed = p->size;
		}
		unattributed_total += unattributed;
		if (slen < sizeof(split) - 128)
			slen += (size_t)snprintf(split + slen, sizeof(split) - slen,
						 "%scpu %d: %zu slice(s) of %zu thread(s) (%" PRIu64 " after lost records, given none), %" PRIu64 " of %" PRIu64 " bytes not attributed%s",
						 slen ? "; " : "", e->cpus[c], sl->n,
						 nthreads, sl->unknown, unattributed, span.len,
						 sl->dropped || e->cpu_records_lost[c] ?
						 " (AUX records were lost: the owners of the oldest bytes and of the slices where records are missing are unknown)" : "");
		free(lin);
		free(rg);
	}
	if (r == 0 && npc)
		qsort(pc, npc, sizeof(*pc), by_recency);
	for (size_t i = 0; i < npc && r == 0; i++) {
		struct bt_perf_ring *ring = &e->cpu_rings[pc[i].c];
		struct bt_aux_span span;
		struct btrace_buffer b;

		bt_aux_locate_kind(e->o->cfg.trace_kind, ring->aux, ring->aux_size,
				   bt_perf_aux_head(ring), &span);
		memset(&b, 0, sizeof(b));
		b.kind = e->o->cfg.trace_kind;
		b.flags = e->cpu_flags[pc[i].c] | (span.wrapped ? BTRACE_BUF_WRAPPED : 0);
		b.tid = pc[i].tid;
		b.cpu = e->cpus[pc[i].c];
		b.requested_size = e->plan.ring.history;
		b.pad = e->plan.ring.pad;
		b.ring_size = ring->aux_size;
		b.head = span.head;
		b.data = pc[i].data;
		b.size = pc[i].size;
		r = bt_snapbuild_add_buffer(w, &b);
	}
	for (size_t i = 0; i < npc; i++)
		free(pc[i].data);
	free(pc);
	if (r == 0 && slen)
		r = meta(w, "capture.cpu_split", split, err);
	if (r == 0 && unattributed_total) {
		char t[1400];

		snprintf(t, sizeof(t),
			 "%" PRIu64 " byte(s) of the per-CPU rings could not be given a thread (decoded as CPU-wide, tid -1): %s",
			 unattributed_total, split);
		r = meta(w, "limit.cpu-split", t, err);
	}
	return r;
}

/* @err is the builder's: its failures are reported there */
static int meta(struct bt_snapbuild *w, const char *k, const char *v,
		struct btrace_error *err)
{
	(void)err;
	return bt_snapbuild_meta(w, k, v);
}

static void aux_sizes(const struct bt_perf_ring *r, uint64_t *req,
		      uint64_t *lo, uint64_t *hi, size_t *n, size_t *small)
{
	if (!r->aux)
		return;
	*req = r->aux_requested;
	if (!*n || r->aux_size < *lo)
		*lo = r->aux_size;
	if (!*n || r->aux_size > *hi)
		*hi = r->aux_size;
	(*n)++;
	if (r->aux_size < r->aux_requested)
		(*small)++;
}

/* The AUX ring size asked for and obtained (halved on ENOMEM by
 * bt_perf_map_aux()): capture.aux_ring, and a limit when smaller. */
static int aux_size_meta(struct bt_engine *e, struct bt_snapbuild *w,
			 struct btrace_error *err)
{
	uint64_t req = 0, lo = 0, hi = 0;
	size_t n = 0, small = 0;
	char buf[512];
	int r;

	for (size_t i = 0; i < e->ntev; i++)
		if (e->tevs[i].per_task)
			aux_sizes(&e->tevs[i].ring, &req, &lo, &hi, &n, &small);
	if (e->cpu_rings_open)
		for (int c = 0; c < e->ncpus; c++)
			aux_sizes(&e->cpu_rings[c], &req, &lo, &hi, &n, &small);
	if (!n)
		return 0;
	if (lo == hi)
		snprintf(buf, sizeof(buf),
			 "requested %llu KiB, obtained %llu KiB (%zu ring(s))",
			 (unsigned long long)(req >> 10),
			 (unsigned long long)(lo >> 10), n);
	else
		snprintf(buf, sizeof(buf),
			 "requested %llu KiB, obtained %llu to %llu KiB (%zu ring(s))",
			 (unsigned long long)(req >> 10),
			 (unsigned long long)(lo >> 10),
			 (unsigned long long)(hi >> 10), n);
	if ((r = meta(w, "capture.aux_ring", buf, err)) < 0 || !small)
		return r;
	snprintf(buf, sizeof(buf),
		 "%zu of %zu AUX ring(s) are smaller than the %llu KiB requested (down to %llu KiB): the kernel could not allocate the contiguous block (ENOMEM) and btrace halved them, so less history was kept",
		 small, n, (unsigned long long)(req >> 10),
		 (unsigned long long)(lo >> 10));
	return meta(w, "limit.aux-ring", buf, err);
}

static int put_marks(struct bt_snapbuild *w, const char *key,
		     const struct bt_aux_marks *mk, struct btrace_error *err)
{
	uint64_t n = mk->seen < BT_AUX_MARKS ? mk->seen : BT_AUX_MARKS;
	char v[1600];
	size_t len;

	len = (size_t)snprintf(v, sizeof(v), "%" PRIu64 " flagged AUX record(s), newest last (offset+size:flags):",
			       mk->seen);
	for (uint64_t k = mk->seen - n; k < mk->seen && len < sizeof(v) - 64; k++) {
		const unsigned i = (unsigned)(k % BT_AUX_MARKS);
		uint64_t fl = mk->m[i].flags;

		len += (size_t)snprintf(v + len, sizeof(v) - len,
					" %" PRIu64 "+%" PRIu64 ":%s%s%s",
					mk->m[i].offset, mk->m[i].size,
					fl & PERF_AUX_FLAG_TRUNCATED ? "T" : "",
					fl & PERF_AUX_FLAG_PARTIAL ? "P" : "",
					fl & PERF_AUX_FLAG_COLLISION ? "C" : "");
	}
	return meta(w, key, v, err);
}

/*
 * The perf clock of the sideband's sample times against the TSC of the
 * trace (cap_user_time_zero of the user page, read under its seqcount):
 * perf time = time_zero + (tsc >> shift) * mult + (((tsc & mask) * mult) >> shift).
 */
static int write_time_conv(struct bt_engine *e, struct bt_snapbuild *w,
			   struct btrace_error *err)
{
	const volatile struct perf_event_mmap_page *pc;
	uint32_t seq, mult = 0;
	uint16_t shift = 0;
	uint64_t zero = 0, cap = 0;
	char v[256];
	int tries = 0, rc;

	if (!e->sbr.rings || e->sbr.ncpus < 1 || !e->sbr.rings[0].base)
		return 0;
	pc = (const volatile void *)e->sbr.rings[0].base;
	do {
		seq = pc->lock;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		cap = pc->cap_user_time_zero;
		zero = pc->time_zero;
		mult = pc->time_mult;
		shift = pc->time_shift;
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
	} while (pc->lock != seq && ++tries < 1000);
	if (cap)
		snprintf(v, sizeof(v), "time_shift=%u time_mult=%u time_zero=%" PRIu64,
			 (unsigned)shift, mult, zero);
	else
		snprintf(v, sizeof(v), "unavailable: the kernel does not offer cap_user_time_zero (no stable TSC)");
	rc = meta(w, "capture.perf_time", v, err);
	if (rc < 0)
		return rc;
	/* The decoder's time (docs/format.md, "Time"): only for a PT trace
	 * with TSC packets whose TSC the kernel converts (cap_user_time_zero:
	 * a stable TSC; without it perf time is not a function of the TSC). */
	if (!cap || !mult || e->o->cfg.trace_kind != BTRACE_TRACE_PT ||
	    !e->o->cfg.tsc_bit || !(e->o->cfg.pt_config & e->o->cfg.tsc_bit))
		return 0;
	rc = meta(w, "time.clock", "perf", err);
	if (rc < 0)
		return rc;
	snprintf(v, sizeof(v), "zero=%" PRIu64 " mult=%u shift=%u", zero, mult,
		 (unsigned)shift);
	rc = meta(w, "time.tsc", v, err);
	if (rc < 0)
		return rc;
	snprintf(v, sizeof(v), "hardware timing packets: TSC in every PSB+%s%s",
		 e->o->cfg.pt_config & e->o->cfg.mtc_bit ? ", MTC" : "",
		 e->o->cfg.pt_config & e->o->cfg.cyc_bit ? ", CYC" : "");
	return meta(w, "time.steps", v, err);
}

/* Executable ranges mapped over while recording: a trace older than the
 * replacement ran code the snapshot no longer has (mappings carry no time). */
static int write_replaced(struct bt_engine *e, struct bt_snapbuild *w,
			  struct btrace_error *err)
{
	char v[2048];
	size_t n;

	if (!e->sb.replaced_total)
		return 0;
	n = (size_t)snprintf(v, sizeof(v),
			     "%" PRIu64 " executable range(s) were mapped over while recording (dlclose then dlopen at the same address, MAP_FIXED, a JIT): trace from before a replacement is decoded against the newest mapping and may be wrong there;",
			     e->sb.replaced_total);
	for (size_t i = 0; i < e->sb.nreplaced && n < sizeof(v) - 64; i++) {
		const struct bt_sb_replaced *r = &e->sb.replaced[i];

		n += (size_t)snprintf(v + n, sizeof(v) - n,
				      "%s 0x%" PRIx64 "-0x%" PRIx64 " %s+0x%" PRIx64 " replaced by %s+0x%" PRIx64 " at perf time %" PRIu64,
				      i ? ";" : "", r->start, r->end,
				      r->path ? r->path : "//anon", r->pgoff,
				      r->by ? r->by : "//anon", r->by_pgoff, r->time);
	}
	return meta(w, "limit.replaced-code", v, err);
}

/* Where the AUX streams were flagged, and data-ring records that were lost
 * (the marks they carried may be missing; they are no gap in the trace). */
static int write_aux_notes(struct bt_engine *e, struct bt_snapbuild *w,
			   struct btrace_error *err)
{
	char key[64], v[1024];
	size_t len = 0;
	uint64_t total = 0;
	int r;

	for (size_t i = 0; i < e->ntev; i++) {
		const struct bt_tev *t = &e->tevs[i];

		if (!t->per_task)
			continue;
		if (t->marks.seen) {
			snprintf(key, sizeof(key), "capture.aux_marks.tid-%d", (int)t->tid);
			if ((r = put_marks(w, key, &t->marks, err)) < 0)
				return r;
		}
		if (t->records_lost && len < sizeof(v) - 48) {
			len += (size_t)snprintf(v + len, sizeof(v) - len, "%sthread %d: %" PRIu64,
						len ? "; " : "", (int)t->tid, t->records_lost);
			total += t->records_lost;
		}
	}
	for (int c = 0; e->cpu_rings_open && c < e->ncpus; c++) {
		if (e->cpu_marks[c].seen) {
			snprintf(key, sizeof(key), "capture.aux_marks.cpu-%d", e->cpus[c]);
			if ((r = put_marks(w, key, &e->cpu_marks[c], err)) < 0)
				return r;
		}
		if (e->cpu_records_lost[c] && len < sizeof(v) - 48) {
			len += (size_t)snprintf(v + len, sizeof(v) - len, "%scpu %d: %" PRIu64,
						len ? "; " : "", e->cpus[c],
						e->cpu_records_lost[c]);
			total += e->cpu_records_lost[c];
		}
	}
	if (total) {
		char t[1400];

		snprintf(t, sizeof(t),
			 "%" PRIu64 " record(s) of the trace events' data rings were lost (%s): marks of truncated or partial trace may be missing; the trace bytes themselves are not known to be lost",
			 total, v);
		if ((r = meta(w, "limit.trace-records-lost", t, err)) < 0)
			return r;
	}
	return 0;
}

/*
 * Threads without a trace buffer: capture.untraced = "COUNT: TID TID ..."
 * and the limit line with the first reasons (the report's limits array).
 */
static int write_untraced(struct bt_engine *e, struct bt_snapbuild *w,
			  const struct btrace_signal *sig,
			  struct btrace_error *err)
{
	char v[1024], t[2048];
	size_t n, m;
	bool died = false;
	int r;

	n = (size_t)snprintf(v, sizeof(v), "%zu:", e->nuntraced);
	for (size_t i = 0; i < e->nuntraced && n < sizeof(v) - 16; i++) {
		n += (size_t)snprintf(v + n, sizeof(v) - n, " %d",
				      (int)e->untraced[i].tid);
		if (sig && sig->signo && sig->tid == e->untraced[i].tid)
			died = true;
	}
	if ((r = meta(w, "capture.untraced", v, err)) < 0)
		return r;
	m = (size_t)snprintf(t, sizeof(t),
			     "%zu thread%s had no trace buffer, so no history%s:",
			     e->nuntraced, e->nuntraced == 1 ? "" : "s",
			     died ? ", among them the thread that died: its fault comes from the signal and registers alone" : "");
	for (size_t i = 0; i < e->nuntraced && m < sizeof(t) - 32; i++)
		m += (size_t)snprintf(t + m, sizeof(t) - m, "%s thread %d: %.200s",
				      i ? ";" : "", (int)e->untraced[i].tid,
				      e->untraced[i].why);
	return meta(w, "limit.untraced-threads", t, err);
}

/* The trace buffers (per task, then the per-CPU rings split by thread)
 * and a task per thread the sideband knows. */
static int write_threads(struct bt_engine *e, struct bt_snapbuild *w,
			 const struct btrace_signal *sig,
			 struct btrace_error *err)
{
	int r;

	for (size_t i = 0; i < e->ntev; i++) {
		struct bt_tev *t = &e->tevs[i];

		if (t->per_task &&
		    (r = add_buffer(e, w, &t->ring, t->tid, -1, t->flags,
				    t->lost, err)) < 0)
			return r;
	}
	if (e->cpu_rings_open && (r = write_cpu_rings(e, w, err)) < 0)
		return r;
	for (size_t i = 0; i < e->sb.ntasks; i++) {
		const struct bt_sb_task *st = &e->sb.tasks[i];
		struct btrace_task tk = {
			.pid = e->pid, .tid = st->tid, .ppid = st->ppid,
			.comm = (char *)st->comm,
		};

		if (st->exited)
			tk.flags |= BTRACE_TASK_EXITED;
		if (sig && sig->tid == st->tid && sig->signo)
			tk.flags |= BTRACE_TASK_CRASHED;
		for (size_t j = 0; j < e->nuntraced; j++)
			if (e->untraced[j].tid == st->tid)
				tk.flags |= BTRACE_TASK_UNTRACED;
		if ((r = bt_snapbuild_add_task(w, &tk)) < 0)
			return r;
	}
	return 0;
}

/* capture.events: the tids of the per-task events, then of the
 * catch-all ones. */
static int write_events(struct bt_engine *e, struct bt_snapbuild *w,
			struct btrace_error *err)
{
	char ev[2048];
	size_t n = 0;

	for (int pass = 0; pass < 2; pass++) {
		n += (size_t)snprintf(ev + n, sizeof(ev) - n, "%s",
				      pass ? "; catch-all:" : "per-task:");
		for (size_t i = 0; i < e->ntev && n < sizeof(ev) - 16; i++)
			if (e->tevs[i].per_task == !pass)
				n += (size_t)snprintf(ev + n, sizeof(ev) - n,
						      " %d", (int)e->tevs[i].tid);
	}
	return meta(w, "capture.events", ev, err);
}

/* The hardware backend's own metadata: how it captured (capture.*,
 * sideband.*) and its limits (limit.*). */
static int write_capture_meta(struct bt_engine *e, struct bt_snapbuild *w,
			      uint32_t mode, const struct btrace_signal *sig,
			      bool alive, struct btrace_error *err)
{
	static const char *const mode_name[] = {
		[BTRACE_CRASH_PRECISE] = "precise (stopped at the signal with ptrace)",
		[BTRACE_CRASH_PASSIVE] = "passive (snapshot taken after the process died)",
		[BTRACE_CRASH_ONDEMAND] = "on demand (btrace snapshot)",
		[BTRACE_CRASH_EXIT] = "at exit",
	};
	char buf[512];
	int r;

	if ((r = meta(w, "capture.mode", mode_name[mode], err)) < 0 ||
	    (e->mode_why[0] && (r = meta(w, "capture.passive_reason", e->mode_why, err)) < 0) ||
	    (r = meta(w, "capture.plan", e->plan.summary, err)) < 0 ||
	    (e->gap[0] && (r = meta(w, "capture.gap", e->gap, err)) < 0))
		return r;
	if ((r = aux_size_meta(e, w, err)) < 0)
		return r;
	if (e->disable_ns) {
		/* how long the siblings, then the crashed thread, kept
		 * tracing after btrace saw the stop (the ioctls' time) */
		snprintf(buf, sizeof(buf), "%" PRIu64, e->disable_ns);
		if ((r = meta(w, "capture.disable_ns", buf, err)) < 0)
			return r;
	}
	if (e->o->bts_samples &&
	    ((r = meta(w, "capture.bts_path", "branch-instructions sampling (the intel_bts PMU is missing, as under page-table isolation): BTS records read from the data ring", err)) < 0 ||
	     (r = meta(w, "limit.bts-kernel-records", "the kernel leaves out every BTS record with a kernel address (intel_pmu_drain_bts_buffer), so system calls, faults and signal deliveries leave no record: the trace shows the user code only, and a jump into a signal handler appears as a gap", err)) < 0))
		return r;
	if ((r = write_events(e, w, err)) < 0)
		return r;
	if (e->nuntraced && (r = write_untraced(e, w, sig, err)) < 0)
		return r;
	if ((r = write_aux_notes(e, w, err)) < 0 ||
	    (r = write_time_conv(e, w, err)) < 0 ||
	    (r = write_replaced(e, w, err)) < 0)
		return r;
	snprintf(buf, sizeof(buf), "%llu", (unsigned long long)e->sb.lost);
	if ((r = meta(w, "sideband.lost_records", buf, err)) < 0)
		return r;
	if (e->o->test_event) {
		snprintf(buf, sizeof(buf),
			 "software event type %u config %llu stands in for the trace PMU: no trace buffers",
			 e->o->trace_attr.type,
			 (unsigned long long)e->o->trace_attr.config);
		if ((r = meta(w, "capture.test_event", buf, err)) < 0)
			return r;
	}
	if (!alive && mode == BTRACE_CRASH_PASSIVE &&
	    (r = meta(w, "capture.note", "anonymous executable memory could not be copied after death; the vDSO image is btrace's own (same kernel)", err)) < 0)
		return r;
	if (e->sbr.build_id == false &&
	    (r = meta(w, "sideband.build_ids", "read from the files (kernel without attr.build_id)", err)) < 0)
		return r;
	return 0;
}

/*
 * The engine's snapshot, fed to the snapshot builder (snapbuild.h):
 * buffers, tasks, mappings, code, signal, the standard metadata, then the
 * hardware backend's own metadata.
 */
int bt_engine_write(struct bt_engine *e, const char *path, uint32_t mode,
		    const struct btrace_signal *sig, bool alive,
		    struct btrace_error *err)
{
	struct bt_snapbuild *sb = &e->snap;   /* kept for the summary */
	struct btrace_config cfg = e->o->cfg;
	int r;

	bt_engine_drain_trace(e);
	bt_sb_rings_drain(&e->sbr, &e->sb);
	cfg.crash_mode = mode;
	cfg.requested_size = e->plan.ring.history;
	cfg.pad = e->plan.ring.pad;
	r = bt_snapbuild_begin(sb, path, e->comm, e->pid, &cfg, err);
	if (r < 0)
		return r;
	if ((r = write_threads(e, sb, sig, err)) < 0)
		goto fail;
	if ((r = bt_snapbuild_add_mappings(sb, e->sb.maps, e->sb.nmaps,
					   !(e->rec->flags & BTRACE_RECORD_NO_CODE),
					   alive)) < 0)
		goto fail;
	if (sig && (r = bt_snapbuild_set_signal(sb, sig)) < 0)
		goto fail;
	/* the crashed thread's stack, stopped at the signal (the origin of
	 * the report follows values through it) */
	if (sig && alive && mode == BTRACE_CRASH_PRECISE &&
	    (r = bt_snapbuild_add_stack(sb, sig)) < 0)
		goto fail;
	/* and its other memory, up to --memory (docs/format.md, "memory") */
	if (sig && alive && mode == BTRACE_CRASH_PRECISE &&
	    !(e->rec->flags & BTRACE_RECORD_NO_MEMORY) &&
	    (r = bt_snapbuild_add_data(sb, e->rec->memory ? e->rec->memory :
				       BTRACE_MEMORY_DEFAULT)) < 0)
		goto fail;
	/* host, kernel, version, time, command: as every backend's */
	if ((r = bt_snapbuild_std_meta(sb, e->rec->argv, alive ? e->pid : 0)) < 0)
		goto fail;
	if ((r = write_capture_meta(e, sb, mode, sig, alive, err)) < 0)
		goto fail;
	return bt_snapbuild_finish(sb);
fail:
	bt_snapbuild_abort(sb);
	return r;
}
