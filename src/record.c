/* SPDX-License-Identifier: MIT */
/*
 * btrace_record(): pick a backend from the table (src/backend.c) and run
 * the recording.  `auto` probes the table's probed backends in order (Intel
 * PT, then BTS), else takes its last resort (the QEMU software backend),
 * and says why through the options' log callback.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <btrace/record.h>

#include "backend.h"
#include "capture/perf-backend.h"
#include "util.h"

static int probe(const struct bt_backend *b,
		 const struct btrace_record_opts *opts,
		 struct btrace_error *err)
{
	return b->probe(b->d.id, opts->sysfs_root, err);
}

static uint32_t pick_auto(const struct btrace_record_opts *opts, int quiet)
{
	const struct bt_backend *b, *last = NULL;
	struct btrace_error why;

	for (size_t i = 0; (b = bt_backend_at(i)); i++) {
		if (!(b->d.flags & BTRACE_BACKEND_F_AUTO))
			continue;
		if (!(b->d.flags & BTRACE_BACKEND_F_PROBED) || !b->probe) {
			if (!last)
				last = b;
			continue;
		}
		bt_error_clear(&why);
		if (probe(b, opts, &why) == 0) {
			if (!quiet)
				bt_msg("btrace record: using %s", b->d.label);
			return b->d.id;
		}
		if (!quiet)
			bt_msg("btrace record: %s unavailable: %s", b->d.label,
			       why.msg);
	}
	if (!last)
		return BTRACE_BACKEND_UNKNOWN;
	if (!quiet)
		bt_msg("btrace record: using %s %s", last->brief,
		       last->last_resort_note ? last->last_resort_note : "");
	return last->d.id;
}

/* `record -p PID` with `auto` and no backend that can attach usable: the
 * last resort's refusal, which says what to do instead (not the probes'
 * lines and then its own).  1 when some attaching backend is usable. */
static int attach_check(const struct btrace_record_opts *opts,
			struct btrace_error *err)
{
	const struct bt_backend *b, *refuse = NULL;
	struct btrace_error why = { 0 };

	for (size_t i = 0; (b = bt_backend_at(i)); i++) {
		if (!(b->d.flags & BTRACE_BACKEND_F_AUTO))
			continue;
		if (!(b->d.flags & BTRACE_BACKEND_F_HARDWARE)) {
			if (!refuse && b->attach_refused)
				refuse = b;
			continue;
		}
		bt_error_clear(&why);
		if (b->probe && probe(b, opts, &why) == 0)
			return 1;
	}
	if (!refuse)
		return 1;
	return refuse->attach_refused(opts->pid,
		"Intel PT and BTS are unavailable here "
		"('btrace doctor' says why)", err);
}

/* The hardware backends a joining recorder may take over with, in order:
 * @opts->backend alone, or all of them for `auto`. */
static size_t takeover_order(uint32_t backend, uint32_t *out, size_t max)
{
	const struct bt_backend *b;
	size_t n = 0;

	for (size_t i = 0; (b = bt_backend_at(i)) && n < max; i++)
		if ((b->d.flags & BTRACE_BACKEND_F_HARDWARE) &&
		    (!backend || backend == b->d.id))
			out[n++] = b->d.id;
	return n;
}

static int record(const struct btrace_record_opts *opts,
		  struct btrace_record_result *res, struct btrace_error *err)
{
	const struct bt_backend *b;
	uint32_t backend;

	if (opts->memory > BTRACE_MEMORY_MAX)
		return bt_error(err, -EINVAL, "record: start failed: memory "
				"budget %llu bytes is above the most, %llu (a "
				"reader refuses a file that inflates that much)",
				(unsigned long long)opts->memory,
				(unsigned long long)BTRACE_MEMORY_MAX);
	if (opts->accesses > BTRACE_ACCESSES_MAX)
		return bt_error(err, -EINVAL, "record: start failed: access "
				"log of %llu records per thread is above the "
				"most, %llu (a snapshot section holds no more)",
				(unsigned long long)opts->accesses,
				(unsigned long long)BTRACE_ACCESSES_MAX);
	if (!!(opts->argv && opts->argv[0]) == !!opts->pid)
		return bt_error(err, -EINVAL, "record: start failed: give "
				"either a program to launch or a pid");
	/* A second btrace on an owned target joins the owner: it receives
	 * the owner's snapshots and pays nothing (no EBUSY). */
	if (opts->pid) {
		uint32_t order[8];
		size_t n = takeover_order(opts->backend, order,
					  BT_ARRAY_SIZE(order));
		int r = bt_capture_join(opts, order, n, res, err);

		if (r <= 0)
			return r;
	}

	backend = opts->backend;
	if (opts->pid && backend == BTRACE_BACKEND_UNKNOWN) {
		int r = attach_check(opts, err);

		if (r <= 0)
			return r;
	}
	if (backend == BTRACE_BACKEND_UNKNOWN)
		backend = pick_auto(opts, opts->flags & BTRACE_RECORD_QUIET);
	res->backend = backend;

	b = bt_backend_get(backend);
	if (!b || !b->record)
		return bt_error(err, -EINVAL, "record: start failed: unknown "
				"backend %u", backend);
	if (opts->backend != backend) {
		/* the backend reads opts->backend: the one picked */
		struct btrace_record_opts o = *opts;

		o.backend = backend;
		return b->record(&o, res, err);
	}
	return b->record(opts, res, err);
}

int btrace_record(const struct btrace_record_opts *opts,
		  struct btrace_record_result *res, struct btrace_error *err)
{
	struct btrace_record_opts o;
	struct btrace_record_result r;
	struct bt_log prev;
	size_t n;
	int rc;

	rc = bt_result_size(res, sizeof(r), "record result", &n, err);
	if (rc < 0)
		return rc;
	memset(&r, 0, sizeof(r));
	r.exit_status = -1;
	rc = bt_opts_copy(&o, sizeof(o), opts, "record options", err);
	if (rc == 0) {
		prev = bt_log_set(o.log, o.log_ctx);
		rc = record(&o, &r, err);
		bt_log_restore(prev);
	}
	r.sz = res->sz;
	memcpy(res, &r, n);
	return rc;
}
