/* SPDX-License-Identifier: MIT */
/*
 * The report model (include/btrace/report.h): the crash analysis of a
 * decoded snapshot, computed once from the decode result and the
 * snapshot's signal, mappings and metadata.  The outputs of `btrace
 * report` only render it.  This file uses the public API only: it sits on
 * top of the decoder (btrace_decode()) and is called by nothing in it.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/report.h>

#include "signame.h"
#include "util.h"

/* The report and what it owns. */
struct bt_report {
	struct btrace_report pub;
	char cause[256];
	char untraced[256];
	char not_exact[256];
	struct btrace_values *values;  /* pub.values, owned */
	struct btrace_report_limit limits[];
};

const char *btrace_signal_code_name(int signo, int code)
{
	switch (code) {
	case 0: return "SI_USER";
	case -1: return "SI_QUEUE";
	case -6: return "SI_TKILL";
	case 0x80: return "SI_KERNEL";
	}
	if (signo == 11)
		return code == 1 ? "SEGV_MAPERR" : code == 2 ? "SEGV_ACCERR" :
		       code == 3 ? "SEGV_BNDERR" : code == 4 ? "SEGV_PKUERR" : NULL;
	if (signo == 7)
		return code == 1 ? "BUS_ADRALN" : code == 2 ? "BUS_ADRERR" :
		       code == 3 ? "BUS_OBJERR" : NULL;
	if (signo == 4)
		return code == 1 ? "ILL_ILLOPC" : code == 2 ? "ILL_ILLOPN" :
		       code == 5 ? "ILL_PRVOPC" : NULL;
	if (signo == 8)
		return code == 1 ? "FPE_INTDIV" : code == 2 ? "FPE_INTOVF" : NULL;
	return NULL;
}

/*
 * The one naming rule of the report, text and JSON alike: the function the
 * address is in (the decoder names it as gdb does: DWARF name, else the
 * symbol without its version); for an inline frame of the stack, the
 * inlined function.  Offsets are from the start of that function.
 */
const char *btrace_symbol_name(const struct btrace_symbol *s, uint32_t flags)
{
	if (!s)
		return NULL;
	if ((flags & BTRACE_CALL_INLINE) && s->function)
		return s->function;
	return s->outer ? s->outer : s->function;
}

const char *btrace_call_via(const struct btrace_thread *t,
			    const struct btrace_call *cl)
{
	const struct btrace_block *b;

	if (!t || !cl || !(cl->flags & BTRACE_CALL_PLT) ||
	    cl->first_block >= t->nblocks ||
	    (t->dropped_blocks && !cl->first_block))
		return NULL;
	b = &t->blocks[cl->first_block];
	if (b->kind != BTRACE_ITEM_BLOCK || !b->sym || b->ip == cl->ip)
		return NULL;
	return btrace_symbol_name(b->sym, 0);
}

/* A recorded signal as the report shows it. */
static void signal_of(const struct btrace_signal *s,
		      struct btrace_report_signal *out)
{
	out->number = s->signo;
	out->code = s->code;
	out->name = btrace_signal_name(s->signo);
	out->code_name = btrace_signal_code_name(s->signo, s->code);
	out->address = s->addr;
	out->has_address = s->code > 0 && (s->signo == 11 || s->signo == 7);
	out->sender_pid = s->code <= 0 ? s->sender_pid : 0;
}

/* A signal name ("SIGABRT") to its number, 0 if unknown. */
/* The number of a signal recorded by name, in either style (qemu-record
 * writes the C library's, SIGPOLL for 29; the report says SIGIO). */
static int signo_of(const char *name)
{
	for (int i = 1; name && i < 65; i++) {
		const char *io = bt_sig_name(i, BT_SIG_IO);
		const char *poll = bt_sig_name(i, BT_SIG_POLL);
		if ((io && !strcmp(io, name)) || (poll && !strcmp(poll, name)))
			return i;
	}
	return 0;
}

/*
 * What the signal's details say about the cause, beyond the trace: a
 * SIGSEGV/SIGBUS at an address just below (or at) the stack pointer that no
 * accessible mapping holds is a stack overflow (the guard below the stack).
 */
static void find_cause(const struct btrace_snapshot *snap, struct bt_report *r)
{
	const struct btrace_signal *s = snap->signal;

	if (!s || (s->signo != 11 && s->signo != 7) || s->code <= 0 ||
	    !s->has_regs)
		return;
	uint64_t sp = s->regs[BTRACE_REG_RSP], a = s->addr;
	/* at most 256 bytes above it (a store in the new frame), at most
	 * 1 MiB below it (a large frame or alloca probed page by page) */
	if (a > sp + 256 || (a < sp && sp - a > (1u << 20)))
		return;
	for (size_t i = 0; i < snap->nmappings; i++) {
		const struct btrace_mapping *m = &snap->mappings[i];
		if (a >= m->start && a < m->end && m->prot)
			return;
	}
	if (a < sp)
		snprintf(r->cause, sizeof(r->cause), "stack overflow: fault "
			 "address %llu bytes below the stack pointer, unmapped",
			 (unsigned long long)(sp - a));
	else
		snprintf(r->cause, sizeof(r->cause), "stack overflow: fault "
			 "address at the stack pointer + %llu, unmapped",
			 (unsigned long long)(a - sp));
	r->pub.cause.kind = BTRACE_CAUSE_STACK_OVERFLOW;
	r->pub.cause.name = "stack_overflow";
	r->pub.cause.text = r->cause;
}

/* Where the history ends: "the fault", or "the exit" for a snapshot taken
 * at an exit (--on exit) with no signal, "the request" for an on-demand
 * snapshot. */
static void find_end(const struct btrace_snapshot *snap,
		     struct btrace_report *r)
{
	r->end = BTRACE_END_FAULT;
	if (!snap->signal && snap->has_config) {
		if (snap->config.crash_mode == BTRACE_CRASH_EXIT)
			r->end = BTRACE_END_EXIT;
		else if (snap->config.crash_mode == BTRACE_CRASH_ONDEMAND)
			r->end = BTRACE_END_REQUEST;
	}
	r->end_words = r->end == BTRACE_END_EXIT ? "the exit" :
		       r->end == BTRACE_END_REQUEST ? "the request" : "the fault";
}

static void thread_of(const struct btrace_thread *t,
		      struct btrace_report_thread *rt)
{
	const struct btrace_fault *ft = &t->fault;
	size_t n = 0;

	rt->thread = t;
	rt->blocks_end = ft->found && ft->block_index < t->nblocks ?
			 (size_t)ft->block_index : t->nblocks;
	while (n < t->ncalls && t->calls[n].first_block < rt->blocks_end)
		n++;
	rt->calls_end = n;
	rt->fault_in_block = ft->found && !ft->exact && ft->block_ip;
	rt->went_on = ft->found && (ft->after_blocks || ft->death_ip);
}

/*
 * What ended the process, when the crashed thread has a fault: the QEMU
 * backend records the fault's signal and keeps the final one as metadata
 * (qemu.final_signal: "SIGABRT", "exit 3"); otherwise the recorded signal
 * is the death's.
 */
static void find_death(struct btrace_report *r)
{
	struct btrace_report_death *d = &r->death;
	const char *fin = r->final_signal;

	if (!r->crashed || !r->crashed->thread->fault.found)
		return;
	d->known = 1;
	d->after_fault = r->crashed->went_on;
	if (fin && !strncmp(fin, "exit ", 5)) {
		d->has_exit_code = 1;
		d->exit_code = atoi(fin + 5);
	} else if (fin) {
		d->has_signal = 1;
		d->signal.number = signo_of(fin);
		d->signal.code = BTRACE_SIGCODE_UNKNOWN;
		d->signal.name = fin;
	} else if (r->has_signal) {
		d->has_signal = 1;
		d->signal = r->signal;
	}
}

/* qemu.threads_untraced = "<count> <tid,tid,...>": threads without a
 * history (the plugin could not keep one).  1 and @buf filled if any. */
static int untraced(const struct btrace_snapshot *snap, char *buf, size_t len)
{
	const char *v = btrace_snapshot_meta(snap, "qemu.threads_untraced");
	unsigned long n;
	char *end;

	if (!v)
		return 0;
	n = strtoul(v, &end, 10);
	if (end == v || !n)
		return 0;
	while (*end == ' ')
		end++;
	snprintf(buf, len, "%lu thread%s ran without a trace%s%.160s%s: "
		 "their history is not in this report", n, n == 1 ? "" : "s",
		 *end ? " (tids " : "", end, *end ? ")" : "");
	return 1;
}

/* The limits, in this order: the capture's (limit.NAME metadata), the
 * threads without a trace, a fault that is not exact. */
static void find_limits(const struct btrace_snapshot *snap, struct bt_report *r)
{
	struct btrace_report *p = &r->pub;
	const struct btrace_thread *ct = p->crashed ? p->crashed->thread : NULL;

	for (size_t i = 0; i < snap->nmeta; i++) {
		const struct btrace_meta *m = &snap->meta[i];
		if (m->key && m->value && !strncmp(m->key, "limit.", 6))
			r->limits[p->nlimits++] = (struct btrace_report_limit){
				m->key + 6, m->value };
	}
	if (untraced(snap, r->untraced, sizeof(r->untraced)))
		r->limits[p->nlimits++] = (struct btrace_report_limit){
			"threads-untraced", r->untraced };
	if (ct && ct->fault.found && !ct->fault.exact) {
		snprintf(r->not_exact, sizeof(r->not_exact), "the faulting "
			 "instruction is not known (%s)",
			 ct->fault.how ? ct->fault.how : "");
		r->limits[p->nlimits++] = (struct btrace_report_limit){
			"fault-not-exact", r->not_exact };
	}
	p->limits = r->limits;
}

uint64_t btrace_time_known(uint64_t time_ns, uint32_t flags)
{
	switch (flags) {
	case BTRACE_TIME_PACKET:
	case BTRACE_TIME_INTERPOLATED:
	case BTRACE_TIME_AFTER:
		return time_ns;
	default:
		return 0;
	}
}

const char *btrace_event_kind_name(uint32_t kind)
{
	static const char *const names[] = {
		[BTRACE_EVENT_START] = "start", [BTRACE_EVENT_CALL] = "call",
		[BTRACE_EVENT_RETURN] = "return",
		[BTRACE_EVENT_SYSCALL] = "syscall", [BTRACE_EVENT_GAP] = "gap",
		[BTRACE_EVENT_FAULT] = "fault", [BTRACE_EVENT_SIGNAL] = "signal",
	};

	return kind < sizeof(names) / sizeof(names[0]) ? names[kind] : NULL;
}

/* A timeline being built: the events, and per event the time it sorts by
 * (a gap's: the time of the event before it in its thread). */
struct tl_build {
	struct btrace_report_event *ev;
	uint64_t *key;
	size_t n, cap, kcap;       /* cap: of ev, kcap: of key */
	size_t tidx;               /* index of the thread being added */
	int untimed;               /* a thread with events, none with a time */
	int thread_timed;          /* the thread being added has a time */
	uint64_t last;             /* the thread's last known time */
};

static int tl_add(struct tl_build *b, const struct btrace_report_event *e)
{
	if (bt_grow((void **)&b->ev, &b->cap, b->n, sizeof(*b->ev)) ||
	    bt_grow((void **)&b->key, &b->kcap, b->n, sizeof(*b->key)))
		return -ENOMEM;
	if (e->time_ns) {
		b->last = e->time_ns;
		b->thread_timed = 1;
	}
	b->key[b->n] = b->last;
	b->ev[b->n++] = *e;
	return 0;
}

/* The time the fault of @t happened: that of the item marking it, else
 * of the last block before it (the faulting instruction came after). */
static uint64_t fault_time(const struct btrace_thread *t, uint32_t *flags)
{
	uint64_t i = t->fault.block_index;

	const struct btrace_block *b = i < t->nblocks ? &t->blocks[i] : NULL;

	if (!b || !btrace_time_known(b->time_ns, b->time_flags))
		while (b = NULL, i-- > 0 && i < t->nblocks)
			if (t->blocks[i].kind == BTRACE_ITEM_BLOCK) {
				b = &t->blocks[i];
				break;
			}
	*flags = 0;
	if (!b || !btrace_time_known(b->time_ns, b->time_flags))
		return 0;
	*flags = b->time_flags;
	return b->time_ns;
}

/* The kind of call entry @i of @t (its depth against the entry before). */
static uint32_t call_kind(const struct btrace_thread *t, size_t i)
{
	const struct btrace_call *c = &t->calls[i], *p = i ? c - 1 : NULL;

	if (c->flags & BTRACE_CALL_GAP)
		return BTRACE_EVENT_GAP;
	if (!p || (p->flags & BTRACE_CALL_GAP))
		return BTRACE_EVENT_START;
	if (c->depth < p->depth || (c->flags & BTRACE_CALL_UNWOUND))
		return BTRACE_EVENT_RETURN;
	return BTRACE_EVENT_CALL;
}

/* The events of one thread before its fault, in its own order. */
static int tl_thread(struct tl_build *b, const struct btrace_report_thread *rt)
{
	const struct btrace_thread *t = rt->thread;
	const struct btrace_block *prev = NULL;
	uint64_t seq = 0;
	size_t c = 0;
	int rc;

	b->last = 0;
	b->thread_timed = 0;
	size_t n0 = b->n;
	for (size_t i = 0; i <= rt->blocks_end; i++) {
		/* the call entries that begin at this block */
		for (; c < rt->calls_end &&
		       (t->calls[c].first_block <= i || i == rt->blocks_end); c++) {
			const struct btrace_call *cl = &t->calls[c];
			struct btrace_report_event e = {
				.kind = call_kind(t, c),
				.time_ns = btrace_time_known(cl->time_ns,
							     cl->time_flags),
				.thread = rt, .call = cl, .seq = seq,
			};
			e.time_flags = e.time_ns ? cl->time_flags : 0;
			if (e.kind != BTRACE_EVENT_GAP) {
				e.ip = cl->ip;
				e.sym = cl->sym;
			} else {
				e.time_ns = 0;
				e.time_flags = 0;
			}
			if ((rc = tl_add(b, &e)) < 0)
				return rc;
		}
		if (i == rt->blocks_end)
			break;
		const struct btrace_block *bl = &t->blocks[i];
		if (bl->kind == BTRACE_ITEM_FAR) {
			struct btrace_report_event e = {
				.kind = BTRACE_EVENT_SYSCALL,
				.time_ns = btrace_time_known(bl->time_ns,
							     bl->time_flags),
				.ip = bl->ip,
				.thread = rt, .sym = bl->sym, .block = bl,
				.seq = seq,
			};
			e.time_flags = e.time_ns ? bl->time_flags : 0;
			/* the function of the block that made the call */
			if (!e.sym && prev && prev->end_ip <= bl->ip &&
			    bl->ip - prev->end_ip < 16)
				e.sym = prev->sym;
			if ((rc = tl_add(b, &e)) < 0)
				return rc;
		}
		if (bl->kind == BTRACE_ITEM_BLOCK) {
			seq += bl->ninsn;
			prev = bl;
		} else if (bl->kind != BTRACE_ITEM_FAR) {
			prev = NULL;
		}
	}
	if (t->fault.found) {
		struct btrace_report_event e = {
			.kind = t->fault.kind == BTRACE_FAULT_KIND_SENT ?
				BTRACE_EVENT_SIGNAL : BTRACE_EVENT_FAULT,
			.ip = rt->fault_in_block ? t->fault.block_ip : t->fault.ip,
			.thread = rt, .sym = &t->fault.sym, .seq = seq,
		};
		e.time_ns = fault_time(t, &e.time_flags);
		if ((rc = tl_add(b, &e)) < 0)
			return rc;
	}
	if (b->n > n0 && !b->thread_timed)
		b->untimed = 1;
	return 0;
}

static int tl_cmp(const void *a, const void *b, void *arg)
{
	size_t i = *(const size_t *)a, j = *(const size_t *)b;
	const struct tl_build *t = arg;

	if (t->key[i] != t->key[j])
		return t->key[i] < t->key[j] ? -1 : 1;
	return i < j ? -1 : i > j;   /* thread order, then in the thread */
}

/*
 * The timeline (btrace_report.timeline): every thread's events, the
 * crashed thread's last; sorted by time when every thread that has events
 * has a time (an event without one follows the event before it in its
 * thread, or leads it).
 */
static int find_timeline(struct btrace_report *p)
{
	struct tl_build b = { 0 };
	size_t *order = NULL, n = 0;
	uint64_t end = UINT64_MAX;
	int rc = 0;

	for (size_t i = 0; i <= p->nthreads && !rc; i++) {
		const struct btrace_report_thread *rt =
			i < p->nthreads ? &p->threads[i] : p->crashed;
		if (i < p->nthreads ? rt == p->crashed : !rt)
			continue;
		rc = tl_thread(&b, rt);
	}
	if (!rc && b.n && !b.untimed) {
		order = malloc(b.n * sizeof(*order));
		struct btrace_report_event *ev = malloc(b.n * sizeof(*ev));
		if (!order || !ev) {
			free(ev);
			rc = -ENOMEM;
		} else {
			const struct btrace_thread *ct = p->crashed ?
				p->crashed->thread : NULL;
			uint32_t fl;
			if (ct && ct->fault.found)
				end = fault_time(ct, &fl);
			for (size_t i = 0; i < b.n; i++)
				order[i] = i;
			qsort_r(order, b.n, sizeof(*order), tl_cmp, &b);
			/* what other threads did after the fault is not
			 * before it */
			for (size_t i = 0; i < b.n; i++) {
				const struct btrace_report_event *e = &b.ev[order[i]];
				if (b.key[order[i]] > end && e->thread != p->crashed)
					continue;
				ev[n++] = *e;
			}
			free(b.ev);
			b.ev = ev;
			b.n = n;
			p->timeline_timed = 1;
		}
	}
	free(order);
	free(b.key);
	if (rc) {
		free(b.ev);
		return rc;
	}
	p->timeline = b.ev;
	p->ntimeline = b.n;
	return 0;
}

/* The origin of the faulting operand: values along the crashed thread's
 * last BT_ORIGIN_INSNS instructions (an exact fault only). */
#define BT_ORIGIN_INSNS 1000

static int find_origin(struct bt_report *r,
		       const struct btrace_decode_result *res,
		       struct btrace_error *err)
{
	struct btrace_report *p = &r->pub;
	struct btrace_values *v;
	const struct btrace_thread *t = p->crashed ? p->crashed->thread : NULL;

	if (!t || !t->fault.found || !t->fault.exact ||
	    t->fault.kind == BTRACE_FAULT_KIND_SENT)
		return 0;
	if (btrace_values_build(res, (size_t)res->crashed_thread,
				BT_ORIGIN_INSNS, &v, err) < 0)
		return -1;
	p->values = r->values = v;
	if (v->origin.found)
		p->origin = &v->origin;
	return 0;
}

int btrace_report_build(const struct btrace_snapshot *snap,
			const struct btrace_decode_result *res,
			struct btrace_report **out, struct btrace_error *err)
{
	struct bt_report *r;
	struct btrace_report *p;

	bt_error_clear(err);
	if (!snap || !res || !out)
		return bt_error(err, -EINVAL, "report: invalid argument: NULL %s",
				!snap ? "snapshot" : !res ? "decode result" :
				"output");
	*out = NULL;
	r = calloc(1, sizeof(*r) + (snap->nmeta + 2) * sizeof(r->limits[0]));
	if (r)
		r->pub.threads = calloc(res->nthreads + 1,
					sizeof(*r->pub.threads));
	if (!r || !r->pub.threads) {
		free(r);
		return bt_error(err, -ENOMEM, "report: out of memory");
	}
	p = &r->pub;
	p->sz = sizeof(*p);
	p->snap = snap;
	p->decode = res;
	p->nthreads = res->nthreads;
	for (size_t i = 0; i < res->nthreads; i++)
		thread_of(&res->threads[i], &p->threads[i]);
	if (res->crashed_thread >= 0 && (size_t)res->crashed_thread < res->nthreads)
		p->crashed = &p->threads[res->crashed_thread];
	if (snap->signal) {
		p->has_signal = 1;
		signal_of(snap->signal, &p->signal);
	} else {
		p->exit_status = btrace_snapshot_meta(snap, "exit_status");
	}
	find_cause(snap, r);
	/* A program exec'd outside the emulator: what ran last is not in
	 * the trace. */
	p->native_exec = btrace_snapshot_meta(snap, "qemu.exec");
	find_end(snap, p);
	p->final_signal = btrace_snapshot_meta(snap, "qemu.final_signal");
	find_death(p);
	find_limits(snap, r);
	p->sent_from_outside = p->crashed && snap->signal &&
		p->crashed->thread->fault.kind == BTRACE_FAULT_KIND_SENT &&
		snap->signal->sender_pid && snap->signal->sender_pid != res->pid;
	if (find_timeline(p) < 0) {
		btrace_report_free(p);
		return bt_error(err, -ENOMEM, "report: out of memory");
	}
	if (find_origin(r, res, err) < 0) {
		btrace_report_free(p);
		return -ENOMEM;
	}
	*out = p;
	return 0;
}

void btrace_report_free(struct btrace_report *rep)
{
	if (!rep)
		return;
	free(rep->timeline);
	btrace_values_free(((struct bt_report *)(void *)rep)->values);
	free(rep->threads);
	free(rep);
}
