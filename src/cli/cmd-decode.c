/* SPDX-License-Identifier: MIT */
/*
 * btrace decode: the recovered path of each thread, as instructions (with
 * disassembly and source lines), blocks, or the function-call history
 * indented by call depth (like gdb's record function-call-history /c).
 * Gaps and events are printed where they happened.
 *
 * The listing is streamed (bounded memory whatever the length of the
 * history): btrace_decode() with a sink gives, per thread, what the
 * listing needs before its first line (the counts behind --last, the
 * fault's item, the shallowest call depth of what is printed), then
 * btrace_decode_thread() decodes each thread again and it is printed item
 * by item as it is decoded.  --calls keeps the first pass's call entries
 * (formatted but for their number and indentation), --insn its items (16
 * bytes a block), within KEEP_BUDGET bytes and prints from them, so the
 * trace is decoded once; a thread whose entries do not fit is decoded
 * again.
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <btrace/decode.h>
#include <btrace/report.h>
#include <btrace/snapshot.h>
#include <btrace/values.h>

#include "cli.h"

#define CMD "decode"

enum mode { M_CALLS, M_BLOCKS, M_INSN };

/*
 * A progress line on stderr while a large trace is decoded, when stderr is
 * a terminal (the rule of btrace report's, cli_progress_wanted()): "decoding" during the first pass,
 * "listing" during the second (none when the listing comes from the
 * first pass's entries), where it is shown only when stdout is not
 * a terminal (it would cut into the listing); the bytes of trace behind
 * the position so far, of all buffers.  Redrawn at most 5 times a second,
 * erased when done.
 */
static struct {
	int on, listing;
	const char *what;
	uint64_t total, done, cur;     /* bytes: all, threads done, this one */
	const struct btrace_thread *t;
	uint64_t ticks;
	int64_t last_ms;
	int shown;
} pg;

static int64_t pg_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void pg_start(const struct btrace_snapshot *snap, uint64_t last)
{
	memset(&pg, 0, sizeof(pg));
	pg.total = cli_progress_bytes(snap);
	pg.on = cli_progress_wanted(pg.total, !last);
	pg.listing = pg.on && !isatty(STDOUT_FILENO);
	pg.what = "decoding";
}

static void pg_draw(uint64_t pos)
{
	uint64_t at = pg.done + (pos < pg.cur ? pos : pg.cur);

	if (at > pg.total)
		at = pg.total;
	fprintf(stderr, "\rbtrace decode: %s %.1f of %.1f MiB of trace "
		"(%d%%)%s\033[K", pg.what, (double)at / (1 << 20),
		(double)pg.total / (1 << 20),
		pg.total ? (int)(at * 100 / pg.total) : 100,
		cli_progress_debuginfod() ? ", debug info may be downloaded" : "");
	pg.shown = 1;
	pg.last_ms = pg_now_ms();
}

/* The decode of thread @t begins (again, after a retry: same bytes). */
static void pg_thread(const struct btrace_thread *t)
{
	if (!pg.on || t == pg.t)
		return;
	if (pg.t)
		pg.done += pg.cur;
	pg.t = t;
	pg.cur = t->buffer_bytes;
	pg_draw(0);
}

static void pg_tick(const struct btrace_block *b)
{
	if (!pg.on || (++pg.ticks & 1023) || pg_now_ms() - pg.last_ms < 200)
		return;
	pg_draw(b->offset);
}

/* Erase the line; the next pass (@what, NULL: none) counts from 0. */
static void pg_next(const char *what)
{
	if (pg.shown)
		cli_progress_erase();
	pg.shown = 0;
	pg.on = what && pg.listing;
	pg.what = what;
	pg.t = NULL;
	pg.done = pg.cur = 0;
}

static const char *base(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p;
}

/* The function an address is in: the same rule as btrace report's. */
static const char *fn_name(const struct btrace_symbol *s)
{
	return s->outer ? s->outer : s->function;
}

/*
 * Strings built by hand, not by snprintf (a call listing is a few of them
 * per line, hundreds of thousands of lines): what snprintf into a buffer
 * of @len bytes would give, cut at len - 1 bytes.
 */
struct sbuf {
	char *b;
	size_t len, n;
};

static void sb_mem(struct sbuf *s, const char *p, size_t n)
{
	if (n > s->len - 1 - s->n)
		n = s->len - 1 - s->n;
	memcpy(s->b + s->n, p, n);
	s->n += n;
	s->b[s->n] = 0;
}

static void sb_str(struct sbuf *s, const char *p)
{
	sb_mem(s, p, strlen(p));
}

/* @v in lowercase hex, no leading zeros ("%llx") */
static size_t hex_str(char *out, uint64_t v)
{
	char t[16];
	size_t n = 0;

	do {
		t[n++] = "0123456789abcdef"[v & 15];
		v >>= 4;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = t[n - 1 - i];
	return n;
}

/* @v in decimal ("%llu") */
static size_t dec_str(char *out, uint64_t v)
{
	char t[20];
	size_t n = 0;

	do {
		t[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (size_t i = 0; i < n; i++)
		out[i] = t[n - 1 - i];
	return n;
}

static void sb_hex(struct sbuf *s, uint64_t v)
{
	char t[18] = "0x";

	sb_mem(s, t, 2 + hex_str(t + 2, v));
}

static void sym_str(char *buf, size_t len, uint64_t ip,
		   const struct btrace_symbol *s)
{
	const char *fn = fn_name(s);
	struct sbuf b = { buf, len, 0 };

	buf[0] = 0;
	if (fn) {
		sb_str(&b, fn);
		if (s->offset) {
			sb_mem(&b, "+", 1);
			sb_hex(&b, s->offset);
		}
	} else if (s->module) {
		sb_str(&b, base(s->module));
		sb_mem(&b, "+", 1);
		sb_hex(&b, s->module_offset);
	} else {
		sb_hex(&b, ip);
	}
}

static void line_str(char *buf, size_t len, const struct btrace_symbol *s)
{
	struct sbuf b = { buf, len, 0 };
	char t[24];

	buf[0] = 0;
	if (s->file && s->line) {
		sb_str(&b, base(s->file));
		sb_mem(&b, ":", 1);
		if (s->line < 0) {
			sb_mem(&b, "-", 1);
			sb_mem(&b, t, dec_str(t, (uint64_t)-(int64_t)s->line));
		} else {
			sb_mem(&b, t, dec_str(t, (uint64_t)s->line));
		}
	}
}

/* A line of the listing, built in memory and written at once. */
struct obuf {
	char *p;
	size_t n, cap;
	int oom;
};

static void ob_mem(struct obuf *o, const char *s, size_t n)
{
	if (o->n + n > o->cap) {
		size_t cap = o->cap ? o->cap : 256;
		char *np;

		while (cap < o->n + n)
			cap *= 2;
		np = realloc(o->p, cap);
		if (!np) {
			o->oom = 1;
			return;
		}
		o->p = np;
		o->cap = cap;
	}
	memcpy(o->p + o->n, s, n);
	o->n += n;
}

static void ob_str(struct obuf *o, const char *s)
{
	ob_mem(o, s, strlen(s));
}

/* @s as cli_esc() shows it: printable ASCII as it is */
static void ob_esc(struct obuf *o, const char *s)
{
	const unsigned char *p = (const unsigned char *)s;

	while (*p >= 0x20 && *p < 0x7f && *p != '\\')
		p++;
	if (*p)
		ob_str(o, cli_esc(s));
	else
		ob_mem(o, s, (size_t)((const char *)p - s));
}

/* @v right-aligned in @width columns ("%*llu") */
static void ob_udec(struct obuf *o, uint64_t v, int width)
{
	char t[24];
	size_t n = dec_str(t, v);

	for (size_t i = n; i < (size_t)width; i++)
		ob_mem(o, " ", 1);
	ob_mem(o, t, n);
}

/* "[gap: KIND at trace offset N, ip 0xIP: REASON]\n" */
static void gap_text(struct obuf *o, const struct btrace_thread *t, uint32_t g)
{
	const struct btrace_gap *gp = &t->gaps[g];

	ob_str(o, "[gap: ");
	ob_str(o, btrace_gap_kind_name(gp->kind));
	if (gp->kind != BTRACE_GAP_UNUSABLE && gp->kind != BTRACE_GAP_LOST) {
		ob_str(o, " at trace offset ");
		ob_udec(o, gp->offset, 0);
	}
	if (gp->ip) {
		char h[18] = "0x";
		ob_str(o, ", ip ");
		ob_mem(o, h, 2 + hex_str(h + 2, gp->ip));
	}
	ob_str(o, ": ");
	if (gp->reason)
		ob_str(o, cli_esc(gp->reason));
	ob_mem(o, "]\n", 2);
}

static void print_gap(FILE *f, const struct btrace_thread *t, uint32_t g)
{
	struct obuf o = { 0 };

	gap_text(&o, t, g);
	if (!o.oom)
		fwrite(o.p, 1, o.n, f);
	free(o.p);
}

static int print_event(const struct btrace_thread *t, const struct btrace_block *b)
{
	switch (b->kind) {
	case BTRACE_ITEM_GAP:
		print_gap(stdout, t, b->gap);
		return 1;
	case BTRACE_ITEM_ASYNC:
		printf("[interrupted at 0x%llx", (unsigned long long)b->ip);
		if (b->end_ip)
			printf(", continued at 0x%llx", (unsigned long long)b->end_ip);
		printf("]\n");
		return 1;
	case BTRACE_ITEM_FAR:
		printf("[system call at 0x%llx", (unsigned long long)b->ip);
		if (b->end_ip)
			printf(", back at 0x%llx", (unsigned long long)b->end_ip);
		printf("]\n");
		return 1;
	case BTRACE_ITEM_ENABLED:
		printf("[trace resumes at 0x%llx]\n", (unsigned long long)b->ip);
		return 1;
	case BTRACE_ITEM_FAULT:
		return 1;
	}
	return 0;
}

static void fault_line(FILE *f, const struct btrace_thread *t)
{
	char a[160], l[160];

	if (!t->fault.found)
		return;
	sym_str(a, sizeof(a), t->fault.ip, &t->fault.sym);
	line_str(l, sizeof(l), &t->fault.sym);
	if (!t->fault.exact && t->fault.block_ip) {
		/* only the block holding it is known (docs/report.md) */
		fprintf(f, "=> fault in the block 0x%llx..0x%llx %s%s%s (the "
		       "instruction is not known)\n",
		       (unsigned long long)t->fault.block_ip,
		       (unsigned long long)t->fault.block_end_ip, a,
		       l[0] ? " " : "", l);
		return;
	}
	fprintf(f, "=> fault at 0x%llx %s%s%s: %s (%s)\n",
	       (unsigned long long)t->fault.ip, cli_esc(a), l[0] ? " " : "",
	       cli_esc(l), t->fault.insn[0] ? cli_esc(t->fault.insn) : "(no code)",
	       t->fault.exact ? "exact" : "approximate");
}

/*
 * The instruction listing.  Traces repeat the same blocks (loops), so each
 * distinct block (start address, instruction count) is disassembled,
 * symbolised and formatted once, into an arena; every later run of it is a
 * memcpy into a large output buffer.  The source-line headers ("file:line"
 * when the line changes) depend on the line before the block: a block keeps
 * its text before and after its first instruction with a line, that line,
 * and its last line.
 */
struct lblock {
	uint64_t ip;               /* 0: empty slot */
	uint32_t ninsn;
	int line0, line1;          /* first/last source line, 0: none */
	const char *file0, *file1;
	size_t off, pre, len;      /* text: arena[off, off + len); the header of
				    * line0 goes at off + pre */
	size_t hoff, hlen;         /* that header, formatted: arena[hoff, +hlen) */
};

struct listing {
	struct btrace_decode_result *r;
	struct lblock *tab;
	size_t cap, n;
	char *arena;
	size_t alen, acap;
	char *out;
	size_t olen;
	struct btrace_insn *in;
	size_t incap;
	const char *lfile;         /* last source line printed */
	int lline;
	int oom;
};

#define OUT_SIZE (1u << 20)

static void out_flush(struct listing *l)
{
	if (l->olen)
		fwrite(l->out, 1, l->olen, stdout);
	l->olen = 0;
}

static void out_put(struct listing *l, const char *p, size_t n)
{
	if (l->olen + n > OUT_SIZE) {
		out_flush(l);
		if (n > OUT_SIZE) {
			fwrite(p, 1, n, stdout);
			return;
		}
	}
	memcpy(l->out + l->olen, p, n);
	l->olen += n;
}

static int arena_put(struct listing *l, const char *p, size_t n)
{
	if (l->alen + n > l->acap) {
		size_t nc = l->acap ? l->acap * 2 : (1u << 16);
		while (nc < l->alen + n)
			nc *= 2;
		char *a = realloc(l->arena, nc);
		if (!a)
			return -1;
		l->arena = a;
		l->acap = nc;
	}
	memcpy(l->arena + l->alen, p, n);
	l->alen += n;
	return 0;
}

static int same_line(const char *f, int line, const char *lf, int ll)
{
	return line == ll && lf && (f == lf || !strcmp(f, lf));
}

/* "  0x1234        <main+0x4>  mov eax, 1\n" */
static size_t insn_line(char *buf, size_t len, const struct btrace_insn *in)
{
	char a[160];
	int n;

	sym_str(a, sizeof(a), in->ip, &in->sym);
	n = snprintf(buf, len, "  0x%-12llx <%s>  %s\n",
		     (unsigned long long)in->ip, cli_esc(a), in->text);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

/* The source line heading the instructions of --insn: NAME:LINE with the
 * file's base name, as every text output prints a source position (the
 * JSON report gives the full path; docs/report.md "Source positions"). */
static size_t header_line(char *buf, size_t len, const char *file, int line)
{
	int n = snprintf(buf, len, "%s:%d\n", cli_esc(base(file)), line);
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

static int insns_of(struct listing *l, const struct btrace_block *b)
{
	if (b->ninsn > l->incap) {
		free(l->in);
		l->incap = b->ninsn;
		l->in = calloc(l->incap, sizeof(*l->in));
		if (!l->in) {
			l->incap = 0;
			return -1;
		}
	}
	return btrace_decode_block_insns(l->r, b, l->in, l->incap);
}

/* Format block @b once; NULL when it has no code (or out of memory). */
static const struct lblock *block_text(struct listing *l,
				       const struct btrace_block *b)
{
	uint64_t h = (b->ip ^ (b->ip >> 17) ^ ((uint64_t)b->ninsn << 40)) *
		     0x9e3779b97f4a7c15ull;
	size_t i;

	if (l->cap) {
		for (i = (size_t)(h >> 32) & (l->cap - 1); l->tab[i].ip;
		     i = (i + 1) & (l->cap - 1))
			if (l->tab[i].ip == b->ip && l->tab[i].ninsn == b->ninsn)
				return &l->tab[i];
	}
	if ((l->n + 1) * 2 > l->cap) {
		size_t nc = l->cap ? l->cap * 2 : 4096;
		struct lblock *t = calloc(nc, sizeof(*t));
		if (!t) {
			l->oom = 1;
			return NULL;
		}
		for (size_t k = 0; k < l->cap; k++) {
			if (!l->tab[k].ip)
				continue;
			const struct lblock *e = &l->tab[k];
			uint64_t eh = (e->ip ^ (e->ip >> 17) ^ ((uint64_t)e->ninsn << 40)) *
				      0x9e3779b97f4a7c15ull;
			size_t j = (size_t)(eh >> 32) & (nc - 1);
			while (t[j].ip)
				j = (j + 1) & (nc - 1);
			t[j] = *e;
		}
		free(l->tab);
		l->tab = t;
		l->cap = nc;
	}
	int n = insns_of(l, b);
	if (n < 0 || (uint32_t)n != b->ninsn || !b->ip) {
		if (!l->in && b->ninsn)
			l->oom = 1;
		return NULL;
	}
	struct lblock e = { .ip = b->ip, .ninsn = b->ninsn, .off = l->alen };
	char line[512];
	const char *lf = NULL;
	int ll = 0;
	for (int k = 0; k < n; k++) {
		const struct btrace_symbol *s = &l->in[k].sym;
		if (s->file && s->line) {
			if (!e.line0) {
				e.file0 = s->file;
				e.line0 = s->line;
				e.pre = l->alen - e.off;
			} else if (!same_line(s->file, s->line, lf, ll) &&
				   arena_put(l, line, header_line(line, sizeof(line),
								  s->file, s->line))) {
				l->oom = 1;
				return NULL;
			}
			lf = s->file;
			ll = s->line;
		}
		if (arena_put(l, line, insn_line(line, sizeof(line), &l->in[k]))) {
			l->oom = 1;
			return NULL;
		}
	}
	e.file1 = lf;
	e.line1 = ll;
	e.len = l->alen - e.off;
	if (e.line0) {
		e.hoff = l->alen;
		if (arena_put(l, line, header_line(line, sizeof(line), e.file0,
						   e.line0))) {
			l->oom = 1;
			return NULL;
		}
		e.hlen = l->alen - e.hoff;
	}
	for (i = (size_t)(h >> 32) & (l->cap - 1); l->tab[i].ip;
	     i = (i + 1) & (l->cap - 1))
		;
	l->tab[i] = e;
	l->n++;
	return &l->tab[i];
}

static void emit_block(struct listing *l, const struct lblock *e)
{
	const char *t = l->arena + e->off;

	if (!e->line0) {
		out_put(l, t, e->len);
		return;
	}
	out_put(l, t, e->pre);
	if (!same_line(e->file0, e->line0, l->lfile, l->lline))
		out_put(l, l->arena + e->hoff, e->hlen);
	out_put(l, t + e->pre, e->len - e->pre);
	l->lfile = e->file1;
	l->lline = e->line1;
}

/* The first block of a --last listing: only its last instructions. */
static int emit_partial(struct listing *l, const struct btrace_block *b,
			uint64_t *skip)
{
	char line[512];
	int n = insns_of(l, b);

	if (n < 0)
		return n;
	for (int k = 0; k < n && (size_t)k < l->incap; k++) {
		if (*skip) {
			(*skip)--;
			continue;
		}
		const struct btrace_symbol *s = &l->in[k].sym;
		if (s->file && s->line &&
		    !same_line(s->file, s->line, l->lfile, l->lline)) {
			out_put(l, line, header_line(line, sizeof(line), s->file, s->line));
			l->lfile = s->file;
			l->lline = s->line;
		}
		out_put(l, line, insn_line(line, sizeof(line), &l->in[k]));
	}
	return 0;
}

/* Pass 1 (btrace_decode's sink): what each thread's listing needs before
 * its first line. */
struct mindepth {
	uint64_t index;            /* a call entry ... */
	int32_t depth;             /* ... shallower than every later one */
};

static void call_text(struct obuf *o, const struct btrace_thread *t,
		      const struct btrace_call *c, const struct btrace_block *first);
static uint64_t call_time(const struct btrace_call *c);

/* --calls: a call entry kept by pass 1; its text (call_text()) follows
 * the previous entry's in tstat.txt */
struct crec {
	uint64_t index, first_block;
	uint64_t time_ns;          /* call_time() */
	int32_t depth;
	uint32_t len : 31, gap : 1;
};

/* --insn: an item kept by pass 1 (what print_insns() reads of it); an
 * ASYNC or FAR item is followed by one holding its end_ip in @ip */
struct irec {
	uint64_t ip;
	uint32_t n;                /* ninsn, or the gap's index */
	uint32_t kind;
};

struct tstat {
	const struct btrace_thread *t;
	uint64_t nitems, nblocks;
	uint64_t fault_item;       /* UINT64_MAX: none */
	struct mindepth *mins;     /* the suffix minima of the call depths */
	size_t nmins, cmins;
	/* --calls: the thread's call entries, formatted as far as they can be
	 * before the end of the thread (all but number and indentation) */
	int kept;                  /* 1: recs and txt hold every entry */
	struct crec *recs;
	size_t nrec, crec;
	char *txt;
	size_t tlen, tcap;
	/* --insn: the thread's items from index @first on */
	struct irec *items;
	size_t nirec, cirec;
	uint64_t first, next;      /* indices of the first and next item */
};

/*
 * Pass 1 keeps the call entries of --calls or the items of --insn in at
 * most KEEP_BUDGET bytes (all threads): the listing is then printed from
 * them and the trace is decoded once.  A thread whose entries do not fit is decoded again for
 * its listing (pass 2), as every thread was before.
 */
#define KEEP_BUDGET ((size_t)64 << 20)

struct observer {
	struct tstat *st;
	size_t n, cap;
	enum { KEEP_NONE, KEEP_CALLS, KEEP_ITEMS } keep;  /* what is kept:
				    * call entries (--calls), items (--insn) */
	size_t used;               /* bytes allocated for them */
	struct obuf line;          /* an entry's text being built */
};

/* Stop keeping the entries of @s (out of budget): its listing is decoded
 * again. */
static void unkeep(struct observer *o, struct tstat *s)
{
	o->used -= s->crec * sizeof(*s->recs) + s->tcap +
		   s->cirec * sizeof(*s->items);
	free(s->recs);
	free(s->txt);
	free(s->items);
	s->recs = NULL;
	s->txt = NULL;
	s->items = NULL;
	s->nrec = s->crec = s->tlen = s->tcap = s->nirec = s->cirec = 0;
	s->kept = 0;
}

/* Grow *@p (@cap elements of @size bytes) to hold @need, within the
 * budget; -1: it would not fit (or no memory). */
static int keep_grow(struct observer *o, void **p, size_t *cap, size_t size,
		     size_t need)
{
	size_t nc = *cap ? *cap : 1024;
	void *np;

	while (nc < need)
		nc *= 2;
	if (nc == *cap)
		return 0;
	if ((nc - *cap) * size > KEEP_BUDGET - o->used)
		return -1;
	np = realloc(*p, nc * size);
	if (!np)
		return -1;
	o->used += (nc - *cap) * size;
	*p = np;
	*cap = nc;
	return 0;
}

/* Keep item @b (@index) of @s; when it does not fit, keep none of @s. */
static void keep_item(struct observer *o, struct tstat *s,
		      const struct btrace_block *b, uint64_t index)
{
	int two = b->kind == BTRACE_ITEM_ASYNC || b->kind == BTRACE_ITEM_FAR;

	if (!s->nirec)
		s->first = s->next = index;
	if (index != s->next ||
	    keep_grow(o, (void **)&s->items, &s->cirec, sizeof(*s->items),
		      s->nirec + 1 + two)) {
		unkeep(o, s);
		return;
	}
	s->items[s->nirec++] = (struct irec){
		.ip = b->ip, .kind = b->kind,
		.n = b->kind == BTRACE_ITEM_GAP ? b->gap : b->ninsn,
	};
	if (two)
		s->items[s->nirec++] = (struct irec){ .ip = b->end_ip };
	s->next = index + 1;
}

/* Keep call entry @c of @s; when it does not fit, keep none of @s. */
static void keep_call(struct observer *o, struct tstat *s,
		      const struct btrace_thread *t, const struct btrace_call *c,
		      uint64_t index, const struct btrace_block *first)
{
	struct obuf *l = &o->line;

	l->n = 0;
	call_text(l, t, c, first);
	if (l->oom || l->n >= (1u << 31) ||
	    keep_grow(o, (void **)&s->recs, &s->crec, sizeof(*s->recs),
		      s->nrec + 1) ||
	    keep_grow(o, (void **)&s->txt, &s->tcap, 1, s->tlen + l->n)) {
		unkeep(o, s);
		return;
	}
	s->recs[s->nrec++] = (struct crec){
		.index = index, .first_block = c->first_block,
		.time_ns = call_time(c), .depth = c->depth, .len = (uint32_t)l->n,
		.gap = !!(c->flags & BTRACE_CALL_GAP),
	};
	memcpy(s->txt + s->tlen, l->p, l->n);
	s->tlen += l->n;
}

static struct tstat *stat_of(struct observer *o, const struct btrace_thread *t)
{
	for (size_t i = o->n; i-- > 0;)
		if (o->st[i].t == t)
			return &o->st[i];
	return NULL;
}

static int obs_begin(void *arg, const struct btrace_thread *t)
{
	struct observer *o = arg;
	struct tstat *s = stat_of(o, t);

	if (!s) {
		if (o->n == o->cap) {
			size_t nc = o->cap ? o->cap * 2 : 16;
			void *p = realloc(o->st, nc * sizeof(*o->st));
			if (!p)
				return -ENOMEM;
			o->st = p;
			o->cap = nc;
		}
		s = &o->st[o->n++];
		memset(s, 0, sizeof(*s));
		s->t = t;
	}
	pg_thread(t);
	s->nitems = s->nblocks = 0;
	s->nmins = 0;
	/* a retry replaces what was kept */
	s->nrec = s->tlen = s->nirec = 0;
	s->kept = o->keep;
	s->fault_item = UINT64_MAX;
	return 0;
}

static int obs_item(void *arg, const struct btrace_thread *t,
		    const struct btrace_block *b, uint64_t index)
{
	struct observer *o = arg;
	struct tstat *s = stat_of(o, t);

	if (!s)
		return -EINVAL;
	pg_tick(b);
	s->nitems = index + 1;
	s->nblocks += b->kind == BTRACE_ITEM_BLOCK;
	if (s->kept && o->keep == KEEP_ITEMS)
		keep_item(o, s, b, index);
	return 0;
}

static int obs_call(void *arg, const struct btrace_thread *t,
		    const struct btrace_call *c, uint64_t index,
		    const struct btrace_block *first)
{
	struct observer *o = arg;
	struct tstat *s = stat_of(o, t);

	if (!s)
		return -EINVAL;
	if (s->kept && o->keep == KEEP_CALLS)
		keep_call(o, s, t, c, index, first);
	while (s->nmins && s->mins[s->nmins - 1].depth >= c->depth)
		s->nmins--;
	if (s->nmins == s->cmins) {
		size_t nc = s->cmins ? s->cmins * 2 : 64;
		void *p = realloc(s->mins, nc * sizeof(*s->mins));
		if (!p)
			return -ENOMEM;
		s->mins = p;
		s->cmins = nc;
	}
	s->mins[s->nmins++] = (struct mindepth){ index, c->depth };
	return 0;
}

static int obs_end(void *arg, const struct btrace_thread *t, uint64_t fault_item)
{
	struct tstat *s = stat_of(arg, t);

	if (!s)
		return -EINVAL;
	s->fault_item = fault_item;
	return 0;
}

/* The shallowest depth of the calls from index @from on. */
static int min_depth_from(const struct tstat *s, uint64_t from)
{
	for (size_t i = 0; i < s->nmins; i++)
		if (s->mins[i].index >= from)
			return s->mins[i].depth;
	return 1 << 30;
}

/*
 * --calls --all-threads: every thread's listing goes into one buffer
 * (@f); each call entry is a part of it (with the fault line before it,
 * if any) with its thread, its place in the thread and its time (0: not
 * known: it sorts as the entry before it in its thread, which it
 * follows, or first).  When every thread that has entries has times
 * (docs/report.md "Timeline"), the parts are printed in time order; else
 * thread after thread, the crashed one last.
 */
struct part {
	uint64_t key;              /* the time it sorts by */
	size_t off, end;           /* its text: buf[off, end) */
	size_t thread;             /* the order of its thread */
	int timed;                 /* its own time is known */
};

struct merge {
	FILE *f;
	char *buf;
	size_t len;
	struct part *parts;
	size_t n, cap;
	size_t thread;             /* the thread being listed */
	uint64_t last;             /* its last known time */
	int thread_timed;          /* it has an entry with a time */
	int untimed;               /* a thread with entries, none with a time */
};

static int merge_add(struct merge *mg, FILE *f, uint64_t time_ns)
{
	long off;

	if (mg->n == mg->cap) {
		size_t nc = mg->cap ? 2 * mg->cap : 256;
		void *q = realloc(mg->parts, nc * sizeof(*mg->parts));
		if (!q)
			return -ENOMEM;
		mg->parts = q;
		mg->cap = nc;
	}
	if (fflush(f) || (off = ftell(f)) < 0)
		return -ENOMEM;
	if (time_ns) {
		mg->last = time_ns;
		mg->thread_timed = 1;
	}
	mg->parts[mg->n++] = (struct part){ .key = mg->last, .off = (size_t)off,
					    .thread = mg->thread,
					    .timed = time_ns != 0 };
	return 0;
}

static int part_cmp(const void *a, const void *b)
{
	const struct part *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? -1 : 1;
	if (x->thread != y->thread)
		return x->thread < y->thread ? -1 : 1;
	return x->off < y->off ? -1 : x->off > y->off;
}

/* Print the merged listing: each line of a part after its thread (and
 * time, relative to the first part's). */
static void merge_print(struct merge *mg, const struct btrace_decode_result *r,
			const size_t *tidx)
{
	uint64_t t0 = mg->n ? mg->parts[0].key : 0;

	for (size_t i = 0; i < mg->n; i++) {
		const struct part *pt = &mg->parts[i];
		const struct btrace_thread *t = &r->threads[tidx[pt->thread]];
		const char *s = mg->buf + pt->off, *e;
		const char *end = mg->buf + pt->end;

		for (; s < end; s = e + 1) {
			e = memchr(s, '\n', (size_t)(end - s));
			if (!e)
				e = end;
			if (!mg->untimed && pt->timed)
				printf("%12.3f us  ", (double)(pt->key - t0) / 1000);
			else if (!mg->untimed)
				printf("%15s  ", "?");
			if (t->tid >= 0)
				printf("tid %-7d ", t->tid);
			else
				printf("cpu %-7d ", t->cpu);
			printf("%.*s\n", (int)(e - s), s);
		}
	}
}

/* Pass 2 (btrace_decode_thread's sink): the listing of one thread. */
struct printer {
	enum mode m;
	const struct btrace_thread *rt;  /* the result's: the fault */
	const struct tstat *st;
	uint64_t fault;            /* the fault's item, UINT64_MAX: none */
	/* --last: the listing starts at the block holding unit @x (0: the
	 * first) of the history; before it, @cum units went by */
	int started;
	uint64_t x, cum, skip;
	/* calls */
	uint64_t cstart, prev_first;
	int mind;
	FILE *out;                 /* the call listing (stdout, or a thread's
				    * part of a merged listing) */
	struct merge *mg;          /* --all-threads: the entries' places */
	struct listing l;
	struct obuf line;          /* a call line being built */
	int oom;
};

static int is_fault(const struct printer *p, uint64_t index)
{
	return p->rt->fault.found && index == p->fault;
}

static void print_block(const struct printer *p, const struct btrace_thread *t,
			const struct btrace_block *b, uint64_t index)
{
	char a[160], l[160];

	if (is_fault(p, index))
		fault_line(stdout, p->rt);
	if (print_event(t, b))
		return;
	sym_str(a, sizeof(a), b->ip, b->sym);
	line_str(l, sizeof(l), b->sym);
	printf("0x%012llx-0x%012llx %4u  %s%s%s\n",
	       (unsigned long long)b->ip, (unsigned long long)b->end_ip,
	       b->ninsn, cli_esc(a), l[0] ? "  " : "", cli_esc(l));
}

static int print_insns(struct printer *p, const struct btrace_thread *t,
		       const struct btrace_block *b, uint64_t index)
{
	struct listing *l = &p->l;
	const struct lblock *e;

	if (b->kind != BTRACE_ITEM_BLOCK || is_fault(p, index)) {
		out_flush(l);
		if (is_fault(p, index))
			fault_line(stdout, p->rt);
		if (print_event(t, b))
			return 0;
	}
	if (p->skip) {
		if (p->skip >= b->ninsn) {
			p->skip -= b->ninsn;
			return 0;
		}
		if (emit_partial(l, b, &p->skip) == 0)
			return 0;
		e = NULL;
	} else {
		e = block_text(l, b);
		if (e) {
			emit_block(l, e);
			return 0;
		}
	}
	if (l->oom) {
		p->oom = 1;
		return -ENOMEM;
	}
	/* the code is not in the image: the decoder could not have
	 * decoded the block either, unless it changed */
	out_flush(l);
	printf("[no code for the block at 0x%llx: %u instructions]\n",
	       (unsigned long long)b->ip, b->ninsn);
	return 0;
}

static int list_item(struct printer *p, const struct btrace_thread *t,
		     const struct btrace_block *b, uint64_t index)
{
	if (p->m == M_CALLS)
		return 0;
	if (!p->started) {
		/* the block holding unit x of the history starts it */
		if (b->kind != BTRACE_ITEM_BLOCK)
			return 0;
		uint64_t u = p->m == M_INSN ? b->ninsn : 1;
		if (p->cum + u <= p->x) {
			p->cum += u;
			return 0;
		}
		p->started = 1;
		if (p->m == M_INSN)
			p->skip = p->x - p->cum;
	}
	if (p->m == M_BLOCKS) {
		print_block(p, t, b, index);
		return 0;
	}
	return print_insns(p, t, b, index);
}

static int pr_item(void *arg, const struct btrace_thread *t,
		   const struct btrace_block *b, uint64_t index)
{
	pg_tick(b);
	return list_item(arg, t, b, index);
}

/* The listing of a thread from the items pass 1 kept (what pr_item()
 * prints in pass 2). */
static int replay_items(struct printer *p, const struct btrace_thread *t,
			const struct tstat *st)
{
	uint64_t index = st->first;

	for (size_t k = 0; k < st->nirec; k++, index++) {
		const struct irec *e = &st->items[k];
		struct btrace_block b = { .kind = e->kind, .ip = e->ip };
		int ret;

		if (e->kind == BTRACE_ITEM_GAP)
			b.gap = e->n;
		else
			b.ninsn = e->n;
		if (e->kind == BTRACE_ITEM_ASYNC || e->kind == BTRACE_ITEM_FAR)
			b.end_ip = st->items[++k].ip;
		ret = list_item(p, t, &b, index);
		if (ret < 0)
			return ret;
	}
	return 0;
}

/*
 * A call entry's line: its number, its indentation (its depth below the
 * shallowest listed, 2 columns a level, at most 40 levels), then its text.
 */
static void call_prefix(struct obuf *o, uint64_t index, int gap,
			int32_t depth, int mind)
{
	static const char spaces[80] = "                                                                                ";

	ob_udec(o, index + 1, 6);
	ob_mem(o, "  ", 2);
	if (gap)
		return;
	int d = depth - mind;
	int64_t w = 2 * (int64_t)(d > 40 ? 40 : d);   /* "%*s" of "": |w| spaces */
	for (uint64_t pad = (uint64_t)(w < 0 ? -w : w); pad;) {
		size_t k = pad > sizeof(spaces) ? sizeof(spaces) : (size_t)pad;

		ob_mem(o, spaces, k);
		pad -= k;
	}
}

/* The text of call entry @c after its indentation (a gap entry: the gap);
 * it depends only on the entry, not on the rest of the history. */
static void call_text(struct obuf *o, const struct btrace_thread *t,
		      const struct btrace_call *c, const struct btrace_block *first)
{
	char a[160], l[160];

	if (c->flags & BTRACE_CALL_GAP) {
		gap_text(o, t, c->gap);
		return;
	}
	sym_str(a, sizeof(a), c->ip, c->sym);
	line_str(l, sizeof(l), c->sym);
	ob_esc(o, a);
	if ((c->flags & BTRACE_CALL_PLT) && first &&
	    first->kind == BTRACE_ITEM_BLOCK && first->ip != c->ip &&
	    first->sym && fn_name(first->sym)) {
		ob_mem(o, " (via ", 6);
		ob_esc(o, fn_name(first->sym));
		ob_mem(o, ")", 1);
	}
	if (l[0]) {
		ob_mem(o, "  ", 2);
		ob_esc(o, l);
	}
	ob_mem(o, "  [", 3);
	ob_udec(o, c->ninsn, 0);
	ob_mem(o, " insn]", 6);
	if (c->flags & BTRACE_CALL_TAILCALL)
		ob_str(o, " [tail call]");
	if (c->flags & BTRACE_CALL_SIGNAL)
		ob_str(o, " [signal]");
	if (c->flags & BTRACE_CALL_UNWOUND)
		ob_str(o, " [unwound]");
	if (c->flags & BTRACE_CALL_PARTIAL)
		ob_str(o, " [partial]");
	ob_mem(o, "\n", 1);
}

/* The time a call entry sorts by in a merged listing, 0: not known. */
static uint64_t call_time(const struct btrace_call *c)
{
	return c->flags & BTRACE_CALL_GAP ? 0 :
	       btrace_time_known(c->time_ns, c->time_flags);
}

/* What goes before the line of entry @index (the first of its blocks
 * @first_block): its place in a merged listing, the fault line. */
static int call_head(struct printer *p, uint64_t index, uint64_t first_block,
		     uint64_t time_ns)
{
	if (p->mg && merge_add(p->mg, p->out, time_ns) < 0)
		return -ENOMEM;
	if (p->rt->fault.found && first_block >= p->fault &&
	    (index == p->cstart || p->prev_first < p->fault))
		fault_line(p->out, p->rt);
	p->prev_first = first_block;
	return 0;
}

static int pr_call(void *arg, const struct btrace_thread *t,
		   const struct btrace_call *c, uint64_t index,
		   const struct btrace_block *first)
{
	struct printer *p = arg;
	struct obuf *o = &p->line;

	if (p->m != M_CALLS || index < p->cstart)
		return 0;
	if (call_head(p, index, c->first_block, call_time(c)) < 0)
		return -ENOMEM;
	o->n = 0;
	call_prefix(o, index, !!(c->flags & BTRACE_CALL_GAP), c->depth, p->mind);
	call_text(o, t, c, first);
	if (o->oom) {
		p->oom = 1;
		return -ENOMEM;
	}
	fwrite(o->p, 1, o->n, p->out);
	return 0;
}

/* The call listing of a thread from the entries pass 1 kept (the same
 * lines pr_call() prints in pass 2). */
static int replay_calls(struct printer *p, const struct tstat *st)
{
	struct obuf *o = &p->line;
	const char *txt = st->txt;

	for (size_t k = 0; k < st->nrec; k++) {
		const struct crec *e = &st->recs[k];
		const char *s = txt;

		txt += e->len;
		if (e->index < p->cstart)
			continue;
		if (call_head(p, e->index, e->first_block, e->time_ns) < 0)
			return -ENOMEM;
		o->n = 0;
		call_prefix(o, e->index, e->gap, e->depth, p->mind);
		ob_mem(o, s, e->len);
		if (o->oom)
			return -ENOMEM;
		fwrite(o->p, 1, o->n, p->out);
	}
	return 0;
}

/* The listing of thread @i of @r (pass 2). */
static int list_thread(struct btrace_decode_result *r, size_t i,
		       const struct tstat *st, enum mode m, uint64_t last,
		       struct merge *mg)
{
	const struct btrace_thread *rt = &r->threads[i];
	struct printer p = { .m = m, .rt = rt, .st = st, .started = 1,
			     .out = mg ? mg->f : stdout, .mg = mg };
	struct btrace_decode_sink sink = {
		.sz = sizeof(sink), .arg = &p, .item = pr_item, .call = pr_call,
	};
	struct btrace_error err;
	int ret = CLI_EXIT_OK;

	p.fault = st ? st->fault_item : UINT64_MAX;
	p.l.r = r;
	if (m == M_CALLS) {
		uint64_t n = rt->ncalls + rt->dropped_calls;
		p.cstart = last && n > last ? n - last : 0;
		p.mind = st ? min_depth_from(st, p.cstart) : 0;
	} else {
		uint64_t n = m == M_INSN ? rt->ninsn : st ? st->nblocks : 0;
		if (last && n >= last) {
			p.started = 0;
			p.x = n - last;
		}
	}
	if (m == M_INSN) {
		p.l.out = malloc(OUT_SIZE);
		if (!p.l.out)
			return cli_failf(CMD, NULL, "out of memory");
	}
	if (m == M_CALLS && st && st->kept) {
		if (replay_calls(&p, st) < 0)
			ret = cli_failf(CMD, NULL, "out of memory");
	} else if (m == M_INSN && st && st->kept) {
		if (replay_items(&p, rt, st) < 0)
			ret = cli_failf(CMD, NULL, "out of memory");
	} else {
		pg_thread(rt);
		if (btrace_decode_thread(r, i, &sink, &err) < 0)
			ret = p.oom ? cli_failf(CMD, NULL, "out of memory") :
			      cli_fail(CMD, &err);
	}
	if (m == M_INSN)
		out_flush(&p.l);
	if (ret == CLI_EXIT_OK && m == M_CALLS && rt->fault.found && st &&
	    p.fault >= st->nitems - 1) {
		if (mg && merge_add(mg, p.out, 0) < 0)
			ret = cli_failf(CMD, NULL, "out of memory");
		else
			fault_line(p.out, rt);
	}
	free(p.line.p);
	free(p.l.out);
	free(p.l.arena);
	free(p.l.tab);
	free(p.l.in);
	return ret;
}

/* " rax=0x0 rdi=?" for the registers of @mask in state @i of @v */
static void print_regs(const struct btrace_values *v, size_t i, unsigned mask)
{
	for (unsigned r = 0; r < BTRACE_NVREGS; r++) {
		uint64_t x;
		if (!((mask >> r) & 1))
			continue;
		if (btrace_values_get(v, i, r, &x))
			printf(" %s=0x%llx", btrace_vreg_name(r),
			       (unsigned long long)x);
		else
			printf(" %s=?", btrace_vreg_name(r));
	}
}

/*
 * --values: the crashed thread's straight run of instructions before the
 * fault (at most @last, 0: the default of btrace_values_build()), each
 * with the registers it reads (before it) and writes (after it) where
 * they are known, "?" where not.
 */
static int list_values(struct btrace_decode_result *r, size_t i, uint64_t last)
{
	const struct btrace_thread *t = &r->threads[i];
	struct btrace_values *v;
	struct btrace_error err;

	if (btrace_values_build(r, i, last, &v, &err) < 0)
		return cli_fail(CMD, &err);
	printf("values along the last %zu instructions before %s (registers "
	       "read ; -> written, ? not known)\n", v->ninsn,
	       t->fault.found ? "the fault" : "the end");
	for (size_t k = 0; k <= v->ninsn; k++) {
		struct btrace_block b = { .kind = BTRACE_ITEM_BLOCK,
					  .ip = v->ip[k], .end_ip = v->ip[k],
					  .ninsn = 1 };
		struct btrace_insn in;
		char a[160], l[160];
		if (k == v->ninsn) {
			fault_line(stdout, t);
			if (!t->fault.found)
				break;
			printf("   at the fault:");
			print_regs(v, k, 0xffff);
			printf("\n");
			break;
		}
		if (v->folded[k]) {
			/* not an instruction: turns the recorder folded out */
			printf("  ~ loop turns folded out of the history here, "
			       "before 0x%llx; they may write",
			       (unsigned long long)v->ip[k]);
			for (unsigned reg = 0; reg < BTRACE_NVREGS; reg++)
				if ((v->writes[k] >> reg) & 1)
					printf(" %s", btrace_vreg_name(reg));
			printf("%s\n", v->writes[k] ? "" : " no register");
			continue;
		}
		if (btrace_decode_block_insns(r, &b, &in, 1) != 1) {
			printf("0x%012llx  (no code)\n", (unsigned long long)v->ip[k]);
			continue;
		}
		sym_str(a, sizeof(a), in.ip, &in.sym);
		line_str(l, sizeof(l), &in.sym);
		printf("0x%012llx  %-24s %-14s %-32s ;", (unsigned long long)in.ip,
		       cli_esc(a), cli_esc(l), cli_esc(in.text));
		print_regs(v, k, v->reads[k]);
		if (v->writes[k]) {
			printf(" ->");
			print_regs(v, k + 1, v->writes[k]);
		}
		printf("\n");
	}
	btrace_values_free(v);
	return CLI_EXIT_OK;
}

static void free_observer(struct observer *o)
{
	for (size_t i = 0; i < o->n; i++) {
		free(o->st[i].mins);
		free(o->st[i].recs);
		free(o->st[i].txt);
		free(o->st[i].items);
	}
	free(o->st);
	free(o->line.p);
}

/* --calls --all-threads: the threads' call listings merged by time (the
 * crashed thread listed last, so that without times it ends at the
 * fault). */
static int list_merged(struct btrace_decode_result *r, struct observer *obs,
		       uint64_t last)
{
	struct merge mg = { 0 };
	size_t *tidx = calloc(r->nthreads + 1, sizeof(*tidx)), n = 0;
	int ret = CLI_EXIT_OK;

	mg.f = tidx ? open_memstream(&mg.buf, &mg.len) : NULL;
	if (!mg.f) {
		free(tidx);
		return cli_failf(CMD, NULL, "out of memory");
	}
	for (size_t i = 0; i < r->nthreads; i++)
		if ((int)i != r->crashed_thread)
			tidx[n++] = i;
	if (r->crashed_thread >= 0 && (size_t)r->crashed_thread < r->nthreads)
		tidx[n++] = (size_t)r->crashed_thread;
	for (size_t k = 0; k < n && ret == CLI_EXIT_OK; k++) {
		const struct btrace_thread *t = &r->threads[tidx[k]];
		size_t n0 = mg.n;
		mg.thread = k;
		mg.last = 0;
		mg.thread_timed = 0;
		ret = list_thread(r, tidx[k], stat_of(obs, t), M_CALLS, last, &mg);
		if (mg.n > n0 && !mg.thread_timed)
			mg.untimed = 1;
	}
	if (ret == CLI_EXIT_OK && (fflush(mg.f) || ferror(mg.f)))
		ret = cli_failf(CMD, NULL, "out of memory");
	if (ret == CLI_EXIT_OK) {
		for (size_t i = 0; i < mg.n; i++)
			mg.parts[i].end = i + 1 < mg.n ? mg.parts[i + 1].off : mg.len;
		/* no entry: no time either, no order to claim */
		if (!mg.n)
			mg.untimed = 1;
		if (!mg.untimed)
			qsort(mg.parts, mg.n, sizeof(*mg.parts), part_cmp);
		printf(mg.untimed ?
		       "all threads (times not known: the order across threads "
		       "is not known; thread after thread, the crashed thread "
		       "last)\n" :
		       "all threads, in time order (time from the first entry)\n");
		merge_print(&mg, r, tidx);
	}
	fclose(mg.f);
	free(mg.buf);
	free(mg.parts);
	free(tidx);
	return ret;
}

static void usage(FILE *f)
{
	fprintf(f,
		"usage: btrace decode FILE (--insn | --blocks | --calls) [options]\n"
		"\n"
		"Print the path recovered from a snapshot, per thread (crashed first).\n"
		"\n"
		"  --insn             every instruction, disassembled, with source lines\n"
		"  --blocks           straight-line blocks with symbols\n"
		"  --calls            function-call history, indented by call depth\n"
		"  --values           with --insn: the crashed thread's instructions\n"
		"                     before the fault (the straight run, at most\n"
		"                     --last N, default 4096), each with the register\n"
		"                     values it reads and writes where they are known\n"
		"  --last N           only the last N instructions/blocks/calls; decodes\n"
		"                     only the tail of each buffer\n"
		"  --all-threads      with --calls: every thread's calls in one listing,\n"
		"                     merged by time (when the trace has times)\n"
		"  --thread TID       only this thread\n"
		"  --debug-dir DIR    separate debug info root (default /usr/lib/debug)\n"
		"  --no-disk          never read code from files on disk\n"
		"  --no-debuginfod    never download debug info (DEBUGINFOD_URLS)\n"
		"  -v, --verbose      list every mapping without code, also those the\n"
		"                     trace never entered\n"
		"  -h, --help         this text\n"
		"\n"
		"Instructions capstone cannot disassemble (some EVEX encodings) are\n"
		"printed as \"(bad)\" with their bytes; their size is libipt's.\n");
	cli_help_end(f, "decode");
}

int cmd_decode(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "insn", no_argument, NULL, 'i' },
		{ "blocks", no_argument, NULL, 'b' },
		{ "calls", no_argument, NULL, 'c' },
		{ "last", required_argument, NULL, 'l' },
		{ "all-threads", no_argument, NULL, 'A' },
		{ "values", no_argument, NULL, 'V' },
		CLI_DECODE_LONGOPTS,
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct btrace_decode_opts d = { .sz = sizeof(d) };
	char dir[PATH_MAX];
	struct btrace_snapshot *snap;
	struct btrace_decode_result *r;
	struct btrace_error err;
	int mode = -1, c, ret = CLI_EXIT_OK, merged = 0, values = 0;
	uint64_t last = 0;
	struct observer obs = { 0 };
	struct btrace_decode_sink obs_sink = {
		.sz = sizeof(obs_sink), .flags = BTRACE_SINK_NO_SYMS, .arg = &obs,
		.begin = obs_begin, .item = obs_item, .call = obs_call,
		.end = obs_end,
	};

	optind = 1;
	while ((c = getopt_long(argc, argv, ":hv", lo, NULL)) != -1) {
		switch (c) {
		case 'i': case 'b': case 'c': {
			int m = c == 'i' ? M_INSN : c == 'b' ? M_BLOCKS : M_CALLS;
			if (mode >= 0 && mode != m)
				return cli_usage(CMD, "choose one of --insn, --blocks, --calls");
			mode = m;
			break;
		}
		case 'l':
			if (cli_parse_u64(optarg, &last) || !last)
				return cli_usage(CMD, "--last: '%s' is not a positive number", optarg);
			break;
		case 'A': merged = 1; break;
		case 'V':
			values = 1;
			break;
		case 'h': usage(stdout); return CLI_EXIT_OK;
		default:
			ret = cli_decode_option(CMD, c, optarg, &d);
			if (ret < 0)
				return cli_bad_option(CMD, c, argv);
			if (ret)
				return ret;
		}
	}
	if (mode < 0)
		return cli_usage(CMD, "one of --insn, --blocks or --calls is required");
	if (merged && mode != M_CALLS)
		return cli_usage(CMD, "--all-threads goes with --calls");
	if (values && mode != M_INSN)
		return cli_usage(CMD, "--values goes with --insn");
	ret = cli_decode_open(CMD, argc, argv, &d, &snap, dir);
	if (ret)
		return ret;
	d.last = last;
	d.unit = mode == M_INSN ? BTRACE_UNIT_INSNS :
		 mode == M_BLOCKS ? BTRACE_UNIT_BLOCKS : BTRACE_UNIT_CALLS;
	if (mode == M_CALLS) {
		/* the listing from pass 1's entries, which need symbols */
		obs.keep = KEEP_CALLS;
		obs_sink.flags = 0;
	} else if (mode == M_INSN && !values) {
		obs.keep = KEEP_ITEMS;  /* no symbols: the listing's come
					 * from btrace_decode_block_insns() */
	}
	d.sink = &obs_sink;
	pg_start(snap, last);
	c = btrace_decode(snap, &d, &r, &err);
	pg_next("listing");
	if (c < 0) {
		free_observer(&obs);
		btrace_snapshot_free(snap);
		return cli_fail(CMD, &err);
	}
	for (size_t i = 0; i < r->nimage_notes; i++)
		printf("[image: %s]\n", cli_esc(r->image_notes[i]));
	if (d.tid && !r->nthreads)
		ret = cli_failf(CMD, "btrace info FILE lists the buffers and their threads",
				"%s: no trace buffer for thread %d", argv[optind], d.tid);
	if (merged && ret == CLI_EXIT_OK)
		ret = list_merged(r, &obs, last);
	for (size_t i = 0; !merged && i < r->nthreads && ret == CLI_EXIT_OK; i++) {
		const struct btrace_thread *t = &r->threads[i];
		if (t->tid >= 0)
			printf("thread %d%s: %llu instructions%s\n", t->tid,
			       t->crashed ? " (crashed)" : "",
			       (unsigned long long)t->ninsn,
			       t->truncated ? " decoded (tail only)" : "");
		else
			printf("cpu %d: %llu instructions\n", t->cpu,
			       (unsigned long long)t->ninsn);
		if (values && (int)i == r->crashed_thread)
			ret = list_values(r, i, last);
		else if (!values)
			ret = list_thread(r, i, stat_of(&obs, t), mode, last,
					  NULL);
	}
	pg_next(NULL);
	free_observer(&obs);
	btrace_decode_result_free(r);
	btrace_snapshot_free(snap);
	return ret;
}
