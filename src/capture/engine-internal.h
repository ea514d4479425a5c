/* SPDX-License-Identifier: MIT */
/* State shared by engine.c (setup, loop, crash watch) and engine-snap.c. */
#ifndef BT_CAPTURE_ENGINE_INTERNAL_H
#define BT_CAPTURE_ENGINE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/types.h>

#include <btrace/record.h>
#include <btrace/snapshot.h>

#include "budget.h"
#include "engine.h"
#include "perf.h"
#include "registry.h"
#include "sbrings.h"
#include "sideband.h"
#include "snapbuild.h"

/* The last PERF_RECORD_AUX records of a buffer that flagged something
 * (truncated, partial, collision), with their place in the AUX stream. */
#define BT_AUX_MARKS 16
struct bt_aux_marks {
	uint64_t seen;            /* flagged records seen in all */
	struct {
		uint64_t offset, size, flags;
	} m[BT_AUX_MARKS];        /* the newest, m[seen % BT_AUX_MARKS] next */
};

/* A catch-all CPU ring is shared by the threads on that CPU: every stop of
 * a thread's event there (sched-out, disable) writes a PERF_RECORD_AUX with
 * the ring offset reached and, through sample_id, the thread and time.
 * The slices between those offsets are that thread's trace. */
struct bt_slice {
	uint64_t head;            /* ring offset at the stop (aux_offset) */
	uint64_t time;
	int32_t tid;
};
#define BT_SLICES_MAX 65536
struct bt_cpu_slices {
	struct bt_slice *v;
	size_t n, cap;
	uint64_t dropped;         /* oldest ones forgotten (BT_SLICES_MAX) */
	bool lost_before;         /* a PERF_RECORD_LOST since the last one:
				   * the next slice may hold the bytes of
				   * threads whose records were lost */
	uint64_t unknown;         /* slices given no owner for that */
};

struct bt_tev {
	pid_t tid;
	bool per_task;            /* own buffer, else on the per-CPU rings */
	struct bt_perf_ring ring; /* per-task: the event and its rings */
	int *cpu_fds;             /* catch-all: one event per CPU */
	uint32_t flags;           /* BTRACE_BUF_* seen in its data ring */
	uint64_t lost;            /* trace bytes known lost (none so far) */
	uint64_t records_lost;    /* PERF_RECORD_LOST: data-ring records */
	struct bt_aux_marks marks;
	bool exited;
	bool fresh;               /* a new ptrace-attached thread, not yet resumed */
};

/* A thread that has no trace event: recorded in the snapshot as a limit. */
struct bt_untraced {
	pid_t tid;
	char why[240];
};

struct bt_engine {
	const struct bt_engine_opts *o;
	const struct btrace_record_opts *rec;
	struct btrace_record_result *res;
	pid_t pid;
	bool launched;
	bool precise;
	char mode_why[256];         /* why passive, if passive */
	char comm[32];
	struct bt_sideband sb;
	struct bt_sb_rings sbr;
	struct bt_tev *tevs;
	size_t ntev, ctev;
	struct bt_untraced *untraced;
	size_t nuntraced, cuntraced;
	int ncpus;
	int *cpus;
	struct bt_perf_ring *cpu_rings;   /* catch-all rings, per CPU */
	uint32_t *cpu_flags;
	uint64_t *cpu_records_lost;
	struct bt_aux_marks *cpu_marks;
	struct bt_cpu_slices *cpu_slices;
	bool cpu_rings_open;
	struct bt_budget_env env;
	struct bt_budget_state st;
	struct bt_plan plan;
	bool allow_shrink;
	uint8_t *scratch;
	struct bt_registry_owner *reg;
	int pidfd;
	bool snapshotted;           /* the crash snapshot is written */
	bool have_fault;
	struct btrace_signal fault; /* the last synchronous fault seen */
	int ondemand;
	char output[4096];
	struct bt_snapbuild snap;       /* the last snapshot built: its path
					 * and counts, for the summary */
	char gap[512];              /* handover note for the trace */
	uint64_t t0;
	bool done;
	bool can_take_over;         /* a joiner may become the owner */
	char no_take_over_why[768];
	pid_t prev_owner;           /* the owner this process took over from */
	int exit_status;
	int sigfd;                  /* signalfd of SIGCHLD: ptrace stops wake the loop */
	sigset_t old_mask;          /* the caller's mask, restored at the end */
	struct rlimit old_nofile;   /* the caller's RLIMIT_NOFILE */
	bool nofile_raised;
	uint64_t disable_ns;        /* precise: from the stop read to every
				     * event disabled (capture.disable_ns) */
};

/* Open the trace event(s) of thread @tid: per-task while the budget allows,
 * else on the catch-all per-CPU rings.  On failure nothing of the thread is
 * left open and no ring refers to its descriptors. */
int bt_engine_open_thread(struct bt_engine *e, pid_t tid, bool enable_on_exec,
			  bool enable_now, struct btrace_error *err);

/* Open @tid's events on the catch-all rings (all CPUs or none). */
int bt_engine_open_catch_all(struct bt_engine *e, struct bt_tev *t,
			     bool enable_on_exec, struct btrace_error *err);

/* Handle a ptrace stop of @tid (@status from waitpid), resuming it. */
void bt_engine_handle_stop(struct bt_engine *e, pid_t tid, int status);

/* Set up / release the per-CPU state (CPUs, catch-all rings). */
int bt_engine_prepare(struct bt_engine *e, struct btrace_error *err);
void bt_engine_release(struct bt_engine *e);

/* Write a snapshot to @path. @sig may be NULL.  @alive: the process can
 * still be read (precise and on-demand). */
int bt_engine_write(struct bt_engine *e, const char *path, uint32_t mode,
		    const struct btrace_signal *sig, bool alive,
		    struct btrace_error *err);

/* Drain the trace events' data rings (AUX flags, lost records). */
void bt_engine_drain_trace(struct bt_engine *e);

void bt_engine_disable_all(struct bt_engine *e);
/* Disable every event but @tid's, then @tid's: the threads still running
 * stop overwriting their history (and a shared CPU ring's) first. */
void bt_engine_disable_siblings_first(struct bt_engine *e, pid_t tid);
void bt_engine_enable_all(struct bt_engine *e);

#endif /* BT_CAPTURE_ENGINE_INTERNAL_H */
