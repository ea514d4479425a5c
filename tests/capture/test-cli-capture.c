/* SPDX-License-Identifier: MIT */
/*
 * The capture commands of the btrace CLI on the machine at hand:
 * `btrace record --backend pt|bts -- true` succeeds where the probe says the
 * PMU is usable and otherwise fails with the probe's explanation;
 * `btrace doctor` says why PT and BTS are (un)available; `btrace snapshot`
 * and `btrace calibrate` fail with a cause where they cannot work.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <btrace/snapshot.h>

#include "bt-test.h"
#include "capture/perf-backend.h"

static char btrace[1024];

/* Run btrace with @args (a shell word list); capture stdout+stderr. */
static int run(const char *args, char *out, size_t len)
{
	char cmd[2048];
	FILE *p;
	size_t n;
	int st;

	snprintf(cmd, sizeof(cmd), "cd /tmp && BTRACE_REGISTRY=/tmp/bt-cli-reg '%s' %s 2>&1",
		 btrace, args);
	p = popen(cmd, "r");
	if (!p)
		return -1;
	n = fread(out, 1, len - 1, p);
	out[n] = '\0';
	st = pclose(p);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static void record_case(struct bt_test *t, uint32_t backend, const char *name)
{
	struct btrace_error why = { 0 };
	char out[8192], args[64];
	int probe = bt_perf_probe(backend, NULL, &why), rc;

	snprintf(args, sizeof(args), "record -q --backend %s -o /dev/null -- true", name);
	rc = run(args, out, sizeof(out));
	if (probe == 0) {
		BT_EQ_INT(t, 0, rc);
		return;
	}
	BT_EQ_INT(t, 1, rc);
	BT_CONTAINS(t, out, "btrace record: ");
	BT_CONTAINS(t, out, why.msg);
	BT_CONTAINS(t, out, "hint: ");
	bt_test_diag("%s", out);
}

static void test_record_pt(struct bt_test *t)
{
	record_case(t, BTRACE_BACKEND_PT, "pt");
}

static void test_record_bts(struct bt_test *t)
{
	record_case(t, BTRACE_BACKEND_BTS, "bts");
}

static void test_doctor(struct bt_test *t)
{
	struct btrace_error pt = { 0 }, bts = { 0 };
	char out[16384];

	BT_EQ_INT(t, 0, run("doctor", out, sizeof(out)));
	BT_CONTAINS(t, out, "Intel PT:");
	BT_CONTAINS(t, out, "Intel BTS:");
	BT_CONTAINS(t, out, "perf_event_paranoid");
	BT_CONTAINS(t, out, "Locked memory:");
	BT_CONTAINS(t, out, "KPTI:");
	BT_CONTAINS(t, out, "Backend auto:");
	BT_EQ_INT(t, 0, run("doctor --json", out, sizeof(out)));
	/* the reasons, whole (the text wraps them at 80 columns) */
	if (bt_perf_probe(BTRACE_BACKEND_PT, NULL, &pt) < 0)
		BT_CONTAINS(t, out, pt.msg);
	if (bt_perf_probe(BTRACE_BACKEND_BTS, NULL, &bts) < 0)
		BT_CONTAINS(t, out, bts.msg);
	BT_CONTAINS(t, out, "\"intel_pt\": {");
	BT_CONTAINS(t, out, "\"qemu\": {");
	BT_CONTAINS(t, out, "\"auto_backend\": ");
	BT_EQ_INT(t, 2, run("doctor --bogus", out, sizeof(out)));
}

static void test_doctor_recorded_tree(struct bt_test *t)
{
	char out[16384], args[1200];
	const char *d = getenv("BT_TEST_DATA");

	snprintf(args, sizeof(args), "doctor --sysfs-root '%s/sysfs/skylake'",
		 d ? d : "tests/data");
	BT_EQ_INT(t, 0, run(args, out, sizeof(out)));
	BT_CONTAINS(t, out, "mtc_periods=249");        /* caps in hex */
	BT_CONTAINS(t, out, "config: 0x300e601");
	BT_CONTAINS(t, out, "(PMU type 8)");
}

static void test_snapshot_without_owner(struct bt_test *t)
{
	char out[4096], args[64];

	snprintf(args, sizeof(args), "snapshot %d", (int)getpid());
	BT_EQ_INT(t, 1, run(args, out, sizeof(out)));
	BT_CONTAINS(t, out, "no btrace recording owns this process");
	BT_CONTAINS(t, out, "hint: ");
	BT_EQ_INT(t, 2, run("snapshot", out, sizeof(out)));
	BT_EQ_INT(t, 2, run("snapshot notapid", out, sizeof(out)));
}

static void test_calibrate_needs_hardware(struct bt_test *t)
{
	struct btrace_error pt = { 0 }, bts = { 0 };
	char out[4096];

	/* decided from the machine (the kernel's PMUs), not btrace's probe */
	if (access("/sys/bus/event_source/devices/intel_pt", F_OK) == 0 ||
	    access("/sys/bus/event_source/devices/intel_bts", F_OK) == 0)
		BT_SKIP(t, "trace hardware present: calibrate is tested by the hardware suite");
	bt_perf_probe(BTRACE_BACKEND_PT, NULL, &pt);
	bt_perf_probe(BTRACE_BACKEND_BTS, NULL, &bts);
	BT_EQ_INT(t, 1, run("calibrate --runs 1", out, sizeof(out)));
	BT_CONTAINS(t, out, "btrace calibrate: ");
	BT_CONTAINS(t, out, bts.msg);
}

int main(void)
{
	static const struct bt_test_case cases[] = {
		BT_TEST_CASE(test_record_pt),
		BT_TEST_CASE(test_record_bts),
		BT_TEST_CASE(test_doctor),
		BT_TEST_CASE(test_doctor_recorded_tree),
		BT_TEST_CASE(test_snapshot_without_owner),
		BT_TEST_CASE(test_calibrate_needs_hardware),
	};
	const char *b = getenv("BT_BUILD_ROOT");

	snprintf(btrace, sizeof(btrace), "%s/src/cli/btrace", b ? b : ".");
	if (access(btrace, X_OK) != 0)
		bt_test_skip_all("the btrace executable is not built");
	return bt_test_run(cases, (int)(sizeof(cases) / sizeof(cases[0])));
}
