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

/* A signal frame is on the stack: code runs in a handler. */
static int in_signal(const struct bt_walk *w)
{
	for (size_t k = w->nfr; k-- > 0;)
		if (w->fr[k].flags & BTRACE_CALL_SIGNAL)
			return 1;
	return 0;
}

/* The QEMU backend places a fault in the trace at the start of its block
 * (it knows blocks, not instructions): its asynchronous events say where
 * a block began, not which of its instructions was interrupted. */
static int block_granular(const struct bt_ctx *c)
{
	return c->snap->has_config &&
	       c->snap->config.backend == BTRACE_BACKEND_QEMU;
}

/* The last instruction of the straight-line code from @ip: the first
 * branch (or system call) at or after it, within 512 instructions (the
 * longest QEMU block); @ip itself when there is no code. */
static uint64_t straight_end(struct bt_ctx *c, uint64_t ip)
{
	uint64_t at = ip;

	for (int i = 0; i < 512; i++) {
		const struct bt_insn_info *ii = bt_insn_classify(c, at);
		if (!ii->size || ii->cls != BTRACE_INSN_OTHER)
			return at;
		at += ii->size;
	}
	return at;
}

/* rt_sigreturn went back to @ip: is that where the signal frame @f
 * interrupted?  Block-granular traces (QEMU) know only the start of the
 * interrupted block; the return goes to the instruction in it.  When the
 * interruption came after a block's last branch, QEMU's records do not say
 * which way it went: the signal frame holds the branch, and the return goes
 * to one of its successors (either way of a Jcc, a direct jump's or call's
 * target).  After a return or an indirect branch the successor is not
 * known: any address would do, and a handler that changed the context
 * (Go's asynchronous preemption goes back into runtime.asyncPreempt) would
 * be taken for a return, so those stay unmatched. */
static int sigret_to(struct bt_ctx *c, const struct bt_frame *f, uint64_t ip)
{
	const struct bt_insn_info *ii;

	if (f->ret == ip)
		return 1;
	if (!block_granular(c))
		return 0;
	if (ip > f->ret && ip <= straight_end(c, f->ret))
		return 1;
	ii = bt_insn_classify(c, f->ret);
	switch (ii->cls) {
	case BTRACE_INSN_JCC:
		return ip == f->ret + ii->size || ip == ii->target;
	case BTRACE_INSN_JMP:
	case BTRACE_INSN_CALL:
		return ip == ii->target;
	default:
		return 0;
	}
}

/* Is the system call at @ip rt_sigreturn?  Every trampoline that returns
 * from a signal handler loads its number right before it: `mov $15, %eax`
 * (b8 0f 00 00 00) or `mov $15, %rax` (48 c7 c0 0f 00 00 00). */
static int is_rt_sigreturn(const struct bt_ctx *c, uint64_t ip)
{
	static const uint8_t mov32[] = { 0xb8, 0x0f, 0, 0, 0, 0x0f, 0x05 };
	static const uint8_t mov64[] = { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0,
					 0x0f, 0x05 };
	const uint8_t *p;
	size_t n;

	p = ip >= 5 ? bt_image_bytes(c, ip - 5, &n) : NULL;
	if (p && n >= sizeof(mov32) && !memcmp(p, mov32, sizeof(mov32)))
		return 1;
	p = ip >= 7 ? bt_image_bytes(c, ip - 7, &n) : NULL;
	return p && n >= sizeof(mov64) && !memcmp(p, mov64, sizeof(mov64));
}

/* Can a signal delivered at @ip in @t be the fault that started the
 * death?  Not when the capture says which block faulted (the QEMU backend
 * saw the fault: btrace_signal.fault_source BLOCK) and @ip is not in it:
 * then it is some other signal (Go preempts its threads with SIGURG all
 * the time), not a candidate for the fault. */
static int may_be_fault(struct bt_ctx *c, const struct btrace_thread *t,
			uint64_t ip)
{
	const struct btrace_signal *sig = c->snap->signal;

	if (!sig || sig->tid != t->tid ||
	    sig->fault_source != BTRACE_FAULT_BLOCK || !sig->fault_ip)
		return 1;
	return ip >= sig->fault_ip && ip <= straight_end(c, sig->fault_ip);
}

/* Control went on at @ip in another context (another stack): the known
 * part of the stack ends here, nothing is grafted on the frames of the
 * context that was left.  A new outer frame, callers unknown. */
static int new_context(struct bt_ctx *c, struct bt_walk *w, uint64_t ip)
{
	w->nfr = 0;
	return push(w, (struct bt_frame){ 0, 0, bt_syms_func_start(c, ip, NULL), ip,
				       BTRACE_CALL_PARTIAL, w->depth });
}

/* The frame of the function whose split-off part holds @ip (a landing
 * pad or an error path in "f.cold" of a frame of f), or -1. */
static int frame_of_cold_part(struct bt_ctx *c, struct bt_walk *w, uint64_t ip)
{
	const struct btrace_symbol *s;
	char stem[512];
	size_t n;

	/* the symbol table first: most jumps between functions are not into
	 * such a part, and the full symbol (DWARF) costs far more */
	if (!bt_syms_maybe_cold(c, ip))
		return -1;
	s = bt_syms_lookup(c, ip);
	if (!s || !s->outer || !(n = bt_cold_stem(s->outer)) || n >= sizeof(stem))
		return -1;
	memcpy(stem, s->outer, n);
	stem[n] = '\0';
	for (size_t k = w->nfr; k-- > 0;) {
		const struct btrace_symbol *f;

		if (!w->fr[k].func)
			continue;
		f = bt_syms_lookup(c, w->fr[k].func);
		if (f && f->outer && !strcmp(f->outer, stem))
			return (int)k;
	}
	return -1;
}

/* Control arrived at @ip after a return. */
static int on_return(struct bt_ctx *c, struct bt_walk *w, uint64_t ip)
{
	for (size_t k = w->nfr; k-- > 0;) {
		if (k > 0 && (w->fr[k].ret == ip ||
			      ((w->fr[k].flags & BT_FRAME_INJECTED) &&
			       sigret_to(c, &w->fr[k], ip)))) {
			pop_to(w, k - 1);
			return 0;
		}
	}
	/* A signal handler returns into the signal trampoline (__restore_rt)
	 * the kernel put on its stack, not to a caller: the signal frame stays
	 * until the trampoline's rt_sigreturn goes back to the interrupted
	 * instruction (ITEM_FAR, below). */
	size_t b = w->nfr;
	/* the frame that returns: the top one, or the frame below the tail
	 * calls it made (they have no return address of their own) */
	while (b > 1 && !w->fr[b - 1].ret &&
	       (w->fr[b - 1].flags & BTRACE_CALL_TAILCALL))
		b--;
	if (b && (w->fr[b - 1].flags & BTRACE_CALL_SIGNAL)) {
		struct bt_frame *f = &w->fr[b - 1];
		pop_to(w, b - 1);
		f->func = bt_syms_func_start(c, ip, NULL);
		f->ip = ip;
		return 0;
	}
	/* A return to an address no frame expects (swapcontext/setcontext
	 * end with a ret into another context, a coroutine switch by hand):
	 * the frames below belong to the context that was left, not to this
	 * one.  With no frame left it is a return past the start of the
	 * history.  Either way: a new context. */
	w->depth--;
	return new_context(c, w, ip);
}

/* The longest chain of tail calls kept as frames of their own; past it
 * the top frame changes function (a chain that long is a state machine,
 * not a stack anyone reads). */
#define TAIL_CHAIN_MAX 32

/*
 * A tail call by a direct jump from the top frame to @func (at @ip, its
 * entry).  The
 * caller stays a frame of its own, as gdb shows it (it synthesizes such
 * frames from DWARF call sites): its code is at the jump, and it returns
 * where the caller's caller expects (its ret; the callee's frame has
 * none, so a return pops both).  The callee's frame is flagged
 * BTRACE_CALL_TAILCALL and has the caller's depth (no return address was
 * pushed).  A tail call to a function already in the chain (a cycle: a
 * state machine of tail calls) goes back to its frame; a chain past
 * TAIL_CHAIN_MAX changes the top frame's function instead, as a tail call
 * did before frames were kept for them.  Returns 1, or -ENOMEM.
 */
static int tail_call(struct bt_walk *w, uint64_t func, uint64_t ip)
{
	struct bt_frame *f = top(w);
	size_t n = 0, k = w->nfr;

	while (k-- > 0) {
		if (w->fr[k].func == func) {
			pop_to(w, k);
			return 1;
		}
		/* the chain: frames pushed here, without a return address
		 * of their own (a called frame whose function changed by an
		 * indirect tail call is flagged too, but has one) */
		if (w->fr[k].ret || !(w->fr[k].flags & BTRACE_CALL_TAILCALL))
			break;
		n++;
	}
	if (n >= TAIL_CHAIN_MAX) {
		f->func = func;
		f->flags |= BTRACE_CALL_TAILCALL;
		return 1;
	}
	return push(w, (struct bt_frame){ 0, f->ip, func, ip,
				       BTRACE_CALL_TAILCALL, f->depth }) < 0 ?
	       -ENOMEM : 1;
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
	/* Into the part of a function that the compiler split off: the
	 * function goes on (the top frame), or exception unwinding lands in
	 * it (a frame further down). */
	int k = frame_of_cold_part(c, w, ip);
	if (k >= 0 && (size_t)k == w->nfr - 1)
		return 0;
	if (k >= 0) {
		pop_to(w, (size_t)k);
		*flags = BTRACE_CALL_UNWOUND;
		return 1;
	}
	/* longjmp or exception unwinding: into a function further down. */
	k = frame_of_function(w, func, w->nfr - 1);
	if (k >= 0 && func != ip) {
		pop_to(w, (size_t)k);
		*flags = BTRACE_CALL_UNWOUND;
		return 1;
	}
	if (func != ip && bt_insn_classify(c, f->ip)->cls == BTRACE_INSN_JMP_IND) {
		/* An indirect jump into the middle of a function that no
		 * frame is in: a context resumed where it stopped (a
		 * goroutine or a coroutine switched by hand, a longjmp to a
		 * frame entered before the history began). */
		*flags = BTRACE_CALL_PARTIAL;
		return new_context(c, w, ip) < 0 ? -ENOMEM : 1;
	}
	if (func == ip) {
		/* A jump to a function's entry: a tail call.  For the outermost
		 * frame, entered before the history with no known caller (e.g.
		 * the dynamic loader handing over to _start), the frame just
		 * changes function: nothing below it could be misattributed. */
		if (!f->ret && (f->flags & BTRACE_CALL_PARTIAL) && w->nfr == 1) {
			f->func = func;
			*flags = 0;
			return 1;
		}
		*flags = BTRACE_CALL_TAILCALL;
		if (bt_insn_classify(c, f->ip)->cls != BTRACE_INSN_JMP) {
			/* an indirect jump (an interpreter's dispatch
			 * through a table, a function pointer called last):
			 * the frame changes function, as gdb, which finds
			 * tail callers from DWARF call sites, shows none */
			f->func = func;
			f->flags |= BTRACE_CALL_TAILCALL;
			return 1;
		}
		return tail_call(w, func, ip);
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
	if (j < 0)
		return j;
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

/*
 * rt_sigreturn went to @ip, which is not where the signal frame @k
 * interrupted (sigret_to()).  The handler is done: its frame goes.  Where
 * the thread goes on:
 * - a block-granular trace interrupted after the block's last return or
 *   indirect branch, whose target its records do not give: the branch
 *   completes (the next block follows it as after any return or jump);
 * - the function it interrupted: the handler moved the instruction
 *   pointer within it (past a faulting instruction);
 * - another function's entry: the handler sent the context there as if
 *   the interrupted instruction had called it (Go's asyncPreempt and
 *   sigpanic), a frame that returns to the interrupted instruction;
 * - anywhere else: another context, callers unknown.
 * Returns 1 when the interrupted context went on (the episode is closed:
 * the signal was handled), 0 when the handler changed it, < 0 on error.
 */
static void note_handler(struct bt_walk *w, uint64_t ip)
{
	for (unsigned k = 0; k < w->nhandlers; k++)
		if (w->handlers[k] == ip)
			return;
	if (w->nhandlers == 8)
		memmove(w->handlers, w->handlers + 1, 7 * sizeof(w->handlers[0]));
	else
		w->nhandlers++;
	w->handlers[w->nhandlers - 1] = ip;
}

static int is_handler(const struct bt_walk *w, uint64_t ip)
{
	for (unsigned k = 0; k < w->nhandlers; k++)
		if (w->handlers[k] == ip)
			return 1;
	return 0;
}

static int sigret_elsewhere(struct bt_ctx *c, struct bt_walk *w, size_t k,
			    uint64_t ip)
{
	const struct bt_frame f = w->fr[k];
	/* a branch the asynchronous event came after (QEMU's records give
	 * the block's last branch then); a delivery at a system call's
	 * return interrupted nothing */
	uint64_t last = f.call_ip == f.ret ? f.ret : 0;
	const struct bt_insn_info *ii = bt_insn_classify(c, last);
	uint64_t func = bt_syms_func_start(c, ip, NULL);
	struct bt_frame *t;

	w->pending = 1;
	if (k == 0) {
		w->nfr = 0;
		return new_context(c, w, ip) < 0 ? -ENOMEM : 0;
	}
	pop_to(w, k - 1);
	t = top(w);
	if (block_granular(c) && last) {
		switch (ii->cls) {
		case BTRACE_INSN_RET:
			w->ret_pending = 1;
			return 1;
		case BTRACE_INSN_JMP_IND:
			t->ip = last;
			w->jump_pending = 1;
			return 1;
		case BTRACE_INSN_CALL_IND:
			if (func != ip)
				break;
			w->depth++;
			return push(w, (struct bt_frame){ last + ii->size, last,
						       func, ip, 0, w->depth }) < 0 ?
			       -ENOMEM : 1;
		default:
			break;
		}
	}
	if (func && func == t->func) {
		t->ip = ip;
		return 1;
	}
	if (func && func == ip) {
		w->depth++;
		return push(w, (struct bt_frame){ f.ret, f.ret, func, ip,
					       BT_FRAME_INJECTED, w->depth }) < 0 ?
		       -ENOMEM : 0;
	}
	return new_context(c, w, ip) < 0 ? -ENOMEM : 0;
}

/* The signal frame @k was popped by an rt_sigreturn to @ip that went on
 * with the interrupted context: when it was the episode's own, the
 * episode is closed (its signal was handled). */
static void close_episode(struct bt_thread_build *bb, size_t k, uint64_t ip)
{
	struct bt_walk *w = bb->w;

	if (k != w->ep_frame || w->handler_item < 0 || w->ep_closed)
		return;
	w->ep_closed = 1;
	w->ep_ninsn = bb->t->ninsn;
	w->ep_ret_ip = ip;
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
			ret = on_jump(c, w, b->ip, &fl);
			ret = ret < 0 ? ret : 0;
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
			if (prev_async && !in_signal(w) &&
			    may_be_fault(c, bb->t, w->async_ip)) {
				/* the first delivery of an episode (nested
				 * ones, in a handler, belong to it) */
				struct bt_stack_copy tmp = w->at_handler;
				w->at_handler = w->at_async;
				w->at_async = tmp;
				w->handler_item = (int64_t)w->async_index;
				w->handler_ip = w->async_ip;
				w->ep_closed = 0;
				w->ep_frame = w->nfr;
			}
			/* a signal frame */
			note_handler(w, b->ip);
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
			if (!(w->fr[k].flags & BTRACE_CALL_SIGNAL))
				continue;
			if (sigret_to(c, &w->fr[k], b->end_ip) && k > 0) {
				pop_to(w, k - 1);
				w->pending = 1;
				close_episode(bb, k, b->end_ip);
				return 0;
			}
		}
		if (is_rt_sigreturn(c, b->ip)) {
			size_t k = w->nfr;
			while (k-- > 0 && !(w->fr[k].flags & BTRACE_CALL_SIGNAL))
				;
			if (k >= w->nfr) {
				/* from a handler entered before the history
				 * (or a hole): back to a context not known */
				w->pending = 1;
				return new_context(c, w, b->end_ip);
			}
			if (is_handler(w, b->end_ip)) {
				/* a signal delivered as it returned: the new
				 * frame interrupted the context this one
				 * restored (which the handler may have sent
				 * elsewhere: its rt_sigreturn says where) */
				struct bt_frame f = w->fr[k];
				close_episode(bb, k, b->end_ip);
				if (k) {
					pop_to(w, k - 1);
				} else {
					w->nfr = 0;
					w->depth = f.depth - 1;
				}
				f.func = bt_syms_func_start(c, b->end_ip, NULL);
				f.ip = b->end_ip;
				f.depth = ++w->depth;
				w->pending = 1;
				w->pending_flags = BTRACE_CALL_SIGNAL;
				return push(w, f) < 0 ? -ENOMEM : 0;
			}
			ret = sigret_elsewhere(c, w, k, b->end_ip);
			if (ret > 0)
				close_episode(bb, k, b->end_ip);
			return ret < 0 ? ret : 0;
		}
		/* a signal delivered on the way back from the kernel */
		note_handler(w, b->end_ip);
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

static int is_trap(struct bt_ctx *c, uint64_t ip)
{
	struct btrace_insn in;

	if (bt_insn_disasm(c, ip, &in) < 0 || !in.size)
		return 0;
	return !strncmp(in.text, "ud2", 3) || !strncmp(in.text, "int3", 4) ||
	       !strncmp(in.text, "int ", 4) || !strncmp(in.text, "into", 4) ||
	       !strncmp(in.text, "hlt", 3);
}

/* The fault is somewhere in the straight-line code from @start. */
static void in_block(struct bt_ctx *c, struct btrace_fault *f, uint64_t start)
{
	f->exact = 0;
	f->ip = start;
	f->block_ip = start;
	f->block_end_ip = straight_end(c, start);
}

/* An address the trace gives for the fault: exact, unless the trace knows
 * only blocks there (QEMU: a trap is placed exactly, anything else at its
 * block's start). */
static void from_trace(struct bt_ctx *c, struct btrace_fault *f, uint64_t ip)
{
	f->ip = ip;
	f->exact = 1;
	if (block_granular(c) && !is_trap(c, ip))
		in_block(c, f, ip);
}

/* Where the thread was at the end of the trace: the registers, the
 * asynchronous end, the last block. */
static uint64_t end_ip(struct bt_ctx *c, struct bt_thread_build *bb,
		       const char **how)
{
	const struct btrace_signal *sig = c->snap->signal;
	struct btrace_thread *t = bb->t;
	const char *rr = btrace_snapshot_meta(c->snap, "qemu.reraise_ip");

	if (sig && sig->has_regs && sig->regs[BTRACE_REG_RIP]) {
		*how = "registers at the signal";
		return sig->regs[BTRACE_REG_RIP];
	}
	if (rr && strtoull(rr, NULL, 0)) {
		*how = "registers at the death (guest core)";
		return strtoull(rr, NULL, 0);
	}
	if (bb->ended_async) {
		*how = "end of the trace (asynchronous disable)";
		return bb->last_async_ip;
	}
	for (size_t i = t->nblocks; i-- > 0;) {
		if (t->blocks[i].kind == BTRACE_ITEM_BLOCK) {
			*how = "end of the trace: the last instruction decoded";
			return t->blocks[i].end_ip;
		}
	}
	return 0;
}

/* Which item is the fault and which saved stack goes with it:
 * 0 the live stack (at the end), 1 at the last ITEM_ASYNC, 2 at the
 * delivery of the signal episode (the first fault a handler took). */
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
	int sent = sig && sig->code <= 0 && sig->code != BTRACE_SIGCODE_UNKNOWN;
	int have_regs = sig && (sig->fault_source == BTRACE_FAULT_REGS ||
				sig->fault_source == BTRACE_FAULT_CORE);
	uint64_t regs_ip = !have_regs ? 0 : sig->fault_ip ? sig->fault_ip :
			   (sig->has_regs ? sig->regs[BTRACE_REG_RIP] : 0);
	/* The recorded signal is the fault's and another one ended the
	 * process (the QEMU backend after a handler went on) */
	int final_other = btrace_snapshot_meta(c->snap, "qemu.final_signal") != NULL;
	/* The death was itself a fault the kernel raised */
	int death_fault = kernel_sent && !final_other;

	/*
	 * A signal episode: a fault (or signal) delivered to a handler, then
	 * the handler's path.  It started the death when the thread is still
	 * in it (the handler re-raised, aborted, faulted again), when
	 * rt_sigreturn went back and nothing ran before the death (the
	 * instruction faulted again), or when it was left some other way
	 * (siglongjmp) and the death was not a new fault.  Its first delivery
	 * is the fault; what ran after it is the handler's.
	 */
	int64_t ep = w->handler_item;
	if (ep >= 0) {
		int open = in_signal(w);
		int reexec = w->ep_closed && t->ninsn == w->ep_ninsn;
		if (!(open || reexec || (!w->ep_closed && !death_fault)))
			ep = -1;
		/* Still in the handler, and the death is a new fault the
		 * kernel raised there, its registers known: that fault is
		 * the death (a SIGALRM handler's NULL dereference, a handler
		 * that faulted itself), not the delivery that interrupted
		 * the thread. */
		if (ep >= 0 && open && !reexec && death_fault && have_regs &&
		    regs_ip && regs_ip != w->handler_ip)
			ep = -1;
	}
	if (ep >= 0) {
		*item = ep;
		from_trace(c, f, w->handler_ip);
		f->how = f->exact ?
			"trace: asynchronous event before the signal handler" :
			"trace: the block holding the fault, before the signal "
			"handler";
		if (have_regs && kernel_sent && regs_ip &&
		    (regs_ip == w->handler_ip ||
		     (!f->exact && regs_ip >= f->block_ip &&
		      regs_ip <= f->block_end_ip && w->ep_closed &&
		      t->ninsn == w->ep_ninsn && w->ep_ret_ip == regs_ip))) {
			/* the handler returned, the instruction faulted again:
			 * the registers are at it */
			f->ip = regs_ip;
			f->exact = 1;
			f->block_ip = f->block_end_ip = 0;
			f->how = "registers at the signal (the handler returned "
				 "to the faulting instruction)";
		} else if (sig && sig->fault_source == BTRACE_FAULT_BLOCK &&
			   sig->fault_ip && !f->exact) {
			in_block(c, f, sig->fault_ip);
			f->how = "capture: the block holding the fault, before "
				 "the signal handler";
		}
		f->death_ip = end_ip(c, bb, &f->death_how);
		return 2;
	}
	/* rip 0 in the registers is known too: a call or jump to 0 */
	if (have_regs && (regs_ip || (!sig->fault_ip && sig->has_regs))) {
		f->ip = regs_ip;
		f->exact = 1;
		f->how = "registers at the signal";
		if (sent) {
			f->kind = BTRACE_FAULT_KIND_SENT;
			f->how = "registers at the signal";
		} else if (!kernel_sent) {
			/* si_code unknown: a fault, or a signal sent from
			 * outside; the place is exact, the cause is not known */
			f->how = "registers at the signal (si_code unknown: "
				 "this instruction faulted, or the signal was "
				 "sent while the thread was here)";
		}
		if (bb->ended_async && bb->last_async_ip == f->ip) {
			*item = bb->last_async_block;
			return 1;
		}
		return 0;
	}
	if (sent)
		f->kind = BTRACE_FAULT_KIND_SENT;
	if (bb->ended_async) {
		from_trace(c, f, bb->last_async_ip);
		f->how = bb->last_async_kernel ?
			"trace: entry to the kernel (async branch)" :
			f->exact ? "trace: asynchronous disable (FUP + TIP.PGD)" :
			"trace: the block where the trace stopped";
		if (sig && sig->fault_source == BTRACE_FAULT_BLOCK &&
		    sig->fault_ip && !f->exact) {
			in_block(c, f, sig->fault_ip);
			f->how = "capture: the block holding the fault";
		}
		*item = bb->last_async_block;
		return 1;
	}
	if (sig && sig->fault_source == BTRACE_FAULT_BLOCK && sig->fault_ip) {
		in_block(c, f, sig->fault_ip);
		f->how = "capture: the block holding the fault";
		return 0;
	}
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
	return 0;
}

static int build_stack(struct bt_ctx *c, struct btrace_thread *t,
		       const struct bt_frame *saved, size_t nsaved)
{
	size_t cap = 0;
	struct bt_frame only;

	if (!nsaved) {
		/* Nothing decoded (or nothing before the fault): the function
		 * where the thread was is still a frame, its callers
		 * unknown. */
		memset(&only, 0, sizeof(only));
		only.flags = BTRACE_CALL_PARTIAL;
		if (t->fault.found)
			only.ip = t->fault.ip;
		for (size_t i = t->nblocks; !only.ip && i-- > 0;)
			only.ip = t->blocks[i].kind == BTRACE_ITEM_BLOCK ?
				  t->blocks[i].end_ip : t->blocks[i].ip;
		if (!only.ip)
			return 0;
		saved = &only;
		nsaved = 1;
	}

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
			sf->flags = j + 1 < n ? BTRACE_CALL_INLINE :
				    fr->flags & ~BT_FRAME_INJECTED;
		}
	}
	return 0;
}

int bt_analyze_fault(struct bt_ctx *c, struct bt_thread_build *bb,
		     int64_t *fault_item)
{
	return find_fault(c, bb, fault_item);
}

int bt_analyze_finish(struct bt_ctx *c, struct bt_thread_build *bb, int which,
		      int64_t fault_item)
{
	struct btrace_thread *t = bb->t;
	struct bt_walk *w = bb->w;
	int ret;

	if (which == 2)
		ret = build_stack(c, t, w->at_handler.fr, w->at_handler.n);
	else if (which == 1)
		ret = build_stack(c, t, w->at_async.fr, w->at_async.n);
	else
		ret = build_stack(c, t, w->fr, w->nfr);
	if (ret < 0)
		return bt_error(c->err, ret, "decode: out of memory");

	/* normalise call depths (the shallowest entry is 0; block depths
	 * stay relative) */
	for (size_t i = 0; i < t->ncalls; i++) {
		struct btrace_call *cl = &t->calls[i];
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
		/* the path after the fault left out (thread.c, hold) */
		if (t->omitted_blocks)
			t->fault.after_blocks = bb->hole_blocks;
		t->fault.sym = *bt_syms_lookup(c, t->fault.ip);
		if (t->fault.block_end_ip)
			t->fault.block_end_sym = *bt_syms_lookup(c, t->fault.block_end_ip);
		if (t->fault.death_ip)
			t->fault.death_sym = *bt_syms_lookup(c, t->fault.death_ip);
		for (size_t i = t->fault.block_index + 1; i < t->nblocks; i++)
			t->fault.after_blocks += t->blocks[i].kind == BTRACE_ITEM_BLOCK;
		if (!t->fault.exact) {
			/* the instruction is not known: no disassembly */
		} else if (!bt_insn_disasm(c, t->fault.ip, &in)) {
			memcpy(t->fault.insn, in.text, sizeof(t->fault.insn));
			memcpy(t->fault.bytes, in.bytes, sizeof(t->fault.bytes));
			t->fault.size = in.size;
		}
	}
	return 0;
}
