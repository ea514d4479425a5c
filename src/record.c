/* SPDX-License-Identifier: MIT */
/*
 * btrace_record(): pick a backend and run the recording.  `auto` takes Intel
 * PT, then BTS, then the QEMU software backend, and says why on stderr.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <btrace/record.h>

#include "util.h"

/* Backends.  Weak so that a library built without one still links; the
 * dispatcher then says the backend is missing. */
int bt_perf_probe(uint32_t backend, const char *sysfs_root,
		  struct btrace_error *err) __attribute__((weak));
int bt_perf_record(const struct btrace_record_opts *opts,
		   struct btrace_record_result *res,
		   struct btrace_error *err) __attribute__((weak));
int bt_qemu_record(const struct btrace_record_opts *opts,
		   struct btrace_record_result *res,
		   struct btrace_error *err) __attribute__((weak));
/* Join the recording that already owns @opts->pid: 0 joined (and done),
 * 1 nobody owns it, < 0 error. */
int bt_capture_join(const struct btrace_record_opts *opts,
		    struct btrace_record_result *res,
		    struct btrace_error *err) __attribute__((weak));
/* The one message for -p PID without hardware tracing (qemu-owner.c). */
int bt_qemu_attach_refused(int pid, const char *why,
			   struct btrace_error *err) __attribute__((weak));

static const char *backend_label(uint32_t b)
{
	switch (b) {
	case BTRACE_BACKEND_PT: return "Intel PT";
	case BTRACE_BACKEND_BTS: return "Intel BTS";
	case BTRACE_BACKEND_QEMU: return "QEMU software trace";
	}
	return "unknown";
}

static int probe(uint32_t backend, const struct btrace_record_opts *opts,
		 struct btrace_error *err)
{
	if (!bt_perf_probe)
		return bt_error(err, -BTRACE_ERR_UNSUPPORTED, "%s: probe "
				"failed: hardware capture is not built in",
				backend_label(backend));
	return bt_perf_probe(backend, opts->sysfs_root, err);
}

static uint32_t pick_auto(const struct btrace_record_opts *opts, int quiet)
{
	static const uint32_t order[] = { BTRACE_BACKEND_PT, BTRACE_BACKEND_BTS };
	struct btrace_error why;

	for (size_t i = 0; i < BT_ARRAY_SIZE(order); i++) {
		bt_error_clear(&why);
		if (probe(order[i], opts, &why) == 0) {
			if (!quiet)
				bt_msg("btrace record: using %s",
				       backend_label(order[i]));
			return order[i];
		}
		if (!quiet)
			bt_msg("btrace record: %s unavailable: %s",
			       backend_label(order[i]), why.msg);
	}
	if (!quiet)
		bt_msg("btrace record: using the QEMU software trace "
		       "(the program runs emulated, 3-10x slower than natively)");
	return BTRACE_BACKEND_QEMU;
}

int btrace_record(const struct btrace_record_opts *opts,
		  struct btrace_record_result *res, struct btrace_error *err)
{
	uint32_t backend;

	if (!opts || !res || opts->sz < sizeof(size_t))
		return bt_error(err, -EINVAL, "record: start failed: invalid "
				"options");
	memset(res, 0, sizeof(*res));
	res->exit_status = -1;
	if (opts->sz > sizeof(*opts)) {
		const uint8_t *p = (const uint8_t *)opts;

		for (size_t i = sizeof(*opts); i < opts->sz; i++)
			if (p[i])
				return bt_error(err, -EINVAL, "record: start "
						"failed: unknown options set "
						"(built against a newer "
						"btrace?)");
	}
	if (!!(opts->argv && opts->argv[0]) == !!opts->pid)
		return bt_error(err, -EINVAL, "record: start failed: give "
				"either a program to launch or a pid");
	/* A second btrace on an owned target joins the owner: it receives
	 * the owner's snapshots and pays nothing (no EBUSY). */
	if (opts->pid && bt_capture_join) {
		int r = bt_capture_join(opts, res, err);

		if (r <= 0)
			return r;
	}

	backend = opts->backend;
	if (opts->pid && backend == BTRACE_BACKEND_UNKNOWN &&
	    bt_qemu_attach_refused) {
		/* Attaching needs Intel PT or BTS: without either, one
		 * message saying so and what to do instead, not the
		 * probes' lines and then QEMU's refusal. */
		struct btrace_error pt = { 0 }, bts = { 0 };

		if (probe(BTRACE_BACKEND_PT, opts, &pt) &&
		    probe(BTRACE_BACKEND_BTS, opts, &bts))
			return bt_qemu_attach_refused(opts->pid,
				"Intel PT and BTS are unavailable here "
				"('btrace doctor' says why)", err);
	}
	if (backend == BTRACE_BACKEND_UNKNOWN)
		backend = pick_auto(opts, opts->flags & BTRACE_RECORD_QUIET);
	res->backend = backend;

	switch (backend) {
	case BTRACE_BACKEND_PT:
	case BTRACE_BACKEND_BTS:
		if (!bt_perf_record)
			return bt_error(err, -BTRACE_ERR_UNSUPPORTED, "%s: "
					"record failed: hardware capture is "
					"not built in", backend_label(backend));
		return bt_perf_record(opts, res, err);
	case BTRACE_BACKEND_QEMU:
		if (!bt_qemu_record)
			return bt_error(err, -BTRACE_ERR_UNSUPPORTED, "QEMU "
					"backend: record failed: not built in");
		return bt_qemu_record(opts, res, err);
	}
	return bt_error(err, -EINVAL, "record: start failed: unknown backend "
			"%u", backend);
}
