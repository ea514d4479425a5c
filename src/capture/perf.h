/* SPDX-License-Identifier: MIT */
/*
 * The perf_event_open layer: the only code that calls the syscall
 * (perf-event.c), ring mappings, and the mapping of kernel errors to causes
 * and fixes.
 */
#ifndef BT_CAPTURE_PERF_H
#define BT_CAPTURE_PERF_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <btrace/btrace.h>

/* What an operation was about, for error messages. */
enum bt_perf_op {
	BT_OP_OPEN,
	BT_OP_MMAP_DATA,
	BT_OP_MMAP_AUX,
	BT_OP_SET_OUTPUT,
	BT_OP_IOCTL,
};

struct bt_perf_ctx {
	const char *pmu;        /* "intel_pt", "intel_bts", "dummy", ... */
	pid_t tid;              /* target thread, -1 for none */
	int cpu;                /* -1 for any */
	bool aux_pmu;           /* the PMU is a hardware trace PMU */
	bool kernel;            /* kernel tracing asked for */
	uint64_t pages;         /* pages of the mmap that failed */
};

/* Fill @err for errno @e (positive) of @op; returns -e. */
int bt_perf_explain(int e, enum bt_perf_op op, const struct bt_perf_ctx *ctx,
		    struct btrace_error *err);

/* perf_event_open(2), CLOEXEC; returns the fd or -errno (no message). */
int bt_perf_sys_open(struct perf_event_attr *attr, pid_t pid, int cpu,
		     int group_fd, unsigned long flags);

/* Open and explain failures. */
int bt_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu,
		 const struct bt_perf_ctx *ctx, struct btrace_error *err);

struct bt_perf_ring {
	int fd;
	uint8_t *base;           /* user page, then the data area */
	uint64_t data_size;      /* bytes of the data area (0: none) */
	uint64_t tail;           /* bytes of data consumed */
	bool writable;
	uint8_t *aux;            /* AUX area */
	uint64_t aux_size;       /* as mapped: may be below aux_requested */
	uint64_t aux_requested;  /* asked for: halved on ENOMEM until it fits */
	uint64_t charged_pages;  /* pages the mappings charged */
};

void bt_perf_ring_init(struct bt_perf_ring *r);

/* Map 1 + @data_pages pages (power of two, may be 0) of event @fd. */
int bt_perf_map_data(struct bt_perf_ring *r, int fd, uint64_t data_pages,
		     bool writable, const struct bt_perf_ctx *ctx,
		     struct btrace_error *err);

/* Map @aux_bytes (power of two pages) read-only (overwrite) or writable.
 * On ENOMEM the size is halved until the kernel can allocate it (at least
 * one page): r->aux_size says what was obtained. */
int bt_perf_map_aux(struct bt_perf_ring *r, uint64_t aux_bytes,
		    bool overwrite, const struct bt_perf_ctx *ctx,
		    struct btrace_error *err);

/* PERF_EVENT_IOC_SET_OUTPUT of @fd into @target_fd. */
int bt_perf_set_output(int fd, int target_fd, const struct bt_perf_ctx *ctx,
		       struct btrace_error *err);

int bt_perf_enable(int fd);
int bt_perf_disable(int fd);

uint64_t bt_perf_data_head(const struct bt_perf_ring *r);
void bt_perf_data_set_tail(struct bt_perf_ring *r, uint64_t tail);
uint64_t bt_perf_aux_head(const struct bt_perf_ring *r);

/*
 * The legacy BTS path, for when the intel_bts PMU is missing (bts_init()
 * returns -ENODEV under page-table isolation, the default on every
 * BTS-only CPU): gdb's linux_enable_bts() event, PERF_TYPE_HARDWARE /
 * PERF_COUNT_HW_BRANCH_INSTRUCTIONS with sample_period 1, sample_type
 * IP|ADDR, user only.  intel_pmu_bts_config() (arch/x86/events/intel/
 * core.c) turns it into BTS on Intel (EOPNOTSUPP without BTS, or with
 * kernel tracing); its records come out as 24-byte samples in the data
 * ring (intel_pmu_drain_bts_buffer()), which btrace maps read-only
 * (overwrite).  Needs perf_event_paranoid <= 2 only.
 */
void bt_perf_bts_sample_attr(struct perf_event_attr *attr);

/* 0 when the legacy BTS event opens on this process; else -errno and the
 * reason in @err.  @intel_ds: the CPU is Intel with CPUID DS (on other
 * CPUs the same attributes are a plain counter sampling every branch,
 * not a branch trace, so it is not tried). */
int bt_perf_bts_sample_probe(bool intel_ds, struct btrace_error *err);

/* The snapshot buffer of a legacy-BTS ring after its event stopped: the
 * samples as BTS records (bt_bts_samples_read()).  *@data is malloc'ed
 * (b->data points to it); @st says what was read. */
struct bt_bts_samples;
struct btrace_buffer;
int bt_perf_bts_samples_buffer(const struct bt_perf_ring *r,
			       struct btrace_buffer *b, uint8_t **data,
			       struct bt_bts_samples *st);

/* Unmap and close; the ring may be partly set up. */
void bt_perf_ring_close(struct bt_perf_ring *r);

#endif /* BT_CAPTURE_PERF_H */
