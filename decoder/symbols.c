/* SPDX-License-Identifier: MIT */
/*
 * Symbols through libdw: function names from the symbol table, source
 * lines and inline frames from DWARF, separate debug info found by build ID
 * under the debug directory (.build-id/xx/yyyy.debug).  Lookups are cached
 * by address.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "decode-internal.h"
#include "util.h"

#define SYM_CHUNK 4096

static char *debuginfo_path;

struct bt_dwidx;
static void dwidx_free(struct bt_dwidx *x);

static const Dwfl_Callbacks dw_callbacks = {
	.find_elf = dwfl_build_id_find_elf,
	.find_debuginfo = dwfl_standard_find_debuginfo,
	.section_address = dwfl_offline_section_address,
	.debuginfo_path = &debuginfo_path,
};

int bt_syms_init(struct bt_ctx *c)
{
	static char pathbuf[8192];
	const char *env = c->opts.debug_path;
	char sdir[4200] = "";

	if (c->opts.flags & BTRACE_DECODE_NO_SYMS)
		return 0;
	/* separate debug info (.build-id/xx/yyyy.debug, debuglink): the
	 * snapshot's directory, opts.debug_path, the debug directory */
	if (c->opts.search_dir && c->opts.search_dir[0] == '/')
		snprintf(sdir, sizeof(sdir), "%s:", c->opts.search_dir);
	snprintf(pathbuf, sizeof(pathbuf), "-:.debug:%s%s%s%s", sdir,
		 env && *env ? env : "", env && *env ? ":" : "",
		 c->opts.debug_dir ? c->opts.debug_dir : "/usr/lib/debug");
	debuginfo_path = pathbuf;
	c->dwfl = dwfl_begin(&dw_callbacks);
	if (!c->dwfl)
		return bt_ctx_note(c, "symbols: libdw failed to start: %s",
				   dwfl_errmsg(-1));
	dwfl_report_begin(c->dwfl);
	for (size_t i = 0; i < c->nmodules; i++) {
		struct bt_module *m = &c->modules[i];
		if (!m->elf || !m->have_bias)
			continue;
		m->dwmod = dwfl_report_elf(c->dwfl, m->path, m->elf, -1,
					   m->bias, true);
		if (!m->dwmod)
			bt_ctx_note(c, "%s: symbols unavailable: %s", m->path,
				    dwfl_errmsg(-1));
	}
	dwfl_report_end(c->dwfl, NULL, NULL);
	c->dwfl_ok = 1;
	return 0;
}

void bt_syms_fini(struct bt_ctx *c)
{
	if (c->dwfl)
		dwfl_end(c->dwfl);
	c->dwfl = NULL;
	bt_map_free(&c->sym_map);
	dwidx_free(c->dwidx);
	c->dwidx = NULL;
	free(c->scache);
	c->scache = NULL;
	bt_map_free(&c->func_map);
	free(c->franges);
	c->franges = NULL;
	c->nfranges = c->cfranges = 0;
	free(c->funcs);
	c->funcs = NULL;
	c->nfuncs = c->cfuncs = 0;
	for (size_t i = 0; i < (c->nsyms + SYM_CHUNK - 1) / SYM_CHUNK; i++)
		free(c->sym_chunks[i]);
	free(c->sym_chunks);
	c->sym_chunks = NULL;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;
	Dwarf_Die origin;
	const char *n;

	n = dwarf_diename(die);
	if (n)
		return n;
	if (dwarf_attr_integrate(die, DW_AT_abstract_origin, &a) &&
	    dwarf_formref_die(&a, &origin))
		return dwarf_diename(&origin);
	return NULL;
}

static void fill_module(struct bt_ctx *c, uint64_t ip, struct btrace_symbol *s)
{
	int mi = bt_image_module_of(c, ip);

	if (mi < 0)
		return;
	s->module = c->modules[mi].path;
	s->module_offset = ip - (c->modules[mi].have_bias ? c->modules[mi].bias : 0);
}

/* A symbol table name as shown: without its version ("pthread_kill" for
 * "pthread_kill@@GLIBC_2.34"), demangled, like gdb.  Owned by the
 * context. */
static const char *display_name(struct bt_ctx *c, const char *name)
{
	const char *at = strchr(name, '@');

	return bt_demangle(c, name, at && at != name ? (size_t)(at - name) :
				strlen(name));
}

/* Whether @die is in a C unit: there a linkage name is an assembler label
 * (glibc's __GI___qsort_r for __qsort_r), not a mangled name. */
static int in_c_unit(Dwarf_Die *die)
{
	Dwarf_Die cu;

	if (!dwarf_diecu(die, &cu, NULL, NULL))
		return 0;
	switch (dwarf_srclang(&cu)) {
	case DW_LANG_C89:
	case DW_LANG_C:
	case DW_LANG_C99:
	case DW_LANG_C11:
#ifdef DW_LANG_C17
	case DW_LANG_C17:
#endif
		return 1;
	}
	return 0;
}

/* The mangled name of @die (through its abstract origin and
 * specification), NULL when none or in a C unit. */
static const char *mangled_name(Dwarf_Die *die)
{
	Dwarf_Attribute a;

	if (!dwarf_attr_integrate(die, DW_AT_linkage_name, &a) &&
	    !dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &a))
		return NULL;
	return in_c_unit(die) ? NULL : dwarf_formstring(&a);
}

/* The name gdb gives the function whose code is @die (a subprogram): its
 * DWARF name, following the abstract origin of out-of-line instances (in
 * a C unit also when it has an assembler label: gdb shows
 * __GI___qsort_r, the name the label aliases is __qsort_r); NULL when it
 * has a mangled name (C++: the symbol table's mangled name is more precise
 * than the unqualified DWARF one) or no name. */
static const char *subprogram_name(Dwarf_Die *die)
{
	if (mangled_name(die))
		return NULL;
	return die_name(die);
}

/* A C++ member function's DIE without a linkage name (GCC leaves it out
 * for members of classes local to a function: std::function's invoker of
 * a lambda): its DWARF name is unqualified (`_M_invoke`) where gdb shows
 * the class; the symbol table's demangled name has it. */
static int cxx_member(Dwarf_Die *die)
{
	Dwarf_Die cu;

	if (!dwarf_hasattr_integrate(die, DW_AT_specification) ||
	    !dwarf_diecu(die, &cu, NULL, NULL))
		return 0;
	switch (dwarf_srclang(&cu)) {
	case DW_LANG_C_plus_plus:
	case DW_LANG_C_plus_plus_03:
	case DW_LANG_C_plus_plus_11:
	case DW_LANG_C_plus_plus_14:
		return 1;
	}
	return 0;
}

/* The concrete (out-of-line) subprogram of @cu holding @pc.  Needed in
 * inlined code: dwarf_getscopes() then goes on with the scopes of the
 * abstract definition, not with the function the code is in. */
static int concrete_subprogram(Dwarf_Die *cu, Dwarf_Addr pc, Dwarf_Die *out)
{
	if (dwarf_child(cu, out) != 0)
		return 0;
	do {
		if (dwarf_tag(out) == DW_TAG_subprogram && dwarf_haspc(out, pc) > 0)
			return 1;
	} while (dwarf_siblingof(out, out) == 0);
	return 0;
}

/*
 * DWARF index: the concrete subprograms of each compilation unit met, by
 * address range, and per subprogram its inlined_subroutine ranges.  Each
 * CU is walked once and each function's inline tree once, where
 * dwarf_getscopes() walks the CU from its top for every address.  An
 * address no indexed subprogram holds (a nested function, odd DWARF) goes
 * to dwarf_getscopes() as before.
 */
#define DWIDX_MAX_DIES  (1u << 22)  /* per walk: bounds hostile DWARF */
#define DWIDX_MAX_DEPTH 64

struct bt_dwinl {
	uint64_t lo, hi;           /* CU-relative addresses (no bias) */
	uint32_t depth;            /* 0: directly in the subprogram */
	const char *name;          /* owned by libdw */
	Dwarf_Die die;             /* the inlined_subroutine */
};

struct bt_dwsub {
	Dwarf_Die die;
	const char *name;          /* subprogram_name(): NULL for linkage names */
	int inl_done;
	struct bt_dwinl *inl;
	size_t ninl, cinl;
};

struct bt_dwrange { uint64_t lo, hi; size_t sub; };  /* absolute */

struct bt_dwidx {
	struct bt_dwsub *subs;
	size_t nsubs, csubs;
	struct bt_dwcu {           /* an indexed CU: its subprograms' ranges */
		Dwfl_Module *mod;
		Dwarf_Off off;
		struct bt_dwrange *ranges;  /* sorted by lo */
		size_t nranges, cranges;
	} *cus;
	size_t ncus, ccus, last;
	size_t budget;             /* DIEs left for the walk under way */
	struct bt_cumap {          /* units by address, for a module without
				    * .debug_aranges (see unit_of()) */
		Dwfl_Module *mod;
		Dwarf_Addr bias;
		struct bt_curange { uint64_t lo, hi; Dwarf_Die *cu; } *r;
		size_t n, cap;     /* r: sorted by lo, no bias */
	} *cumaps;
	size_t ncumaps, ccumaps;
};

static void dwidx_free(struct bt_dwidx *x)
{
	if (!x)
		return;
	for (size_t i = 0; i < x->nsubs; i++)
		free(x->subs[i].inl);
	free(x->subs);
	for (size_t i = 0; i < x->ncus; i++)
		free(x->cus[i].ranges);
	free(x->cus);
	for (size_t i = 0; i < x->ncumaps; i++)
		free(x->cumaps[i].r);
	free(x->cumaps);
	free(x);
}

static struct bt_dwidx *dwidx_get(struct bt_ctx *c)
{
	if (!c->dwidx)
		c->dwidx = calloc(1, sizeof(*c->dwidx));
	return c->dwidx;
}

static int curange_cmp(const void *a, const void *b)
{
	const struct bt_curange *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

#define CUMAP_MAX_UNITS (1u << 20)

/*
 * The compilation unit holding @ip in @mod (and the module's bias).
 * libdw 0.188 finds units by .debug_aranges only, which clang and rustc
 * do not write by default: without it, a table of every unit's address
 * ranges (DW_AT_ranges, low_pc/high_pc) is made once per module.
 */
static Dwarf_Die *unit_of(struct bt_ctx *c, Dwfl_Module *mod, uint64_t ip,
			  Dwarf_Addr *bias)
{
	Dwarf_Die *cu = dwfl_module_addrdie(mod, ip, bias);
	struct bt_dwidx *x;
	struct bt_cumap *m = NULL;

	/* libdwfl stretches each arange to the next one's start: code in
	 * a gap between a unit's ranges (_start, crt code, anything built
	 * without debug info) would get that unit, and the last line before
	 * it.  A unit that says where its code is must hold @ip. */
	if (cu && (dwarf_hasattr(cu, DW_AT_ranges) ||
		   dwarf_hasattr(cu, DW_AT_low_pc)) &&
	    dwarf_haspc(cu, ip - *bias) <= 0)
		cu = NULL;
	if (cu || !(x = dwidx_get(c)))
		return cu;
	for (size_t i = 0; i < x->ncumaps && !m; i++)
		if (x->cumaps[i].mod == mod)
			m = &x->cumaps[i];
	if (!m) {
		Dwarf_Die *u = NULL;
		Dwarf_Addr b = 0;
		size_t units = 0;

		if (bt_grow((void **)&x->cumaps, &x->ccumaps, x->ncumaps + 1,
			    sizeof(*x->cumaps)))
			return NULL;
		m = &x->cumaps[x->ncumaps++];
		*m = (struct bt_cumap){ .mod = mod };
		while (units++ < CUMAP_MAX_UNITS &&
		       (u = dwfl_module_nextcu(mod, u, &b)) != NULL) {
			Dwarf_Addr base, start, end;
			ptrdiff_t off = 0;

			m->bias = b;
			while ((off = dwarf_ranges(u, off, &base, &start, &end)) > 0) {
				if (end <= start)
					continue;
				if (bt_grow((void **)&m->r, &m->cap, m->n + 1,
					    sizeof(*m->r)))
					break;
				m->r[m->n++] = (struct bt_curange){ start, end, u };
			}
		}
		if (m->n)
			qsort(m->r, m->n, sizeof(*m->r), curange_cmp);
	}
	uint64_t pc = ip - m->bias;
	size_t lo = 0, hi = m->n;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (m->r[mid].lo <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, k = 0; i > 0 && k < 16; i--, k++)
		if (pc < m->r[i - 1].hi) {
			*bias = m->bias;
			return m->r[i - 1].cu;
		}
	return NULL;
}

static int dwrange_cmp(const void *a, const void *b)
{
	const struct bt_dwrange *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int dwidx_add_sub(struct bt_dwidx *x, struct bt_dwcu *u, Dwarf_Die *die,
			 Dwarf_Addr bias)
{
	Dwarf_Addr base, start, end;
	ptrdiff_t off = 0;
	size_t k = x->nsubs;
	int added = 0;

	if (!dwarf_hasattr(die, DW_AT_low_pc) && !dwarf_hasattr(die, DW_AT_ranges))
		return 0;
	while ((off = dwarf_ranges(die, off, &base, &start, &end)) > 0) {
		if (end <= start)
			continue;
		if (bt_grow((void **)&u->ranges, &u->cranges, u->nranges + 1,
			    sizeof(*u->ranges)))
			return -ENOMEM;
		u->ranges[u->nranges++] = (struct bt_dwrange){
			start + bias, end + bias, k };
		added = 1;
	}
	if (!added)
		return 0;
	if (bt_grow((void **)&x->subs, &x->csubs, k + 1, sizeof(*x->subs)))
		return -ENOMEM;
	x->subs[k] = (struct bt_dwsub){ .die = *die, .name = subprogram_name(die) };
	x->nsubs++;
	return 0;
}

/* The subprograms under @parent: the CU, and the namespaces and types that
 * hold definitions in C++. */
static int dwidx_walk_cu(struct bt_dwidx *x, struct bt_dwcu *u,
			 Dwarf_Die *parent, Dwarf_Addr bias, int depth)
{
	Dwarf_Die d;

	if (depth > DWIDX_MAX_DEPTH || dwarf_child(parent, &d) != 0)
		return 0;
	do {
		if (!x->budget--)
			return 0;
		switch (dwarf_tag(&d)) {
		case DW_TAG_subprogram:
			if (dwidx_add_sub(x, u, &d, bias))
				return -ENOMEM;
			break;
		case DW_TAG_namespace:
		case DW_TAG_module:
		case DW_TAG_class_type:
		case DW_TAG_structure_type:
		case DW_TAG_union_type:
			if (dwidx_walk_cu(x, u, &d, bias, depth + 1))
				return -ENOMEM;
			break;
		}
	} while (dwarf_siblingof(&d, &d) == 0);
	return 0;
}

/* The index of @cu of @mod, made on first use; NULL: out of memory. */
static struct bt_dwcu *dwidx_cu(struct bt_dwidx *x, Dwfl_Module *mod,
				Dwarf_Die *cu, Dwarf_Addr bias)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct bt_dwcu *u;

	if (x->last < x->ncus && x->cus[x->last].mod == mod &&
	    x->cus[x->last].off == off)
		return &x->cus[x->last];
	for (size_t i = 0; i < x->ncus; i++)
		if (x->cus[i].mod == mod && x->cus[i].off == off) {
			x->last = i;
			return &x->cus[i];
		}
	if (bt_grow((void **)&x->cus, &x->ccus, x->ncus + 1, sizeof(*x->cus)))
		return NULL;
	u = &x->cus[x->ncus];
	*u = (struct bt_dwcu){ .mod = mod, .off = off };
	x->budget = DWIDX_MAX_DIES;
	if (dwidx_walk_cu(x, u, cu, bias, 0)) {
		free(u->ranges);
		return NULL;
	}
	if (u->nranges)   /* qsort(NULL, 0, ...) is undefined */
		qsort(u->ranges, u->nranges, sizeof(*u->ranges), dwrange_cmp);
	x->last = x->ncus++;
	return u;
}

static struct bt_dwsub *dwidx_lookup(struct bt_dwidx *x, struct bt_dwcu *u,
				     uint64_t ip)
{
	size_t lo = 0, hi = u->nranges;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (u->ranges[mid].lo <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Subprograms can share a range (aliases of assembly code: __clone,
	 * __GI___clone, clone): the first in DIE order wins, as with
	 * dwarf_getscopes().  Look a little further back for those. */
	size_t best = SIZE_MAX;
	for (size_t i = lo, n = 0; i > 0 && n < 16; i--, n++)
		if (ip < u->ranges[i - 1].hi && u->ranges[i - 1].sub < best)
			best = u->ranges[i - 1].sub;
	return best == SIZE_MAX ? NULL : &x->subs[best];
}

static int dwidx_walk_inlines(struct bt_dwidx *x, struct bt_dwsub *s,
			      Dwarf_Die *parent, uint32_t depth)
{
	Dwarf_Die d;

	if (depth > DWIDX_MAX_DEPTH || dwarf_child(parent, &d) != 0)
		return 0;
	do {
		if (!x->budget--)
			return 0;
		int tag = dwarf_tag(&d);
		if (tag == DW_TAG_subprogram)
			continue;  /* a nested function: code of its own */
		if (tag == DW_TAG_inlined_subroutine) {
			Dwarf_Addr base, start, end;
			ptrdiff_t off = 0;
			const char *name = die_name(&d);
			while ((off = dwarf_ranges(&d, off, &base, &start, &end)) > 0) {
				if (end <= start)
					continue;
				if (bt_grow((void **)&s->inl, &s->cinl, s->ninl + 1,
					    sizeof(*s->inl)))
					return -ENOMEM;
				s->inl[s->ninl++] = (struct bt_dwinl){
					start, end, depth, name, d };
			}
			if (dwidx_walk_inlines(x, s, &d, depth + 1))
				return -ENOMEM;
		} else if (dwarf_haschildren(&d) > 0) {
			if (dwidx_walk_inlines(x, s, &d, depth))
				return -ENOMEM;
		}
	} while (dwarf_siblingof(&d, &d) == 0);
	return 0;
}

/* The concrete subprogram holding @ip (via @cu) and the innermost inlined
 * function there (*inl, NULL if none).  NULL: not indexed, ask
 * dwarf_getscopes(). */
static struct bt_dwsub *dwidx_find(struct bt_ctx *c, Dwfl_Module *mod,
				   Dwarf_Die *cu, Dwarf_Addr bias, uint64_t ip,
				   const char **inl)
{
	struct bt_dwidx *x = dwidx_get(c);
	struct bt_dwsub *s;

	*inl = NULL;
	if (!x)
		return NULL;
	struct bt_dwcu *u = dwidx_cu(x, mod, cu, bias);
	if (!u || !(s = dwidx_lookup(x, u, ip)))
		return NULL;
	if (!s->inl_done) {
		s->inl_done = 1;
		x->budget = DWIDX_MAX_DIES;
		if (dwidx_walk_inlines(x, s, &s->die, 0))
			return NULL;
	}
	uint64_t pc = ip - bias;
	uint32_t best = 0;
	for (size_t i = 0; i < s->ninl; i++) {
		const struct bt_dwinl *e = &s->inl[i];
		if (pc >= e->lo && pc < e->hi && (!*inl || e->depth > best)) {
			*inl = e->name;
			best = e->depth;
		}
	}
	return s;
}

/*
 * Inline frames, as gdb shows them.  The physical frame at @ip is the
 * concrete subprogram holding it; inside it, the DW_TAG_inlined_subroutine
 * DIEs holding @ip, each inside the one before (through lexical blocks),
 * are the inlined calls.  The walk is our own, from the concrete DIE down:
 * dwarf_getscopes() of libdw 0.188 finds nothing in a unit whose DIEs take
 * their names from another unit (-flto: DW_AT_abstract_origin with
 * DW_FORM_ref_addr), and goes on with the scopes of the abstract
 * definition rather than the caller's.  Names follow the abstract origin
 * into whatever unit it is in (dwarf_formref_die reads DW_FORM_ref_addr);
 * DW_AT_call_file is an index into the file table of the unit holding the
 * inlined_subroutine DIE.
 */
#define INL_MAX_DEPTH 64
#define INL_MAX_DIES  (1u << 20)   /* per walk: bounds hostile DWARF */

/* The child of @parent (looking through lexical blocks and other
 * non-function scopes) that is an inlined_subroutine holding @pc. */
static int inline_child(Dwarf_Die *parent, Dwarf_Addr pc, Dwarf_Die *out,
			int depth, size_t *budget)
{
	Dwarf_Die d;

	if (depth > INL_MAX_DEPTH || dwarf_child(parent, &d) != 0)
		return 0;
	do {
		if (!*budget || !--*budget)
			return 0;
		int tag = dwarf_tag(&d);
		if (tag == DW_TAG_inlined_subroutine) {
			if (dwarf_haspc(&d, pc) > 0) {
				*out = d;
				return 1;
			}
			continue;
		}
		if (tag == DW_TAG_subprogram || dwarf_haschildren(&d) <= 0)
			continue;  /* a nested function has code of its own */
		if ((dwarf_hasattr(&d, DW_AT_low_pc) ||
		     dwarf_hasattr(&d, DW_AT_ranges)) && dwarf_haspc(&d, pc) <= 0)
			continue;
		if (inline_child(&d, pc, out, depth + 1, budget))
			return 1;
	} while (dwarf_siblingof(&d, &d) == 0);
	return 0;
}

/* gdb's rule for the frame where the program stopped: an inlined call
 * whose code begins at @pc (its first range starts there, or @pc - 1 is
 * not in it) has not started yet; gdb shows the caller at the call site. */
static int inline_starts_at(Dwarf_Die *d, Dwarf_Addr pc)
{
	Dwarf_Addr base, start, end;

	if (dwarf_ranges(d, 0, &base, &start, &end) > 0 && start == pc)
		return 1;
	return pc == 0 || dwarf_haspc(d, pc - 1) <= 0;
}

/* The name of an inlined function: the demangled linkage name of its
 * abstract origin (C++, as physical frames are named from the symbol
 * table), else its DWARF name; both through DW_AT_abstract_origin, in
 * whichever unit it is. */
static const char *inline_name(struct bt_ctx *c, Dwarf_Die *d)
{
	const char *n = mangled_name(d);

	if (n)
		return bt_demangle(c, n, strlen(n));
	n = die_name(d);
	return n ? bt_ctx_strdup(c, n) : NULL;
}

/* The call site of the inlined call @d: file and line into @s (NULL/0 when
 * the DWARF does not say). */
static void inline_call_site(struct bt_ctx *c, Dwarf_Die *d,
			     struct btrace_symbol *s)
{
	Dwarf_Attribute a;
	Dwarf_Word cf, cl;
	Dwarf_Die cu;
	Dwarf_Files *files = NULL;
	size_t nfiles = 0;
	const char *f = NULL;

	s->file = NULL;
	s->line = 0;
	if (dwarf_formudata(dwarf_attr(d, DW_AT_call_line, &a), &cl) == 0 &&
	    cl > 0 && cl <= INT32_MAX)
		s->line = (int)cl;
	if (dwarf_formudata(dwarf_attr(d, DW_AT_call_file, &a), &cf) == 0 &&
	    dwarf_diecu(d, &cu, NULL, NULL) &&
	    dwarf_getsrcfiles(&cu, &files, &nfiles) == 0 && cf < nfiles)
		f = dwarf_filesrc(files, cf, NULL, NULL);
	if (f)
		s->file = bt_ctx_strdup(c, f);
	else
		s->line = 0;  /* a line without its file says nothing */
}

int bt_syms_inline_chain(struct bt_ctx *c, uint64_t ip, int top,
			 struct btrace_symbol *out, int n)
{
	const struct btrace_symbol *base;
	Dwarf_Die chain[INL_MAX_DEPTH], sub, *cu;
	Dwfl_Module *mod;
	Dwarf_Addr bias;
	const char *inl;
	size_t budget = INL_MAX_DIES;
	int nc = 0, skip = 0, shown, k;

	if (n < 1)
		return 0;
	base = bt_syms_lookup(c, ip);
	out[0] = *base;
	if (!c->dwfl_ok || !(mod = dwfl_addrmodule(c->dwfl, ip)) ||
	    !(cu = unit_of(c, mod, ip, &bias)))
		return 1;
	Dwarf_Addr pc = ip - bias;
	struct bt_dwsub *s = dwidx_find(c, mod, cu, bias, ip, &inl);
	if (s) {
		/* from the subprogram's index (its inline tree walked once):
		 * the inlined call holding @pc at each depth, outermost
		 * first, up to the first depth without one */
		uint64_t have = 0;
		for (size_t i = 0; i < s->ninl; i++) {
			const struct bt_dwinl *e = &s->inl[i];
			if (pc >= e->lo && pc < e->hi && e->depth < INL_MAX_DEPTH &&
			    !(have & (1ull << e->depth))) {
				have |= 1ull << e->depth;
				chain[e->depth] = e->die;
			}
		}
		while (nc < INL_MAX_DEPTH && (have & (1ull << nc)))
			nc++;
	} else if (concrete_subprogram(cu, pc, &sub)) {
		/* outermost first */
		while (nc < INL_MAX_DEPTH &&
		       inline_child(nc ? &chain[nc - 1] : &sub, pc, &chain[nc], 0,
				    &budget))
			nc++;
	} else {
		return 1;
	}
	if (top)
		while (skip < nc && inline_starts_at(&chain[nc - 1 - skip], pc))
			skip++;
	shown = nc - skip;
	/* room for the physical frame: the outermost inline frames go (the
	 * innermost is where the code is) */
	int first = shown > n - 1 ? shown - (n - 1) : 0;
	k = 0;
	for (int i = shown - 1; i >= first - 1; i--) {
		int j = i >= first ? i : -1;  /* -1: the physical frame */
		struct btrace_symbol *o = &out[k++];
		*o = *base;
		o->function = j >= 0 ? inline_name(c, &chain[j]) : base->outer;
		if (j >= 0 && !o->function)
			o->function = "??";
		/* each frame is where it calls the next one in: the call
		 * site of the inlined call inside it (also when gdb's rule
		 * or the room hid that call); the innermost at @pc */
		if (j + 1 < nc)
			inline_call_site(c, &chain[j + 1], o);
	}
	return k;
}

/*
 * One naming rule for every consumer (text, JSON, decode listings):
 * - outer: the function the address is in, named as gdb names it: the
 *   DWARF subprogram's name when there is debug info, else the symbol
 *   table's name without its version;
 * - function: the innermost inlined function at the address, else outer;
 * - offset: from the start of the symbol table's function.
 */
static int is_resolver(const char *name);

/* The symbol-table function holding @ip in @mod: from the range cache, else
 * one search of the module's symbol table (cached by its address range).
 * NULL: no symbol. */
static struct bt_frange *func_range(struct bt_ctx *c, Dwfl_Module *mod,
				    uint64_t ip)
{
	size_t lo = 0, hi = c->nfranges;
	GElf_Off off = 0;
	GElf_Sym sym;
	const char *name;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->franges[mid].lo <= ip)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo && ip < c->franges[lo - 1].hi)
		return &c->franges[lo - 1];
	name = dwfl_module_addrinfo(mod, ip, &off, &sym, NULL, NULL, NULL);
	if (!name)
		return NULL;
	struct bt_frange fr = { ip - off, ip - off + (sym.st_size ? sym.st_size : 1),
				ip - off, display_name(c, name), NULL,
				is_resolver(name) };
	if (ip >= fr.hi) {
		/* a symbol that does not hold @ip (code after a sized one,
		 * or a label): cache just this address */
		fr.lo = ip;
		fr.hi = ip + 1;
	}
	/* the ranges stay sorted and disjoint; @ip is past the one before
	 * and before the one after */
	if (lo && fr.lo < c->franges[lo - 1].hi)
		fr.lo = c->franges[lo - 1].hi;
	if (lo < c->nfranges && fr.hi > c->franges[lo].lo)
		fr.hi = c->franges[lo].lo;
	if (bt_grow((void **)&c->franges, &c->cfranges, c->nfranges + 1,
		    sizeof(*c->franges)))
		return NULL;
	memmove(&c->franges[lo + 1], &c->franges[lo],
		(c->nfranges - lo) * sizeof(*c->franges));
	c->franges[lo] = fr;
	c->nfranges++;
	return &c->franges[lo];
}

const char *bt_syms_data(struct bt_ctx *c, uint64_t addr, uint64_t *off)
{
	Dwfl_Module *mod;
	GElf_Off o = 0;
	GElf_Sym sym;
	const char *name;

	if (!c->dwfl_ok || !(mod = dwfl_addrmodule(c->dwfl, addr)))
		return NULL;
	name = dwfl_module_addrinfo(mod, addr, &o, &sym, NULL, NULL, NULL);
	if (!name || !*name || o >= sym.st_size ||
	    (GELF_ST_TYPE(sym.st_info) != STT_OBJECT &&
	     GELF_ST_TYPE(sym.st_info) != STT_TLS))
		return NULL;
	*off = o;
	return display_name(c, name);
}

static void lookup(struct bt_ctx *c, uint64_t ip, struct btrace_symbol *s)
{
	Dwfl_Module *mod;
	const char *name;

	memset(s, 0, sizeof(*s));
	fill_module(c, ip, s);
	uint64_t plt = bt_plt_lookup(c, ip, &name);
	if (plt && name) {
		/* a PLT entry: named like gdb and perf do, "strcmp@plt" */
		s->function = name;
		s->outer = name;
		s->offset = ip - plt;
		return;
	}
	if (!c->dwfl_ok || !(mod = dwfl_addrmodule(c->dwfl, ip)))
		return;
	struct bt_frange *fr = func_range(c, mod, ip);
	if (fr) {
		s->function = fr->outer ? fr->outer : fr->name;
		s->outer = s->function;
		s->offset = ip - fr->start;
	}
	Dwarf_Addr bias;
	Dwarf_Die *cu = unit_of(c, mod, ip, &bias), *scopes = NULL;
	/* no unit holds @ip: no line (dwfl_module_getsrc would give the
	 * last line of the unit before it, unit_of) */
	Dwfl_Line *l = cu ? dwfl_module_getsrc(mod, ip) : NULL;
	Dwarf_Line *dl;
	if (l) {
		int line = 0;
		const char *file = dwfl_lineinfo(l, NULL, &line, NULL, NULL, NULL);
		if (file) {
			s->file = bt_ctx_strdup(c, file);
			s->line = line;
		}
	} else if (cu && (dl = dwarf_getsrc_die(cu, ip - bias))) {
		/* a unit found without .debug_aranges */
		int line = 0;
		const char *file = dwarf_linesrc(dl, NULL, NULL);
		if (file && dwarf_lineno(dl, &line) == 0) {
			s->file = bt_ctx_strdup(c, file);
			s->line = line;
		}
	}
	/* Innermost inlined function, if any. */
	if (cu) {
		const char *inl = NULL, *n = NULL;
		struct bt_dwsub *sub = dwidx_find(c, mod, cu, bias, ip, &inl);
		int ns = sub ? 0 : dwarf_getscopes(cu, ip - bias, &scopes);
		Dwarf_Die fn;
		Dwarf_Die *nd = NULL;   /* the DIE @n is the name of */
		if (sub && !(inl && fr && fr->outer)) {
			n = sub->name;
			nd = &sub->die;
		}
		for (int i = 0; i < ns; i++) {
			int tag = dwarf_tag(&scopes[i]);
			if (tag == DW_TAG_inlined_subroutine) {
				inl = die_name(&scopes[i]);
				/* the function it is inlined in: known for
				 * the range, or looked for once */
				if (!(fr && fr->outer) &&
				    concrete_subprogram(cu, ip - bias, &fn)) {
					n = subprogram_name(&fn);
					nd = &fn;
				}
				break;
			}
			if (tag == DW_TAG_subprogram) {
				n = subprogram_name(&scopes[i]);
				nd = &scopes[i];
				break;
			}
		}
		/* a C++ member named by the symbol table keeps that name */
		if (n && fr && fr->name && nd && cxx_member(nd))
			n = NULL;
		if (n && (!s->outer || strcmp(n, s->outer)))
			s->outer = bt_ctx_strdup(c, n);
		if (fr && !fr->outer && s->outer)
			fr->outer = s->outer;
		s->function = inl ? bt_ctx_strdup(c, inl) : s->outer;
		free(scopes);
	}
}

static const struct btrace_symbol *lookup_slow(struct bt_ctx *c, uint64_t ip);

const struct btrace_symbol *bt_syms_lookup(struct bt_ctx *c, uint64_t ip)
{
	struct bt_scache *e;

	/* direct-mapped cache in front of the map: one probe per block of
	 * the history when loops repeat */
	/* all ones marks an empty slot: that address is never cached (a
	 * hostile trace can name it) */
	if (ip == UINT64_MAX)
		return lookup_slow(c, ip);
	if (!c->scache) {
		c->scache = malloc(BT_CACHE_SLOTS * sizeof(*c->scache));
		if (!c->scache)
			return lookup_slow(c, ip);
		/* every ip UINT64_MAX (all ones): empty */
		memset(c->scache, 0xff, BT_CACHE_SLOTS * sizeof(*c->scache));
	}
	e = &c->scache[bt_cache_slot(ip)];
	if (e->ip != ip) {
		e->sym = lookup_slow(c, ip);
		e->ip = ip;
	}
	return e->sym;
}

static const struct btrace_symbol *lookup_slow(struct bt_ctx *c, uint64_t ip)
{
	static const struct btrace_symbol none;
	uint32_t v = bt_map_get(&c->sym_map, ip);

	if (v != UINT32_MAX)
		return &c->sym_chunks[v / SYM_CHUNK][v % SYM_CHUNK];
	size_t k = c->nsyms / SYM_CHUNK;
	if (c->nsyms % SYM_CHUNK == 0) {
		if (bt_grow((void **)&c->sym_chunks, &c->csym_chunks, k + 1,
			    sizeof(*c->sym_chunks)))
			return &none;
		c->sym_chunks[k] = malloc(SYM_CHUNK * sizeof(**c->sym_chunks));
		if (!c->sym_chunks[k])
			return &none;
	}
	struct btrace_symbol *sym = &c->sym_chunks[k][c->nsyms % SYM_CHUNK];
	lookup(c, ip, sym);
	if (bt_map_put(&c->sym_map, ip, (uint32_t)c->nsyms) < 0)
		return &none;
	c->nsyms++;
	return sym;
}

static int is_resolver(const char *name)
{
	return name && (!strncmp(name, "_dl_runtime_resolve", 19) ||
			!strncmp(name, "_dl_runtime_profile", 19));
}

static uint64_t func_start_slow(struct bt_ctx *c, uint64_t ip, int *tramp);

uint64_t bt_syms_func_start(struct bt_ctx *c, uint64_t ip, int *tramp)
{
	struct bt_fcache *e;
	int tr;

	/* all ones marks an empty slot: never cached */
	if (!c->fcache || ip == UINT64_MAX)
		return func_start_slow(c, ip, tramp);
	e = &c->fcache[bt_cache_slot(ip)];
	if (e->ip != ip) {
		e->start = func_start_slow(c, ip, &tr);
		e->tramp = tr;
		e->ip = ip;
	}
	if (tramp)
		*tramp = e->tramp;
	return e->start;
}

static uint64_t func_start_slow(struct bt_ctx *c, uint64_t ip, int *tramp)
{
	uint32_t v = bt_map_get(&c->func_map, ip);
	struct bt_func_info fi = { 0, 0 };

	if (v == UINT32_MAX) {
		Dwfl_Module *mod;
		const char *name = NULL;
		uint64_t plt = bt_plt_lookup(c, ip, &name);

		if (plt) {
			fi.start = plt;
			fi.tramp = 1;
		} else if (c->dwfl_ok && (mod = dwfl_addrmodule(c->dwfl, ip))) {
			const struct bt_frange *fr = func_range(c, mod, ip);
			if (fr) {
				fi.start = fr->start;
				fi.tramp = fr->tramp;
			}
		}
		if (bt_grow((void **)&c->funcs, &c->cfuncs, c->nfuncs + 1,
			    sizeof(*c->funcs)) ||
		    bt_map_put(&c->func_map, ip, (uint32_t)c->nfuncs) < 0) {
			if (tramp)
				*tramp = fi.tramp;
			return fi.start;
		}
		c->funcs[c->nfuncs] = fi;
		v = (uint32_t)c->nfuncs++;
	}
	if (tramp)
		*tramp = c->funcs[v].tramp;
	return c->funcs[v].start;
}
