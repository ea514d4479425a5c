/* SPDX-License-Identifier: MIT */
/*
 * Recording: launch a program (or attach to a process) with a flight
 * recorder running, and write a snapshot when it dies.
 */
#ifndef BTRACE_RECORD_H
#define BTRACE_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/btrace.h>
#include <btrace/snapshot.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Which events trigger a snapshot (bit = 1 << signal number, plus EXIT). */
#define BTRACE_ON_SIGNAL(sig) (1ull << (sig))
#define BTRACE_ON_EXIT (1ull << 63)  /* every exit, normal ones included */
/* SEGV, BUS, ILL, FPE, ABRT, TRAP, SYS. */
#define BTRACE_ON_DEFAULT                                                     \
	(BTRACE_ON_SIGNAL(11) | BTRACE_ON_SIGNAL(7) | BTRACE_ON_SIGNAL(4) |   \
	 BTRACE_ON_SIGNAL(8) | BTRACE_ON_SIGNAL(6) | BTRACE_ON_SIGNAL(5) |    \
	 BTRACE_ON_SIGNAL(31))

/* Record flags. */
#define BTRACE_RECORD_NO_PTRACE 0x1u  /* passive crash watch */
#define BTRACE_RECORD_QUIET     0x2u  /* no summary line on stderr */
#define BTRACE_RECORD_NO_CODE   0x4u  /* do not embed code in snapshots */
#define BTRACE_RECORD_KEEP_CORE 0x8u  /* keep a guest core next to the snapshot */

struct btrace_record_opts {
	size_t sz;                 /* sizeof(struct btrace_record_opts) */
	uint32_t backend;          /* enum btrace_backend; 0 = auto */
	uint32_t trace_kind;       /* enum btrace_trace_kind for the software
				    * backend (PT default, or BTS); 0 = default */
	char *const *argv;         /* program to launch (NULL with @pid) */
	int pid;                   /* process to attach to (0 to launch) */
	const char *output;        /* snapshot path; NULL: btrace-<comm>-<pid>.btrace */
	uint64_t size;             /* history per thread in bytes; 0 = default */
	uint64_t pad;              /* extra room after the fault; 0 = default */
	uint64_t on;               /* BTRACE_ON_* mask; 0 = BTRACE_ON_DEFAULT */
	uint32_t flags;            /* BTRACE_RECORD_* */
	const char *sysfs_root;    /* NULL: /sys */
	size_t :0;
};

struct btrace_record_result {
	int exit_status;           /* the program's wait status, -1 if it did
				    * not run (or has not ended) */
	int shell_status;          /* status a shell would report: code or 128+sig */
	int snapshots;             /* number of snapshot files written */
	char snapshot_path[4096];  /* the last snapshot written, "" if none */
	uint32_t backend;          /* the backend used */
};

/**
 * @brief Run a recording to its end.
 *
 * Launches @opts->argv (or attaches to @opts->pid), traces it with the chosen
 * backend, and writes a snapshot when a selected event happens.  Returns 0
 * when the recording ran (whatever the program's own fate, which is in
 * @res), a negative error code with @err filled when it could not.
 */
BTRACE_API int btrace_record(const struct btrace_record_opts *opts,
			     struct btrace_record_result *res,
			     struct btrace_error *err);

#ifdef __cplusplus
}
#endif

#endif /* BTRACE_RECORD_H */
