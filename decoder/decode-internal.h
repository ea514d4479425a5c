/* SPDX-License-Identifier: MIT */
/* libbtrace-decode internals: shared between the decoder's modules only. */
#ifndef BT_DECODE_INTERNAL_H
#define BT_DECODE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <btrace/decode.h>

struct pt_image;
struct Dwfl;

#define BT_KERNEL_START 0xffff800000000000ull
static inline int bt_is_kernel(uint64_t ip)
{
	return ip >= BT_KERNEL_START;
}

/* ctx.c: u64 -> u32 open-addressing hash map (value UINT32_MAX = absent). */
struct bt_map {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap;    /* power of two */
	size_t n;
};
uint32_t bt_map_get(const struct bt_map *m, uint64_t key);
int bt_map_put(struct bt_map *m, uint64_t key, uint32_t val);
void bt_map_free(struct bt_map *m);

/* Bytes of code at an address. */
struct bt_region {
	uint64_t start;
	uint64_t end;
	const uint8_t *data;
	int module;          /* index in ctx modules, -1 none */
};

struct bt_module {
	char *path;          /* as mapped */
	char *elf;           /* file used for symbols (matching build ID), NULL */
	uint64_t lo, hi;     /* lowest/highest mapped address */
	uint64_t bias;       /* load bias (ET_DYN base), 0 for ET_EXEC */
	int have_bias;
	uint8_t build_id[BTRACE_BUILD_ID_MAX];
	uint32_t build_id_size;
	void *dwmod;         /* Dwfl_Module *, NULL when none */
	int dw_tried;
	void *map;           /* mmap of the disk file when code comes from it */
	size_t map_size;
	int code_fd;         /* that file's descriptor + 1 (0: none): libipt
			      * reads it as /proc/self/fd/N, never the path
			      * again (another file could be there by then) */
	int searched;        /* files looked for (bt_image_find_files) */
	char *code_file;     /* a file with this build ID and its code */
	char *debug_file;    /* a separate debug file with this build ID */
	char *disk_note;     /* why code could not come from disk */
};

struct bt_insn_info {
	uint8_t cls;         /* enum btrace_insn_class */
	uint8_t size;        /* 0: unknown */
	uint64_t target;     /* direct branch target, 0 if none */
};

struct bt_ctx {
	const struct btrace_snapshot *snap;
	struct btrace_decode_opts opts;
	struct btrace_decode_sink sink;   /* the copy opts.sink points to */
	struct btrace_error *err;

	struct pt_image *image;
	int memfd;
	uint64_t memfd_size;

	struct bt_region *regions;   /* sorted by start */
	size_t nregions, cregions;
	struct bt_module *modules;
	size_t nmodules, cmodules;

	char **notes;
	size_t nnotes, cnotes;

	/* capstone */
	size_t cs;
	int cs_ok;
	void *csi;                   /* a cs_insn reused by every disassembly */
	struct bt_map insn_map;
	struct bt_insn_info *insns;
	size_t ninsns, cinsns;
	/* direct-mapped caches in front of the maps (hot path: one lookup
	 * per block) */
	struct bt_icache { uint64_t ip; struct bt_insn_info info; } *icache;
	struct bt_fcache { uint64_t ip, start; int tramp; } *fcache;
	struct bt_bend *bend;        /* pt.c's block-end cache */

	/* symbols */
	struct Dwfl *dwfl;
	int dwfl_ok;
	struct bt_dwidx *dwidx;      /* DWARF function/inline index (symbols.c) */
	struct bt_map sym_map;
	struct bt_scache { uint64_t ip; const struct btrace_symbol *sym; } *scache;
	struct btrace_symbol **sym_chunks;   /* stable: never moved */
	size_t nsyms, csym_chunks;

	/* functions of the symbol tables by address range: one symbol-table
	 * search per function, not per address (sorted by start) */
	struct bt_frange {
		uint64_t lo, hi;           /* addresses it answers for */
		uint64_t start;            /* the symbol's address */
		const char *name;          /* symbol, version stripped */
		const char *outer;         /* name gdb shows, NULL: not known yet */
		int tramp;                 /* the lazy-binding resolver */
	} *franges;
	size_t nfranges, cfranges;
	struct bt_map func_map;      /* ip -> index in funcs */
	struct bt_func_info { uint64_t start; int tramp; } *funcs;
	size_t nfuncs, cfuncs;
	struct bt_plt_entry { uint64_t start, end; const char *name; } *plt;
	size_t nplt, cplt;
	uint64_t (*plt_ranges)[2];   /* PLT sections */
	size_t nplt_ranges, cplt_ranges;

	/* executable mappings without code (image notes, by relevance) */
	struct bt_hole {
		uint64_t start, end;       /* the code missing */
		uint64_t mstart, mend;     /* its mapping */
		const char *note;
		int used;                  /* the trace entered the mapping */
		int partial;               /* the mapping has some code */
	} *holes;
	size_t nholes, choles, npartial;

	/* string arena */
	char **strs;
	size_t nstrs, cstrs;

	/* time (PT timing packets): the snapshot's conversion of a TSC value
	 * to nanoseconds of its clock, perf's formula (docs/format.md,
	 * "Time"); timed 0: the trace has no time */
	int timed;
	struct bt_time_conv {
		uint64_t zero;
		uint32_t mult;
		uint16_t shift;
	} tconv;
};

/* ctx.c: nanoseconds of the snapshot's clock at TSC value @tsc:
 * zero + tsc * mult / 2^shift, as perf_event_mmap_page documents it. */
uint64_t bt_time_ns(const struct bt_time_conv *cv, uint64_t tsc);

void bt_hugepages(void *p, size_t len);

#define BT_CACHE_SLOTS 4096u
static inline size_t bt_cache_slot(uint64_t ip)
{
	return (size_t)((ip ^ (ip >> 12) ^ (ip >> 24)) & (BT_CACHE_SLOTS - 1));
}

/* ctx.c: strings owned by the context */
const char *bt_ctx_strdup(struct bt_ctx *c, const char *s);
const char *bt_ctx_printf(struct bt_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int bt_ctx_note(struct bt_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* decode.c: the context a result was decoded with (values.c) */
struct bt_ctx *bt_result_ctx(struct btrace_decode_result *res);

/* image.c */
int bt_image_build(struct bt_ctx *c);
void bt_image_free(struct bt_ctx *c);
/* Code bytes at @ip: pointer and bytes available, NULL when unmapped. */
const uint8_t *bt_image_bytes(const struct bt_ctx *c, uint64_t ip,
			      size_t *avail);
const struct bt_region *bt_image_region(const struct bt_ctx *c, uint64_t ip);
/* Module (mapped file) holding @ip, -1 if none, even when code is missing. */
int bt_image_module_of(const struct bt_ctx *c, uint64_t ip);
/* Why there is no code at @ip (a note line). */
const char *bt_image_why_missing(struct bt_ctx *c, uint64_t ip);
/* The trace reached @ip: the holes of its mapping are worth a note. */
void bt_image_mark_entered(struct bt_ctx *c, uint64_t ip, int block);
/* Add the notes of the holes (entered ones, or all with ALL_NOTES). */
int bt_image_notes(struct bt_ctx *c);
/* The GNU build ID of the ELF file at @path: bt_elf_build_id() (src/
 * elf-buildid.c, shared with libbtrace); 0, or -ENOENT when it has none or
 * is not ELF, or -errno. */
int bt_image_file_build_id(const char *path, uint8_t *id, uint32_t *size);

/* insn.c */
int bt_insn_init(struct bt_ctx *c);
void bt_insn_fini(struct bt_ctx *c);
/* Classify the instruction at @ip (cached): the cache probe is inline
 * (once per block on the hot path), a miss goes to insn.c. */
const struct bt_insn_info *bt_insn_classify_miss(struct bt_ctx *c, uint64_t ip);
static inline const struct bt_insn_info *bt_insn_classify(struct bt_ctx *c,
							  uint64_t ip)
{
	/* the empty slot's ip is all ones: that address never hits */
	if (c->icache && ip != UINT64_MAX) {
		struct bt_icache *e = &c->icache[bt_cache_slot(ip)];

		if (e->ip == ip)
			return &e->info;
	}
	return bt_insn_classify_miss(c, ip);
}
/* Disassemble at @ip into @out. 0 ok, negative if no code. */
int bt_insn_disasm(struct bt_ctx *c, uint64_t ip, struct btrace_insn *out);
/* Walk @n instructions from @ip; stores the IP of the last one. */
int bt_insn_walk(struct bt_ctx *c, uint64_t ip, uint64_t end_ip,
		 uint64_t *count);

/* symbols.c */
int bt_syms_init(struct bt_ctx *c);
void bt_syms_fini(struct bt_ctx *c);
/* Symbol of @ip (cached; the returned record lives as long as @c). */
const struct btrace_symbol *bt_syms_lookup(struct bt_ctx *c, uint64_t ip);
/* Start address of the (outer) function containing @ip, 0 unknown; from
 * the symbol tables only (no DWARF), cached.  *@tramp (may be NULL) is set
 * when it is a PLT entry or the lazy-binding resolver. */
uint64_t bt_syms_func_start(struct bt_ctx *c, uint64_t ip, int *tramp);
/* The named data object (a global or static variable of the symbol
 * tables, STT_OBJECT or STT_TLS) whose bytes hold @addr: its name (owned
 * by @c) and @addr's offset in it; NULL none. */
const char *bt_syms_data(struct bt_ctx *c, uint64_t addr, uint64_t *off);
/* plt.c: names of PLT entries ("strcmp@plt") from the module's ELF. */
int bt_plt_load(struct bt_ctx *c);
/* The PLT entry holding @ip: its start and name; 0 if none. */
uint64_t bt_plt_lookup(const struct bt_ctx *c, uint64_t ip, const char **name);
/* @ip is in a PLT section (.plt, .plt.sec, .plt.got). */
int bt_plt_contains(const struct bt_ctx *c, uint64_t ip);
/* demangle.c: @name (@len bytes) demangled when it is a C++ name (unless
 * BTRACE_DECODE_NO_DEMANGLE), else copied; owned by the context. */
const char *bt_demangle(struct bt_ctx *c, const char *name, size_t len);
/* The frames of the physical frame at @ip, innermost first: the inlined
 * calls holding @ip, then the function they are inlined in (the last), up
 * to @n symbols (a deeper chain loses its outermost inline frames);
 * returns the count.  Each is located where it makes the inlined call it
 * holds (DW_AT_call_file/line), the innermost at @ip.  @top: @ip is where
 * the program stopped (frame 0): an inlined call that starts at @ip is not
 * shown (gdb's rule), its caller is, at the call site. */
int bt_syms_inline_chain(struct bt_ctx *c, uint64_t ip, int top,
			 struct btrace_symbol *out, int n);

/* analyze.c: the walker's state (the block path of pt.c works on a copy
 * of it: struct bt_fast) */
/* bt_frame.flags beside BTRACE_CALL_*, never in a result: entered when a
 * signal handler sent the interrupted context to a function (rt_sigreturn
 * to its entry: Go's asyncPreempt and sigpanic); it returns to the
 * interrupted instruction (@ret; in block-granular traces, the block
 * holding it). */
#define BT_FRAME_INJECTED 0x80000000u

struct bt_frame {
	uint64_t ret;        /* where it returns to, 0 unknown (partial) */
	uint64_t call_ip;    /* the call (or interrupted insn) in the frame below */
	uint64_t func;       /* function start, 0 unknown */
	uint64_t ip;         /* last address executed in this frame */
	uint32_t flags;      /* BTRACE_CALL_* */
	int32_t depth;
};

struct bt_stack_copy {
	struct bt_frame *fr;
	size_t n, cap;
};

struct bt_walk {
	struct bt_frame *fr;
	size_t nfr, cfr;
	int32_t depth, min_depth;
	int have_calls;
	int pending;         /* next block starts a new call entry */
	uint32_t pending_flags;
	int jump_pending;    /* last block ended in a jump: check the target */
	int ret_pending;
	int async_pending;   /* an ITEM_ASYNC waits for the handler */
	uint64_t async_ip;
	uint64_t async_index;
	int prev_async;      /* the previous item was an ITEM_ASYNC */
	/* fault candidates */
	struct bt_stack_copy at_async;    /* the stack at the last ITEM_ASYNC */
	struct bt_stack_copy at_handler;  /* ... the last one a handler followed */
	int64_t handler_item;          /* item index of that ITEM_ASYNC */
	uint64_t handler_ip;           /* ... and where it interrupted */
	/* The signal episode that handler_item starts (the first delivery
	 * while no signal frame was on the stack; nested ones belong to it):
	 * closed when rt_sigreturn popped its frame, then ep_ninsn is the
	 * instruction count at that point and ep_ret_ip where it went. */
	int ep_closed;
	size_t ep_frame;               /* index of its signal frame */
	uint64_t ep_ninsn;
	uint64_t ep_ret_ip;
	/* where signal handlers were entered (the last few): an
	 * rt_sigreturn that goes to one is a signal delivered as it
	 * returned (one that was pending, unblocked by the restored mask) */
	uint64_t handlers[8];
	unsigned nhandlers;
};

/* A thread result under construction.  Decoders emit items one at a time;
 * each is analysed as it arrives (analyze.c: stack, call history, fault
 * candidates) and stored, with opts.keep, in a bounded window of the most
 * recent ones. */
struct bt_thread_build {
	struct btrace_thread *t;
	size_t cblocks, cgaps, ccalls, cstack;
	uint64_t keep;               /* 0: keep every item */
	uint32_t unit;
	size_t trigger;              /* compact blocks[] at this count */
	size_t calls_trigger;        /* ... calls[] */
	uint64_t nitems;             /* items emitted (+ held): next index */
	uint64_t units;              /* units (opts.unit) decoded */
	struct btrace_block held;    /* FAR/ASYNC waiting for where it went */
	uint64_t held_index;
	int have_held;
	/* events seen by the decoders to locate the fault */
	uint64_t last_async_ip;      /* last async disable/branch from user */
	int64_t last_async_block;    /* item index of its ITEM_ASYNC entry */
	int last_async_kernel;       /* it was an async branch into the kernel */
	int ended_async;             /* trace ends right at an async disable */
	struct bt_walk *w;           /* analysis state */
	struct btrace_call dummy;    /* bt_fast.cur before the first entry */
	int64_t fault_item;          /* bt_analyze_thread(): item index of the
				      * fault's item, -1 none */
	/* streaming (btrace_decode_opts.sink): items and calls leave the
	 * window through the sink */
	const struct btrace_decode_sink *sink;
	uint64_t sent_items;         /* items [0, sent_items) were streamed */
	uint64_t sent_calls;         /* ... calls */
	struct btrace_block first;   /* the first item of calls[0] once it left
				      * the window */
	uint64_t first_index;        /* its index, UINT64_MAX: none */
	int64_t start;               /* tail decode: the PSB it started at;
				      * -1: the whole buffer */
	/* hold (thread.c: a handler went on after the fault,
	 * qemu.final_signal): the window of @keep units before the latest
	 * signal episode's first delivery (bt_walk.handler_item), then the
	 * head of the path after it, are frozen at the start of blocks[] /
	 * calls[]; after them only a ring of the latest items and calls is
	 * kept (the rest is counted in hole_*). */
	int hold;
	int hold_ended;              /* bt_thread_hold_end() done */
	int64_t frozen_ep;           /* handler_item the prefix is for, -1 none */
	size_t pre_blocks, pre_calls;  /* the frozen prefix */
	uint64_t hole_items;         /* items left out after it */
	uint64_t hole_blocks;        /* ... BTRACE_ITEM_BLOCKs of them */
	uint64_t hole_calls;         /* call entries left out */
	int32_t hole_min_depth;      /* their least depth (raw) */
	/* time (ctx.timed): items get the last timing packet's raw TSC, and
	 * BT_TIME_NEW on the first item after a new one; bt_thread_time()
	 * turns them into ns, packets and interpolations (thread.c) */
	uint64_t tsc;                /* last TSC seen, 0 none */
	int tnew;                    /* a new TSC, not stamped on an item yet */
	size_t tfix;                 /* blocks[tfix, nblocks) not turned yet */
	uint64_t tcum;               /* instructions before blocks[tfix] */
	int tprev;                   /* a packet before blocks[tfix] ... */
	int tfar;                    /* ... and an ITEM_FAR after it */
	uint64_t tprev_tsc;          /* ... its TSC */
	uint64_t tprev_cum;          /* ... instructions before its item */
};

/* Internal mark of an item's time_flags while time_ns is a raw TSC (never
 * seen outside the decoder). */
_Static_assert(offsetof(struct btrace_block, reserved2) ==
	       offsetof(struct btrace_block, time_ns) + 12 &&
	       offsetof(struct btrace_block, time_flags) ==
	       offsetof(struct btrace_block, time_ns) + 8,
	       "time_ns, time_flags, reserved2: 16 bytes (pt.c zeroes them)");
#define BT_TIME_NEW 0x80000000u

/* thread.c: pt.c saw the time stamp counter at @tsc (a timing packet). */
static inline void bt_thread_tsc(struct bt_thread_build *b, uint64_t tsc)
{
	if (tsc != b->tsc) {
		b->tsc = tsc;
		b->tnew = 1;
	}
}

/* thread.c: the raw time of a new item. */
static inline void bt_thread_stamp(struct bt_thread_build *b,
				   struct btrace_block *it)
{
	it->time_ns = b->tsc;
	it->time_flags = b->tnew ? BT_TIME_NEW : 0;
	b->tnew = 0;
}

/* thread.c: the thread result builder.  Set up a thread's build from the
 * options (bt_thread_init), then before each decode of its buffer
 * (bt_thread_reset: a tail decode may start over from further back). */
void bt_thread_init(struct bt_ctx *c, struct bt_thread_build *b);
void bt_thread_reset(struct bt_thread_build *b);
/* Units (opts.unit) of history decoded so far. */
uint64_t bt_thread_units(const struct bt_thread_build *b);
/* Streaming: the sink's begin() for this decode. */
int bt_thread_stream_begin(struct bt_ctx *c, struct bt_thread_build *b);
/* The decode of the buffer is done: analyse the thread (fault, stack,
 * symbols), stream what is left to the sink and end(). */
int bt_thread_finish(struct bt_ctx *c, struct bt_thread_build *b);
/* Emit an item (flushes a held one first). */
int bt_thread_add_block(struct bt_ctx *c, struct bt_thread_build *b,
			const struct btrace_block *blk);
/* The same for a block of instructions (the hot path). */
int bt_thread_add_insns(struct bt_ctx *c, struct bt_thread_build *b,
			uint64_t ip, uint64_t end_ip, uint32_t ninsn,
			uint64_t offset);
/*
 * The block path of the PT decode loop (pt.c).  The common block - one
 * that goes on in the current call entry, starts one after a call, or
 * returns to the frame just below the top - never reaches
 * bt_thread_add_insns() and the walker: pt.c's bt_block_fast() does for it
 * what they would (thread.c: the item window; analyze.c: on_block,
 * end_of_block, new_call) on a copy of the state they use, struct
 * bt_fast.  bt_fast_load() makes that copy before a run of blocks and
 * bt_fast_store() writes it back before anything else looks at the
 * thread: the general path, events, gaps, the end of the decode.
 *
 * Between the two, the work per block is the least that keeps the result
 * the same:
 * - what the general path handles is folded into @next when the copy is
 *   made (a held item, partial mappings, no call entry or frame yet, a
 *   pending jump or pending flags, a depth below min_depth): then it takes
 *   the blocks until the next copy;
 * - the room left in blocks[] and calls[] is one pointer compare each; a
 *   push always has room (the copy is made with a free frame, and a push
 *   that fills the array sends the next block to the general path);
 * - the current call entry's ninsn, nblocks and end_ip, the count of
 *   instructions and the top frame's last address are written when the
 *   entry ends or the copy is written back, not at every block (the frame
 *   below a push keeps the ip it had: nothing reads a frame's ip before it
 *   is the top again and has a new one);
 * - the class of a block's last instruction, what it means for the next
 *   block and the record's bytes for it come from one cache probe (struct
 *   bt_bend);
 * - a block's symbol is left to bt_analyze_thread(), which sets it for the
 *   blocks kept, and so is a call entry's.
 */

/* How the next block begins (bt_fast.next: bits; bt_bend.next: one of the
 * first three). */
#define BT_NEXT_START  0x1u  /* a new call entry: the last block was a call */
#define BT_NEXT_RET    0x2u  /* ... after a return */
#define BT_NEXT_JUMP   0x4u  /* the last block was a jump: the general path
			      * examines where it went */
#define BT_NEXT_HOLD   0x8u  /* the general path takes the next block: a
			      * held item, partial mappings, no call entry
			      * or frame yet, the frames array full, ... */

/* Block-end cache of the block path: what a block's last instruction means
 * for the walker, by its address (direct-mapped, in front of
 * bt_insn_classify(); pt.c). */
struct bt_bend {
	uint64_t end_ip;             /* UINT64_MAX: empty */
	uint64_t target;             /* a call's target: the new frame's function */
	uint8_t tail[4];             /* the block's iclass, end_size, reserved */
	uint32_t next;               /* BT_NEXT_* after a block ending here, 0:
				      * the entry goes on */
};
#define BT_BEND_SLOTS 4096u
static inline size_t bt_bend_slot(uint64_t ip)
{
	return (size_t)((ip * 0x9e3779b97f4a7c15ull) >> 52);
}

struct bt_fast {
	uint32_t next;               /* BT_NEXT_* bits, 0: the entry goes on */
	int32_t depth;               /* w->depth */
	uint64_t i;                  /* item index of the next block (nitems) */
	struct btrace_block *rec;    /* &t->blocks[t->nblocks] */
	struct btrace_block *rend;   /* compaction or growth of blocks[] here */
	uint64_t tot;                /* t->ninsn */
	/* the current call entry: its ninsn, nblocks and end_ip are written
	 * when it ends (by the next entry, or bt_fast_store()) */
	struct btrace_call *cur;     /* when the copy is made before a new entry:
				      * b->dummy until a block opens one */
	uint64_t ent_base;           /* tot before its first instruction */
	uint64_t ent_end;            /* end_ip of the last block */
	struct btrace_call *cnext;   /* &t->calls[t->ncalls] */
	struct btrace_call *cend;    /* compaction or growth of calls[] here */
	struct bt_frame *fr;
	size_t nfr, cfr;             /* nfr < cfr: room for a push */
	int32_t min_depth;
	struct bt_bend *bend;
	uint64_t i0, tot0;           /* at load */
};

/* thread.c: copy the state for a run of blocks (0, or -ENOMEM making room
 * for a frame) / write it back: returns 1 if any block was taken
 * (bt_fast.ent_end is then the last one's end_ip), 0 if nothing changed. */
int bt_fast_load(struct bt_ctx *c, struct bt_thread_build *b,
		 struct bt_fast *h);
int bt_fast_store(struct bt_thread_build *b, struct bt_fast *h);

/* Hold an item whose end_ip comes later; returns its item index. */
int64_t bt_thread_hold(struct bt_ctx *c, struct bt_thread_build *b,
		       const struct btrace_block *blk);
/* Complete the held item with @end_ip and emit it; returns its kind, or
 * -1 when nothing was held (or a negative error < -1). */
int bt_thread_complete(struct bt_ctx *c, struct bt_thread_build *b,
		       uint64_t end_ip);
int bt_thread_flush(struct bt_ctx *c, struct bt_thread_build *b);
int bt_thread_add_gap(struct bt_ctx *c, struct bt_thread_build *b,
		      uint32_t kind, int error, uint64_t offset, uint64_t ip,
		      uint64_t bytes, const char *reason);

/* pt.c / bts.c: decode one buffer into @b (blocks and gaps). */
int bt_pt_decode(struct bt_ctx *c, const struct btrace_buffer *buf,
		 struct bt_thread_build *b);
int bt_bts_decode(struct bt_ctx *c, const struct btrace_buffer *buf,
		  struct bt_thread_build *b);

/* analyze.c: incremental analysis of each item (called by thread.c, which
 * it never calls), then the fault, the stack, depths and symbols of what
 * was kept. */
int bt_walk_begin(struct bt_ctx *c, struct bt_thread_build *b);
int bt_walk_item(struct bt_ctx *c, struct bt_thread_build *b,
		 struct btrace_block *it, uint64_t index);
/* The same for an item known to be a BTRACE_ITEM_BLOCK. */
int bt_walk_block(struct bt_ctx *c, struct bt_thread_build *b,
		  struct btrace_block *it, uint64_t index);
void bt_walk_end(struct bt_thread_build *b);
/* The fault: which item it is (*@fault_item, -1: none or not an item),
 * and which saved stack goes with it (0 the live stack at the end, 1 at
 * the last ITEM_ASYNC, 2 at the signal episode's first delivery). */
int bt_analyze_fault(struct bt_ctx *c, struct bt_thread_build *b,
		     int64_t *fault_item);
/* Then (the window settled: call entries' first_block are indices in
 * blocks[]) the stack of @which, depths, symbols and the fault's details. */
int bt_analyze_finish(struct bt_ctx *c, struct bt_thread_build *b, int which,
		      int64_t fault_item);
/* thread.c, hold: the fault is item @fault_item (-1: an item added after
 * the last); sets the thread's omitted_* (or drops a prefix frozen for
 * another item) */
void bt_thread_hold_end(struct bt_thread_build *b, int64_t fault_item);
/* Index in blocks[] of item @x once the decode is done (0: before the
 * window; nblocks: omitted) */
uint64_t bt_thread_position(const struct bt_thread_build *b, uint64_t x);
/* The window of calls[]: drop old entries before the walker appends one
 * (inline: the walker, which calls nothing in thread.c, does it). */
static inline void bt_thread_compact_calls(struct bt_thread_build *b)
{
	struct btrace_thread *t = b->t;

	if (!b->keep || b->unit != BTRACE_UNIT_CALLS || t->ncalls < b->calls_trigger)
		return;
	size_t k = t->ncalls - (size_t)b->keep;
	memmove(t->calls, t->calls + k, (t->ncalls - k) * sizeof(*t->calls));
	t->ncalls -= k;
	t->dropped_calls += k;
}

#endif /* BT_DECODE_INTERNAL_H */
