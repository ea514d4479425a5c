/* SPDX-License-Identifier: MIT */
/* The hardware backends as seen by the record dispatcher (src/record.c). */
#ifndef BT_CAPTURE_PERF_BACKEND_H
#define BT_CAPTURE_PERF_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/record.h>

/* Record with Intel PT or BTS (opts->backend). */
int bt_perf_record(const struct btrace_record_opts *opts,
		   struct btrace_record_result *res, struct btrace_error *err);

/* The engine options bt_perf_record() runs with (the hardware suite
 * changes one, such as max_tasks, and calls bt_engine_run() itself).
 * eo->pmu_name stays valid until the next call. */
struct bt_engine_opts;
int bt_perf_engine_opts(uint32_t backend, const struct btrace_record_opts *opts,
			struct bt_engine_opts *eo, struct btrace_error *err);

/* 0 when @backend (PT or BTS) is usable here, else a negative code with a
 * message saying why and a hint.  @sysfs_root NULL or "": /sys. */
int bt_perf_probe(uint32_t backend, const char *sysfs_root,
		  struct btrace_error *err);

/*
 * If a btrace recording of any backend (PT, BTS, QEMU) owns @opts->pid,
 * join it: write each of its snapshots to @opts->output (or the default
 * name) until the target ends; if the owner leaves first, take over with
 * the first usable hardware backend of @order (the record dispatcher gives
 * the backend of @opts, or the table's hardware backends for auto), else
 * stop and say why.  Returns 1 when nobody owns the target (the caller goes
 * on as usual), 0 when the join ran, negative on error.
 */
int bt_capture_join(const struct btrace_record_opts *opts,
		    const uint32_t *order, size_t norder,
		    struct btrace_record_result *res, struct btrace_error *err);

/* btrace_calibrate() for @backend, PT or BTS (src/doctor.c picks the
 * default from the backend table); fills all of @out. */
struct btrace_calibration;
int bt_calibrate(uint32_t backend, unsigned runs, const char *sysfs_root,
		 struct btrace_calibration *out, struct btrace_error *err);

/* Default pads (bytes) when neither --pad nor a calibration is given. */
#define BT_PAD_PT (16u << 10)
#define BT_PAD_BTS (12u << 10)

/* The pad stored by btrace calibrate for @backend, 0 if none. */
uint64_t bt_calibration_load(uint32_t backend);

#endif /* BT_CAPTURE_PERF_BACKEND_H */
