/* SPDX-License-Identifier: MIT */
/*
 * btrace_decode(): the driver.  Builds the image, decodes every buffer
 * (whole, or only the tail needed for the history asked for), then finds
 * the fault and rebuilds the stack and the call history of each thread.
 */
#include <errno.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "decode-internal.h"
#include "pt.h"
#include "signame.h"
#include "util.h"

/* How a thread was decoded, to stream it again (btrace_decode_thread) */
struct bt_src {
	const struct btrace_buffer *buf;
	int64_t start;             /* bt_thread_build.start */
};

struct bt_result {
	struct btrace_decode_result pub;
	struct bt_ctx ctx;
	struct bt_src *src;        /* per thread */
};

/* bt_thread_build.start: the whole buffer / a tail decode that found no
 * PSB (bt_pt_decode() alone) */
#define START_WHOLE (-1)
#define START_NOPSB (-2)

#define RES(p) ((struct bt_result *)(void *)(p))

static int crashed_tid(const struct btrace_snapshot *s)
{
	if (s->signal && s->signal->tid > 0)
		return s->signal->tid;
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].flags & BTRACE_TASK_CRASHED)
			return s->tasks[i].tid;
	return 0;
}

/* PT, tail only: start at a PSB near the end and move back until the
 * history holds what was asked for (and the stack its callers, within a
 * bound). */
#define STACK_TAIL_MAX (1u << 20)

/* A frame whose callers nobody asks for: main (gdb stops there too), the
 * process entry and the C library's thread starts. */
static int stack_entry(const struct btrace_frame *f)
{
	static const char *const names[] = {
		"main", "_start", "__libc_start_main", "__libc_start_call_main",
		"start_thread", "clone", "__clone", "clone3", "__clone3",
		"__clone_internal",
	};
	const char *n = f->sym.outer ? f->sym.outer : f->sym.function;

	for (size_t i = 0; n && i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(n, names[i]))
			return 1;
	return 0;
}
static int add_lost_gap(struct bt_ctx *c, const struct btrace_buffer *buf,
			struct bt_thread_build *b);

/* One decode of a tail from the PSB at @start (@first: the first PSB). */
static int pt_attempt(struct bt_ctx *c, const struct btrace_buffer *buf,
		      struct bt_thread_build *b, int64_t start, int64_t first)
{
	int ret;

	bt_thread_reset(b);
	ret = bt_walk_begin(c, b);
	if (ret >= 0)
		ret = bt_thread_stream_begin(c, b);
	if (ret >= 0)
		ret = add_lost_gap(c, buf, b);
	if (ret < 0)
		return ret;
	if (start == first && first > 0) {
		ret = bt_thread_add_gap(c, b, BTRACE_GAP_UNUSABLE, 0, 0, 0,
					(uint64_t)first,
					bt_ctx_printf(c, "%lld bytes before the first PSB are unusable (ring wrapped mid-packet)",
						      (long long)first));
		if (ret < 0)
			return ret;
	}
	ret = bt_pt_decode_from(c, buf, b, (uint64_t)start);
	if (ret < 0)
		return ret;
	return bt_thread_finish(c, b);
}

static int decode_pt_tail(struct bt_ctx *c, const struct btrace_buffer *buf,
			  struct bt_thread_build *b)
{
	int64_t first = bt_pt_psb_after(buf->data, buf->size, 0);
	uint64_t want = c->opts.last;
	int64_t start = -1;
	uint64_t step = 1, history_bytes = 0;
	size_t stack_frames = 0;
	int ret;

	if (first < 0) {
		/* nothing to decode: still a thread with its fault and the
		 * frame where it was */
		b->start = START_NOPSB;
		ret = bt_pt_decode(c, buf, b);
		return ret < 0 ? ret : bt_thread_finish(c, b);
	}
	b->t->unusable_bytes = (uint64_t)first;
	/* A handler went on after the fault: the history before the fault is
	 * not at the end; keep it, the head and the end of what ran after
	 * (hold: compact_hold()), from the first pass on.  (Streaming, the
	 * sink has the history.) */
	b->hold = b->t->crashed && b->keep && !b->sink &&
		  btrace_snapshot_meta(c->snap, "qemu.final_signal");
	for (;;) {
		/* the step-th PSB before the previous start */
		int64_t s = start < 0 ? (int64_t)buf->size : start;
		for (uint64_t k = 0; k < step; k++) {
			int64_t p = bt_pt_psb_before(buf->data, buf->size,
						     (uint64_t)s);
			if (p < first)
				break;
			s = p;
		}
		if (s == start || s == (int64_t)buf->size)
			s = first;
		if (s <= first)
			s = first;
		start = s;
		ret = pt_attempt(c, buf, b, start, first);
		if (ret < 0)
			return ret;
		if (start == first)
			break;
		if (bt_thread_units(b) > want) {
			/* The history asked for is there.  In the crashed
			 * thread, go on back while that finds the callers of a
			 * stack that starts inside the history, within a
			 * bound: stop at main or a thread start, when a
			 * doubling found no new frame, or when the tail is
			 * STACK_TAIL_MAX bytes and 8 times what the history
			 * needed. */
			size_t ns = b->t->nstack;
			uint64_t used = buf->size - (uint64_t)start;
			if (!history_bytes)
				history_bytes = used;
			/* A handler went on after the fault (the QEMU backend
			 * kept the final signal apart) and the fault is not in
			 * the tail yet: go on back to it (a long handler path,
			 * e.g. a traceback dump, is longer than the history
			 * asked for). */
			if (b->t->crashed && !b->t->fault.death_ip &&
			    btrace_snapshot_meta(c->snap, "qemu.final_signal")) {
				/* (hold: set before the loop) */
				step *= 2;
				continue;
			}
			if (!b->t->crashed || !ns ||
			    !(b->t->stack[ns - 1].flags & BTRACE_CALL_PARTIAL) ||
			    stack_entry(&b->t->stack[ns - 1]) || ns <= stack_frames ||
			    (used > STACK_TAIL_MAX && used > 8 * history_bytes))
				break;
			stack_frames = ns;
		}
		step *= 2;
	}
	b->t->decoded_bytes = buf->size - (uint64_t)start;
	b->t->truncated = start > first;
	b->start = start;
	return 1;   /* analysed */
}

static int add_lost_gap(struct bt_ctx *c, const struct btrace_buffer *buf,
			struct bt_thread_build *b)
{
	if (!buf->lost && !(buf->flags & BTRACE_BUF_LOST))
		return 0;
	return bt_thread_add_gap(c, b, BTRACE_GAP_LOST, -BTRACE_ERR_OVERFLOW,
				 0, 0, buf->lost,
				 bt_ctx_printf(c, "the capture recorded lost trace (%llu bytes or records); where is not known",
					       (unsigned long long)buf->lost));
}

/* The whole buffer (b reset, its walker begun). */
static int decode_whole(struct bt_ctx *c, const struct btrace_buffer *buf,
			struct bt_thread_build *b)
{
	int ret = bt_thread_stream_begin(c, b);

	if (ret < 0)
		return ret;
	ret = add_lost_gap(c, buf, b);
	if (ret < 0)
		return ret;
	if (buf->kind == BTRACE_TRACE_BTS)
		ret = bt_bts_decode(c, buf, b);
	else
		ret = bt_pt_decode(c, buf, b);
	if (ret < 0)
		return ret;
	return bt_thread_finish(c, b);
}

static void build_init(struct bt_ctx *c, struct bt_thread_build *b)
{
	bt_thread_init(c, b);
	b->start = START_WHOLE;
	bt_thread_reset(b);
}

static int decode_buffer(struct bt_ctx *c, const struct btrace_buffer *buf,
			 struct bt_thread_build *b)
{
	int ret;
	int tail = c->opts.last && !(c->opts.flags & BTRACE_DECODE_FULL);

	build_init(c, b);
	ret = bt_walk_begin(c, b);
	if (ret < 0)
		return bt_error(c->err, ret, "decode: out of memory");
	if (buf->kind == BTRACE_TRACE_PT && tail) {
		ret = decode_pt_tail(c, buf, b);
		return ret < 0 ? ret : 0;
	}
	return decode_whole(c, buf, b);
}

/* The process of a result: backend, signal, pid and command. */
static void result_process(const struct btrace_snapshot *snap,
			   struct btrace_decode_result *res)
{
	res->backend = snap->has_config ? snap->config.backend : 0;
	res->kind = snap->has_config ? snap->config.trace_kind : 0;
	res->signal = snap->signal;
	res->signal_name = snap->signal ? btrace_signal_name(snap->signal->signo) : NULL;
	res->crashed_thread = -1;
	for (size_t i = 0; i < snap->ntasks; i++) {
		if (!res->pid)
			res->pid = snap->tasks[i].pid;
		if (snap->tasks[i].tid == snap->tasks[i].pid || !res->command)
			res->command = snap->tasks[i].comm ? snap->tasks[i].comm :
				       snap->tasks[i].exe;
	}
	if (!res->pid && snap->nmappings)
		res->pid = snap->mappings[0].pid;
}

/* One buffer into the next thread of the result. */
static int decode_thread(struct bt_result *r, const struct btrace_buffer *buf,
			 int crashed)
{
	struct bt_ctx *c = &r->ctx;
	struct btrace_decode_result *res = &r->pub;
	struct btrace_thread *t = &res->threads[res->nthreads];
	struct bt_thread_build b = { 0 };
	int ret;

	b.t = t;
	t->tid = buf->tid;
	t->cpu = buf->cpu;
	t->crashed = crashed;
	t->kind = buf->kind;
	t->buffer_bytes = buf->size;
	t->requested_bytes = buf->requested_size;
	t->decoded_bytes = buf->size;
	ret = decode_buffer(c, buf, &b);
	bt_walk_end(&b);
	r->src[res->nthreads] = (struct bt_src){ buf, b.start };
	if (ret < 0)
		return ret;
	/* complete: no gap in what was decoded, and the buffer holds the
	 * history that was asked for */
	t->complete = !t->ngaps &&
		      (!t->requested_bytes ||
		       t->buffer_bytes - t->unusable_bytes >= t->requested_bytes);
	if (t->fault.found && c->nholes)
		bt_image_mark_entered(c, t->fault.ip, 0);
	if (crashed && res->crashed_thread < 0)
		res->crashed_thread = (int)res->nthreads;
	res->nthreads++;
	return 0;
}

/* Every buffer (of opts.tid), the crashed thread's first. */
static int decode_threads(struct bt_result *r)
{
	const struct btrace_snapshot *snap = r->ctx.snap;
	int ctid = crashed_tid(snap), ret;

	for (int pass = 0; pass < 2; pass++) {
		for (size_t i = 0; i < snap->nbuffers; i++) {
			const struct btrace_buffer *buf = &snap->buffers[i];
			int crashed = ctid && buf->tid == ctid;
			if (crashed != (pass == 0))
				continue;
			if (r->ctx.opts.tid && buf->tid != r->ctx.opts.tid)
				continue;
			ret = decode_thread(r, buf, crashed);
			if (ret < 0)
				return ret;
		}
	}
	return 0;
}

/*
 * The snapshot's time conversion (metadata time.tsc "zero=Z mult=M
 * shift=S", written by the backend that put timing packets in a PT
 * trace): without it, or with a value out of range, the trace has no
 * time for the decoder.
 */
static void time_init(struct bt_ctx *c, struct btrace_decode_result *res)
{
	const char *v = btrace_snapshot_meta(c->snap, "time.tsc");
	const char *clk = btrace_snapshot_meta(c->snap, "time.clock");
	const char *steps = btrace_snapshot_meta(c->snap, "time.steps");

	if (!clk || !c->snap->has_config ||
	    c->snap->config.trace_kind != BTRACE_TRACE_PT ||
	    bt_time_tsc_parse(v, &c->tconv.zero, &c->tconv.mult,
			      &c->tconv.shift))
		return;
	c->timed = 1;
	res->clock = bt_ctx_strdup(c, clk);
	res->time_steps = steps ? bt_ctx_strdup(c, steps) : NULL;
}

int btrace_decode(const struct btrace_snapshot *snap,
		  const struct btrace_decode_opts *opts,
		  struct btrace_decode_result **out,
		  struct btrace_error *err)
{
	struct bt_result *r;
	struct bt_ctx *c;
	int ret;

	bt_error_clear(err);
	if (!snap || !out)
		return bt_error(err, -EINVAL, "decode: invalid argument: NULL snapshot or result");
	*out = NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return bt_error(err, -ENOMEM, "decode: out of memory");
	c = &r->ctx;
	c->snap = snap;
	c->err = err;
	c->memfd = -1;
	/* the size policy of btrace.h, for the options and their sink (the
	 * decode uses copies: the fields an older caller lacks read zero) */
	c->opts.sz = sizeof(c->opts);
	ret = opts ? bt_opts_copy(&c->opts, sizeof(c->opts), opts,
				  "decode options", err) : 0;
	if (!ret && c->opts.sink) {
		ret = bt_opts_copy(&c->sink, sizeof(c->sink), c->opts.sink,
				   "decode sink", err);
		c->opts.sink = &c->sink;
	}
	if (ret < 0) {
		free(r);
		return ret;
	}

	ret = bt_image_build(c);
	if (ret >= 0)
		ret = bt_plt_load(c);
	if (ret >= 0)
		ret = bt_insn_init(c);
	if (ret >= 0)
		ret = bt_syms_init(c);
	if (ret < 0)
		goto fail;

	struct btrace_decode_result *res = &r->pub;
	result_process(snap, res);
	time_init(c, res);
	res->threads = calloc(snap->nbuffers + 1, sizeof(*res->threads));
	r->src = calloc(snap->nbuffers + 1, sizeof(*r->src));
	if (!res->threads || !r->src) {
		ret = bt_error(err, -ENOMEM, "decode: out of memory");
		goto fail;
	}
	ret = decode_threads(r);
	if (ret < 0)
		goto fail;
	ret = bt_image_notes(c);
	if (ret < 0) {
		ret = bt_error(err, ret, "decode: out of memory");
		goto fail;
	}
	res->image_notes = c->notes;
	res->nimage_notes = c->nnotes;
	*out = res;
	return 0;
fail:
	btrace_decode_result_free(&r->pub);
	return ret;
}

void btrace_decode_result_free(struct btrace_decode_result *res)
{
	if (!res)
		return;
	struct bt_result *r = RES(res);
	struct bt_ctx *c = &r->ctx;

	for (size_t i = 0; i < res->nthreads; i++) {
		free(res->threads[i].blocks);
		free(res->threads[i].gaps);
		free(res->threads[i].calls);
		free(res->threads[i].stack);
	}
	free(res->threads);
	free(r->src);
	free(c->bend);
	bt_syms_fini(c);
	bt_insn_fini(c);
	free(c->plt);
	free(c->plt_ranges);
	bt_image_free(c);
	for (size_t i = 0; i < c->nnotes; i++)
		free(c->notes[i]);
	free(c->notes);
	for (size_t i = 0; i < c->nstrs; i++)
		free(c->strs[i]);
	free(c->strs);
	free(r);
}

int btrace_decode_thread(struct btrace_decode_result *res, size_t i,
			 const struct btrace_decode_sink *sink,
			 struct btrace_error *err)
{
	struct bt_result *r;
	struct bt_ctx *c;
	struct btrace_error *saved;
	const struct btrace_thread *rt;
	const struct bt_src *src;
	struct btrace_thread t = { 0 };
	struct bt_thread_build b = { 0 };
	struct btrace_decode_sink sk;
	int ret;

	bt_error_clear(err);
	if (!res || !sink || i >= res->nthreads)
		return bt_error(err, -EINVAL, "decode: invalid argument: %s",
				!res ? "NULL result" : !sink ? "NULL sink" :
				"no such thread in the result");
	ret = bt_opts_copy(&sk, sizeof(sk), sink, "decode sink", err);
	if (ret < 0)
		return ret;
	r = RES(res);
	c = &r->ctx;
	saved = c->err;
	c->err = err;
	rt = &res->threads[i];
	src = &r->src[i];
	t.tid = rt->tid;
	t.cpu = rt->cpu;
	t.crashed = rt->crashed;
	t.kind = rt->kind;
	t.buffer_bytes = rt->buffer_bytes;
	t.requested_bytes = rt->requested_bytes;
	t.decoded_bytes = rt->buffer_bytes;
	b.t = &t;
	{
		/* the same decode as btrace_decode()'s last one, this sink */
		const struct btrace_decode_sink *os = c->opts.sink;
		c->opts.sink = &sk;
		build_init(c, &b);
		c->opts.sink = os;
	}
	ret = bt_walk_begin(c, &b);
	if (ret < 0) {
		ret = bt_error(err, ret, "decode: out of memory");
	} else if (src->start >= 0) {
		ret = pt_attempt(c, src->buf, &b, src->start,
				 bt_pt_psb_after(src->buf->data, src->buf->size, 0));
	} else if (src->start == START_NOPSB) {
		ret = bt_thread_stream_begin(c, &b);
		if (ret >= 0)
			ret = bt_pt_decode(c, src->buf, &b);
		if (ret >= 0)
			ret = bt_thread_finish(c, &b);
	} else {
		ret = decode_whole(c, src->buf, &b);
	}
	bt_walk_end(&b);
	free(t.blocks);
	free(t.gaps);
	free(t.calls);
	free(t.stack);
	c->err = saved;
	return ret < 0 ? ret : 0;
}

int btrace_decode_block_insns(struct btrace_decode_result *res,
			      const struct btrace_block *blk,
			      struct btrace_insn *out, size_t n)
{
	struct bt_ctx *c;
	uint64_t ip;
	size_t k = 0;

	if (!res || !blk)
		return -EINVAL;
	c = &RES(res)->ctx;
	if (blk->kind != BTRACE_ITEM_BLOCK)
		return 0;
	ip = blk->ip;
	for (uint32_t i = 0; i < blk->ninsn; i++) {
		struct btrace_insn in;
		if (bt_insn_disasm(c, ip, &in) < 0 || !in.size)
			return -BTRACE_ERR_NOMAP;
		in.sym = *bt_syms_lookup(c, ip);
		if (k < n)
			out[k] = in;
		k++;
		ip += in.size;
	}
	return (int)k;
}

struct bt_ctx *bt_result_ctx(struct btrace_decode_result *res)
{
	return &RES(res)->ctx;
}

int btrace_decode_symbolize(struct btrace_decode_result *res, uint64_t ip,
			    struct btrace_symbol *out)
{
	if (!res || !out)
		return -EINVAL;
	*out = *bt_syms_lookup(&RES(res)->ctx, ip);
	return 0;
}

const char *btrace_gap_kind_name(uint32_t kind)
{
	switch (kind) {
	case BTRACE_GAP_UNUSABLE: return "unusable";
	case BTRACE_GAP_OVERFLOW: return "overflow";
	case BTRACE_GAP_DECODE: return "decode-error";
	case BTRACE_GAP_NOIMAGE: return "missing-image";
	case BTRACE_GAP_KERNEL: return "kernel";
	case BTRACE_GAP_LOST: return "lost";
	case BTRACE_GAP_TRUNCATED: return "truncated";
	}
	return "unknown";
}

const char *btrace_signal_name(int signo)
{
	return bt_sig_name(signo, BT_SIG_IO);
}
