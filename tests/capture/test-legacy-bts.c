/* SPDX-License-Identifier: MIT */
/*
 * The engine's legacy BTS path (intel_bts missing: the branch-instructions
 * event's samples in a read-only data ring) against the real kernel, with
 * a software event standing in for BTS: page faults sampled with
 * sample_period 1 and sample_type IP|ADDR give the same 24-byte
 * {header, ip, addr} samples that intel_pmu_drain_bts_buffer() writes,
 * into a ring the kernel writes in overwrite mode.  The crash's own fault
 * is the last sample: ip = the faulting store, addr = the address it wrote
 * to (the siginfo's si_addr).
 * (Real BTS through this path needs an Intel CPU: suite hardware.)
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <btrace/snapshot.h>

#include "bt-test.h"
#include "capture/engine.h"
#include "capture/perf.h"
#include "util.h"

static char child_path[1024], tmpdir[256];

static void test_samples_snapshot(struct bt_test *t)
{
	struct btrace_record_opts rec = { .sz = sizeof(rec) };
	struct btrace_record_result res;
	struct btrace_error err = { 0 };
	struct btrace_snapshot *s = NULL;
	struct bt_engine_opts o;
	char *argv[] = { child_path, "crash", NULL };
	char out[512];
	const struct btrace_buffer *b;
	uint64_t last;

	snprintf(out, sizeof(out), "%s/legacy.btrace", tmpdir);
	rec.argv = argv;
	rec.output = out;
	rec.flags = BTRACE_RECORD_QUIET;
	rec.on = BTRACE_ON_DEFAULT;
	memset(&o, 0, sizeof(o));
	o.rec = &rec;
	bt_perf_bts_sample_attr(&o.trace_attr);
	/* the stand-in: page faults instead of branches */
	o.trace_attr.type = PERF_TYPE_SOFTWARE;
	o.trace_attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	o.pmu_name = "page-faults (stand-in for the legacy BTS event)";
	o.has_aux = false;
	o.bts_samples = true;
	o.data_pages = 16;
	o.history = 16 * 4096;
	o.sideband_pages = 8;
	o.use_registry = true;
	o.test_event = true;
	o.cfg.backend = BTRACE_BACKEND_BTS;
	o.cfg.trace_kind = BTRACE_TRACE_BTS;
	memset(&res, 0, sizeof(res));
	if (!BT_CHECK(t, bt_engine_run(&o, &res, &err) == 0)) {
		bt_test_diag("record: %s (%s)", err.msg, err.hint);
		return;
	}
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->nbuffers == 1);
	b = &s->buffers[0];
	BT_EQ_INT(t, BTRACE_TRACE_BTS, b->kind);
	BT_EQ_U64(t, 16 * 4096, b->ring_size);
	BT_CHECK(t, b->size >= 24 && b->size % 24 == 0);
	BT_CHECK(t, !(b->flags & BTRACE_BUF_LOST));
	BT_CHECK(t, b->size <= 16 * 4096);
	/* every record: a user ip, flags 0 */
	for (uint64_t i = 0; i + 24 <= b->size; i += 24) {
		BT_CHECK(t, bt_le64(b->data + i) && (int64_t)bt_le64(b->data + i) > 0);
		BT_EQ_U64(t, 0, bt_le64(b->data + i + 16));
	}
	/* the newest: the crash's fault, at the store, on si_addr */
	BT_REQUIRE(t, s->signal && s->signal->has_regs);
	last = b->size - 24;
	BT_EQ_U64(t, s->signal->regs[BTRACE_REG_RIP], bt_le64(b->data + last));
	BT_EQ_U64(t, s->signal->addr, bt_le64(b->data + last + 8));
	BT_CONTAINS(t, btrace_snapshot_meta(s, "capture.bts_path"),
		    "branch-instructions");
	BT_CONTAINS(t, btrace_snapshot_meta(s, "limit.bts-kernel-records"),
		    "kernel address");
	btrace_snapshot_free(s);
}

/* The same attributes the engine uses for the legacy path: on this CPU
 * they open or not as the kernel decides; btrace tries them only on an
 * Intel CPU with DS, and says why not elsewhere. */
static void test_probe_gate(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct perf_event_attr a;

	bt_perf_bts_sample_attr(&a);
	BT_EQ_INT(t, PERF_TYPE_HARDWARE, a.type);
	BT_EQ_U64(t, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, a.config);
	BT_EQ_U64(t, 1, a.sample_period);
	BT_CHECK(t, !a.freq);
	BT_EQ_U64(t, PERF_SAMPLE_IP | PERF_SAMPLE_ADDR, a.sample_type);
	BT_CHECK(t, a.exclude_kernel && a.exclude_hv && !a.sample_id_all);
	BT_EQ_INT(t, -ENODEV, bt_perf_bts_sample_probe(false, &err));
	BT_CONTAINS(t, err.msg, "not a branch trace");
}

int main(void)
{
	static const struct bt_test_case cases[] = {
		BT_TEST_CASE(test_samples_snapshot),
		BT_TEST_CASE(test_probe_gate),
	};
	const char *b = getenv("BT_BUILD_ROOT");
	struct perf_event_attr a;
	char reg[300];
	int fd, r;

	snprintf(child_path, sizeof(child_path), "%s/tests/capture/sbchild",
		 b ? b : ".");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bt-legacy-bts-XXXXXX");
	if (!mkdtemp(tmpdir))
		bt_test_skip_all("mkdtemp failed");
	snprintf(reg, sizeof(reg), "%s/registry", tmpdir);
	setenv("BTRACE_REGISTRY", reg, 1);
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_PAGE_FAULTS;
	a.sample_period = 1;
	a.exclude_kernel = 1;
	fd = bt_perf_sys_open(&a, 0, -1, -1, 0);
	if (fd < 0)
		bt_test_skip_all("perf_event_open of a page-fault event failed (perf disabled here)");
	close(fd);
	r = bt_test_run(cases, (int)(sizeof(cases) / sizeof(cases[0])));
	{
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return r;
}
