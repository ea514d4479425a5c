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

static int push(struct bt_walk *w, struct bt_frame f)
{
	if (w->nfr == w->cfr &&
	    bt_grow((void **)&w->fr, &w->cfr, w->nfr + 1, sizeof(*w->fr)))
		return -ENOMEM;
	w->fr[w->nfr++] = f;
	return 0;
}

static int copy_stack(struct bt_stack_copy *d, const struct bt_frame *fr, size_t n)
{
	if (n > d->cap && bt_grow((void **)&d->fr, &d->cap, n, sizeof(*fr)))
		return -ENOMEM;
	if (n)
		memcpy(d->fr, fr, n * sizeof(*fr));
	d->n = n;
	return 0;
}

static int new_call(struct bt_thread_build *b, uint64_t ip, uint32_t flags,
		    uint64_t item)
{
	struct btrace_thread *t = b->t;
	struct bt_walk *w = b->w;

	if (t->ncalls >= b->calls_trigger)
		bt_thread_compact_calls(b);
	if (t->ncalls == b->ccalls) {
		size_t ncap = b->ccalls ? b->ccalls * 2 : 256;
		void *p = realloc(t->calls, ncap * sizeof(*t->calls));
		if (!p)
			return -ENOMEM;
		t->calls = p;
		b->ccalls = ncap;
	}
	t->calls[t->ncalls++] = (struct btrace_call){
		.depth = w->depth, .flags = flags, .ip = ip, .end_ip = ip,
		/* an item index until the end of the decode */
		.first_block = item,
	};
	if (w->depth < w->min_depth)
		w->min_depth = w->depth;
	w->have_calls = 1;
	return 0;
}

static struct bt_frame *top(struct bt_walk *w)
{
	return w->nfr ? &w->fr[w->nfr - 1] : NULL;
}

/* Pop to (and excluding) frame @k, which becomes the top. */
static void pop_to(struct bt_walk *w, size_t k)
{
	w->nfr = k + 1;
	w->depth = w->fr[k].depth;
}

static int frame_of_function(struct bt_walk *w, uint64_t func, size_t below)
{
	for (size_t k = below; k-- > 0;)
		if (w->fr[k].func && w->fr[k].func == func)
			return (int)k;
	return -1;
}

/* Control arrived at @ip after a return. */
static int on_return(struct bt_ctx *c, struct bt_walk *w, uint64_t ip)
{
	for (size_t k = w->nfr; k-- > 0;) {
		if (w->fr[k].ret == ip && k > 0) {
			pop_to(w, k - 1);
			return 0;
		}
	}
	/* A signal handler returns into the signal trampoline (__restore_rt)
	 * the kernel put on its stack, not to a caller: the signal frame stays
	 * until the trampoline's rt_sigreturn goes back to the interrupted
	 * instruction (ITEM_FAR, below). */
	if (w->nfr && (w->fr[w->nfr - 1].flags & BTRACE_CALL_SIGNAL)) {
		struct bt_frame *f = &w->fr[w->nfr - 1];
		f->func = bt_syms_func_start(c, ip, NULL);
		f->ip = ip;
		return 0;
	}
	if (w->nfr > 1) {
		pop_to(w, w->nfr - 2);
		return 0;
	}
	/* Return past the start of the history: a new outer frame. */
	w->depth--;
	w->nfr = 0;
	return push(w, (struct bt_frame){ 0, 0, bt_syms_func_start(c, ip, NULL), ip,
				       BTRACE_CALL_PARTIAL, w->depth });
}

/* Control arrived at @ip after a jump.  Returns 1 if a new call entry
 * starts (flags in *@flags), 0 if not, 2 if the current entry continues in
 * another function (a trampoline jump: PLT stub, lazy binding). */
static int on_jump(struct bt_ctx *c, struct bt_walk *w, uint64_t ip,
		   uint32_t *flags)
{
	struct bt_frame *f = top(w);
	int from_tramp = 0;
	uint64_t func;

	if (!f)
		return 0;
	if (f->func)
		bt_syms_func_start(c, f->func, &from_tramp);
	else
		from_tramp = bt_plt_contains(c, f->ip);
	func = bt_syms_func_start(c, ip, NULL);
	if (func && func == f->func)
		return 0;
	if (from_tramp) {
		/* a PLT stub (or the resolver) going on to the function:
		 * part of the call, not a tail call */
		if (!func && !bt_image_region(c, ip))
			return 0;
		f->func = func;
		*flags = BTRACE_CALL_PLT;
		return 2;
	}
	if (!func)
		return 0;
	/* longjmp or exception unwinding: into a function further down. */
	int k = frame_of_function(w, func, w->nfr - 1);
	if (k >= 0 && func != ip) {
		pop_to(w, (size_t)k);
		*flags = BTRACE_CALL_UNWOUND;
		return 1;
	}
	if (func == ip) {
		/* A jump to a function's entry: a tail call.  For the outermost
		 * frame, entered before the history with no known caller (e.g.
		 * the dynamic loader handing over to _start), the frame just
		 * changes function: nothing below it could be misattributed. */
		f->func = func;
		if (!f->ret && (f->flags & BTRACE_CALL_PARTIAL) && w->nfr == 1) {
			*flags = 0;
			return 1;
		}
		f->flags |= BTRACE_CALL_TAILCALL;
		*flags = BTRACE_CALL_TAILCALL;
		return 1;
	}
	return 0;
}

static int end_of_block(struct bt_ctx *c, struct bt_walk *w,
			struct btrace_block *b)
{
	const struct bt_insn_info *ii = bt_insn_classify(c, b->end_ip);

	b->iclass = ii->cls;
	b->end_size = ii->size;
	switch (ii->cls) {
	case BTRACE_INSN_CALL:
	case BTRACE_INSN_CALL_IND:
		if (ii->cls == BTRACE_INSN_CALL && ii->target == b->end_ip + ii->size)
			break;   /* call next insn: the PIC idiom, not a call */
		w->depth++;
		w->pending = 1;
		return push(w, (struct bt_frame){ b->end_ip + ii->size, b->end_ip,
					       ii->target, 0, 0, w->depth });
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
	return 0;
}

static int on_block(struct bt_ctx *c, struct bt_thread_build *bb,
		    struct btrace_block *b, uint64_t i)
{
	struct bt_walk *w = bb->w;
	struct btrace_thread *t = bb->t;

	if (!(w->ret_pending | w->jump_pending | w->pending | !w->have_calls |
	      !w->nfr)) {
		/* the same call entry goes on (after a Jcc, mostly) */
		struct btrace_call *cl = &t->calls[t->ncalls - 1];
		cl->nblocks = i + 1 - cl->first_block;
		cl->ninsn += b->ninsn;
		cl->end_ip = b->end_ip;
		b->depth = w->depth;
		t->ninsn += b->ninsn;
		w->fr[w->nfr - 1].ip = b->end_ip;
		return end_of_block(c, w, b);
	}
	uint32_t flags = w->pending_flags;
	int start = w->pending || !w->have_calls;
	int ret = 0, j = 0;

	if (w->ret_pending)
		ret = on_return(c, w, b->ip);
	else if (w->jump_pending && (j = on_jump(c, w, b->ip, &flags)) == 1)
		start = 1;
	if (ret < 0)
		return ret;
	if (!w->nfr) {
		ret = push(w, (struct bt_frame){ 0, 0, bt_syms_func_start(c, b->ip, NULL),
					      b->ip, BTRACE_CALL_PARTIAL, w->depth });
		if (ret < 0)
			return ret;
	}
	struct bt_frame *f = top(w);
	if (!f->func)
		f->func = bt_syms_func_start(c, b->ip, NULL);
	if (w->ret_pending || !w->have_calls) {
		start = 1;
		if (f->flags & BTRACE_CALL_PARTIAL)
			flags |= BTRACE_CALL_PARTIAL;
	}
	if (j == 2 && !start) {
		/* trampoline: the entry becomes the call of the function it
		 * went to, if it holds only the trampoline so far; else a new
		 * entry (after the resolver ran) marked as such */
		struct btrace_call *cl = &t->calls[t->ncalls - 1];
		int cl_tramp = 0;
		uint64_t cf = bt_syms_func_start(c, cl->ip, &cl_tramp);
		if (cl_tramp || (!cf && bt_plt_contains(c, cl->ip))) {
			cl->ip = b->ip;
			cl->flags |= BTRACE_CALL_PLT;
		} else {
			start = 1;
		}
	}
	w->ret_pending = w->jump_pending = w->pending = 0;
	w->pending_flags = 0;
	if (start) {
		ret = new_call(bb, b->ip, flags, i);
		if (ret < 0)
			return ret;
	}
	struct btrace_call *cl = &t->calls[t->ncalls - 1];
	cl->nblocks = i + 1 - cl->first_block;
	cl->ninsn += b->ninsn;
	cl->end_ip = b->end_ip;
	b->depth = w->depth;
	t->ninsn += b->ninsn;
	f->ip = b->end_ip;
	return end_of_block(c, w, b);
}

/* bt_walk_item() for a BTRACE_ITEM_BLOCK (the hot path: no dispatch) */
int bt_walk_block(struct bt_ctx *c, struct bt_thread_build *bb,
		  struct btrace_block *b, uint64_t i)
{
	bb->w->prev_async = 0;
	return on_block(c, bb, b, i);
}

int bt_walk_item(struct bt_ctx *c, struct bt_thread_build *bb,
		 struct btrace_block *b, uint64_t i)
{
	struct bt_walk *w = bb->w;
	int ret = 0, prev_async = w->prev_async;

	w->prev_async = 0;
	switch (b->kind) {
	case BTRACE_ITEM_BLOCK:
		return on_block(c, bb, b, i);
	case BTRACE_ITEM_ASYNC:
	case BTRACE_ITEM_FAULT:
		/* the interrupted instruction is where the last branch went */
		if (w->ret_pending) {
			ret = on_return(c, w, b->ip);
		} else if (w->jump_pending) {
			uint32_t fl = 0;
			on_jump(c, w, b->ip, &fl);
		}
		w->ret_pending = w->jump_pending = 0;
		if (ret < 0)
			return ret;
		b->depth = w->depth;
		if (b->kind == BTRACE_ITEM_FAULT)
			break;
		w->async_pending = 1;
		w->async_ip = b->ip;
		w->async_index = i;
		w->prev_async = 1;
		if (top(w))
			top(w)->ip = b->ip;
		ret = copy_stack(&w->at_async, w->fr, w->nfr);
		break;
	case BTRACE_ITEM_ENABLED:
		b->depth = w->depth;
		if (w->async_pending && b->ip != w->async_ip) {
			/* a signal handler entered: a fault candidate when it
			 * came right after the interruption */
			if (prev_async) {
				struct bt_stack_copy tmp = w->at_handler;
				w->at_handler = w->at_async;
				w->at_async = tmp;
				w->handler_item = (int64_t)w->async_index;
				w->handler_ip = w->async_ip;
			}
			/* a signal frame */
			w->depth++;
			ret = push(w, (struct bt_frame){ w->async_ip, w->async_ip,
						      bt_syms_func_start(c, b->ip, NULL),
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
		const struct bt_insn_info *ii = bt_insn_classify(c, b->ip);
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
		ret = push(w, (struct bt_frame){ b->ip + ii->size, b->ip,
					      bt_syms_func_start(c, b->end_ip, NULL),
					      b->end_ip, BTRACE_CALL_SIGNAL, w->depth });
		w->pending = 1;
		w->pending_flags = BTRACE_CALL_SIGNAL;
		break;
	}
	case BTRACE_ITEM_GAP:
		b->depth = w->depth;
		ret = new_call(bb, 0, BTRACE_CALL_GAP, i);
		if (ret < 0)
			return ret;
		bb->t->calls[bb->t->ncalls - 1].gap = b->gap;
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

int bt_walk_begin(struct bt_ctx *c, struct bt_thread_build *b)
{
	(void)c;
	bt_walk_end(b);
	b->w = calloc(1, sizeof(*b->w));
	if (!b->w)
		return -ENOMEM;
	b->w->handler_item = -1;
	return 0;
}

void bt_walk_end(struct bt_thread_build *b)
{
	struct bt_walk *w = b->w;

	if (!w)
		return;
	free(w->fr);
	free(w->at_async.fr);
	free(w->at_handler.fr);
	free(w);
	b->w = NULL;
}

/* Which item is the fault and which saved stack goes with it:
 * 0 the live stack (at the end), 1 at the last ITEM_ASYNC, 2 at the
 * handler's ITEM_ASYNC. */
static int find_fault(struct bt_ctx *c, struct bt_thread_build *bb,
		      int64_t *item)
{
	struct btrace_thread *t = bb->t;
	const struct btrace_signal *sig = c->snap->signal;
	struct btrace_fault *f = &t->fault;
	struct bt_walk *w = bb->w;

	*item = -1;
	if (!t->crashed)
		return 0;
	f->found = 1;
	int kernel_sent = sig && sig->code > 0;
	int have_regs = sig && (sig->fault_source == BTRACE_FAULT_REGS ||
				sig->fault_source == BTRACE_FAULT_CORE);
	/* The program may have handled the signal (and re-raised it): the
	 * fault is then the last asynchronous event that entered a handler. */
	int64_t handler = w->handler_item;

	if (kernel_sent && have_regs) {
		f->ip = sig->fault_ip ? sig->fault_ip :
			(sig->has_regs ? sig->regs[BTRACE_REG_RIP] : 0);
		f->exact = 1;
		f->how = "registers at the signal";
		if (bb->ended_async && bb->last_async_ip == f->ip) {
			*item = bb->last_async_block;
			return 1;
		}
	} else if (handler >= 0 && (!kernel_sent || !bb->ended_async)) {
		f->ip = w->handler_ip;
		f->exact = 1;
		f->how = "trace: asynchronous event before the signal handler";
		*item = handler;
		return 2;
	} else if (bb->ended_async) {
		f->ip = bb->last_async_ip;
		f->exact = 1;
		f->how = bb->last_async_kernel ?
			"trace: entry to the kernel (async branch)" :
			"trace: asynchronous disable (FUP + TIP.PGD)";
		*item = bb->last_async_block;
		return 1;
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
	return 0;
}

static int build_stack(struct bt_ctx *c, struct btrace_thread *t,
		       const struct bt_frame *saved, size_t nsaved)
{
	size_t cap = 0;

	for (size_t k = nsaved; k-- > 0;) {
		const struct bt_frame *fr = &saved[k];
		uint64_t ip = k + 1 == nsaved ?
			(t->fault.found ? t->fault.ip : fr->ip) :
			saved[k + 1].call_ip;
		struct btrace_symbol chain[16];
		int n = bt_syms_inline_chain(c, ip, k + 1 == nsaved, chain, 16);

		for (int j = 0; j < n; j++) {
			if (bt_grow((void **)&t->stack, &cap, t->nstack + 1,
				    sizeof(*t->stack)))
				return -ENOMEM;
			struct btrace_frame *sf = &t->stack[t->nstack++];
			memset(sf, 0, sizeof(*sf));
			sf->ip = ip;
			sf->sym = chain[j];
			/* how the frame was entered (tail call, signal,
			 * partial) is the physical frame's, the last */
			sf->flags = j + 1 < n ? BTRACE_CALL_INLINE : fr->flags;
		}
	}
	return 0;
}

int bt_analyze_thread(struct bt_ctx *c, struct bt_thread_build *bb)
{
	struct btrace_thread *t = bb->t;
	struct bt_walk *w;
	int64_t fault_item;
	int ret, which;

	ret = bt_thread_flush(c, bb);
	if (ret < 0)
		return ret;
	w = bb->w;
	which = find_fault(c, bb, &fault_item);
	if (t->fault.found && fault_item < 0) {
		/* mark the fault at the end of the history */
		struct btrace_block it = { 0 };
		it.kind = BTRACE_ITEM_FAULT;
		it.ip = t->fault.ip;
		fault_item = (int64_t)bb->nitems;
		ret = bt_thread_add_block(c, bb, &it);
		if (ret < 0)
			return ret;
	}
	if (which == 2)
		ret = build_stack(c, t, w->at_handler.fr, w->at_handler.n);
	else if (which == 1)
		ret = build_stack(c, t, w->at_async.fr, w->at_async.n);
	else
		ret = build_stack(c, t, w->fr, w->nfr);
	if (ret < 0)
		return bt_error(c->err, ret, "decode: out of memory");

	/* item indices -> indices in the kept window; normalise call depths
	 * (the shallowest entry is 0; block depths stay relative) */
	for (size_t i = 0; i < t->ncalls; i++) {
		struct btrace_call *cl = &t->calls[i];
		cl->first_block = cl->first_block >= t->dropped_blocks ?
				  cl->first_block - t->dropped_blocks : 0;
		cl->depth -= w->min_depth;
		if (!(cl->flags & BTRACE_CALL_GAP))
			cl->sym = bt_syms_lookup(c, cl->ip);
	}
	/* symbols only for what was kept */
	for (size_t i = 0; i < t->nblocks; i++)
		if (t->blocks[i].kind == BTRACE_ITEM_BLOCK)
			t->blocks[i].sym = bt_syms_lookup(c, t->blocks[i].ip);
	if (t->fault.found) {
		struct btrace_insn in;
		t->fault.block_index = fault_item >= (int64_t)t->dropped_blocks ?
			(uint64_t)fault_item - t->dropped_blocks : 0;
		t->fault.sym = *bt_syms_lookup(c, t->fault.ip);
		if (!bt_insn_disasm(c, t->fault.ip, &in)) {
			memcpy(t->fault.insn, in.text, sizeof(t->fault.insn));
			memcpy(t->fault.bytes, in.bytes, sizeof(t->fault.bytes));
			t->fault.size = in.size;
		}
	}
	return 0;
}
