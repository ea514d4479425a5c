/* SPDX-License-Identifier: MIT */
/*
 * The backend seam: one table of the record backends (src/backend.c), read
 * by btrace_record() (dispatch, `auto`), btrace_doctor() (the `auto` order)
 * and, through btrace_backend_*(), the command line.  A backend is its
 * folder plus one line of the table.
 */
#ifndef BT_BACKEND_H
#define BT_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/record.h>

struct bt_backend {
	struct btrace_backend_desc d;   /* what btrace_backend_*() show */
	/* how doctor's `auto` sentences name it ("Intel PT", "BTS", "the
	 * QEMU software trace") */
	const char *brief;
	/* said after "using <brief>" when `auto` takes it as the last resort */
	const char *last_resort_note;
	/* 0 when usable here, else a negative code with err->msg saying why
	 * and err->hint the fix.  NULL: not probed (the last resort). */
	int (*probe)(uint32_t id, const char *sysfs_root,
		     struct btrace_error *err);
	/* run the recording (opts->backend is d.id) */
	int (*record)(const struct btrace_record_opts *opts,
		      struct btrace_record_result *res,
		      struct btrace_error *err);
	/* the error for `record -p PID` when this backend cannot attach
	 * (NULL for those that can); @why: why no attaching backend is
	 * usable, NULL when this one was asked for */
	int (*attach_refused)(int pid, const char *why,
			      struct btrace_error *err);
};

/* The @i-th backend in `auto` order, NULL past the end. */
const struct bt_backend *bt_backend_at(size_t i);
/* The backend of @id, NULL if none. */
const struct bt_backend *bt_backend_get(uint32_t id);

#endif /* BT_BACKEND_H */
