/* SPDX-License-Identifier: MIT */
/*
 * libbtrace-decode: the report model.  The crash analysis of a decoded
 * snapshot, computed once: the signal and its si_code name, the cause (a
 * stack overflow), what ended the process, the limits of what is known, a
 * program exec'd outside the emulator, and per thread where the history
 * before the fault ends.  Every output of `btrace report` (text, JSON, and
 * those to come) renders this; none reads snapshot metadata itself.
 *
 * Usage:
 *
 *	struct btrace_decode_result *r;     (btrace_decode())
 *	struct btrace_report *rep;
 *	if (btrace_report_build(snap, r, &rep, &err) < 0) ...
 *	if (rep->cause.kind) puts(rep->cause.text);
 *	... rep->threads[i].thread->stack ...
 *	btrace_report_free(rep);
 *
 * A report points into @snap and @res (threads, symbols, strings): both
 * must outlive it.  Everything else is owned by the report.
 */
#ifndef BTRACE_REPORT_H
#define BTRACE_REPORT_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/btrace.h>
#include <btrace/decode.h>
#include <btrace/snapshot.h>
#include <btrace/values.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A signal as the report shows it. */
struct btrace_report_signal {
	int32_t number;            /* 0: not known (a final signal by name) */
	int32_t code;              /* si_code, or BTRACE_SIGCODE_UNKNOWN */
	const char *name;          /* "SIGSEGV", NULL when not known */
	const char *code_name;     /* "SEGV_MAPERR", NULL when not known */
	uint64_t address;          /* si_addr */
	int has_address;           /* @address means something: a fault
				    * (si_code > 0) of SIGSEGV or SIGBUS */
	int32_t sender_pid;        /* who sent it (si_code <= 0), 0 unknown */
};

/* enum btrace_report.cause.kind */
enum btrace_cause_kind {
	BTRACE_CAUSE_NONE = 0,
	BTRACE_CAUSE_STACK_OVERFLOW = 1,  /* a SIGSEGV/SIGBUS just below (or at)
					   * the stack pointer, unmapped */
};

/* enum btrace_report.end: where the history ends. */
enum btrace_report_end {
	BTRACE_END_FAULT = 0,      /* a signal (or nothing says otherwise) */
	BTRACE_END_EXIT = 1,       /* a snapshot at an exit, no signal */
	BTRACE_END_REQUEST = 2,    /* an on-demand snapshot */
};

/* One known limit of the report: "fault-not-exact", "threads-untraced",
 * and the capture's (snapshot metadata limit.NAME). */
struct btrace_report_limit {
	const char *name;
	const char *text;
};

/* Per thread: where its history before the fault ends. */
struct btrace_report_thread {
	const struct btrace_thread *thread;  /* in the decode result */
	size_t blocks_end;         /* blocks[0, blocks_end) ran before the
				    * fault (nblocks when there is none) */
	size_t calls_end;          /* calls[0, calls_end) began before it */
	int fault_in_block;        /* the faulting instruction is not known,
				    * only the block holding it
				    * (fault.block_ip..block_end_ip) */
	int went_on;               /* something ran after the fault before
				    * the death (a signal handler) */
};

/* enum btrace_report_event.kind */
enum btrace_event_kind {
	BTRACE_EVENT_START = 1,    /* the kept history of a thread starts
				    * (or resumes after a gap) in a function */
	BTRACE_EVENT_CALL = 2,     /* a function entered: deeper than the
				    * entry before, or at its depth by a
				    * jump (tail call, PLT stub) */
	BTRACE_EVENT_RETURN = 3,   /* back in a caller */
	BTRACE_EVENT_SYSCALL = 4,  /* left user space (a system call) */
	BTRACE_EVENT_GAP = 5,      /* a hole in the history */
	BTRACE_EVENT_FAULT = 6,    /* the fault */
	BTRACE_EVENT_SIGNAL = 7,   /* a signal sent (no fault): where the
				    * thread was */
};

/* One event of the cross-thread timeline. */
struct btrace_report_event {
	uint32_t kind;             /* enum btrace_event_kind */
	uint32_t time_flags;       /* BTRACE_TIME_* of @time_ns */
	uint64_t time_ns;          /* when (btrace_block.time_ns), 0 unknown */
	uint64_t ip;               /* the function entered, the system call,
				    * the fault; 0 for a gap */
	const struct btrace_report_thread *thread;
	const struct btrace_symbol *sym;   /* of @ip, NULL: none (a gap) */
	const struct btrace_call *call;    /* the call entry (START, CALL,
					    * RETURN, GAP), else NULL */
	const struct btrace_block *block;  /* the block (SYSCALL), else NULL */
	uint64_t seq;              /* its place in the thread: instructions
				    * of the kept history before it */
};

/* What ended the process (set when the crashed thread has a fault). */
struct btrace_report_death {
	int known;                 /* 0: no fault in a crashed thread; the
				    * rest is 0 */
	int has_signal;            /* @signal holds the signal that ended it */
	struct btrace_report_signal signal;
	int has_exit_code;         /* it exited (QEMU: "exit N") */
	int exit_code;
	int after_fault;           /* a handler went on after the fault: where
				    * it died is the crashed thread's
				    * fault.death_* (death_ip 0: not known) */
};

struct btrace_report {
	size_t sz;                 /* sizeof(struct btrace_report) */
	const struct btrace_snapshot *snap;
	const struct btrace_decode_result *decode;

	int has_signal;            /* a signal was recorded: @signal */
	struct btrace_report_signal signal;
	const char *exit_status;   /* no signal: the recorded exit status */
	struct {
		uint32_t kind;     /* enum btrace_cause_kind */
		const char *name;  /* "stack_overflow", NULL: none */
		const char *text;  /* one line, NULL: none */
	} cause;
	const char *native_exec;   /* QEMU: a program exec'd natively (not
				    * traced): the trace ends at its execve();
				    * NULL: none */
	uint32_t end;              /* enum btrace_report_end */
	const char *end_words;     /* "the fault", "the exit", "the request" */
	const char *final_signal;  /* QEMU: what ended the process after the
				    * fault ("SIGABRT", "exit 3"), NULL: the
				    * recorded signal did */
	struct btrace_report_death death;
	struct btrace_report_limit *limits;
	size_t nlimits;
	/* The signal was sent from outside the process and no fault led to
	 * it: where every thread was is the answer (show them all). */
	int sent_from_outside;

	const struct btrace_report_thread *crashed;  /* NULL: none */
	struct btrace_report_thread *threads;  /* as in decode->threads */
	size_t nthreads;

	/*
	 * The timeline: every thread's events of the kept history before the
	 * fault (calls, returns, system calls, gaps) and the fault, oldest
	 * first, ending at the fault.  @timeline_timed 1: every thread
	 * with events has times: sorted by time across threads (an event
	 * whose time is not known, a gap or one before its thread's first
	 * timing packet, stays after the event before it in its thread, or
	 * first), and events of other threads after the fault are left out.
	 * 0: a thread has no time at all (a trace without timing packets),
	 * so the order across threads is not known: each thread's events in
	 * its own order, the threads one after another (the crashed thread
	 * last).
	 */
	struct btrace_report_event *timeline;
	size_t ntimeline;
	int timeline_timed;
	/* Why the faulting instruction's operand had its value (values.h):
	 * the register, its value, the instructions that produced it.
	 * NULL: not known (no exact fault with its registers, no register
	 * operand).  @values: the values along the crashed thread's last
	 * instructions it comes from (NULL with it). */
	const struct btrace_origin *origin;
	const struct btrace_values *values;
	size_t :0;
};

/**
 * @brief Compute the crash analysis of @res, decoded from @snap.
 * @return 0 and *@out (free it with btrace_report_free()), or a negative
 * error code with @err filled.
 */
BTRACE_API int btrace_report_build(const struct btrace_snapshot *snap,
				   const struct btrace_decode_result *res,
				   struct btrace_report **out,
				   struct btrace_error *err);

/**
 * @brief The time of a block or call entry (@time_ns with its
 * BTRACE_TIME_* @flags, decode.h) as the report counts it: @time_ns when
 * @flags says how it was obtained (PACKET, INTERPOLATED or AFTER, one of
 * them, no other bit), else 0, not known.  All three are within one
 * step between timing packets of the true time (the result's
 * time_steps); AFTER is a lower bound within it.  Every output takes
 * times through this rule.
 */
BTRACE_API uint64_t btrace_time_known(uint64_t time_ns, uint32_t flags);

/** @brief "call", "return", "syscall", "gap", "fault", ...; NULL when
 * unknown. */
BTRACE_API const char *btrace_event_kind_name(uint32_t kind);

/** @brief Free a report; NULL is allowed. */
BTRACE_API void btrace_report_free(struct btrace_report *rep);

/** @brief "SEGV_MAPERR" for (11, 1), "SI_USER" for (any, 0); NULL when
 * unknown. */
BTRACE_API const char *btrace_signal_code_name(int signo, int code);

/**
 * @brief The name the report gives the function of @s: the function the
 * address is in (DWARF name, else the symbol without its version; the
 * outer one in inlined code), or with BTRACE_CALL_INLINE in @flags (an
 * inline frame) the inlined function.  NULL when not known.
 */
BTRACE_API const char *btrace_symbol_name(const struct btrace_symbol *s,
					  uint32_t flags);

/** @brief The PLT stub (or resolver) call entry @cl of @t went through:
 * its function name; NULL if none. */
BTRACE_API const char *btrace_call_via(const struct btrace_thread *t,
				       const struct btrace_call *cl);

#ifdef __cplusplus
}
#endif

#endif /* BTRACE_REPORT_H */
