/* SPDX-License-Identifier: MIT */
/*
 * Hardware suite: real Intel PT and BTS capture of real crashes (launch,
 * attach, threads, a handler that re-raises).  Exits 77 (TAP "1..0 # SKIP")
 * with the probe's reason where neither PMU is usable.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <btrace/record.h>
#include <btrace/snapshot.h>

#include "bt-test.h"
#include "capture/capture.h"

static char child_path[1024], tmpdir[256];
static uint32_t backends[2];
static int nbackends;

static const uint8_t psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82 };

static bool has_psb(const struct btrace_buffer *b)
{
	for (uint64_t i = 0; i + sizeof(psb) <= b->size; i++)
		if (!memcmp(b->data + i, psb, sizeof(psb)))
			return true;
	return false;
}

/* BTS: 24-byte records whose "from" addresses lie in user space. */
static bool has_bts_records(const struct btrace_buffer *b)
{
	int user = 0;

	for (uint64_t i = 0; i + 24 <= b->size; i += 24) {
		uint64_t from;

		memcpy(&from, b->data + i, 8);
		if (from && from < 0x800000000000ull)
			user++;
	}
	return user > 10;
}

static struct btrace_snapshot *run(struct bt_test *t, uint32_t backend,
				   char **argv, int pid, const char *name,
				   int *shell)
{
	struct btrace_record_opts o = { .sz = sizeof(o) };
	struct btrace_record_result res;
	struct btrace_error err = { 0 };
	struct btrace_snapshot *s = NULL;
	char out[512];

	snprintf(out, sizeof(out), "%s/%s-%s.btrace", tmpdir,
		 backend == BTRACE_BACKEND_PT ? "pt" : "bts", name);
	o.backend = backend;
	o.argv = argv;
	o.pid = pid;
	o.output = out;
	o.size = 256 << 10;
	o.flags = BTRACE_RECORD_QUIET;
	if (btrace_record(&o, &res, &err) < 0) {
		bt_test_fail(t, __FILE__, __LINE__, "record: %s (%s)", err.msg, err.hint);
		return NULL;
	}
	if (shell)
		*shell = res.shell_status;
	if (btrace_snapshot_read(out, 0, &s, &err) < 0) {
		bt_test_fail(t, __FILE__, __LINE__, "read: %s", err.msg);
		return NULL;
	}
	return s;
}

static void check_trace(struct bt_test *t, uint32_t backend,
			const struct btrace_snapshot *s, int want_buffers)
{
	int good = 0;

	BT_CHECK(t, (int)s->nbuffers >= want_buffers);
	for (size_t i = 0; i < s->nbuffers; i++) {
		const struct btrace_buffer *b = &s->buffers[i];

		BT_CHECK(t, b->size > 0);
		if (backend == BTRACE_BACKEND_PT ? has_psb(b) : has_bts_records(b))
			good++;
	}
	BT_CHECK(t, good >= 1);
	BT_REQUIRE(t, s->signal != NULL);
	BT_EQ_INT(t, SIGSEGV, s->signal->signo);
	BT_CHECK(t, s->signal->has_regs);
}

static void test_launch_crash(struct bt_test *t)
{
	for (int i = 0; i < nbackends; i++) {
		char *argv[] = { child_path, "crash", NULL };
		struct btrace_snapshot *s;
		int shell = 0;

		s = run(t, backends[i], argv, 0, "launch", &shell);
		BT_REQUIRE(t, s);
		BT_EQ_INT(t, 128 + SIGSEGV, shell);
		check_trace(t, backends[i], s, 1);
		btrace_snapshot_free(s);
	}
}

static void test_handler_reraise(struct bt_test *t)
{
	for (int i = 0; i < nbackends; i++) {
		char *argv[] = { child_path, "handler", NULL };
		struct btrace_snapshot *s = run(t, backends[i], argv, 0, "handler", NULL);

		BT_REQUIRE(t, s);
		check_trace(t, backends[i], s, 1);
		BT_CHECK(t, s->signal->code > 0);   /* the original fault */
		btrace_snapshot_free(s);
	}
}

static void test_threads(struct bt_test *t)
{
	for (int i = 0; i < nbackends; i++) {
		char *argv[] = { child_path, "threads", "3", "1", NULL };
		struct btrace_snapshot *s = run(t, backends[i], argv, 0, "threads", NULL);

		BT_REQUIRE(t, s);
		check_trace(t, backends[i], s, 4);
		btrace_snapshot_free(s);
	}
}

static void test_attach(struct bt_test *t)
{
	for (int i = 0; i < nbackends; i++) {
		pid_t target = fork();
		struct btrace_snapshot *s;

		if (target == 0) {
			execl(child_path, child_path, "threads", "2", "2", (char *)NULL);
			_exit(127);
		}
		usleep(200000);
		s = run(t, backends[i], NULL, target, "attach", NULL);
		waitpid(target, NULL, 0);
		BT_REQUIRE(t, s);
		check_trace(t, backends[i], s, 3);
		btrace_snapshot_free(s);
	}
}

int main(void)
{
	static const struct bt_test_case cases[] = {
		BT_TEST_CASE(test_launch_crash),
		BT_TEST_CASE(test_handler_reraise),
		BT_TEST_CASE(test_threads),
		BT_TEST_CASE(test_attach),
	};
	static char why[1700];
	struct btrace_error pt = { 0 }, bts = { 0 };
	const char *b = getenv("BT_BUILD_ROOT");

	if (bt_perf_probe(BTRACE_BACKEND_PT, NULL, &pt) == 0)
		backends[nbackends++] = BTRACE_BACKEND_PT;
	if (bt_perf_probe(BTRACE_BACKEND_BTS, NULL, &bts) == 0)
		backends[nbackends++] = BTRACE_BACKEND_BTS;
	if (!nbackends) {
		snprintf(why, sizeof(why), "no Intel PT (%s) and no BTS (%s)",
			 pt.msg, bts.msg);
		bt_test_skip_all(why);
	}
	snprintf(child_path, sizeof(child_path), "%s/tests/capture/sbchild",
		 b ? b : ".");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bt-hw-test-XXXXXX");
	if (!mkdtemp(tmpdir))
		bt_test_skip_all("mkdtemp failed");
	return bt_test_run(cases, (int)(sizeof(cases) / sizeof(cases[0])));
}
