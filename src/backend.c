/* SPDX-License-Identifier: MIT */
/*
 * The table of record backends, in the order `auto` tries them.  Adding a
 * backend: its folder (probe and record entry points, in a header of its
 * own), an id in enum btrace_backend, and one line here.
 */
#include <string.h>

#include "backend.h"
#include "capture/perf-backend.h"
#include "qemu/qemu-owner.h"
#include "qemu/qemu-record.h"
#include "util.h"

static const struct bt_backend backends[] = {
	{ { BTRACE_BACKEND_PT, BTRACE_BACKEND_F_AUTO | BTRACE_BACKEND_F_PROBED |
	    BTRACE_BACKEND_F_HARDWARE, "pt", "Intel PT" },
	  "Intel PT", NULL, bt_perf_probe, bt_perf_record, NULL },
	{ { BTRACE_BACKEND_BTS, BTRACE_BACKEND_F_AUTO | BTRACE_BACKEND_F_PROBED |
	    BTRACE_BACKEND_F_HARDWARE, "bts", "Intel BTS" },
	  "BTS", NULL, bt_perf_probe, bt_perf_record, NULL },
	{ { BTRACE_BACKEND_QEMU, BTRACE_BACKEND_F_AUTO, "qemu",
	    "QEMU software trace" },
	  "the QEMU software trace",
	  "(the program runs emulated, 3-10x slower than natively)",
	  NULL, bt_qemu_record, bt_qemu_attach_refused },
};

const struct bt_backend *bt_backend_at(size_t i)
{
	return i < BT_ARRAY_SIZE(backends) ? &backends[i] : NULL;
}

const struct bt_backend *bt_backend_get(uint32_t id)
{
	for (size_t i = 0; i < BT_ARRAY_SIZE(backends); i++)
		if (backends[i].d.id == id)
			return &backends[i];
	return NULL;
}

const struct btrace_backend_desc *btrace_backend_at(size_t i)
{
	const struct bt_backend *b = bt_backend_at(i);

	return b ? &b->d : NULL;
}

const struct btrace_backend_desc *btrace_backend_by_id(uint32_t id)
{
	const struct bt_backend *b = bt_backend_get(id);

	return b ? &b->d : NULL;
}

const struct btrace_backend_desc *btrace_backend_by_name(const char *name)
{
	for (size_t i = 0; name && i < BT_ARRAY_SIZE(backends); i++)
		if (!strcmp(backends[i].d.name, name))
			return &backends[i].d;
	return NULL;
}
