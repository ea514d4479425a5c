/* SPDX-License-Identifier: MIT */
/*
 * The capture engine: launch or attach, per-task and catch-all buffers,
 * sideband, the crash watch (precise with PTRACE_SEIZE, or passive), the
 * snapshot, the single-owner registry (join, handover).
 *
 * The trace event is injectable (@trace_attr, @has_aux) so that the kernel
 * tests drive the real code path with a software event and real data rings
 * on machines without Intel PT; the AUX part then is simply absent.
 */
#ifndef BT_CAPTURE_ENGINE_H
#define BT_CAPTURE_ENGINE_H

#include <linux/perf_event.h>
#include <stdbool.h>
#include <stdint.h>

#include <btrace/record.h>
#include <btrace/snapshot.h>

struct bt_engine_opts {
	const struct btrace_record_opts *rec;
	struct perf_event_attr trace_attr;  /* template: type, config, excludes */
	const char *pmu_name;               /* for messages */
	bool has_aux;                       /* the event writes an AUX ring */
	bool bts_samples;                   /* legacy BTS: samples in a read-only
					     * (overwrite) data ring, no AUX */
	uint64_t max_ring;                  /* PMU limit on one AUX ring, 0: none */
	uint64_t history;                   /* bytes per buffer */
	uint64_t pad;
	uint64_t data_pages;                /* trace event data ring (2^n) */
	uint64_t sideband_pages;            /* per-CPU sideband ring (2^n) */
	struct btrace_config cfg;           /* written into the snapshot */
	int max_tasks;                      /* cap per-task buffers (tests), 0: none */
	bool use_registry;                  /* single owner per target */
	bool allow_shrink;                  /* default size: shrink to the budget */
	bool test_event;                    /* a software stand-in, say so */
	int tick_ms;                        /* drain period of the loop, 0: 20 ms,
					     * < 0: none (tests: every wake-up
					     * must come from an event) */
};

/* Run a recording to its end (see btrace_record()). */
int bt_engine_run(const struct bt_engine_opts *o,
		  struct btrace_record_result *res, struct btrace_error *err);

/* Join the owner of @o->rec->pid (see bt_capture_join()); @can_take_over
 * says whether @o is usable for a take-over, @why why not.  Returns 1 when
 * nobody owns the target. */
int bt_engine_join(const struct bt_engine_opts *o, bool can_take_over,
		   const char *why, struct btrace_record_result *res,
		   struct btrace_error *err);

#endif /* BT_CAPTURE_ENGINE_H */
