/* SPDX-License-Identifier: MIT */
/*
 * btrace snapshot files (.btrace): the in-memory model, the reader and the
 * streaming writer.  The on-disk layout is specified in docs/format.md; only
 * src/format/ knows it.
 *
 * Ownership: everything reachable from a struct btrace_snapshot is owned by
 * it and freed by btrace_snapshot_free().  The writer copies nothing it is
 * given except small records (tasks, mappings, metadata), which it keeps
 * until btrace_writer_commit(); large payloads (trace bytes, code) are
 * written before the add call returns.
 */
#ifndef BTRACE_SNAPSHOT_H
#define BTRACE_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/btrace.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Format version written by this library.  The major number changes only for
 * incompatible changes; readers accept any minor number of their major. */
#define BTRACE_FORMAT_MAJOR 1
#define BTRACE_FORMAT_MINOR 0

enum btrace_backend {
	BTRACE_BACKEND_UNKNOWN = 0,
	BTRACE_BACKEND_PT = 1,    /* Intel PT hardware */
	BTRACE_BACKEND_BTS = 2,   /* Intel BTS hardware */
	BTRACE_BACKEND_QEMU = 3,  /* software trace from QEMU user mode */
};

enum btrace_trace_kind {
	BTRACE_TRACE_PT = 1,   /* Intel PT packet stream */
	BTRACE_TRACE_BTS = 2,  /* 24-byte {from, to, flags} records */
};

enum btrace_cpu_vendor {
	BTRACE_CPU_UNKNOWN = 0,
	BTRACE_CPU_INTEL = 1,
	BTRACE_CPU_AMD = 2,
	BTRACE_CPU_OTHER = 3,
};

/* How the trace was taken and everything libipt's pt_config needs. */
struct btrace_config {
	uint32_t backend;          /* enum btrace_backend */
	uint32_t trace_kind;       /* enum btrace_trace_kind of the buffers */

	/* CPU identity (CPUID leaf 1 with extended family/model folded in). */
	uint32_t cpu_vendor;       /* enum btrace_cpu_vendor */
	uint16_t cpu_family;
	uint8_t cpu_model;
	uint8_t cpu_stepping;
	uint32_t cpuid_0x15_eax;   /* TSC/core crystal ratio denominator */
	uint32_t cpuid_0x15_ebx;   /* numerator */
	uint32_t nom_freq;         /* max non-turbo ratio (MSR_PLATFORM_INFO[15:8]) */
	uint32_t mtc_freq;         /* value of the mtc_period field */

	/* The PMU event as opened. */
	uint32_t pmu_type;         /* attr.type (0 when not a PMU event) */
	uint64_t pt_config;        /* attr.config */
	uint64_t tsc_bit;          /* the config bit masks that were used... */
	uint64_t mtc_bit;
	uint64_t cyc_bit;
	uint64_t noretcomp_bit;
	uint64_t branch_bit;
	uint32_t psb_period;       /* psb_period field value */
	uint32_t user_only;        /* 1: kernel excluded (exclude_kernel) */

	/* The flight recorder. */
	uint64_t requested_size;   /* history per buffer the user asked for */
	uint64_t pad;              /* room added for what runs after the fault */
	uint32_t crash_mode;       /* enum btrace_crash_mode */
	uint32_t reserved;
};

enum btrace_crash_mode {
	BTRACE_CRASH_UNKNOWN = 0,
	BTRACE_CRASH_PRECISE = 1,  /* stopped at the signal (ptrace) */
	BTRACE_CRASH_PASSIVE = 2,  /* snapshot taken after death */
	BTRACE_CRASH_ONDEMAND = 3, /* btrace snapshot PID, no crash */
	BTRACE_CRASH_EXIT = 4,     /* taken at a normal exit (--on exit) */
};

/* Buffer flags. */
#define BTRACE_BUF_WRAPPED   0x1u  /* the ring wrapped: the oldest bytes are gone */
#define BTRACE_BUF_TRUNCATED 0x2u  /* the kernel stopped tracing (buffer full) */
#define BTRACE_BUF_LOST      0x4u  /* trace was lost (overflow, lost records) */
#define BTRACE_BUF_PARTIAL   0x8u  /* PERF_AUX_FLAG_PARTIAL was seen */

/* One trace buffer.  @data holds the ring linearised: oldest byte first,
 * newest last (for a wrapped ring: [head, size) then [0, head)). */
struct btrace_buffer {
	uint32_t kind;             /* enum btrace_trace_kind */
	uint32_t flags;            /* BTRACE_BUF_* */
	int32_t tid;               /* owning thread, -1 for per-cpu trace of
				    * no known thread */
	int32_t cpu;               /* owning cpu, -1 for a per-task buffer;
				    * with a tid: that thread's slices of
				    * the cpu's ring, oldest first */
	uint64_t requested_size;   /* history the user asked for */
	uint64_t pad;              /* pad added to it */
	uint64_t ring_size;        /* size of the ring as allocated */
	uint64_t head;             /* write offset in the ring at capture */
	uint64_t lost;             /* bytes or records known lost, 0 if none */
	const uint8_t *data;       /* linearised trace */
	uint64_t size;             /* bytes in @data */
};

struct btrace_task {
	int32_t pid;
	int32_t tid;
	int32_t ppid;
	uint32_t flags;            /* BTRACE_TASK_* */
	char *comm;                /* may be NULL */
	char *exe;                 /* may be NULL */
};
#define BTRACE_TASK_CRASHED 0x1u  /* this thread received the fatal signal */
#define BTRACE_TASK_EXITED  0x2u  /* exited before the snapshot */
#define BTRACE_TASK_UNTRACED 0x4u /* had no trace buffer: no history (the
				   * limit.untraced-threads metadata says why) */

#define BTRACE_BUILD_ID_MAX 64

struct btrace_mapping {
	int32_t pid;
	uint32_t prot;             /* PROT_READ/WRITE/EXEC bits */
	uint32_t flags;            /* MAP_PRIVATE / MAP_SHARED */
	uint32_t build_id_size;    /* 0 when unknown */
	uint64_t start;
	uint64_t end;
	uint64_t pgoff;            /* file offset of @start */
	uint64_t dev;              /* makedev(maj, min), 0 if unknown */
	uint64_t ino;
	uint8_t build_id[BTRACE_BUILD_ID_MAX];
	char *path;                /* file path, or "[vdso]", "//anon", ... */
};

enum btrace_code_kind {
	BTRACE_CODE_FILE = 1,      /* an executable segment of a mapped file */
	BTRACE_CODE_VDSO = 2,      /* the vDSO image */
	BTRACE_CODE_ANON = 3,      /* anonymous executable memory (JIT) */
};

/* Embedded code.  File code is identified by build ID and file offset and
 * applies to every mapping of that file; vDSO and anonymous code by the
 * address it was copied from. */
struct btrace_code {
	uint32_t kind;             /* enum btrace_code_kind */
	uint32_t build_id_size;
	uint8_t build_id[BTRACE_BUILD_ID_MAX];
	uint64_t vaddr;            /* address the bytes were copied from */
	uint64_t file_offset;      /* offset in the file (BTRACE_CODE_FILE) */
	const uint8_t *data;
	uint64_t size;
	char *path;                /* file path, may be NULL */
};

/* Memory of the process at the snapshot: the crashed thread's stack, and
 * the process's data mappings (docs/format.md, section "memory"). */
#define BTRACE_MEMORY_PROCESS 0    /* tid of a process-wide range */
struct btrace_memory {
	int32_t tid;               /* the thread whose stack it is;
				    * BTRACE_MEMORY_PROCESS (0): a range of
				    * the process's other memory */
	uint32_t reserved;
	uint64_t vaddr;            /* address of data[0] */
	const uint8_t *data;
	uint64_t size;
};

/* The memory accesses of a thread's last instructions, as the recorder
 * logged them (docs/format.md, section "accesses"): oldest first, the last
 * one the last the thread made before the snapshot. */
#define BTRACE_ACCESS_STORE 0x1u        /* a write; else a read */
#define BTRACE_ACCESS_FOLD 0x2u         /* not an access: a fold mark.
					 * Turns of a loop ran here that the
					 * trace and the log left out; the
					 * accesses after it are those of the
					 * loop block at @ip, which the trace
					 * resumes with (addr and size 0) */
struct btrace_access {
	uint64_t ip;               /* the instruction that made it */
	uint64_t addr;             /* its first byte */
	uint32_t size;             /* bytes */
	uint32_t flags;            /* BTRACE_ACCESS_* */
};
#define BTRACE_ACCESSES_COMPLETE 0x1u   /* every access since the thread
					 * started (the log never wrapped) */
struct btrace_access_log {
	int32_t tid;
	uint32_t flags;            /* BTRACE_ACCESSES_* */
	const struct btrace_access *entries;
	uint64_t n;
};

/* x86-64 registers, in the order of the kernel's struct user_regs_struct. */
enum btrace_reg {
	BTRACE_REG_R15, BTRACE_REG_R14, BTRACE_REG_R13, BTRACE_REG_R12,
	BTRACE_REG_RBP, BTRACE_REG_RBX, BTRACE_REG_R11, BTRACE_REG_R10,
	BTRACE_REG_R9, BTRACE_REG_R8, BTRACE_REG_RAX, BTRACE_REG_RCX,
	BTRACE_REG_RDX, BTRACE_REG_RSI, BTRACE_REG_RDI, BTRACE_REG_ORIG_RAX,
	BTRACE_REG_RIP, BTRACE_REG_CS, BTRACE_REG_EFLAGS, BTRACE_REG_RSP,
	BTRACE_REG_SS, BTRACE_REG_FS_BASE, BTRACE_REG_GS_BASE, BTRACE_REG_DS,
	BTRACE_REG_ES, BTRACE_REG_FS, BTRACE_REG_GS,
	BTRACE_NREGS
};

/* Where the fault address came from. */
enum btrace_fault_source {
	BTRACE_FAULT_NONE = 0,     /* not known: the decoder finds it in the trace */
	BTRACE_FAULT_REGS = 1,     /* registers at the signal (exact) */
	BTRACE_FAULT_CORE = 2,     /* registers from a core file (exact) */
	BTRACE_FAULT_BLOCK = 3,    /* only the block holding it is known */
};

/* btrace_signal.code when the recorder could not learn it (the QEMU
 * backend, for a signal it neither saw raised nor can tell from the CPU
 * exception QEMU raised). */
#define BTRACE_SIGCODE_UNKNOWN INT32_MIN

struct btrace_signal {
	int32_t tid;               /* thread that received it */
	int32_t signo;
	int32_t code;              /* si_code, or BTRACE_SIGCODE_UNKNOWN */
	int32_t err;               /* si_errno */
	uint64_t addr;             /* si_addr (faults) */
	int32_t sender_pid;        /* si_pid for kill()-like signals, else 0 */
	uint32_t fault_source;     /* enum btrace_fault_source */
	uint64_t fault_ip;         /* faulting instruction, or block start */
	uint32_t has_regs;         /* @regs is valid */
	uint32_t reserved;
	uint64_t regs[BTRACE_NREGS];
	int32_t exit_status;       /* wait status of the process, -1 if unknown */
	int32_t reserved2;
};

/**
 * @brief The name of signal @p signo, "SIGSEGV" for 11 ("SIG" and the C
 * library's abbreviation: "SIGPOLL" for 29), written to @p buf of @p len
 * bytes.  Returns @p buf, or NULL for a number without such a name (a
 * real-time signal, 0, a negative number).
 */
BTRACE_API const char *btrace_signal_str(int signo, char *buf, size_t len);

struct btrace_meta {
	char *key;
	char *value;
};

/* What the reader saw of each section, for btrace info. */
struct btrace_section_info {
	uint32_t type;
	uint32_t flags;            /* BTRACE_SECTION_* */
	uint64_t offset;           /* file offset of the section header */
	uint64_t stored_size;      /* bytes in the file */
	uint64_t raw_size;         /* bytes after decompression */
	uint32_t status;           /* 0 ok, else a BTRACE_ERR_* code (positive) */
	uint32_t reserved;
};
#define BTRACE_SECTION_ZSTD 0x1u

struct btrace_snapshot {
	uint32_t format_major;
	uint32_t format_minor;
	uint32_t word_size;        /* of the traced program, bytes */
	uint32_t pointer_size;

	struct btrace_config config;
	int has_config;

	struct btrace_buffer *buffers;
	size_t nbuffers;
	struct btrace_task *tasks;
	size_t ntasks;
	struct btrace_mapping *mappings;
	size_t nmappings;
	struct btrace_code *code;
	size_t ncode;
	struct btrace_signal *signal;  /* NULL when no signal was recorded */
	struct btrace_meta *meta;
	size_t nmeta;
	struct btrace_memory *memory;  /* memory ranges (the stack, the data) */
	size_t nmemory;

	/* Reader observations. */
	struct btrace_section_info *sections;
	size_t nsections;
	char **warnings;               /* damage found and skipped (lenient) */
	size_t nwarnings;
	uint64_t file_size;
	int complete;                  /* the end marker was present */

	struct btrace_access_log *access_logs;  /* threads' memory accesses */
	size_t naccess_logs;
};

/* Reader flags. */
#define BTRACE_READ_LENIENT 0x1u   /* skip damaged sections, record warnings */

/**
 * @brief Read a snapshot file.
 *
 * Every length and offset is bounds-checked.  Without BTRACE_READ_LENIENT any
 * damage (checksum mismatch, truncation, bad structure) fails the read with
 * -BTRACE_ERR_* and @err naming the section and byte offset; with it, damaged
 * sections are skipped and described in the snapshot's warnings.
 * Unknown section types and unknown fields are always skipped.
 *
 * @return 0 and *@out on success, a negative error code otherwise.
 */
BTRACE_API int btrace_snapshot_read(const char *path, unsigned flags,
				    struct btrace_snapshot **out,
				    struct btrace_error *err);

/** @brief Like btrace_snapshot_read() from memory; @data must outlive *@out. */
BTRACE_API int btrace_snapshot_read_mem(const void *data, size_t size,
					unsigned flags,
					struct btrace_snapshot **out,
					struct btrace_error *err);

/** @brief Free a snapshot; NULL is allowed. */
BTRACE_API void btrace_snapshot_free(struct btrace_snapshot *snap);

/** @brief Look up a metadata value; NULL if absent. */
BTRACE_API const char *btrace_snapshot_meta(const struct btrace_snapshot *snap,
					    const char *key);

/** @brief Name of a section type ("buffer", "mappings", ...) or NULL. */
BTRACE_API const char *btrace_section_name(uint32_t type);

/* --- writer --- */

struct btrace_writer;

/* Writer flags. */
#define BTRACE_WRITE_NO_COMPRESS 0x1u     /* store every section uncompressed */
#define BTRACE_WRITE_COMPRESS_TRACE 0x2u  /* compress trace buffers too (by
					   * default they are stored raw, so a
					   * reader maps them without copying
					   * and decodes only the tail) */

/**
 * @brief Start writing a snapshot to @path.
 *
 * The data goes to a temporary file (mode 0600) in the same directory; only
 * btrace_writer_commit() makes it appear under @path, atomically.  A writer
 * that is freed without commit removes its temporary file.
 */
BTRACE_API int btrace_writer_open(const char *path, unsigned flags,
				  struct btrace_writer **out,
				  struct btrace_error *err);

BTRACE_API int btrace_writer_set_config(struct btrace_writer *w,
					const struct btrace_config *cfg,
					struct btrace_error *err);

/** @brief Write a buffer whose @data is already linear (oldest first). */
BTRACE_API int btrace_writer_add_buffer(struct btrace_writer *w,
					const struct btrace_buffer *buf,
					struct btrace_error *err);

/**
 * @brief Write a buffer straight from a ring: @ring of @buf->ring_size bytes
 * whose next write offset is @buf->head.  With BTRACE_BUF_WRAPPED in
 * @buf->flags the bytes [head, end) then [0, head) are stored, otherwise
 * [0, head); end is ring_size, except for BTS (kind BTRACE_TRACE_BTS) where
 * it is ring_size - ring_size % 24: the hardware writes whole records and
 * wraps before the last partial one.  @buf->data and @buf->size are
 * ignored.
 */
BTRACE_API int btrace_writer_add_ring(struct btrace_writer *w,
				      const struct btrace_buffer *buf,
				      const void *ring,
				      struct btrace_error *err);

BTRACE_API int btrace_writer_add_task(struct btrace_writer *w,
				      const struct btrace_task *task,
				      struct btrace_error *err);
BTRACE_API int btrace_writer_add_mapping(struct btrace_writer *w,
					 const struct btrace_mapping *map,
					 struct btrace_error *err);
BTRACE_API int btrace_writer_add_code(struct btrace_writer *w,
				      const struct btrace_code *code,
				      struct btrace_error *err);
/** @brief Add a range of the process's memory (copied to the file before
 * it returns). */
BTRACE_API int btrace_writer_add_memory(struct btrace_writer *w,
					const struct btrace_memory *mem,
					struct btrace_error *err);
/** @brief Add a thread's access log (copied to the file before it
 * returns). */
BTRACE_API int btrace_writer_add_accesses(struct btrace_writer *w,
					  const struct btrace_access_log *log,
					  struct btrace_error *err);
BTRACE_API int btrace_writer_set_signal(struct btrace_writer *w,
					const struct btrace_signal *sig,
					struct btrace_error *err);
BTRACE_API int btrace_writer_add_meta(struct btrace_writer *w,
				      const char *key, const char *value,
				      struct btrace_error *err);

/**
 * @brief Finish: write the pending records and the end marker, fsync, rename
 * to the final name, fsync the directory.  The writer is freed whatever the
 * result; on failure nothing is left under the final name.
 */
BTRACE_API int btrace_writer_commit(struct btrace_writer *w,
				    struct btrace_error *err);

/** @brief Abandon a writer: remove the temporary file.  NULL is allowed. */
BTRACE_API void btrace_writer_free(struct btrace_writer *w);

#ifdef __cplusplus
}
#endif

#endif /* BTRACE_SNAPSHOT_H */
