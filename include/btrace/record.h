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
#define BTRACE_RECORD_QUIET     0x2u  /* no summary messages to @log */
#define BTRACE_RECORD_NO_CODE   0x4u  /* do not embed code in snapshots */
#define BTRACE_RECORD_KEEP_CORE 0x8u  /* keep a guest core next to the snapshot */
#define BTRACE_RECORD_NO_MEMORY 0x10u /* store only the crashed thread's
				       * stack, not the process's data
				       * (btrace_record_opts.memory) */
#define BTRACE_RECORD_NO_ACCESSES 0x20u /* log no memory accesses
					 * (btrace_record_opts.accesses) */
/* The default of btrace_record_opts.memory, and its most. */
#define BTRACE_MEMORY_DEFAULT (8ull << 20)
#define BTRACE_MEMORY_MAX (128ull << 20)
/* The default of btrace_record_opts.accesses (records per thread), and
 * its most (a snapshot's "accesses" section holds no more). */
#define BTRACE_ACCESSES_DEFAULT 65536ull
#define BTRACE_ACCESSES_MAX 4194304ull

struct btrace_record_opts {
	size_t sz;                 /* sizeof(struct btrace_record_opts); the
				    * size policy of btrace.h */
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
	const char *sysfs_root;    /* NULL or "": /sys */
	btrace_log_fn log;         /* messages while recording; NULL: none
				    * (btrace.h says what it receives) */
	void *log_ctx;             /* passed to @log */
	uint64_t memory;           /* bytes of the process's data mappings
				    * stored at a fault besides the stack
				    * (docs/format.md, "memory"); 0 =
				    * BTRACE_MEMORY_DEFAULT, at most
				    * BTRACE_MEMORY_MAX; none with
				    * BTRACE_RECORD_NO_MEMORY */
	uint64_t accesses;         /* memory accesses logged per thread, the
				    * crashed thread's stored in the
				    * snapshot (docs/format.md, "accesses";
				    * the QEMU backend only: the hardware
				    * ones cannot see them), rounded up to a
				    * power of two; 0 =
				    * BTRACE_ACCESSES_DEFAULT, at most
				    * BTRACE_ACCESSES_MAX; none with
				    * BTRACE_RECORD_NO_ACCESSES */
	size_t :0;
};

struct btrace_record_result {
	size_t sz;                 /* set by the caller: sizeof(struct
				    * btrace_record_result); only that many
				    * bytes are written (btrace.h) */
	int exit_status;           /* the program's wait status, -1 if it did
				    * not run (or has not ended) */
	int shell_status;          /* status a shell would report: code or 128+sig */
	int snapshots;             /* number of snapshot files written */
	char snapshot_path[4096];  /* the last snapshot written, "" if none */
	uint32_t backend;          /* the backend used */
};

/*
 * The backends.  One table in libbtrace lists them in the order `auto`
 * tries them; record, doctor and the command line all read it, so a
 * backend is added in one place.
 */
#define BTRACE_BACKEND_F_AUTO     0x1u  /* `auto` may pick it */
#define BTRACE_BACKEND_F_HARDWARE 0x2u  /* perf hardware tracing: can attach
					 * (-p PID), be calibrated, take over
					 * a joined recording */
#define BTRACE_BACKEND_F_PROBED   0x4u  /* `auto` probes it and takes it when
					 * usable; the one `auto` backend
					 * without it is the last resort */

struct btrace_backend_desc {
	uint32_t id;               /* enum btrace_backend */
	uint32_t flags;            /* BTRACE_BACKEND_F_* */
	const char *name;          /* "pt": --backend NAME, btrace info */
	const char *label;         /* "Intel PT": in messages */
};

/**
 * @brief The @i-th backend of the table (from 0, in `auto` order), NULL
 * past the end.  The descriptors are the library's (static): never freed.
 */
BTRACE_API const struct btrace_backend_desc *btrace_backend_at(size_t i);

/** @brief The backend of id @id (enum btrace_backend), NULL if unknown. */
BTRACE_API const struct btrace_backend_desc *btrace_backend_by_id(uint32_t id);

/** @brief The backend called @name ("pt", "bts", "qemu"), NULL if none
 * ("auto" is not a backend: it is id BTRACE_BACKEND_UNKNOWN). */
BTRACE_API const struct btrace_backend_desc *
btrace_backend_by_name(const char *name);

/**
 * @brief Run a recording to its end.
 *
 * Launches @opts->argv (or attaches to @opts->pid), traces it with the chosen
 * backend, and writes a snapshot when a selected event happens.  Returns 0
 * when the recording ran (whatever the program's own fate, which is in
 * @res), a negative error code with @err filled when it could not.
 * @opts->sz and @res->sz follow the size policy of btrace.h; messages go
 * to @opts->log only.
 */
BTRACE_API int btrace_record(const struct btrace_record_opts *opts,
			     struct btrace_record_result *res,
			     struct btrace_error *err);

#ifdef __cplusplus
}
#endif

#endif /* BTRACE_RECORD_H */
