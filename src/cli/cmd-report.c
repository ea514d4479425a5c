/* SPDX-License-Identifier: MIT */
/*
 * btrace report: what happened.  Process and signal, the fault, the call
 * stack rebuilt from the trace, the last calls, the last blocks with source
 * lines and a completeness line.  --json for tools (docs/report.md).
 */
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <btrace/decode.h>
#include <btrace/record.h>
#include <btrace/report.h>
#include <btrace/snapshot.h>

#include "cli.h"

#define CMD "report"
#define NAME_W 26

static const char *backend_name(uint32_t b)
{
	const struct btrace_backend_desc *d = btrace_backend_by_id(b);

	return d ? d->name : NULL;
}

static const char *base(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

/* "func+0x12" or "module+0x1234" or "0x..." into @buf. */
static const char *where(char *buf, size_t len, uint64_t ip,
			 const struct btrace_symbol *s)
{
	const char *fn = btrace_symbol_name(s, 0);

	if (fn && s->offset)
		snprintf(buf, len, "%s+0x%llx", fn, (unsigned long long)s->offset);
	else if (fn)
		snprintf(buf, len, "%s", fn);
	else if (s->module)
		snprintf(buf, len, "%s+0x%llx", base(s->module),
			 (unsigned long long)s->module_offset);
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)ip);
	return buf;
}

static const char *srcline(char *buf, size_t len, const struct btrace_symbol *s)
{
	if (s->file && s->line)
		snprintf(buf, len, "%s:%d", base(s->file), s->line);
	else if (s->module && s->function)
		snprintf(buf, len, "(%s)", base(s->module));
	else
		buf[0] = 0;
	return buf;
}

/*
 * @s in @w columns (@buf holds w + 1 bytes).  A longer name is cut with a
 * '~'; the "+0x..." offset at its end is kept, so that frames in one long
 * module name ("_ctypes.cpython-311-x86_64-linux-gnu.so+0x9a2b") stay
 * distinguishable: "_ctypes.cpython-311-x~+0x9a2b".  Cuts fall between
 * UTF-8 sequences.
 */
static const char *fit(char *buf, size_t w, const char *s)
{
	size_t n = strlen(s), head, tail = 0;
	const char *off;

	if (n <= w) {
		snprintf(buf, w + 1, "%s", s);
		return buf;
	}
	off = strstr(s, "+0x");
	while (off && strstr(off + 1, "+0x"))
		off = strstr(off + 1, "+0x");
	if (off && off > s && (size_t)(s + n - off) <= w / 2)
		tail = (size_t)(s + n - off);
	head = w - 1 - tail;
	while (head > 0 && ((unsigned char)s[head] & 0xc0) == 0x80)
		head--;
	snprintf(buf, w + 1, "%.*s~%s", (int)head, s, s + n - tail);
	return buf;
}

struct rep_opts {
	uint64_t calls, blocks;
	int json;
	int all;
	int32_t tid;
};

/*
 * Color for the key lines (signal, fault, gaps) when the report goes to a
 * terminal, unless NO_COLOR is set (https://no-color.org) or TERM is dumb.
 */
static int use_color;
#define C_RED "\033[1;31m"
#define C_YELLOW "\033[33m"
#define C_OFF "\033[0m"

static const char *col(const char *c)
{
	return use_color ? c : "";
}

static void print_gap(FILE *f, const struct btrace_thread *t, uint32_t g,
		      const char *indent)
{
	const struct btrace_gap *gp = &t->gaps[g];

	fprintf(f, "%s%s[gap: %s", indent, col(C_YELLOW),
		btrace_gap_kind_name(gp->kind));
	if (gp->kind != BTRACE_GAP_UNUSABLE && gp->kind != BTRACE_GAP_LOST)
		fprintf(f, " at trace offset %llu", (unsigned long long)gp->offset);
	if (gp->ip)
		fprintf(f, ", ip 0x%llx", (unsigned long long)gp->ip);
	fprintf(f, "]%s\n%s  %s\n", col(C_OFF), indent,
		gp->reason ? cli_esc(gp->reason) : "");
}

/* Where the history ends, for the headings (btrace_report.end_words).
 * Set by report_text(). */
static const char *at_end = "the fault";

static const char *size_str(char *buf, size_t len, uint64_t n);

/*
 * Below the outermost frame when it was entered before the decoded
 * history: a tail-only decode did not read the older trace, which may
 * hold the callers (say how much, and how to read it); otherwise the
 * history itself starts there.
 */
static void print_partial(FILE *f, const struct btrace_thread *t)
{
	char a[32];
	uint64_t left = t->buffer_bytes - t->unusable_bytes;

	left = left > t->decoded_bytes ? left - t->decoded_bytes : 0;
	if (t->truncated && left)
		fprintf(f, "      (entered before the decoded tail: the older %s "
			"of trace\n       were not decoded; btrace report "
			"--full decodes them)\n", size_str(a, sizeof(a), left));
	else
		fprintf(f, "      (entered before the history starts: callers "
			"unknown)\n");
}

static void print_stack(FILE *f, const struct btrace_thread *t)
{
	char a[128], b[128], c[64];

	fprintf(f, "\nstack at %s (from the trace, innermost first)\n", at_end);
	if (!t->nstack)
		fprintf(f, "  (no frames: nothing was decoded)\n");
	for (size_t i = 0; i < t->nstack; i++) {
		const struct btrace_frame *fr = &t->stack[i];
		if ((fr->flags & BTRACE_CALL_INLINE) && fr->sym.function)
			snprintf(a, sizeof(a), "%s", btrace_symbol_name(&fr->sym, fr->flags));
		else
			where(a, sizeof(a), fr->ip, &fr->sym);
		fprintf(f, "  #%-2zu 0x%012llx %-*s %s", i, (unsigned long long)fr->ip,
			NAME_W, fit(c, NAME_W, cli_esc(a)),
			cli_esc(srcline(b, sizeof(b), &fr->sym)));
		if (fr->flags & BTRACE_CALL_INLINE)
			fprintf(f, " [inlined]");
		if (fr->flags & BTRACE_CALL_TAILCALL)
			fprintf(f, " [tail call]");
		if (fr->flags & BTRACE_CALL_SIGNAL)
			fprintf(f, " [signal handler]");
		fputc('\n', f);
		if (fr->flags & BTRACE_CALL_PARTIAL)
			print_partial(f, t);
	}
}

/* One line of a call listing, indented by its depth above @mind. */
static void print_call(FILE *f, const struct btrace_thread *t,
		       const struct btrace_call *cl, int mind)
{
	char a[128], b[128];

	if (cl->flags & BTRACE_CALL_GAP) {
		print_gap(f, t, cl->gap, "  ");
		return;
	}
	int d = cl->depth - mind;
	if (d > 24)
		d = 24;
	fprintf(f, "  %*s%s", 2 * d, "", cli_esc(where(a, sizeof(a), cl->ip, cl->sym)));
	const char *via = btrace_call_via(t, cl);
	if (via)
		fprintf(f, " (via %s)", cli_esc(via));
	srcline(b, sizeof(b), cl->sym);
	if (b[0])
		fprintf(f, "  %s", cli_esc(b));
	if (cl->flags & BTRACE_CALL_TAILCALL)
		fprintf(f, " [tail call]");
	if (cl->flags & BTRACE_CALL_SIGNAL)
		fprintf(f, " [signal]");
	if (cl->flags & BTRACE_CALL_UNWOUND)
		fprintf(f, " [unwound]");
	fputc('\n', f);
}

static void print_calls(FILE *f, const struct btrace_report_thread *rt,
			uint64_t want)
{
	const struct btrace_thread *t = rt->thread;
	size_t end = rt->calls_end, start = end > want ? end - want : 0;
	char a[128], b[128];
	int mind = 1 << 30;

	for (size_t i = start; i < end; i++)
		if (t->calls[i].depth < mind)
			mind = t->calls[i].depth;
	fprintf(f, "\nlast calls (oldest first, %zu of %llu%s)\n", end - start,
		(unsigned long long)(end + t->dropped_calls),
		t->truncated ? " decoded" : "");
	for (size_t i = start; i < end; i++) {
		print_call(f, t, &t->calls[i], mind);
	}
	if (t->fault.found && t->nstack) {
		fprintf(f, "  => fault in %s",
			cli_esc(where(a, sizeof(a), t->fault.ip, &t->stack[0].sym)));
		srcline(b, sizeof(b), &t->stack[0].sym);
		fprintf(f, "%s%s\n", b[0] ? "  " : "", cli_esc(b));
	}
}

static void print_event(FILE *f, const struct btrace_block *b)
{
	switch (b->kind) {
	case BTRACE_ITEM_ASYNC:
		fprintf(f, "  [interrupted at 0x%llx", (unsigned long long)b->ip);
		if (b->end_ip)
			fprintf(f, ", continued at 0x%llx", (unsigned long long)b->end_ip);
		fprintf(f, "]\n");
		break;
	case BTRACE_ITEM_FAR:
		fprintf(f, "  [system call at 0x%llx", (unsigned long long)b->ip);
		if (b->end_ip)
			fprintf(f, ", back at 0x%llx", (unsigned long long)b->end_ip);
		fprintf(f, "]\n");
		break;
	case BTRACE_ITEM_ENABLED:
		fprintf(f, "  [trace resumes at 0x%llx]\n", (unsigned long long)b->ip);
		break;
	}
}

static void print_blocks(FILE *f, const struct btrace_report_thread *rt,
			 uint64_t want)
{
	const struct btrace_thread *t = rt->thread;
	size_t end = rt->blocks_end, start = end, n = 0;
	char a[128], b[128], c[64];

	while (start > 0 && n < want) {
		start--;
		if (t->blocks[start].kind == BTRACE_ITEM_BLOCK)
			n++;
	}
	fprintf(f, "\nlast blocks before %s (oldest first, %zu)\n", at_end, n);
	for (size_t i = start; i < end; i++) {
		const struct btrace_block *bl = &t->blocks[i];
		if (bl->kind == BTRACE_ITEM_GAP) {
			print_gap(f, t, bl->gap, "  ");
			continue;
		}
		if (bl->kind != BTRACE_ITEM_BLOCK) {
			print_event(f, bl);
			continue;
		}
		size_t rep = 1;
		while (i + rep < end && t->blocks[i + rep].kind == BTRACE_ITEM_BLOCK &&
		       t->blocks[i + rep].ip == bl->ip &&
		       t->blocks[i + rep].ninsn == bl->ninsn)
			rep++;
		fprintf(f, "  0x%012llx %3u  %-*s %s", (unsigned long long)bl->ip,
			bl->ninsn, NAME_W,
			fit(c, NAME_W, cli_esc(where(a, sizeof(a), bl->ip, bl->sym))),
			cli_esc(srcline(b, sizeof(b), bl->sym)));
		if (rep > 1)
			fprintf(f, "  (x%zu)", rep);
		fputc('\n', f);
		i += rep - 1;
	}
	if (rt->fault_in_block)
		fprintf(f, "  %s0x%012llx  => fault: in the block up to 0x%llx "
			"(the instruction is not known)%s\n", col(C_RED),
			(unsigned long long)t->fault.block_ip,
			(unsigned long long)t->fault.block_end_ip, col(C_OFF));
	else if (t->fault.found)
		fprintf(f, "  %s0x%012llx  => %s: %s%s\n", col(C_RED),
			(unsigned long long)t->fault.ip,
			t->fault.kind == BTRACE_FAULT_KIND_SENT ?
			"signal (sent; the next instruction)" : "fault",
			t->fault.insn[0] ? cli_esc(t->fault.insn) : "(no code)",
			col(C_OFF));
	/* (the library counts them: a long path is not kept whole) */
	if (t->fault.found && t->fault.after_blocks)
		fprintf(f, "  (%llu more blocks ran after the fault: a signal handler)\n",
			(unsigned long long)t->fault.after_blocks);
}

/*
 * The call entries after the fault: @first = calls_end, their count
 * (those the library left out of a long path included: omitted_calls),
 * the k-th of them (NULL: left out), and which are shown of @want: the
 * first want/2 and the last ones; a run not shown is one "... N calls ..."
 * line.
 */
static uint64_t after_count(const struct btrace_thread *t, size_t first)
{
	return t->ncalls - first + t->omitted_calls;
}

static const struct btrace_call *after_call(const struct btrace_thread *t,
					    size_t first, uint64_t k)
{
	uint64_t i = first + k;

	if (t->omitted_calls && i >= t->omit_call_at) {
		if (i < t->omit_call_at + t->omitted_calls)
			return NULL;
		i -= t->omitted_calls;
	}
	return &t->calls[i];
}

static int after_shown(const struct btrace_thread *t, size_t first,
		       uint64_t k, uint64_t want)
{
	uint64_t n = after_count(t, first);

	if (n > want && k >= want / 2 && k < n - (want - want / 2))
		return 0;
	return after_call(t, first, k) != NULL;
}

/* The least depth among the entries after the fault. */
static int after_mind(const struct btrace_thread *t, size_t first)
{
	int mind = 1 << 30;

	for (size_t i = first; i < t->ncalls; i++)
		if (t->calls[i].depth < mind)
			mind = t->calls[i].depth;
	if (t->omitted_calls && t->omitted_min_depth < mind)
		mind = t->omitted_min_depth;
	return mind;
}

/* What ran after the fault (a signal handler and what it called), at the
 * call level: the first and the last entries when there are many. */
static void print_after(FILE *f, const struct btrace_report_thread *rt,
			uint64_t want, const struct btrace_report *rep)
{
	const struct btrace_thread *t = rt->thread;
	size_t first = rt->calls_end;
	uint64_t n = after_count(t, first);
	char a[128], b[128];
	int mind;

	if (!rt->went_on)
		return;
	mind = after_mind(t, first);
	fprintf(f, "\nafter the fault (a signal handler ran: %llu blocks, %llu calls)\n",
		(unsigned long long)t->fault.after_blocks, (unsigned long long)n);
	for (uint64_t k = 0; k < n;) {
		uint64_t r = 0;
		while (k < n && !after_shown(t, first, k, want)) {
			k++;
			r++;
		}
		if (r) {
			fprintf(f, "  ... %llu calls ...\n", (unsigned long long)r);
			continue;
		}
		print_call(f, t, after_call(t, first, k++), mind);
	}
	const char *fin = rep->final_signal;
	if (t->fault.death_ip) {
		fprintf(f, "  => died in %s",
			cli_esc(where(a, sizeof(a), t->fault.death_ip,
				      &t->fault.death_sym)));
		srcline(b, sizeof(b), &t->fault.death_sym);
		fprintf(f, "%s%s", b[0] ? "  " : "", cli_esc(b));
		if (fin)
			fprintf(f, " (%s)", cli_esc(fin));
		fputc('\n', f);
	}
}

static const char *size_str(char *buf, size_t len, uint64_t n)
{
	if (n < 10240)
		snprintf(buf, len, "%llu bytes", (unsigned long long)n);
	else if (n < (10u << 20))
		snprintf(buf, len, "%.1f KiB", (double)n / 1024);
	else
		snprintf(buf, len, "%.1f MiB", (double)n / (1 << 20));
	return buf;
}

static void print_history(FILE *f, const struct btrace_thread *t)
{
	char a[32], b[32], c[32];

	fprintf(f, "\nhistory   %llu instructions from %s of trace%s\n",
		(unsigned long long)t->ninsn, size_str(a, sizeof(a), t->decoded_bytes),
		t->truncated ? " (the tail needed)" : "");
	fprintf(f, "          buffer: %s usable", 
		size_str(b, sizeof(b), t->buffer_bytes - t->unusable_bytes));
	if (t->requested_bytes)
		fprintf(f, " of %s requested", size_str(c, sizeof(c), t->requested_bytes));
	fprintf(f, "\n");
	if (t->unusable_bytes)
		fprintf(f, "          %llu bytes before the first sync point were unusable\n",
			(unsigned long long)t->unusable_bytes);
	if (!t->ngaps) {
		fprintf(f, "          %s\n", t->complete ? "complete: no gaps" :
			"no gaps, but the buffer holds less than requested");
		return;
	}
	fprintf(f, "          incomplete: %zu gap%s\n", t->ngaps, t->ngaps > 1 ? "s" : "");
	for (size_t i = 0; i < t->ngaps && i < 8; i++)
		fprintf(f, "          - %s: %s\n", btrace_gap_kind_name(t->gaps[i].kind),
			t->gaps[i].reason ? cli_esc(t->gaps[i].reason) : "");
	if (t->ngaps > 8)
		fprintf(f, "          - ... %zu more\n", t->ngaps - 8);
}

/*
 * The functions inlined at the fault, innermost first, from the stack's
 * inline frames at the faulting instruction (DWARF, as gdb's frames): NULL
 * when the fault is in no inlined code.  @k: the frame after them.
 */
static const struct btrace_frame *fault_inline(const struct btrace_thread *t,
					       size_t *k)
{
	const struct btrace_fault *ft = &t->fault;
	size_t n = 0;

	while (n < t->nstack && (t->stack[n].flags & BTRACE_CALL_INLINE) &&
	       t->stack[n].ip == ft->ip && t->stack[n].sym.function)
		n++;
	*k = n;
	return n && ft->exact ? &t->stack[0] : NULL;
}

/* "label_cost in price in " before the fault's out-of-line function */
static void print_inlined(FILE *f, const struct btrace_thread *t)
{
	size_t n;

	if (!fault_inline(t, &n))
		return;
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s (inlined) in ", cli_esc(btrace_symbol_name(
			&t->stack[i].sym, t->stack[i].flags)));
}

/*
 * A fault at an address without code (a call through a NULL or stale
 * function pointer): the call that went there is the caller's frame of the
 * stack, at its call instruction (as gdb's frame #1).
 */
static void print_called_from(FILE *f, const struct btrace_thread *t)
{
	const struct btrace_fault *ft = &t->fault;
	const struct btrace_frame *c;
	char a[128], b[128];

	if (!ft->exact || ft->insn[0] || ft->sym.module || t->nstack < 2 ||
	    t->stack[0].ip != ft->ip)
		return;
	c = &t->stack[1];
	fprintf(f, "          %s here from %s", t->stack[0].flags &
		BTRACE_CALL_TAILCALL ? "jumped" : "called",
		cli_esc(where(a, sizeof(a), c->ip, &c->sym)));
	srcline(b, sizeof(b), &c->sym);
	if (b[0])
		fprintf(f, " at %s", cli_esc(b));
	fprintf(f, " (0x%llx)\n", (unsigned long long)c->ip);
}

/* The fault lines of a thread's section (nothing when it has none). */
static void print_fault(FILE *f, const struct btrace_report_thread *rt)
{
	const struct btrace_thread *t = rt->thread;
	char a[128], b[128];

	if (rt->fault_in_block) {
		const struct btrace_fault *ft = &t->fault;
		char e[128];
		fprintf(f, "fault     in the block %s .. %s",
			cli_esc(where(a, sizeof(a), ft->block_ip, &ft->sym)),
			cli_esc(where(e, sizeof(e), ft->block_end_ip,
				      &ft->block_end_sym)));
		srcline(b, sizeof(b), &ft->sym);
		if (b[0])
			fprintf(f, " from %s", cli_esc(b));
		fprintf(f, "\n          0x%llx..0x%llx  (the faulting instruction "
			"is one of these, not known which)\n",
			(unsigned long long)ft->block_ip,
			(unsigned long long)ft->block_end_ip);
		if (ft->sym.module)
			fprintf(f, "          in %s\n", cli_esc(ft->sym.module));
		fprintf(f, "          not exact: %s\n", ft->how ? cli_esc(ft->how) : "");
	} else if (t->fault.found) {
		const struct btrace_fault *ft = &t->fault;
		int sent = ft->kind == BTRACE_FAULT_KIND_SENT;
		fprintf(f, "fault     ");
		print_inlined(f, t);
		fprintf(f, "%s", cli_esc(where(a, sizeof(a), ft->ip, &ft->sym)));
		srcline(b, sizeof(b), &ft->sym);
		if (b[0])
			fprintf(f, " at %s", cli_esc(b));
		fprintf(f, "\n          0x%llx  %s\n", (unsigned long long)ft->ip,
			ft->insn[0] ? cli_esc(ft->insn) : "(no code for this address)");
		print_called_from(f, t);
		if (ft->sym.module)
			fprintf(f, "          in %s\n", cli_esc(ft->sym.module));
		if (sent)
			fprintf(f, "          sent: the signal was sent, nothing "
				"faulted; this is where the thread was (%s)\n",
				ft->how ? cli_esc(ft->how) : "");
		else
			fprintf(f, "          %s: %s\n", ft->exact ? "exact" : "approximate",
				ft->how ? cli_esc(ft->how) : "");
	}
}

/* The origin lines: why the faulting operand had its value (the links of
 * the chain newest first, the last one its source). */
static void print_origin(FILE *f, const struct btrace_report *rep)
{
	const struct btrace_origin *o = rep->origin;
	char a[128], b[128];

	if (!o)
		return;
	fprintf(f, "origin    %s = ", o->operand);
	if (o->has_value)
		fprintf(f, "0x%llx", (unsigned long long)o->value);
	else
		fprintf(f, "(value not known)");
	if (o->role && !strcmp(o->role, "target"))
		fprintf(f, " (the target%s of the call or jump that went "
			"there)\n", o->reg >= 0 ? " register" : "");
	else
		fprintf(f, " (the faulting instruction's %s%s)\n", o->role,
			o->reg >= 0 ? " register" : "");
	for (size_t i = 0; i < o->nchain; i++) {
		const struct btrace_origin_link *l = &o->chain[i];
		srcline(b, sizeof(b), &l->sym);
		fprintf(f, "          %s %s%s%s%s  %s\n", i + 1 < o->nchain ? "<-" : "<=",
			cli_esc(where(a, sizeof(a), l->ip, &l->sym)),
			b[0] ? " (" : "", b[0] ? cli_esc(b) : "", b[0] ? ")" : "",
			cli_esc(l->insn));
		fprintf(f, "             %s\n", cli_esc(l->what));
	}
}

static void print_thread(FILE *f, const struct btrace_report *rep,
			 const struct btrace_report_thread *rt,
			 const struct rep_opts *o)
{
	const struct btrace_thread *t = rt->thread;

	if (t->tid >= 0)
		fprintf(f, "\n== thread %d%s ==\n", t->tid, t->crashed ? " (crashed)" : "");
	else
		fprintf(f, "\n== cpu %d (per-cpu buffer) ==\n", t->cpu);
	print_fault(f, rt);
	if (rt == rep->crashed)
		print_origin(f, rep);
	print_stack(f, t);
	print_calls(f, rt, o->calls);
	print_blocks(f, rt, o->blocks);
	print_after(f, rt, o->calls, rep);
	print_history(f, t);
}

/*
 * Which events of the timeline are shown, @n at most: with times the last
 * @n of all; without, the last @n of each thread.  @shown gets 1 for each
 * (ntimeline entries); returns how many, or -1 out of memory.
 */
static long tl_shown(const struct btrace_report *rep, uint64_t n, char *shown)
{
	size_t *left = calloc(rep->nthreads + 1, sizeof(*left));
	long cnt = 0;

	if (!left)
		return -1;
	for (size_t i = rep->ntimeline; i-- > 0;) {
		size_t k = rep->timeline_timed ? rep->nthreads :
			   (size_t)(rep->timeline[i].thread - rep->threads);
		shown[i] = left[k] < n;
		left[k] += shown[i];
		cnt += shown[i];
	}
	free(left);
	return cnt;
}

/* The function of a timeline event, as the other listings name it. */
static const char *ev_where(char *buf, size_t len,
			    const struct btrace_report_event *e)
{
	if (e->kind == BTRACE_EVENT_GAP)
		return snprintf(buf, len, "[gap: %s]", btrace_gap_kind_name(
				e->thread->thread->gaps[e->call->gap].kind)), buf;
	if (!e->sym)
		return snprintf(buf, len, "0x%llx", (unsigned long long)e->ip), buf;
	return where(buf, len, e->ip, e->sym);
}

/* "all threads, ...": the timeline (docs/report.md, "Timeline"). */
static void print_timeline(FILE *f, const struct btrace_report *rep,
			   uint64_t want)
{
	char *shown = calloc(rep->ntimeline + 1, 1);
	const struct btrace_report_event *ref = NULL;
	char a[128], b[128], c[64];
	long n = shown ? tl_shown(rep, want, shown) : -1;

	if (n < 0) {
		free(shown);
		fprintf(f, "\n(the timeline: out of memory)\n");
		return;
	}
	if (rep->timeline_timed) {
		fprintf(f, "\nall threads, last %ld events before %s, in time "
			"order (time before the last)\n", n, at_end);
		if (rep->ntimeline)
			ref = &rep->timeline[rep->ntimeline - 1];
	} else {
		fprintf(f, "\nall threads, last %ld events before %s (times not "
			"known: the order across threads is not known; each "
			"thread's last %llu events in its own order, the "
			"crashed thread last)\n", n, at_end,
			(unsigned long long)want);
	}
	for (size_t i = 0; i < rep->ntimeline; i++) {
		const struct btrace_report_event *e = &rep->timeline[i];
		if (!shown[i])
			continue;
		if (!ref)
			fputs("  ", f);
		else if (e->time_ns)
			fprintf(f, "  -%9.3f us  ", (double)(ref->time_ns -
				e->time_ns) / 1000);
		else
			fprintf(f, "  %12s  ", "?");
		fprintf(f, "tid %-7d %-7s %-*s %s\n", e->thread->thread->tid,
			btrace_event_kind_name(e->kind), NAME_W,
			fit(c, NAME_W, cli_esc(ev_where(a, sizeof(a), e))),
			e->sym ? cli_esc(srcline(b, sizeof(b), e->sym)) : "");
	}
	free(shown);
}

/* The signal line: the recorded signal and its details, or the exit. */
static void print_signal(FILE *f, const struct btrace_report *rep)
{
	const struct btrace_report_signal *s = &rep->signal;

	if (!rep->has_signal) {
		fprintf(f, "signal    none recorded\n");
		if (rep->exit_status)
			fprintf(f, "exit      status %s\n", cli_esc(rep->exit_status));
		return;
	}
	const char *cn = s->code_name;
	fprintf(f, "signal    %s%s (%d)%s, ", col(C_RED),
		s->name ? s->name : "?", s->number, col(C_OFF));
	if (s->code == BTRACE_SIGCODE_UNKNOWN)
		fputs("code unknown", f);
	else
		fprintf(f, "code %d%s%s%s", s->code, cn ? " (" : "",
			cn ? cn : "", cn ? ")" : "");
	if (s->has_address)
		fprintf(f, ", address 0x%llx", (unsigned long long)s->address);
	if (s->sender_pid)
		fprintf(f, ", sent by pid %d", s->sender_pid);
	fputc('\n', f);
}

/*
 * The death line, from rep->death as the JSON's "death" (one source): a
 * handler ran only when the trace shows it went on after the fault.
 */
static void print_death(FILE *f, const struct btrace_report *rep)
{
	const struct btrace_report_death *d = &rep->death;
	const char *fin = rep->final_signal;
	const char *what = fin ? fin : d->signal.name ? d->signal.name : "?";

	if (!d->known || (!d->after_fault && !fin))
		return;   /* died of the signal above, at the fault */
	if (!d->after_fault)
		fprintf(f, "death     %s, at the fault (no handler ran after it "
			"in the trace)\n", cli_esc(what));
	else if (fin)
		fprintf(f, "death     %s, after the fault above (a signal handler "
			"ran)\n", cli_esc(fin));
	else
		fprintf(f, "death     %s, after a signal handler ran: the fault "
			"is the one that started it\n", cli_esc(what));
}

/* The lines after the signal: cause, exec, death, limits, image notes. */
static void print_facts(FILE *f, const struct btrace_report *rep)
{
	const struct btrace_decode_result *r = rep->decode;

	if (rep->cause.text)
		fprintf(f, "cause     %s\n", cli_esc(rep->cause.text));
	if (rep->native_exec)
		fprintf(f, "exec      %s ran natively, untraced (set-ID, "
			"capabilities, or not x86-64): the trace ends at its "
			"execve()\n", cli_esc(rep->native_exec));
	print_death(f, rep);
	for (size_t i = 0; i < rep->nlimits; i++)
		fprintf(f, "limits    %s: %s\n", cli_esc(rep->limits[i].name),
			cli_esc(rep->limits[i].text));
	for (size_t i = 0; i < r->nimage_notes; i++)
		fprintf(f, "image     %s\n", cli_esc(r->image_notes[i]));
}

static void report_text(FILE *f, const char *path,
			const struct btrace_report *rep,
			const struct rep_opts *o)
{
	const struct btrace_decode_result *r = rep->decode;
	const char *nc = getenv("NO_COLOR"), *term = getenv("TERM");

	at_end = rep->end_words;
	use_color = isatty(fileno(f)) && !(nc && *nc) &&
		    !(term && !strcmp(term, "dumb"));

	fprintf(f, "btrace report: %s\n", cli_esc(path));
	fprintf(f, "process   %d (%s)", r->pid, r->command ? cli_esc(r->command) : "?");
	if (backend_name(r->backend))
		fprintf(f, ", backend %s", backend_name(r->backend));
	fprintf(f, ", %s trace\n", r->kind == BTRACE_TRACE_BTS ? "BTS" : "Intel PT");
	print_signal(f, rep);
	print_facts(f, rep);
	if (!r->nthreads)
		fprintf(f, "\n(no trace buffers in this snapshot)\n");
	/* A signal sent from outside: where every thread was is the answer */
	int all = o->all || rep->sent_from_outside;
	for (size_t i = 0; i < rep->nthreads; i++) {
		if (!all && !o->tid && i > 0 && r->crashed_thread >= 0)
			break;
		print_thread(f, rep, &rep->threads[i], o);
	}
	if (rep->nthreads > 1)
		print_timeline(f, rep, o->calls);
	if (!all && !o->tid && r->crashed_thread >= 0 && r->nthreads > 1)
		fprintf(f, "\n(%zu other thread%s: btrace report --all-threads)\n",
			r->nthreads - 1, r->nthreads > 2 ? "s" : "");
}

void cli_report_text(FILE *f, const char *path, const struct btrace_report *rep,
		     uint64_t calls, uint64_t blocks)
{
	struct rep_opts o = { .calls = calls, .blocks = blocks, .all = 1 };

	report_text(f, path, rep, &o);
}

/* --- JSON --- */

/* "time_ns": when, null when not known (btrace_time_known()) */
static void j_time(struct json *j, uint64_t t, uint32_t flags)
{
	t = btrace_time_known(t, flags);
	if (t)
		json_uint(j, "time_ns", t);
	else
		json_null(j, "time_ns");
}

static void j_sym(struct json *j, const struct btrace_symbol *s,
		  uint32_t flags)
{
	json_str(j, "function", btrace_symbol_name(s, flags));
	json_str(j, "module", s->module);
	json_str(j, "file", s->file);
	if (s->line)
		json_int(j, "line", s->line);
	else
		json_null(j, "line");
}

static void j_gap(struct json *j, const struct btrace_gap *g)
{
	json_str(j, "kind", btrace_gap_kind_name(g->kind));
	json_uint(j, "offset", g->offset);
	if (g->ip)
		json_hex(j, "ip", g->ip);
	else
		json_null(j, "ip");
	json_uint(j, "bytes", g->bytes);
	json_str(j, "reason", g->reason);
}

static void j_call(struct json *j, const struct btrace_thread *t,
		   const struct btrace_call *cl, int mind);

/* "history": what was decoded against what was asked for, the gaps */
static void j_history(struct json *j, const struct btrace_thread *t)
{
	json_begin_object(j, "history");
	json_uint(j, "bytes", t->decoded_bytes);
	json_uint(j, "requested_bytes", t->requested_bytes);
	json_uint(j, "buffer_bytes", t->buffer_bytes);
	json_uint(j, "unusable_bytes", t->unusable_bytes);
	json_uint(j, "instructions", t->ninsn);
	json_bool(j, "complete", t->complete);
	json_bool(j, "tail_only", t->truncated);
	json_begin_array(j, "gaps");
	for (size_t i = 0; i < t->ngaps; i++) {
		json_begin_object(j, NULL);
		j_gap(j, &t->gaps[i]);
		json_end_object(j);
	}
	json_end_array(j);
	json_end_object(j);
}

/* "stack": at the fault, innermost first */
static void j_stack(struct json *j, const struct btrace_thread *t)
{
	json_begin_array(j, "stack");
	for (size_t i = 0; i < t->nstack; i++) {
		const struct btrace_frame *fr = &t->stack[i];
		json_begin_object(j, NULL);
		j_sym(j, &fr->sym, fr->flags);
		json_hex(j, "ip", fr->ip);
		json_bool(j, "inline", fr->flags & BTRACE_CALL_INLINE);
		json_bool(j, "inlined", fr->flags & BTRACE_CALL_INLINE);
		json_bool(j, "tail_call", fr->flags & BTRACE_CALL_TAILCALL);
		json_bool(j, "signal", fr->flags & BTRACE_CALL_SIGNAL);
		json_bool(j, "partial", fr->flags & BTRACE_CALL_PARTIAL);
		json_end_object(j);
	}
	json_end_array(j);
}

/* "calls": the last ones before the fault */
static void j_calls(struct json *j, const struct btrace_report_thread *rt,
		    const struct rep_opts *o)
{
	const struct btrace_thread *t = rt->thread;
	size_t cend = rt->calls_end, cstart = cend > o->calls ? cend - o->calls : 0;
	int mind = 1 << 30;

	for (size_t i = cstart; i < cend; i++)
		if (t->calls[i].depth < mind)
			mind = t->calls[i].depth;
	json_begin_array(j, "calls");
	for (size_t i = cstart; i < cend; i++)
		j_call(j, t, &t->calls[i], mind);
	json_end_array(j);
}

/* "tail": the last blocks before the fault, and the fault */
static void j_tail(struct json *j, const struct btrace_report_thread *rt,
		   const struct rep_opts *o)
{
	const struct btrace_thread *t = rt->thread;
	size_t bend = rt->blocks_end, bstart = bend, n = 0;

	while (bstart > 0 && n < o->blocks) {
		bstart--;
		if (t->blocks[bstart].kind == BTRACE_ITEM_BLOCK)
			n++;
	}
	json_begin_array(j, "tail");
	for (size_t i = bstart; i < bend; i++) {
		const struct btrace_block *b = &t->blocks[i];
		if (b->kind == BTRACE_ITEM_BLOCK) {
			json_begin_object(j, NULL);
			json_hex(j, "ip", b->ip);
			json_hex(j, "end_ip", b->end_ip);
			j_sym(j, b->sym, 0);
			json_uint(j, "ninsn", b->ninsn);
			json_bool(j, "fault", false);
			j_time(j, b->time_ns, b->time_flags);
			json_end_object(j);
		} else if (b->kind == BTRACE_ITEM_GAP) {
			json_begin_object(j, NULL);
			json_null(j, "ip");
			json_begin_object(j, "gap");
			j_gap(j, &t->gaps[b->gap]);
			json_end_object(j);
			j_time(j, b->time_ns, b->time_flags);
			json_end_object(j);
		}
	}
	/* the tail ends at the fault: the faulting instruction (did not
	 * complete: ninsn 0), or the block holding it when not exact */
	if (t->fault.found && t->fault.kind == BTRACE_FAULT_KIND_FAULT) {
		const struct btrace_fault *ft = &t->fault;
		int blk = rt->fault_in_block;
		json_begin_object(j, NULL);
		json_hex(j, "ip", blk ? ft->block_ip : ft->ip);
		json_hex(j, "end_ip", blk ? ft->block_end_ip : ft->ip);
		j_sym(j, &ft->sym, 0);
		json_uint(j, "ninsn", 0);
		json_bool(j, "fault", true);
		json_bool(j, "exact", ft->exact);
		if (ft->block_index < t->nblocks)
			j_time(j, t->blocks[ft->block_index].time_ns,
			       t->blocks[ft->block_index].time_flags);
		else
			json_null(j, "time_ns");
		json_end_object(j);
	}
	json_end_array(j);
}

/* "after_fault": what ran after the fault (a signal handler), at the call
 * level */
static void j_after(struct json *j, const struct btrace_report_thread *rt,
		    const struct rep_opts *o)
{
	const struct btrace_thread *t = rt->thread;

	if (rt->went_on) {
		size_t first = rt->calls_end;
		uint64_t na = after_count(t, first);
		int amind = after_mind(t, first);
		json_begin_object(j, "after_fault");
		json_uint(j, "blocks", t->fault.after_blocks);
		json_uint(j, "ncalls", na);
		json_begin_array(j, "calls");
		for (uint64_t k = 0; k < na;) {
			uint64_t r = 0;
			while (k < na && !after_shown(t, first, k, o->calls)) {
				k++;
				r++;
			}
			if (r) {
				/* the middle of a long handler path */
				json_begin_object(j, NULL);
				json_null(j, "function");
				json_uint(j, "skipped", r);
				json_end_object(j);
				continue;
			}
			j_call(j, t, after_call(t, first, k++), amind);
		}
		json_end_array(j);
		json_end_object(j);
	} else {
		json_null(j, "after_fault");
	}
}

static void j_thread(struct json *j, const struct btrace_report_thread *rt,
		     const struct rep_opts *o)
{
	const struct btrace_thread *t = rt->thread;

	json_begin_object(j, NULL);
	json_int(j, "tid", t->tid);
	if (t->cpu >= 0)
		json_int(j, "cpu", t->cpu);
	json_bool(j, "crashed", t->crashed);
	j_history(j, t);
	j_stack(j, t);
	j_calls(j, rt, o);
	j_tail(j, rt, o);
	j_after(j, rt, o);
	json_end_object(j);
}

static void j_call(struct json *j, const struct btrace_thread *t,
		   const struct btrace_call *cl, int mind)
{
	json_begin_object(j, NULL);
	json_int(j, "depth", cl->depth - mind);
	if (cl->flags & BTRACE_CALL_GAP) {
		json_null(j, "function");
		json_null(j, "module");
		json_null(j, "ip");
		json_begin_object(j, "gap");
		j_gap(j, &t->gaps[cl->gap]);
		json_end_object(j);
	} else {
		json_str(j, "function", btrace_symbol_name(cl->sym, 0));
		json_str(j, "module", cl->sym->module);
		json_hex(j, "ip", cl->ip);
		json_str(j, "file", cl->sym->file);
		if (cl->sym->line)
			json_int(j, "line", cl->sym->line);
		else
			json_null(j, "line");
		json_uint(j, "ninsn", cl->ninsn);
		json_str(j, "via", btrace_call_via(t, cl));
		json_bool(j, "tail_call", cl->flags & BTRACE_CALL_TAILCALL);
		json_bool(j, "signal", cl->flags & BTRACE_CALL_SIGNAL);
		json_bool(j, "partial", cl->flags & BTRACE_CALL_PARTIAL);
	}
	j_time(j, cl->time_ns, cl->time_flags);
	json_end_object(j);
}

/* A signal of the model: number, name, code, code name and (@address)
 * the address or (!@address) the sender. */
static void j_signal(struct json *j, const char *key,
		     const struct btrace_report_signal *s, int address,
		     int number_known)
{
	json_begin_object(j, key);
	if (number_known)
		json_int(j, "number", s->number);
	else
		json_null(j, "number");
	json_str(j, "name", s->name);
	if (s->code == BTRACE_SIGCODE_UNKNOWN)
		json_null(j, "code");
	else
		json_int(j, "code", s->code);
	json_str(j, "code_name", s->code_name);
	if (address)
		json_hex(j, "address", s->address);
	else if (s->sender_pid)
		json_int(j, "sender_pid", s->sender_pid);
	else
		json_null(j, "sender_pid");
	json_end_object(j);
}

/* "fault": where the crashed thread faulted (null: nowhere known). */
static void j_fault(struct json *j, const struct btrace_report_thread *rt)
{
	const struct btrace_thread *ct = rt ? rt->thread : NULL;

	if (!ct || !ct->fault.found) {
		json_null(j, "fault");
		return;
	}
	const struct btrace_fault *ft = &ct->fault;
	int blk = rt->fault_in_block;
	const char *fn = btrace_symbol_name(&ft->sym, 0);
	json_begin_object(j, "fault");
	json_int(j, "tid", ct->tid);
	json_str(j, "kind", ft->kind == BTRACE_FAULT_KIND_SENT ? "sent" : "fault");
	/* not exact: the instruction, its offset and line are not
	 * known; "block" holds what is */
	if (blk)
		json_null(j, "ip");
	else
		json_hex(j, "ip", ft->ip);
	json_str(j, "module", ft->sym.module);
	json_str(j, "function", fn);
	size_t nin;
	const struct btrace_frame *in = fault_inline(ct, &nin);
	json_str(j, "inline_function", in ?
		 btrace_symbol_name(&in->sym, in->flags) : NULL);
	if (fn && !blk)
		json_uint(j, "offset", ft->sym.offset);
	else
		json_null(j, "offset");
	json_str(j, "file", ft->sym.file);
	if (ft->sym.line && !blk)
		json_int(j, "line", ft->sym.line);
	else
		json_null(j, "line");
	json_str(j, "instruction", ft->insn[0] ? ft->insn : NULL);
	json_bool(j, "exact", ft->exact);
	json_str(j, "how", ft->how);
	if (!blk) {
		json_null(j, "block");
		json_end_object(j);
		return;
	}
	const char *efn = btrace_symbol_name(&ft->block_end_sym, 0);
	json_begin_object(j, "block");
	json_hex(j, "ip", ft->block_ip);
	json_hex(j, "end_ip", ft->block_end_ip);
	json_str(j, "function", fn);
	if (fn)
		json_uint(j, "offset", ft->sym.offset);
	else
		json_null(j, "offset");
	json_str(j, "end_function", efn);
	if (efn)
		json_uint(j, "end_offset", ft->block_end_sym.offset);
	else
		json_null(j, "end_offset");
	json_str(j, "file", ft->sym.file);
	if (ft->sym.line)
		json_int(j, "line", ft->sym.line);
	else
		json_null(j, "line");
	if (ft->block_end_sym.line)
		json_int(j, "end_line", ft->block_end_sym.line);
	else
		json_null(j, "end_line");
	json_end_object(j);
	json_end_object(j);
}

static const char *origin_kind(uint32_t k)
{
	switch (k) {
	case BTRACE_ORIGIN_CONSTANT: return "constant";
	case BTRACE_ORIGIN_LOAD: return "load";
	case BTRACE_ORIGIN_SYSCALL: return "syscall";
	case BTRACE_ORIGIN_START: return "history_start";
	case BTRACE_ORIGIN_COPY: return "copy";
	case BTRACE_ORIGIN_COMPUTE: return "compute";
	case BTRACE_ORIGIN_RETURN: return "return";
	case BTRACE_ORIGIN_STORE: return "store";
	case BTRACE_ORIGIN_FOLDED: return "folded_loop";
	}
	return "other";
}

/* "origin": why the faulting operand had its value (null: not known) */
static void j_origin(struct json *j, const struct btrace_report *rep)
{
	const struct btrace_origin *o = rep->origin;

	if (!o) {
		json_null(j, "origin");
		return;
	}
	json_begin_object(j, "origin");
	json_str(j, "operand", o->operand);
	json_str(j, "role", o->role);
	if (o->has_value)
		json_hex(j, "value", o->value);
	else
		json_null(j, "value");
	json_begin_array(j, "chain");
	for (size_t i = 0; i < o->nchain; i++) {
		const struct btrace_origin_link *l = &o->chain[i];
		const char *fn = btrace_symbol_name(&l->sym, 0);
		json_begin_object(j, NULL);
		json_hex(j, "ip", l->ip);
		json_str(j, "function", fn);
		if (fn)
			json_uint(j, "offset", l->sym.offset);
		else
			json_null(j, "offset");
		json_str(j, "file", l->sym.file);
		if (l->sym.line)
			json_int(j, "line", l->sym.line);
		else
			json_null(j, "line");
		json_str(j, "instruction", l->insn[0] ? l->insn : NULL);
		json_str(j, "kind", origin_kind(l->kind));
		json_str(j, "register", btrace_vreg_name((unsigned)l->reg));
		if (l->has_value)
			json_hex(j, "value", l->value);
		else
			json_null(j, "value");
		if (l->has_addr)
			json_hex(j, "address", l->addr);
		else
			json_null(j, "address");
		json_str(j, "what", l->what);
		json_end_object(j);
	}
	json_end_array(j);
	json_end_object(j);
}

/* "death": what ended the process (the recorded signal, or with QEMU
 * after a handler went on qemu.final_signal); where the thread was then */
static void j_death(struct json *j, const struct btrace_report *rep)
{
	const struct btrace_report_death *d = &rep->death;

	if (!d->known) {
		json_null(j, "death");
		return;
	}
	json_begin_object(j, "death");
	if (d->has_signal) {
		/* a final signal known by name only: its number may not be */
		j_signal(j, "signal", &d->signal, 0,
			 !rep->final_signal || d->signal.number);
		json_null(j, "exit_code");
	} else if (d->has_exit_code) {
		json_null(j, "signal");
		json_int(j, "exit_code", d->exit_code);
	} else {
		json_null(j, "signal");
		json_null(j, "exit_code");
	}
	json_bool(j, "after_fault", d->after_fault);
	const struct btrace_fault *ft = &rep->crashed->thread->fault;
	if (d->after_fault && ft->death_ip) {
		json_hex(j, "ip", ft->death_ip);
		json_str(j, "function", btrace_symbol_name(&ft->death_sym, 0));
		json_str(j, "module", ft->death_sym.module);
		json_str(j, "how", ft->death_how);
	} else if (d->after_fault) {
		json_null(j, "ip");
		json_null(j, "function");
		json_null(j, "module");
		json_null(j, "how");
	} else {
		/* died at the fault */
		json_str(j, "ip", NULL);
		json_str(j, "function", NULL);
		json_str(j, "module", NULL);
		json_str(j, "how", "at the fault");
	}
	json_end_object(j);
}

/* "timeline_order" and "timeline": the events of all threads before the
 * fault (docs/report.md, "Timeline") */
static void j_timeline(struct json *j, const struct btrace_report *rep,
		       const struct rep_opts *o)
{
	char *shown = calloc(rep->ntimeline + 1, 1);

	json_str(j, "timeline_order", rep->timeline_timed ? "time" :
		 "per_thread");
	if (!shown || tl_shown(rep, o->calls, shown) < 0) {
		/* (a tiny allocation; the JSON stays valid) */
		json_null(j, "timeline");
		free(shown);
		return;
	}
	json_begin_array(j, "timeline");
	for (size_t i = 0; i < rep->ntimeline; i++) {
		const struct btrace_report_event *e = &rep->timeline[i];
		if (!shown[i])
			continue;
		json_begin_object(j, NULL);
		j_time(j, e->time_ns, e->time_flags);
		json_int(j, "tid", e->thread->thread->tid);
		json_str(j, "kind", btrace_event_kind_name(e->kind));
		json_str(j, "function", btrace_symbol_name(e->sym, 0));
		json_str(j, "module", e->sym ? e->sym->module : NULL);
		if (e->ip)
			json_hex(j, "ip", e->ip);
		else
			json_null(j, "ip");
		json_end_object(j);
	}
	json_end_array(j);
	free(shown);
}

static void report_json(FILE *f, const struct btrace_report *rep,
			const struct rep_opts *o)
{
	const struct btrace_decode_result *r = rep->decode;
	struct json j;

	json_init(&j, f, true);
	json_begin_object(&j, NULL);
	json_int(&j, "btrace_report", 1);
	json_str(&j, "backend", backend_name(r->backend));
	json_str(&j, "trace", r->kind == BTRACE_TRACE_BTS ? "bts" : "pt");
	json_begin_object(&j, "process");
	json_int(&j, "pid", r->pid);
	json_str(&j, "command", r->command);
	json_end_object(&j);
	if (rep->has_signal)
		j_signal(&j, "signal", &rep->signal, 1, 1);
	else
		json_null(&j, "signal");
	if (rep->cause.kind) {
		json_begin_object(&j, "cause");
		json_str(&j, "kind", rep->cause.name);
		json_str(&j, "text", rep->cause.text);
		json_end_object(&j);
	} else {
		json_null(&j, "cause");
	}
	/* A program exec'd outside the emulator: what ran last is not in
	 * the trace. */
	json_str(&j, "native_exec", rep->native_exec);
	j_fault(&j, rep->crashed);
	j_origin(&j, rep);
	j_death(&j, rep);
	json_begin_array(&j, "limits");
	for (size_t i = 0; i < rep->nlimits; i++) {
		json_begin_object(&j, NULL);
		json_str(&j, "name", rep->limits[i].name);
		json_str(&j, "text", rep->limits[i].text);
		json_end_object(&j);
	}
	json_end_array(&j);
	json_begin_array(&j, "image_notes");
	for (size_t i = 0; i < r->nimage_notes; i++)
		json_str(&j, NULL, r->image_notes[i]);
	json_end_array(&j);
	json_begin_array(&j, "threads");
	for (size_t i = 0; i < rep->nthreads; i++)
		j_thread(&j, &rep->threads[i], o);
	json_end_array(&j);
	j_timeline(&j, rep, o);
	json_end_object(&j);
	json_finish(&j);
}

void cli_report_json(FILE *f, const struct btrace_report *rep,
		     uint64_t calls, uint64_t blocks)
{
	struct rep_opts o = { .calls = calls, .blocks = blocks, .all = 1 };

	report_json(f, rep, &o);
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: btrace report [options] FILE\n"
		"\n"
		"Explain a crash from a snapshot: the fault, the call stack rebuilt\n"
		"from the trace, the last calls and blocks, and what is missing.\n"
		"\n"
		"  --json             machine-readable report\n"
		"  --calls N          last calls to show (default 16)\n"
		"  --blocks N         last blocks to show (default 16)\n"
		"  --thread TID       report this thread only\n"
		"  --all-threads      every thread, not just the crashed one\n"
		"  --full             decode whole buffers, not just their tails\n"
		"  --debug-dir DIR    separate debug info root (default /usr/lib/debug)\n"
		"  --no-disk          never read code from files on disk\n"
		"  --no-debuginfod    never download debug info (DEBUGINFOD_URLS)\n"
		"  -v, --verbose      list every mapping without code, also those the\n"
		"                     trace never entered\n"
		"  -h, --help         this text\n"
		"\n"
		"Binaries and debug info are found by build ID: next to FILE, in\n"
		"BTRACE_DEBUG_PATH (colon-separated), in the debug directory's\n"
		".build-id, then at the recorded path.\n");
	cli_help_end(f, "report");
}

/* The options of btrace report into @o and @d: -1 to go on, else the exit
 * status (--help, a usage error). */
static int parse_options(int argc, char **argv, struct rep_opts *o,
			 struct btrace_decode_opts *d)
{
	static const struct option lo[] = {
		{ "json", no_argument, NULL, 'j' },
		{ "calls", required_argument, NULL, 'c' },
		{ "blocks", required_argument, NULL, 'b' },
		{ "all-threads", no_argument, NULL, 'a' },
		{ "full", no_argument, NULL, 'F' },
		CLI_DECODE_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, rc;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":hv", lo, NULL)) != -1) {
		switch (c) {
		case 'j': o->json = 1; continue;
		case 'c':
			if (cli_parse_u64(optarg, &o->calls) || !o->calls)
				return cli_usage(CMD, "--calls: '%s' is not a positive number", optarg);
			continue;
		case 'b':
			if (cli_parse_u64(optarg, &o->blocks) || !o->blocks)
				return cli_usage(CMD, "--blocks: '%s' is not a positive number", optarg);
			continue;
		case 'a': o->all = 1; continue;
		case 'F': d->flags |= BTRACE_DECODE_FULL; continue;
		case 'h': usage(stdout); return CLI_EXIT_OK;
		}
		rc = cli_decode_option(CMD, c, optarg, d);
		if (rc >= 0) {
			if (rc)
				return rc;
			continue;
		}
		return cli_bad_option(CMD, c, argv);
	}
	o->tid = d->tid;
	return -1;
}

/* btrace_decode() with a progress line while a large trace is decoded (or
 * debug info is downloaded), on a terminal only; erased once done. */
static int decode(const struct btrace_snapshot *snap,
		  const struct btrace_decode_opts *d,
		  struct btrace_decode_result **r, struct btrace_error *err)
{
	uint64_t bytes = cli_progress_bytes(snap);
	bool progress = cli_progress_wanted(bytes,
					    d->flags & BTRACE_DECODE_FULL);
	int rc;

	if (progress)
		fprintf(stderr, "btrace report: decoding %.1f MiB of trace%s...",
			(double)bytes / (1 << 20), cli_progress_debuginfod() ?
			" (debug info may be downloaded)" : "");
	rc = btrace_decode(snap, d, r, err);
	if (progress)
		cli_progress_erase();
	return rc;
}

int cmd_report(int argc, char **argv)
{
	struct rep_opts o = { .calls = 16, .blocks = 16 };
	char dir[PATH_MAX];
	struct btrace_decode_opts d = { .sz = sizeof(d) };
	struct btrace_snapshot *snap;
	struct btrace_decode_result *r = NULL;
	struct btrace_report *rep = NULL;
	struct btrace_error err;
	int rc = parse_options(argc, argv, &o, &d);

	if (rc >= 0)
		return rc;
	rc = cli_decode_open(CMD, argc, argv, &d, &snap, dir);
	if (rc)
		return rc;
	const char *path = argv[optind];
	/* Tail-only: enough call-history entries for both lists (each entry
	 * has at least one block); with --full, every block is analysed but
	 * only that many calls and blocks are kept (bounded memory). */
	d.unit = BTRACE_UNIT_CALLS;
	d.last = (o.calls > o.blocks ? o.calls : o.blocks) + 8;
	d.keep = d.last;
	rc = decode(snap, &d, &r, &err);
	if (rc >= 0)
		rc = btrace_report_build(snap, r, &rep, &err);
	if (rc < 0) {
		btrace_decode_result_free(r);
		btrace_snapshot_free(snap);
		return cli_fail(CMD, &err);
	}
	if (o.tid && !r->nthreads) {
		rc = cli_failf(CMD, "btrace info FILE lists the buffers and their threads",
			       "%s: no trace buffer for thread %d", path, o.tid);
	} else {
		if (o.json)
			report_json(stdout, rep, &o);
		else
			report_text(stdout, path, rep, &o);
		rc = CLI_EXIT_OK;
	}
	btrace_report_free(rep);
	btrace_decode_result_free(r);
	btrace_snapshot_free(snap);
	return rc;
}
