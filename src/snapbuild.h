/* SPDX-License-Identifier: MIT */
/*
 * The snapshot builder: what every backend's snapshot file shares.  A
 * backend begins a struct bt_snapbuild, feeds it its buffers, threads,
 * mappings and signal, and finishes it; the builder owns the parts that
 * must not differ between backends: the code copied from the process and
 * its files, the default file name, the standard metadata (host, kernel,
 * btrace version, time, command), writing the file, the summary line and
 * the names of signals (btrace_signal_str(), public).  The
 * lines of /proc/PID/maps are parsed by procmaps.h, build IDs read by
 * elf-buildid.h.
 */
#ifndef BT_SNAPBUILD_H
#define BT_SNAPBUILD_H

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include <btrace/snapshot.h>

/*
 * The default snapshot file name, "btrace-<comm>-<pid>.btrace", in @buf:
 * '/' and ' ' of @comm become '_' (at most 31 bytes of it are kept), and an
 * empty or NULL @comm is "process".
 */
void bt_snap_default_name(char *buf, size_t len, const char *comm, pid_t pid);

/*
 * The code of the executable mappings @maps of process @pid, into @w: the
 * vDSO (the process's when @alive, else btrace's own: the same kernel
 * gives the same image), anonymous executable memory (only while @alive),
 * and each file segment once (through /proc/PID/map_files while @alive,
 * else the path).  Code that cannot be read is left out: the decoder
 * reports it missing.  At most 64 MiB per mapping.
 */
int bt_snap_add_code(struct btrace_writer *w, pid_t pid,
		     const struct btrace_mapping *maps, size_t nmaps, bool alive,
		     struct btrace_error *err);

/*
 * The standard metadata of every snapshot, in this order: host, kernel
 * (uname), btrace_version, time (UTC, ISO 8601) and command: @argv joined
 * by spaces, or without @argv the command line of process @pid
 * (/proc/PID/cmdline) when it can still be read, else no command.
 */
int bt_snap_std_meta(struct btrace_writer *w, char *const *argv, pid_t pid,
		     struct btrace_error *err);

/*
 * The builder object every backend feeds.  bt_snapbuild_begin() opens the
 * file (@path, or without one the default name of @comm and @pid) and
 * writes @cfg; the backend then adds, in the order it wants them in the
 * file, its buffers, tasks, mappings, code, signal and metadata through the
 * bt_snapbuild_* calls below (each counts what the summary tells), and
 * bt_snapbuild_finish() makes the file appear under its name (fsync,
 * rename: btrace_writer_commit()).  After a failure, bt_snapbuild_abort()
 * removes the temporary file; after either, the builder holds nothing.
 * Every call reports its failure in the @err given to begin.
 */
struct bt_snapbuild {
	struct btrace_writer *w;
	struct btrace_error *err;
	char path[PATH_MAX];        /* where the file appears */
	/* With keep set before finish: a file at path changed at or after
	 * since (another crash of the recording, another recording) is kept
	 * and this one takes a new name (bt_writer_commit_keep()); path is
	 * then that name, and asked the one given. */
	int keep;
	struct timespec since;
	char asked[PATH_MAX];
	pid_t pid;
	/* the summary's facts, counted as the backend feeds */
	uint64_t bytes;             /* trace bytes of every buffer */
	uint64_t nbuffers, ntasks, nmaps, ncode;
	/* the stack window stored (bt_snapbuild_add_stack(), or the QEMU
	 * backend's from its core): [stack_lo, stack_hi), 0 0 when none */
	uint64_t stack_lo, stack_hi;
	uint64_t data_bytes;        /* bytes of the process-wide ranges */
};

/*
 * btrace_writer_commit(), except for what is at the file's name: one
 * changed before @since is replaced, one changed at or after it is kept and
 * the snapshot takes the first free name of NAME.1.EXT, NAME.2.EXT, ...
 * (never over a file that appears meanwhile: RENAME_NOREPLACE).  The name
 * the file got is in @final.
 */
int bt_writer_commit_keep(struct btrace_writer *w,
			  const struct timespec *since, char *final,
			  size_t len, struct btrace_error *err);

int bt_snapbuild_begin(struct bt_snapbuild *b, const char *path,
		       const char *comm, pid_t pid,
		       const struct btrace_config *cfg,
		       struct btrace_error *err);
/* A buffer whose bytes are in @buf (btrace_writer_add_buffer()). */
int bt_snapbuild_add_buffer(struct bt_snapbuild *b,
			    const struct btrace_buffer *buf);
/* A buffer read from ring @ring (btrace_writer_add_ring()); @size is the
 * number of trace bytes it holds, for the summary. */
int bt_snapbuild_add_ring(struct bt_snapbuild *b,
			  const struct btrace_buffer *buf, const void *ring,
			  uint64_t size);
int bt_snapbuild_add_task(struct bt_snapbuild *b, const struct btrace_task *t);
int bt_snapbuild_add_mapping(struct bt_snapbuild *b,
			     const struct btrace_mapping *m);
/* Mappings @maps, then with @code their code (bt_snap_add_code()). */
int bt_snapbuild_add_mappings(struct bt_snapbuild *b,
			      const struct btrace_mapping *maps, size_t nmaps,
			      bool code, bool alive);
int bt_snapbuild_add_code(struct bt_snapbuild *b, const struct btrace_code *c);
/* A thread's access log (btrace_writer_add_accesses()). */
int bt_snapbuild_add_accesses(struct bt_snapbuild *b,
			      const struct btrace_access_log *log);
/* A range of the process's memory (btrace_writer_add_memory()). */
int bt_snapbuild_add_memory(struct bt_snapbuild *b,
			    const struct btrace_memory *m);
/*
 * The crashed thread's stack stored at a fault (docs/format.md, "memory"):
 * BT_SNAP_STACK bytes around the stack pointer @sp in the mapping [@start,
 * @end) that holds it, a quarter below it (the frames that returned before
 * the fault, not yet overwritten) and the rest above; [*@lo, *@hi).
 */
#define BT_SNAP_STACK (64u << 10)
void bt_snap_stack_window(uint64_t sp, uint64_t start, uint64_t end,
			  uint64_t *lo, uint64_t *hi);
/* That window of the builder's live process stopped at the signal @sig
 * (registers known), in its writable mapping of /proc/PID/maps (the
 * sideband's mappings are the executable ones only), read from
 * /proc/PID/mem; nothing when it cannot be read. */
int bt_snapbuild_add_stack(struct bt_snapbuild *b,
			   const struct btrace_signal *sig);

/*
 * The process's other memory at a fault (docs/format.md, "memory"): its
 * data mappings, up to a byte budget (`btrace record --memory`), stored as
 * process-wide ranges (tid BTRACE_MEMORY_PROCESS, 0).  The rule, shared by
 * every backend and the decoder tests' fixture generator:
 *  - candidates: every mapping that is readable and not executable, but
 *    not the kernel's special ones ([vvar], [vvar_vclock], [vsyscall]...:
 *    a name in brackets other than [heap], [stack...] and [anon...]);
 *  - writable ones first (private or shared), then read-only private ones
 *    (they hold RELRO: written at start-up, read-only at the fault), then
 *    writable ones larger than BT_SNAP_MEMORY_HUGE (reservations such as a
 *    sanitizer's shadow memory: mostly never touched, and at low addresses
 *    they would take the whole budget); a read-only shared mapping is not
 *    stored; each kind in address order;
 *  - the mapping that holds the stack window already stored keeps only its
 *    part above the window (the callers' frames, the arguments and the
 *    environment); below the window is memory the stack no longer uses;
 *  - a mapping that does not fit in what is left of the budget is cut,
 *    keeping the part nearest its start; the next ones get nothing;
 *  - one range is stored in sections of at most BT_SNAP_MEMORY_CHUNK
 *    bytes, back to back.
 * A range that cannot be read is left out (its share of the budget is not
 * given to another).
 */
#define BT_SNAP_MEMORY_CHUNK (16ull << 20)
#define BT_SNAP_MEMORY_HUGE (128ull << 20)   /* BTRACE_MEMORY_MAX */

struct bt_snap_region {
	uint64_t start, end;
	unsigned prot;              /* 1 read, 2 write, 4 execute */
	bool shared;                /* MAP_SHARED */
	bool special;               /* a kernel special mapping: never read */
};

struct bt_snap_range {
	uint64_t start, size;
};

/*
 * The ranges to store of the regions @r (any order), in the order they are
 * stored, in *@out (malloc'd, NULL when none): the rule above, the stack
 * window being [@stack_lo, @stack_hi) (equal: none) and the budget
 * @budget bytes.  Returns their number, or -ENOMEM.
 */
long bt_snap_data_select(const struct bt_snap_region *r, size_t n,
			 uint64_t stack_lo, uint64_t stack_hi,
			 uint64_t budget, struct bt_snap_range **out);

/*
 * The regions of the text of a /proc/PID/maps @text (NUL-terminated), in
 * *@out (malloc'd) and *@n.  0, or -ENOMEM.
 */
int bt_snap_regions_parse(const char *text, struct bt_snap_region **out,
			  size_t *n);

/*
 * The data of live process @pid (stopped): /proc/PID/maps, the ranges of
 * bt_snap_data_select(), each read from /proc/PID/mem (a range that
 * cannot be read is skipped) and handed to @add (tid 0; its data is valid
 * during the call only).  Returns 0, a negative error of reading the
 * maps, or @add's first negative return.
 */
int bt_snap_proc_data(pid_t pid, uint64_t stack_lo, uint64_t stack_hi,
		      uint64_t budget,
		      int (*add)(void *ctx, const struct btrace_memory *m),
		      void *ctx);

/* That data of the builder's process, the stack window being the one
 * stored (after bt_snapbuild_add_stack()). */
int bt_snapbuild_add_data(struct bt_snapbuild *b, uint64_t budget);

/* The signal and registers of the death (btrace_writer_set_signal()). */
int bt_snapbuild_set_signal(struct bt_snapbuild *b,
			    const struct btrace_signal *sig);
/* The standard metadata (bt_snap_std_meta()), where the backend puts it. */
int bt_snapbuild_std_meta(struct bt_snapbuild *b, char *const *argv,
			  pid_t pid);
/* One metadata line of the backend's own (capture.*, qemu.*, limit.*). */
int bt_snapbuild_meta(struct bt_snapbuild *b, const char *key,
		      const char *value);
int bt_snapbuild_finish(struct bt_snapbuild *b);
void bt_snapbuild_abort(struct bt_snapbuild *b);

/*
 * The line said after a snapshot is written, in @buf.  The two backends'
 * lines differ and are kept as they are:
 * BT_SNAP_SUMMARY_HW: "snapshot written to PATH (HOW)", HOW said by the
 * caller (how and when it was taken);
 * BT_SNAP_SUMMARY_QEMU: "btrace record: wrote PATH: SIG in thread TID at
 * IP[ (block)], KEPT of trace kept of ASKED asked (N thread(s), qemu)",
 * from @sig (no signal: "exit"), @tid, @kept (the trace of the thread that
 * died), @asked and the buffers counted.
 */
enum bt_snap_summary_style {
	BT_SNAP_SUMMARY_HW,
	BT_SNAP_SUMMARY_QEMU,
};

struct bt_snap_summary {
	enum bt_snap_summary_style style;
	const char *how;                    /* HW */
	const struct btrace_signal *sig;    /* QEMU */
	int tid;
	uint64_t kept, asked;
};

void bt_snapbuild_summary(const struct bt_snapbuild *b,
			  const struct bt_snap_summary *s, char *buf,
			  size_t len);

#endif /* BT_SNAPBUILD_H */
