/* SPDX-License-Identifier: MIT */
/*
 * libbtrace-decode: turn a snapshot (include/btrace/snapshot.h) into the
 * path a program took before it stopped: blocks, the function-call history,
 * the call stack at the fault, symbols and source lines.
 *
 * Usage:
 *
 *	struct btrace_decode_opts o = { .sz = sizeof(o), .unit =
 *		BTRACE_UNIT_BLOCKS, .last = 64 };
 *	struct btrace_decode_result *r;
 *	if (btrace_decode(snap, &o, &r, &err) < 0) ...
 *	for (size_t i = 0; i < r->nthreads; i++) ... r->threads[i].blocks ...
 *	btrace_decode_result_free(r);
 *
 * Everything reachable from a result is owned by it; @snap must outlive it.
 * Unknown values are NULL (strings) or 0 (numbers: line 0 = unknown).
 */
#ifndef BTRACE_DECODE_H
#define BTRACE_DECODE_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/btrace.h>
#include <btrace/snapshot.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Unit of the history asked for with btrace_decode_opts.last. */
enum btrace_unit {
	BTRACE_UNIT_BLOCKS = 0,   /* default */
	BTRACE_UNIT_CALLS = 1,    /* entries of the function-call history */
	BTRACE_UNIT_INSNS = 2,    /* instructions */
};

/* Decode flags. */
#define BTRACE_DECODE_FULL      0x1u  /* decode every buffer from its start */
#define BTRACE_DECODE_NO_DISK   0x2u  /* never read code from disk files */
#define BTRACE_DECODE_NO_SYMS   0x4u  /* no symbol lookup (libdw) */
#define BTRACE_DECODE_ALL_NOTES 0x8u  /* image_notes: every executable mapping
				       * without code, also those the trace
				       * never entered */
#define BTRACE_DECODE_NO_DEMANGLE 0x10u /* C++ names as in the symbol
				       * table (the CLI: BTRACE_NO_DEMANGLE) */

struct btrace_decode_sink;

struct btrace_decode_opts {
	size_t sz;                 /* sizeof(struct btrace_decode_opts): the
				    * size policy of btrace.h */
	uint64_t last;             /* history wanted, in @unit; 0: everything
				    * (same as BTRACE_DECODE_FULL) */
	uint32_t unit;             /* enum btrace_unit */
	uint32_t flags;            /* BTRACE_DECODE_* */
	int32_t tid;               /* only this thread's buffers; 0: all */
	uint32_t reserved;
	const char *debug_dir;     /* separate debug info root; NULL:
				    * /usr/lib/debug (.build-id/xx/yyyy.debug) */
	const char *search_dir;    /* directory of the snapshot: binaries and
				    * debug files are looked for there first
				    * (by file name or .build-id/); NULL: none.
				    * See docs/report.md, "Finding binaries" */
	uint64_t keep;             /* keep only the end of the history in the
				    * result: at least @keep units (@unit) of
				    * blocks and of calls; older entries are
				    * dropped while decoding (bounded memory).
				    * 0: keep everything (with @sink: a
				    * bounded window of 4096 units) */
	const struct btrace_decode_sink *sink;  /* stream every thread's whole
				    * history to it while decoding; NULL:
				    * none (struct btrace_decode_sink) */
	const char *debug_path;    /* more directories, colon-separated,
				    * where binaries and debug files are
				    * looked for by build ID, after
				    * @search_dir (the CLI passes
				    * BTRACE_DEBUG_PATH); NULL: none.  The
				    * library reads no environment. */
	size_t :0;
};

/* A symbolised address.  Strings are owned by the result. */
struct btrace_symbol {
	const char *module;        /* path of the mapped file, "[vdso]", ... */
	const char *function;      /* innermost function (an inlined one when
				    * the address is in inlined code) */
	uint64_t offset;           /* address - start of the (outer) function */
	const char *file;          /* source file */
	int line;                  /* source line, 0 unknown */
	const char *outer;         /* the real (not inlined) function; equals
				    * @function outside inlined code */
	uint64_t module_offset;    /* address - load bias of @module */
};

/* Gaps: places where the history has a hole. */
enum btrace_gap_kind {
	BTRACE_GAP_UNUSABLE = 1,   /* bytes before the first sync point */
	BTRACE_GAP_OVERFLOW = 2,   /* the hardware dropped trace */
	BTRACE_GAP_DECODE = 3,     /* decode error: resynced at the next PSB */
	BTRACE_GAP_NOIMAGE = 4,    /* no code for an address */
	BTRACE_GAP_KERNEL = 5,     /* kernel code (not traced/decoded) */
	BTRACE_GAP_LOST = 6,       /* the capture recorded lost data */
	BTRACE_GAP_TRUNCATED = 7,  /* history starts here: older trace not decoded */
};

struct btrace_gap {
	uint32_t kind;             /* enum btrace_gap_kind */
	int32_t error;             /* negative BTRACE_ERR_* or 0 */
	uint64_t offset;           /* trace offset (bytes) where it happened */
	uint64_t ip;               /* last known IP, 0 unknown */
	uint64_t bytes;            /* trace bytes lost or skipped, 0 unknown */
	const char *reason;        /* one line, owned by the result */
};

/* Entry kinds of the block list. */
enum btrace_item_kind {
	BTRACE_ITEM_BLOCK = 0,     /* straight-line instructions, up to a
				    * branch, a call, a jump or an event */
	BTRACE_ITEM_GAP = 1,       /* a hole: gap index in @gap */
	BTRACE_ITEM_ASYNC = 2,     /* interrupted at @ip (signal, fault) */
	BTRACE_ITEM_FAR = 3,       /* left user space at @ip (syscall), back
				    * at @end_ip */
	BTRACE_ITEM_ENABLED = 4,   /* tracing (re)started at @ip */
	BTRACE_ITEM_FAULT = 5,     /* the fault at @ip: did not complete */
};

/* Class of the last instruction of a block. */
enum btrace_insn_class {
	BTRACE_INSN_OTHER = 0,
	BTRACE_INSN_JCC = 1,
	BTRACE_INSN_JMP = 2,       /* direct */
	BTRACE_INSN_JMP_IND = 3,
	BTRACE_INSN_CALL = 4,      /* direct */
	BTRACE_INSN_CALL_IND = 5,
	BTRACE_INSN_RET = 6,
	BTRACE_INSN_FAR = 7,       /* syscall, int, iret, ... */
	BTRACE_INSN_UNKNOWN = 8,   /* no code to look at */
};

struct btrace_block {
	uint32_t kind;             /* enum btrace_item_kind */
	uint32_t gap;              /* BTRACE_ITEM_GAP: index in thread gaps */
	uint64_t ip;               /* first instruction */
	uint64_t end_ip;           /* last instruction */
	uint64_t offset;           /* trace offset near which it was decoded */
	uint32_t ninsn;
	uint8_t iclass;            /* enum btrace_insn_class of the last insn */
	uint8_t end_size;          /* size of the last instruction, 0 unknown */
	uint16_t reserved;
	int32_t depth;             /* relative call depth (compare within a
				    * thread; calls[].depth is normalised) */
	const struct btrace_symbol *sym;  /* of @ip (never NULL for blocks) */
	uint64_t time_ns;          /* when @ip ran, in nanoseconds of the
				    * snapshot's clock (one clock for all
				    * threads); 0: unknown */
	uint32_t time_flags;       /* BTRACE_TIME_* */
	uint32_t reserved2;
};

/* How a time_ns was obtained (0 with time_ns 0: unknown). */
#define BTRACE_TIME_PACKET       0x1u /* a timing packet right before it */
#define BTRACE_TIME_INTERPOLATED 0x2u /* between two timing packets, by
				       * instruction count */
#define BTRACE_TIME_AFTER        0x4u /* after the thread's last timing
				       * packet: it ran at time_ns or later
				       * (a lower bound, nothing after it) */

/* Flags of call-history entries and stack frames. */
#define BTRACE_CALL_PARTIAL   0x1u  /* entered before the history started */
#define BTRACE_CALL_TAILCALL  0x2u  /* entered by a jump (tail call) */
#define BTRACE_CALL_SIGNAL    0x4u  /* a signal handler (entered async) */
#define BTRACE_CALL_GAP       0x8u  /* this entry is a gap (see @gap) */
#define BTRACE_CALL_INLINE    0x10u /* stack: an inline frame */
#define BTRACE_CALL_UNWOUND   0x20u /* entered by longjmp/exception unwind */
#define BTRACE_CALL_PLT       0x40u /* entered through a PLT stub or the lazy
				     * binding resolver (a trampoline jump,
				     * not a tail call) */

/* One entry of the function-call history: a run of blocks in one function
 * at one depth (gdb's record function-call-history). */
struct btrace_call {
	int32_t depth;             /* >= 0, indentation */
	uint32_t flags;            /* BTRACE_CALL_* */
	uint64_t ip;               /* first address of the function run in
				    * the entry (BTRACE_CALL_PLT: the function
				    * the stub at blocks[first_block] went to) */
	uint64_t end_ip;           /* last instruction executed */
	uint64_t first_block;      /* index in the thread's blocks (0 when it
				    * started before the first kept block) */
	uint64_t nblocks;
	uint64_t ninsn;
	uint32_t gap;              /* BTRACE_CALL_GAP: index in gaps */
	uint32_t reserved;
	const struct btrace_symbol *sym;  /* of @ip; NULL for gaps */
	uint64_t time_ns;          /* when the entry's first block ran
				    * (btrace_block.time_ns), 0 unknown */
	uint64_t end_time_ns;      /* when its last block ran, 0 unknown */
	uint32_t time_flags;       /* BTRACE_TIME_* of time_ns */
	uint32_t reserved2;
};

/* One frame of the call stack at the fault, innermost first. */
struct btrace_frame {
	uint64_t ip;               /* frame 0: the fault; others: the call */
	uint32_t flags;            /* BTRACE_CALL_* */
	uint32_t reserved;
	struct btrace_symbol sym;
};

struct btrace_fault {
	int found;                 /* 0: no fault in this thread */
	int exact;                 /* 1: the faulting instruction is exact;
				    * 0: only the block/area is known */
	uint64_t ip;
	const char *how;           /* "registers", "trace: async disable", ... */
	struct btrace_symbol sym;
	char insn[96];             /* disassembly, "" unknown */
	uint8_t bytes[16];
	uint32_t size;             /* instruction size, 0 unknown */
	uint64_t block_index;      /* blocks[0, block_index) ran before the
				    * fault; blocks[block_index] is the
				    * ITEM_ASYNC/ITEM_FAULT entry marking it;
				    * blocks after it ran after the fault (a
				    * signal handler) */
	uint32_t kind;             /* enum btrace_fault_kind */
	uint32_t reserved;
	/* !exact: the faulting instruction is one of [block_ip,
	 * block_end_ip] (straight-line code, the last one a branch or the
	 * last known); @ip is then block_ip.  0: not known. */
	uint64_t block_ip;
	uint64_t block_end_ip;
	struct btrace_symbol block_end_sym;
	/* Where the thread was when it died, when that is not the fault (a
	 * handler ran after it): 0 unknown or the same. */
	uint64_t death_ip;
	const char *death_how;     /* "registers at the signal", ... */
	struct btrace_symbol death_sym;
	uint64_t after_blocks;     /* blocks that ran after the fault */
};

/* btrace_fault.kind */
enum btrace_fault_kind {
	BTRACE_FAULT_KIND_FAULT = 0,  /* an instruction faulted (or nothing
				       * says otherwise) */
	BTRACE_FAULT_KIND_SENT = 1,   /* the signal was sent (kill, tkill,
				       * raise, abort: si_code <= 0) and no
				       * fault led to it: @ip is where the
				       * thread was, nothing faulted there */
};

struct btrace_thread {
	int32_t tid;               /* -1 for a per-CPU buffer */
	int32_t cpu;               /* -1 for a per-task buffer */
	int crashed;               /* received the fatal signal */
	uint32_t kind;             /* enum btrace_trace_kind */

	/* History: what was decoded against what was asked for. */
	uint64_t buffer_bytes;     /* bytes in the snapshot's buffer */
	uint64_t decoded_bytes;    /* bytes of trace behind the history */
	uint64_t requested_bytes;  /* history the capture asked for */
	uint64_t unusable_bytes;   /* bytes before the first sync point */
	uint64_t ninsn;            /* instructions in the blocks */
	int complete;              /* no gap, and no history cut short */
	int truncated;             /* tail-only: older trace not decoded */

	struct btrace_block *blocks;  /* oldest first (gaps included) */
	size_t nblocks;
	struct btrace_call *calls;    /* oldest first */
	size_t ncalls;
	struct btrace_frame *stack;   /* at the end of the trace, innermost first */
	size_t nstack;
	struct btrace_gap *gaps;
	size_t ngaps;

	struct btrace_fault fault;

	uint64_t dropped_blocks;   /* entries dropped before blocks[0]
				    * (btrace_decode_opts.keep) */
	uint64_t dropped_calls;    /* entries dropped before calls[0] */

	/* A long path after the fault (a signal handler that went on, with
	 * btrace_decode_opts.keep) is not kept whole: its first and its last
	 * entries are.  blocks[omit_block_at] comes omitted_blocks entries
	 * after blocks[omit_block_at - 1]; the same for calls[] (the entries
	 * left out: omitted_calls, the least depth among them
	 * omitted_min_depth, normalised as calls[].depth).  A kept call that
	 * started in the omitted part has first_block == nblocks.  All 0:
	 * nothing omitted (the fault is then never before the omitted part:
	 * fault.block_index < omit_block_at, fault.after_blocks counts the
	 * omitted blocks too). */
	uint64_t omitted_blocks;
	uint64_t omitted_calls;
	size_t omit_block_at;
	size_t omit_call_at;
	int32_t omitted_min_depth;
};

struct btrace_decode_result {
	uint32_t backend;          /* enum btrace_backend */
	uint32_t kind;             /* enum btrace_trace_kind */
	int32_t pid;
	int32_t reserved;
	const char *command;       /* comm or exe of the process, may be NULL */
	const struct btrace_signal *signal;  /* NULL: no signal recorded */
	const char *signal_name;   /* "SIGSEGV", NULL if none */

	struct btrace_thread *threads;  /* the crashed thread first */
	size_t nthreads;
	int crashed_thread;        /* index in threads, -1 if none */

	char **image_notes;        /* missing or stale code, one line each */
	size_t nimage_notes;

	/* Time (the trace's timing packets, docs/format.md "Time"): the clock
	 * every time_ns is in, "CLOCK_MONOTONIC" (the QEMU backend) or "perf"
	 * (the kernel's perf clock: hardware PT); NULL: the trace has no
	 * time, every time_ns is 0. */
	const char *clock;
	/* Where the timing packets are, as the snapshot says (one line),
	 * NULL unknown: what the times between them are interpolated over. */
	const char *time_steps;
};

/**
 * @brief Decode the trace buffers of a snapshot.
 *
 * Builds the image from the snapshot's mappings and embedded code (a file on
 * disk is used only when its build ID matches), decodes each buffer (or only
 * its tail when @opts->last is set), finds the fault and reconstructs the
 * call stack, the call history and symbols.  Gaps never fail the call: they
 * are reported in the result.  @opts may be NULL.
 *
 * @return 0 and *@out, or a negative error code with @err filled.
 */
BTRACE_API int btrace_decode(const struct btrace_snapshot *snap,
			     const struct btrace_decode_opts *opts,
			     struct btrace_decode_result **out,
			     struct btrace_error *err);

/*
 * Streaming: the whole history of a thread, item by item, in bounded memory.
 *
 * With btrace_decode_opts.sink, every decode of a thread's buffer calls
 * begin(), then item() for every item of its history and call() for every
 * entry of its call history, each oldest first and once it is final (a call
 * entry when the next one began, or at the end), then end() when the thread
 * has been analysed (the fault, the stack).  The result itself keeps only a
 * bounded window (opts.keep).  A tail-only decode (opts.last) may decode a
 * buffer more than once, from further back each time: each attempt starts
 * with begin() and replaces what the sink was given before for the thread.
 * btrace_decode_thread() streams one thread of a result again, the same way.
 *
 * @t is the thread being decoded (tid, cpu, crashed, kind; its gaps[] hold
 * every gap an item refers to; fault and stack are set at end() only).
 * Indices are those of the whole history: @index is the index blocks[]
 * would have with keep 0, the same in every decode of the thread.  A call
 * entry's first_block is such an index and @first that item (NULL for a
 * gap entry); its depth is relative (compare within the thread: calls[]
 * of a result are normalised, streamed entries are not).  Symbols are set
 * (item sym, call sym) unless the sink asks for none.  A callback
 * returning a negative value stops the decode with that error.
 */
#define BTRACE_SINK_NO_SYMS 0x1u   /* leave sym NULL (faster) */

struct btrace_decode_sink {
	size_t sz;                 /* sizeof(struct btrace_decode_sink): the
				    * size policy of btrace.h (the decode
				    * keeps a copy) */
	uint32_t flags;            /* BTRACE_SINK_* */
	uint32_t reserved;
	void *arg;
	int (*begin)(void *arg, const struct btrace_thread *t);
	int (*item)(void *arg, const struct btrace_thread *t,
		    const struct btrace_block *b, uint64_t index);
	int (*call)(void *arg, const struct btrace_thread *t,
		    const struct btrace_call *c, uint64_t index,
		    const struct btrace_block *first);
	/* @fault_item: index of the item marking t->fault (the one
	 * fault.block_index gives with keep 0); UINT64_MAX: no fault */
	int (*end)(void *arg, const struct btrace_thread *t, uint64_t fault_item);
	size_t :0;
};

/**
 * @brief Stream thread @i of @res again to @sink (begin, items, calls, end:
 * once), decoding its buffer the way btrace_decode() did (from the same
 * start, with the same options).  @res is not changed; the snapshot it was
 * decoded from must still be alive.  Memory stays bounded whatever the
 * length of the history.
 * @return 0, or a negative error code with @err filled.
 */
BTRACE_API int btrace_decode_thread(struct btrace_decode_result *res, size_t i,
				    const struct btrace_decode_sink *sink,
				    struct btrace_error *err);

/** @brief Free a result; NULL is allowed. */
BTRACE_API void btrace_decode_result_free(struct btrace_decode_result *res);

/* One disassembled instruction. */
struct btrace_insn {
	uint64_t ip;
	uint32_t size;             /* 0: no code for @ip */
	uint32_t reserved;
	uint8_t bytes[16];
	char text[96];             /* "mov eax, dword ptr [rdx]"; "(bad) 62 b2 ..."
				    * when capstone cannot disassemble it
				    * (the size is then libipt's) */
	struct btrace_symbol sym;
};

/**
 * @brief The instructions of a block, disassembled (capstone).
 *
 * Fills up to @n entries of @out for the block @blk of @res.
 * @return the number of instructions the block has (may be > @n), or a
 * negative error code.
 */
BTRACE_API int btrace_decode_block_insns(struct btrace_decode_result *res,
					 const struct btrace_block *blk,
					 struct btrace_insn *out, size_t n);

/** @brief Symbolise an address with the result's image and debug info. */
BTRACE_API int btrace_decode_symbolize(struct btrace_decode_result *res,
				       uint64_t ip, struct btrace_symbol *out);

/** @brief Name of a gap kind ("overflow", ...). */
BTRACE_API const char *btrace_gap_kind_name(uint32_t kind);

/**
 * @brief "SIGSEGV" for 11; "SIGIO" for 29 (btrace_signal_str() of libbtrace
 * says "SIGPOLL", the C library's name; the table is shared); NULL for 0,
 * negative numbers and real-time signals.
 */
BTRACE_API const char *btrace_signal_name(int signo);

#ifdef __cplusplus
}
#endif

#endif /* BTRACE_DECODE_H */
