/* SPDX-License-Identifier: MIT */
/*
 * From decoded blocks to answers: where the fault is, the call stack at
 * the fault (rebuilt from calls and returns, surviving tail calls, longjmp,
 * exception unwinding, signal frames and returns past the start of the
 * history) and the function-call history (gdb's function-call-history /c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "decode-internal.h"
#include "util.h"

struct frame {
	uint64_t ret;        /* where it returns to, 0 unknown (partial) */
	uint64_t call_ip;    /* the call (or interrupted insn) in the frame below */
	uint64_t func;       /* function start, 0 unknown */
	uint64_t ip;         /* last address executed in this frame */
	uint32_t flags;      /* BTRACE_CALL_* */
	int32_t depth;
};

struct walk {
	struct bt_ctx *c;
	struct btrace_thread *t;
	struct frame *fr;
	size_t nfr, cfr;
	size_t ccalls;
	int32_t depth, min_depth;
	int pending;         /* next block starts a new call entry */
	uint32_t pending_flags;
	int jump_pending;    /* last block ended in a jump: check the target */
	int ret_pending;
	int async_pending;   /* an ITEM_ASYNC waits for the handler */
	uint64_t async_ip;
	struct frame *saved; /* the stack at the fault */
	size_t nsaved;
};

static int push(struct walk *w, struct frame f)
{
	if (bt_grow((void **)&w->fr, &w->cfr, w->nfr + 1, sizeof(*w->fr)))
		return -ENOMEM;
	w->fr[w->nfr++] = f;
	return 0;
}

static int new_call(struct walk *w, uint64_t ip, uint32_t flags, int64_t blk)
{
	struct btrace_thread *t = w->t;

	if (t->ncalls == w->ccalls) {
		size_t ncap = w->ccalls ? w->ccalls * 2 : 1024;
		void *p = realloc(t->calls, ncap * sizeof(*t->calls));
		if (!p)
			return -ENOMEM;
		t->calls = p;
		w->ccalls = ncap;
		bt_hugepages(p, ncap * sizeof(*t->calls));
	}
	struct btrace_call *cl = &t->calls[t->ncalls++];
	memset(cl, 0, sizeof(*cl));
	cl->depth = w->depth;
	cl->flags = flags;
	cl->ip = ip;
	cl->end_ip = ip;
	cl->first_block = blk >= 0 ? (uint64_t)blk : 0;
	return 0;
}

static struct frame *top(struct walk *w)
{
	return w->nfr ? &w->fr[w->nfr - 1] : NULL;
}

/* Pop to (and excluding) frame @k, which becomes the top. */
static void pop_to(struct walk *w, size_t k)
{
	w->nfr = k + 1;
	w->depth = w->fr[k].depth;
}

static int frame_of_function(struct walk *w, uint64_t func, size_t below)
{
	for (size_t k = below; k-- > 0;)
		if (w->fr[k].func && w->fr[k].func == func)
			return (int)k;
	return -1;
}

/* Control arrived at @ip after a return. */
static int on_return(struct walk *w, uint64_t ip)
{
	for (size_t k = w->nfr; k-- > 0;) {
		if (w->fr[k].ret == ip && k > 0) {
			pop_to(w, k - 1);
			return 0;
		}
	}
	if (w->nfr > 1) {
		pop_to(w, w->nfr - 2);
		return 0;
	}
	/* Return past the start of the history: a new outer frame. */
	w->depth--;
	if (w->depth < w->min_depth)
		w->min_depth = w->depth;
	w->nfr = 0;
	return push(w, (struct frame){ 0, 0, bt_syms_func_start(w->c, ip), ip,
				       BTRACE_CALL_PARTIAL, w->depth });
}

/* Control arrived at @ip after a jump; 1 if a new call entry starts. */
static int on_jump(struct walk *w, uint64_t ip, uint32_t *flags)
{
	struct frame *f = top(w);
	uint64_t func = bt_syms_func_start(w->c, ip);

	if (!f || !func || func == f->func)
		return 0;
	/* longjmp or exception unwinding: into a function further down. */
	int k = frame_of_function(w, func, w->nfr - 1);
	if (k >= 0 && func != ip) {
		pop_to(w, (size_t)k);
		*flags = BTRACE_CALL_UNWOUND;
		return 1;
	}
	if (func == ip) {
		/* tail call (or a PLT stub jumping to its target) */
		f->func = func;
		f->flags |= BTRACE_CALL_TAILCALL;
		*flags = BTRACE_CALL_TAILCALL;
		return 1;
	}
	return 0;
}

static void save_stack(struct walk *w)
{
	free(w->saved);
	w->saved = malloc((w->nfr + 1) * sizeof(*w->saved));
	if (!w->saved) {
		w->nsaved = 0;
		return;
	}
	memcpy(w->saved, w->fr, w->nfr * sizeof(*w->fr));
	w->nsaved = w->nfr;
}

static int on_block(struct walk *w, size_t i)
{
	struct btrace_block *b = &w->t->blocks[i];
	uint32_t flags = w->pending_flags;
	int start = w->pending || !w->t->ncalls;
	int ret = 0;

	if (w->ret_pending)
		ret = on_return(w, b->ip);
	else if (w->jump_pending && on_jump(w, b->ip, &flags))
		start = 1;
	if (ret < 0)
		return ret;
	if (!w->nfr) {
		ret = push(w, (struct frame){ 0, 0, bt_syms_func_start(w->c, b->ip),
					      b->ip, BTRACE_CALL_PARTIAL, w->depth });
		if (ret < 0)
			return ret;
	}
	struct frame *f = top(w);
	if (!f->func)
		f->func = bt_syms_func_start(w->c, b->ip);
	if (w->ret_pending || !w->t->ncalls) {
		start = 1;
		if (f->flags & BTRACE_CALL_PARTIAL)
			flags |= BTRACE_CALL_PARTIAL;
	}
	w->ret_pending = w->jump_pending = w->pending = 0;
	w->pending_flags = 0;
	if (start) {
		ret = new_call(w, b->ip, flags, (int64_t)i);
		if (ret < 0)
			return ret;
	}
	struct btrace_call *cl = &w->t->calls[w->t->ncalls - 1];
	cl->nblocks = i + 1 - cl->first_block;
	cl->ninsn += b->ninsn;
	cl->end_ip = b->end_ip;
	b->depth = w->depth;
	b->sym = bt_syms_lookup(w->c, b->ip);
	w->t->ninsn += b->ninsn;
	f->ip = b->end_ip;

	const struct bt_insn_info *ii = bt_insn_classify(w->c, b->end_ip);
	b->iclass = ii->cls;
	b->end_size = ii->size;
	switch (ii->cls) {
	case BTRACE_INSN_CALL:
	case BTRACE_INSN_CALL_IND:
		if (ii->cls == BTRACE_INSN_CALL && ii->target == b->end_ip + ii->size)
			break;   /* call next insn: the PIC idiom, not a call */
		w->depth++;
		ret = push(w, (struct frame){ b->end_ip + ii->size, b->end_ip,
					      ii->target, 0, 0, w->depth });
		w->pending = 1;
		break;
	case BTRACE_INSN_RET:
		w->ret_pending = 1;
		break;
	case BTRACE_INSN_JMP:
	case BTRACE_INSN_JMP_IND:
		w->jump_pending = 1;
		break;
	default:
		break;
	}
	return ret;
}

static int on_item(struct walk *w, size_t i)
{
	struct btrace_block *b = &w->t->blocks[i];
	int ret = 0;

	switch (b->kind) {
	case BTRACE_ITEM_BLOCK:
		return on_block(w, i);
	case BTRACE_ITEM_ASYNC:
	case BTRACE_ITEM_FAULT:
		/* the interrupted instruction is where the last branch went */
		if (w->ret_pending) {
			ret = on_return(w, b->ip);
		} else if (w->jump_pending) {
			uint32_t fl = 0;
			on_jump(w, b->ip, &fl);
		}
		w->ret_pending = w->jump_pending = 0;
		if (ret < 0)
			return ret;
		b->depth = w->depth;
		if (b->kind == BTRACE_ITEM_FAULT)
			break;
		w->async_pending = 1;
		w->async_ip = b->ip;
		if (top(w))
			top(w)->ip = b->ip;
		break;
	case BTRACE_ITEM_ENABLED:
		b->depth = w->depth;
		if (w->async_pending && b->ip != w->async_ip) {
			/* Signal handler entered: a signal frame. */
			w->depth++;
			ret = push(w, (struct frame){ w->async_ip, w->async_ip,
						      bt_syms_func_start(w->c, b->ip),
						      b->ip, BTRACE_CALL_SIGNAL,
						      w->depth });
			w->pending = 1;
			w->pending_flags = BTRACE_CALL_SIGNAL;
		}
		w->async_pending = 0;
		w->ret_pending = w->jump_pending = 0;
		break;
	case BTRACE_ITEM_FAR: {
		b->depth = w->depth;
		const struct bt_insn_info *ii = bt_insn_classify(w->c, b->ip);
		w->ret_pending = w->jump_pending = 0;
		if (!b->end_ip || b->end_ip == b->ip + ii->size)
			break;
		/* sigreturn: back to an interrupted instruction */
		for (size_t k = w->nfr; k-- > 0;) {
			if ((w->fr[k].flags & BTRACE_CALL_SIGNAL) &&
			    w->fr[k].ret == b->end_ip && k > 0) {
				pop_to(w, k - 1);
				w->pending = 1;
				return 0;
			}
		}
		/* a signal delivered on the way back from the kernel */
		w->depth++;
		ret = push(w, (struct frame){ b->ip + ii->size, b->ip,
					      bt_syms_func_start(w->c, b->end_ip),
					      b->end_ip, BTRACE_CALL_SIGNAL, w->depth });
		w->pending = 1;
		w->pending_flags = BTRACE_CALL_SIGNAL;
		break;
	}
	case BTRACE_ITEM_GAP:
		b->depth = w->depth;
		if (bt_grow((void **)&w->t->calls, &w->ccalls, w->t->ncalls + 1,
			    sizeof(*w->t->calls)))
			return -ENOMEM;
		memset(&w->t->calls[w->t->ncalls], 0, sizeof(w->t->calls[0]));
		w->t->calls[w->t->ncalls].flags = BTRACE_CALL_GAP;
		w->t->calls[w->t->ncalls].gap = b->gap;
		w->t->calls[w->t->ncalls].depth = w->depth;
		w->t->calls[w->t->ncalls].first_block = i;
		w->t->ncalls++;
		w->pending = 1;
		w->ret_pending = w->jump_pending = w->async_pending = 0;
		/* what ran in the hole is unknown: the frames before it cannot
		 * be trusted; the next block starts a new (partial) stack */
		w->nfr = 0;
		break;
	default:
		b->depth = w->depth;
		break;
	}
	return ret;
}

static void find_fault(struct bt_ctx *c, struct bt_thread_build *bb,
		       int64_t *item)
{
	struct btrace_thread *t = bb->t;
	const struct btrace_signal *sig = c->snap->signal;
	struct btrace_fault *f = &t->fault;

	*item = -1;
	if (!t->crashed)
		return;
	f->found = 1;
	int kernel_sent = sig && sig->code > 0;
	int have_regs = sig && (sig->fault_source == BTRACE_FAULT_REGS ||
				sig->fault_source == BTRACE_FAULT_CORE);
	int64_t handler = -1;
	/* The program may have handled the signal (and re-raised it): the
	 * fault is then the last asynchronous event that entered a handler. */
	for (size_t i = t->nblocks; i-- > 0;) {
		if (t->blocks[i].kind == BTRACE_ITEM_ASYNC && i + 1 < t->nblocks &&
		    t->blocks[i + 1].kind == BTRACE_ITEM_ENABLED &&
		    t->blocks[i + 1].ip != t->blocks[i].ip) {
			handler = (int64_t)i;
			break;
		}
	}
	if (kernel_sent && have_regs) {
		f->ip = sig->fault_ip ? sig->fault_ip :
			(sig->has_regs ? sig->regs[BTRACE_REG_RIP] : 0);
		f->exact = 1;
		f->how = "registers at the signal";
		if (bb->ended_async && bb->last_async_ip == f->ip)
			*item = bb->last_async_block;
	} else if (handler >= 0 && (!kernel_sent || !bb->ended_async)) {
		f->ip = t->blocks[handler].ip;
		f->exact = 1;
		f->how = "trace: asynchronous event before the signal handler";
		*item = handler;
	} else if (bb->ended_async) {
		f->ip = bb->last_async_ip;
		f->exact = 1;
		f->how = t->blocks[bb->last_async_block].end_ip ?
			"trace: entry to the kernel (async branch)" :
			"trace: asynchronous disable (FUP + TIP.PGD)";
		*item = bb->last_async_block;
	} else if (sig && sig->fault_source == BTRACE_FAULT_BLOCK) {
		f->ip = sig->fault_ip;
		f->exact = 0;
		f->how = "capture: the block holding the fault";
	} else {
		for (size_t i = t->nblocks; i-- > 0;) {
			if (t->blocks[i].kind == BTRACE_ITEM_BLOCK) {
				f->ip = t->blocks[i].end_ip;
				break;
			}
		}
		f->exact = 0;
		f->how = "end of trace: the last instruction decoded";
		if (!f->ip)
			f->found = 0;
	}
}

static int build_stack(struct walk *w)
{
	struct btrace_thread *t = w->t;
	size_t cap = 0;

	for (size_t k = w->nsaved; k-- > 0;) {
		struct frame *fr = &w->saved[k];
		uint64_t ip = k + 1 == w->nsaved ?
			(t->fault.found ? t->fault.ip : fr->ip) :
			w->saved[k + 1].call_ip;
		struct btrace_symbol chain[8];
		int n = bt_syms_inline_chain(w->c, ip, chain, 8);

		for (int j = 0; j < n; j++) {
			if (bt_grow((void **)&t->stack, &cap, t->nstack + 1,
				    sizeof(*t->stack)))
				return -ENOMEM;
			struct btrace_frame *sf = &t->stack[t->nstack++];
			memset(sf, 0, sizeof(*sf));
			sf->ip = ip;
			sf->sym = chain[j];
			sf->flags = fr->flags & ~BTRACE_CALL_PARTIAL;
			if (j + 1 < n)
				sf->flags |= BTRACE_CALL_INLINE;
			if (j + 1 == n)
				sf->flags |= fr->flags & BTRACE_CALL_PARTIAL;
		}
	}
	return 0;
}

int bt_analyze_thread(struct bt_ctx *c, struct bt_thread_build *bb)
{
	struct btrace_thread *t = bb->t;
	struct walk w = { 0 };
	int64_t fault_item;
	int ret = 0;

	w.c = c;
	w.t = t;
	t->ninsn = 0;
	find_fault(c, bb, &fault_item);
	if (t->fault.found && fault_item < 0) {
		/* mark the fault at the end of the history */
		struct btrace_block it = { 0 };
		it.kind = BTRACE_ITEM_FAULT;
		it.ip = t->fault.ip;
		ret = bt_thread_add_block(c, bb, &it);
		if (ret < 0)
			return ret;
		fault_item = (int64_t)t->nblocks - 1;
	}
	for (size_t i = 0; i < t->nblocks && ret >= 0; i++) {
		ret = on_item(&w, i);
		if ((int64_t)i == fault_item)
			save_stack(&w);
	}
	if (ret >= 0 && fault_item < 0)
		save_stack(&w);
	if (ret >= 0)
		ret = build_stack(&w);

	/* normalise call depths: the shallowest entry is 0 (block depths stay
	 * relative: compare them within a thread only) */
	for (size_t i = 0; i < t->ncalls; i++)
		if (t->calls[i].depth < w.min_depth)
			w.min_depth = t->calls[i].depth;
	for (size_t i = 0; i < t->ncalls; i++) {
		t->calls[i].depth -= w.min_depth;
		if (!(t->calls[i].flags & BTRACE_CALL_GAP))
			t->calls[i].sym = bt_syms_lookup(c, t->calls[i].ip);
	}
	if (t->fault.found) {
		struct btrace_insn in;
		t->fault.block_index = (uint64_t)fault_item;
		t->fault.sym = *bt_syms_lookup(c, t->fault.ip);
		if (!bt_insn_disasm(c, t->fault.ip, &in)) {
			memcpy(t->fault.insn, in.text, sizeof(t->fault.insn));
			memcpy(t->fault.bytes, in.bytes, sizeof(t->fault.bytes));
			t->fault.size = in.size;
		}
	}
	free(w.fr);
	free(w.saved);
	return ret;
}
