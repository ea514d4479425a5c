/* SPDX-License-Identifier: MIT */
/*
 * Hardware suite: real Intel PT and BTS capture of real crashes (launch,
 * attach, threads, a handler that re-raises), each decoded (the fault in
 * crash_here from the registers, the stack), btrace calibrate, and rings
 * that wrap: BTS with the write index off and at the ring's base (the
 * records whole, the never-written tail of bts_buffer_setup_aux() left
 * out), PT.
 *
 * The first tests are the ones a reviewer runs first: BTS wrap off and at
 * the base, PT wrap with the head at different places in rings of two,
 * four and sixteen pages, an unprivileged launch of eight busy threads with
 * the catch-all rings forced (max_tasks 1), precise mode with busy siblings
 * (the crashed thread's last work kept; capture.disable_ns reported), and
 * the availability paths: page-table isolation (no intel_bts, the legacy
 * BTS event, doctor saying so), kernel.perf_event_paranoid 2 as an
 * unprivileged user, and an AUX ring the kernel cannot allocate in one
 * block (ENOMEM, halved).  As root the unprivileged cases run as uid
 * 65534 and kernel.perf_event_paranoid is set to 2 for the run when it is
 * higher (Debian's 3), then restored; intel_bts must then be refused
 * (bts_event_init() wants paranoid <= 1) with a message naming the
 * setting.
 *
 * Which backends to test is decided from the machine, not from btrace's
 * probe: the kernel's intel_pt / intel_bts PMU in
 * /sys/bus/event_source/devices.  Where one is there, btrace's probe must
 * accept it (test_probe fails otherwise); where neither is, the whole test
 * is skipped (TAP "1..0 # SKIP", exit 0).
 */
#include <cpuid.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <btrace/capture.h>
#include <btrace/decode.h>
#include <btrace/record.h>
#include <btrace/snapshot.h>

#include "bt-test.h"
#include "capture/perf-backend.h"
#include "capture/engine.h"

static char child_path[1024], tmpdir[256];
static uint32_t backends[2];
static int nbackends;

#define PMU_DIR "/sys/bus/event_source/devices/"

static const char *pmu_name(uint32_t backend)
{
	return backend == BTRACE_BACKEND_PT ? "intel_pt" : "intel_bts";
}

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

static uint64_t ring_history = 256 << 10;

static struct btrace_snapshot *run(struct bt_test *t, uint32_t backend,
				   char **argv, int pid, const char *name,
				   int *shell)
{
	struct btrace_record_opts o = { .sz = sizeof(o) };
	struct btrace_record_result res = { .sz = sizeof(res) };
	struct btrace_error err = { 0 };
	struct btrace_snapshot *s = NULL;
	char out[512];

	snprintf(out, sizeof(out), "%s/%s-%s.btrace", tmpdir,
		 backend == BTRACE_BACKEND_PT ? "pt" : "bts", name);
	o.backend = backend;
	o.argv = argv;
	o.pid = pid;
	o.output = out;
	o.size = ring_history;
	if (ring_history < (256 << 10))
		o.pad = 4096;
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

/* The trace decodes: the crashed thread's fault is in crash_here, exact,
 * at the instruction the registers name, with instructions before it and
 * @caller (when given) below crash_here in the stack. */
static void check_decode(struct bt_test *t, const struct btrace_snapshot *s,
			 const char *caller)
{
	struct btrace_decode_result *res = NULL;
	const struct btrace_thread *th;
	struct btrace_error err = { 0 };
	uint64_t want;

	if (!BT_CHECK(t, btrace_decode(s, NULL, &res, &err) == 0)) {
		bt_test_diag("decode: %s", err.msg);
		return;
	}
	if (BT_CHECK(t, res->crashed_thread >= 0 &&
		       (size_t)res->crashed_thread < res->nthreads)) {
		th = &res->threads[res->crashed_thread];
		want = s->signal->fault_ip ? s->signal->fault_ip :
		       s->signal->regs[BTRACE_REG_RIP];
		BT_CHECK(t, th->ninsn > 0);
		BT_CHECK(t, th->fault.found);
		BT_CHECK(t, th->fault.exact);
		BT_EQ_U64(t, want, th->fault.ip);
		BT_EQ_STR(t, "crash_here", th->fault.sym.function);
		if (BT_CHECK(t, th->nstack >= 2)) {
			BT_EQ_STR(t, "crash_here", th->stack[0].sym.function);
			if (caller)
				BT_EQ_STR(t, caller, th->stack[1].sym.function);
		}
	}
	btrace_decode_result_free(res);
}

static void check_trace(struct bt_test *t, uint32_t backend,
			const struct btrace_snapshot *s, int want_buffers,
			const char *caller)
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
	check_decode(t, s, caller);
}

/* A PMU the machine has is one btrace's probe accepts. */
static void test_probe(struct bt_test *t)
{
	for (int i = 0; i < nbackends; i++) {
		struct btrace_error err = { 0 };
		int r = bt_perf_probe(backends[i], NULL, &err);

		if (r)
			bt_test_diag("%s is in " PMU_DIR " but the probe says: %s",
				     pmu_name(backends[i]), err.msg);
		BT_EQ_INT(t, 0, r);
	}
}

/* btrace calibrate measures a pad and stores it where btrace record finds
 * it (here: under a private XDG_CACHE_HOME). */
static void test_calibrate(struct bt_test *t)
{
	char cache[300];

	snprintf(cache, sizeof(cache), "%s/cache", tmpdir);
	setenv("XDG_CACHE_HOME", cache, 1);
	for (int i = 0; i < nbackends; i++) {
		struct btrace_calibration cal;
		struct btrace_error err = { 0 };

		memset(&cal, 0, sizeof(cal));
		cal.sz = sizeof(cal);
		if (!BT_CHECK(t, btrace_calibrate(backends[i], 3, NULL, &cal,
						  &err) == 0)) {
			bt_test_diag("calibrate %s: %s", pmu_name(backends[i]),
				     err.msg);
			continue;
		}
		BT_EQ_INT(t, backends[i], cal.backend);
		BT_EQ_INT(t, 3, cal.runs);
		BT_CHECK(t, cal.pad_max > 0);
		BT_CHECK(t, cal.pad_max >= cal.pad_plain &&
			    cal.pad_max >= cal.pad_handler);
		BT_CHECK(t, cal.recommended >= cal.pad_max);
		BT_CHECK(t, !strncmp(cal.saved_to, cache, strlen(cache)));
		BT_CHECK(t, access(cal.saved_to, R_OK) == 0);
		BT_EQ_U64(t, cal.recommended, bt_calibration_load(backends[i]));
	}
	unsetenv("XDG_CACHE_HOME");
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
		check_trace(t, backends[i], s, 1, "main");
		btrace_snapshot_free(s);
	}
}

static void test_handler_reraise(struct bt_test *t)
{
	for (int i = 0; i < nbackends; i++) {
		char *argv[] = { child_path, "handler", NULL };
		struct btrace_snapshot *s = run(t, backends[i], argv, 0, "handler", NULL);

		BT_REQUIRE(t, s);
		check_trace(t, backends[i], s, 1, "main");
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
		check_trace(t, backends[i], s, 4, "sleeper");
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
		check_trace(t, backends[i], s, 3, "sleeper");
		btrace_snapshot_free(s);
	}
}

/* A small ring, a long loop: the ring wraps.  Returns the snapshot of
 * "sbchild loop @n" with its only buffer checked for whole records. */
static struct btrace_snapshot *run_loop(struct bt_test *t, uint32_t backend,
					long n)
{
	char num[32], *argv[] = { child_path, "loop", num, NULL };
	struct btrace_snapshot *s;

	snprintf(num, sizeof(num), "%ld", n);
	ring_history = 4096;
	s = run(t, backend, argv, 0, "loop", NULL);
	ring_history = 256 << 10;
	return s;
}

/* The BTS buffer of a wrapped ring: whole records, every one written (no
 * zero tail in the middle), as many as the trimmed ring holds. */
static void check_bts_wrapped(struct bt_test *t, const struct btrace_buffer *b)
{
	uint64_t end = b->ring_size - b->ring_size % 24, zero = 0;

	BT_CHECK(t, b->flags & BTRACE_BUF_WRAPPED);
	BT_EQ_U64(t, end, b->size);
	BT_EQ_U64(t, 0, b->size % 24);
	BT_EQ_U64(t, 0, b->head % 24);
	for (uint64_t i = 0; i + 24 <= b->size; i += 24) {
		uint64_t from, to;

		memcpy(&from, b->data + i, 8);
		memcpy(&to, b->data + i + 8, 8);
		if (!from && !to)
			zero++;
	}
	BT_EQ_U64(t, 0, zero);
}

/* The AUX ring of intel_bts (the legacy path has none). */
static int bts_backend(void)
{
	return access(PMU_DIR "intel_bts", F_OK) == 0;
}

static void test_bts_wrap_off_zero(struct bt_test *t)
{
	struct btrace_snapshot *s = NULL;

	if (!bts_backend())
		BT_SKIP(t, "no intel_bts PMU in " PMU_DIR " (an AUX ring wrap needs it)");
	/* the index lands at the base by chance once in ~170 runs: then
	 * once more with one more iteration */
	for (long n = 200000; n < 200003; n++) {
		btrace_snapshot_free(s);
		s = run_loop(t, BTRACE_BACKEND_BTS, n);
		BT_REQUIRE(t, s && s->nbuffers >= 1);
		if (s->buffers[0].head != 0)
			break;
	}
	BT_CHECK(t, s->buffers[0].head != 0);
	check_bts_wrapped(t, &s->buffers[0]);
	check_trace(t, BTRACE_BACKEND_BTS, s, 1, "main");
	btrace_snapshot_free(s);
}

/* The index at the base after a wrap: steer the loop count from the head
 * the previous runs ended at (each iteration adds the same records; the
 * kernel's own entries add noise, so it may take a few tries). */
static void test_bts_wrap_at_zero(struct bt_test *t)
{
	long n = 200000, per_iter = 0;
	uint64_t prev = 0;
	int landed = 0;

	if (!bts_backend())
		BT_SKIP(t, "no intel_bts PMU in " PMU_DIR " (an AUX ring wrap needs it)");
	for (int tries = 0; tries < 40 && !landed; tries++) {
		struct btrace_snapshot *s = run_loop(t, BTRACE_BACKEND_BTS, n);
		uint64_t cap, head;

		BT_REQUIRE(t, s && s->nbuffers >= 1);
		cap = s->buffers[0].size / 24;
		head = s->buffers[0].head / 24;
		check_bts_wrapped(t, &s->buffers[0]);
		if (head == 0) {
			landed = 1;
			check_trace(t, BTRACE_BACKEND_BTS, s, 1, "main");
		} else if (tries == 0) {
			prev = head;
			n++;
		} else {
			if (!per_iter)
				per_iter = (long)((head + cap - prev) % cap);
			/* iterations to go from @head to the base */
			n += per_iter ? (long)((cap - head) / (uint64_t)per_iter) : 1;
			if (per_iter && (cap - head) % (uint64_t)per_iter)
				n++;
			prev = head;
		}
		btrace_snapshot_free(s);
	}
	if (!landed)
		BT_SKIP(t, "the BTS index never ended at the ring's base in 40 runs "
			   "(interrupts and page faults add records): the case is "
			   "covered by capture-aux-e2e against the kernel's rules");
}

static void test_pt_wrap(struct bt_test *t)
{
	struct btrace_snapshot *s;
	int pt = 0;

	for (int i = 0; i < nbackends; i++)
		pt |= backends[i] == BTRACE_BACKEND_PT;
	if (!pt)
		BT_SKIP(t, "no intel_pt PMU in " PMU_DIR);
	s = run_loop(t, BTRACE_BACKEND_PT, 200000);
	BT_REQUIRE(t, s && s->nbuffers >= 1);
	BT_CHECK(t, s->buffers[0].flags & BTRACE_BUF_WRAPPED);
	BT_EQ_U64(t, s->buffers[0].ring_size, s->buffers[0].size);
	check_trace(t, BTRACE_BACKEND_PT, s, 1, "main");
	btrace_snapshot_free(s);
}

/* Without intel_bts (page-table isolation) on an Intel CPU with the DS
 * area, BTS records through the branch-instructions event. */
static void test_bts_legacy(struct bt_test *t)
{
	unsigned a, b, c, d;
	char vendor[13];
	struct btrace_snapshot *s;
	char *argv[] = { child_path, "crash", NULL };

	if (access(PMU_DIR "intel_bts", F_OK) == 0)
		BT_SKIP(t, "intel_bts is there: the legacy BTS path is for when it is missing");
	if (!__get_cpuid(0, &a, &b, &c, &d))
		BT_SKIP(t, "no CPUID");
	memcpy(vendor, &b, 4);
	memcpy(vendor + 4, &d, 4);
	memcpy(vendor + 8, &c, 4);
	vendor[12] = 0;
	if (strcmp(vendor, "GenuineIntel") || !__get_cpuid(1, &a, &b, &c, &d) ||
	    !(d & (1u << 21)))
		BT_SKIP(t, "not an Intel CPU with the DS area (CPUID.1:EDX[21]): no BTS");
	s = run(t, BTRACE_BACKEND_BTS, argv, 0, "legacy", NULL);
	BT_REQUIRE(t, s);
	BT_CONTAINS(t, btrace_snapshot_meta(s, "capture.bts_path"), "branch-instructions");
	check_trace(t, BTRACE_BACKEND_BTS, s, 1, NULL);
	btrace_snapshot_free(s);
}

/* --- what a reviewer runs first --- */

#define NOBODY 65534

static int read_int(const char *path, int def)
{
	char buf[64];
	int fd = open(path, O_RDONLY | O_CLOEXEC), v = def;
	ssize_t n;

	if (fd < 0)
		return def;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n > 0) {
		buf[n] = 0;
		v = atoi(buf);
	}
	return v;
}

static int write_int(const char *path, int v)
{
	char buf[32];
	int fd = open(path, O_WRONLY | O_CLOEXEC), n;

	if (fd < 0)
		return -errno;
	n = snprintf(buf, sizeof(buf), "%d\n", v);
	if (write(fd, buf, (size_t)n) != n) {
		close(fd);
		return -EIO;
	}
	close(fd);
	return 0;
}

#define PARANOID "/proc/sys/kernel/perf_event_paranoid"
static int saved_paranoid = INT_MIN;

static void restore_paranoid(void)
{
	if (saved_paranoid != INT_MIN && write_int(PARANOID, saved_paranoid) == 0)
		saved_paranoid = INT_MIN;
}

/* kernel.perf_event_paranoid made at most @v for the test when root
 * (restored at the end); the value in force. */
static int paranoid_at_most(int v)
{
	int cur = read_int(PARANOID, 3);

	if (cur > v && geteuid() == 0) {
		if (saved_paranoid == INT_MIN)
			saved_paranoid = cur;
		if (write_int(PARANOID, v) == 0) {
			bt_test_diag("kernel.perf_event_paranoid %d -> %d for this test", cur, v);
			cur = v;
		}
	}
	return cur;
}

struct hw_run {
	const char *name;
	uint32_t backend;
	char **argv;
	uint64_t size;          /* history; 0 default */
	int max_tasks;          /* 1: every thread but the first on the
				 * catch-all rings */
	bool uncapped;          /* no 4 MiB cap on one ring: the kernel
				 * decides (rb_alloc_aux()) */
	bool unprivileged;      /* as uid 65534 when root */
	bool expect_fail;       /* the recording must fail: its message in
				 * last_msg, no failure noted */
};

static char last_msg[1024];

/*
 * Record through the engine with the options btrace record uses
 * (bt_perf_engine_opts()), changed as @h says, in a child process (as uid
 * 65534 with no capabilities when @h->unprivileged and root).  Returns the
 * snapshot, or NULL with the failure noted; *@skip set (and NULL) when uid
 * 65534 cannot run the test program (its copy in /tmp, mounted noexec).
 */
static struct btrace_snapshot *run_engine(struct bt_test *t,
					  const struct hw_run *h, bool *skip)
{
	char dir[400], out[600], msg[1024] = "";
	struct btrace_snapshot *s = NULL;
	struct btrace_error err = { 0 };
	int pfd[2], st = 0;
	ssize_t n;
	pid_t pid;

	*skip = false;
	snprintf(dir, sizeof(dir), "%s/%s-XXXXXX", tmpdir, h->name);
	if (!mkdtemp(dir) || pipe2(pfd, O_CLOEXEC) < 0) {
		bt_test_fail(t, __FILE__, __LINE__, "mkdtemp/pipe: %s", strerror(errno));
		return NULL;
	}
	if (h->unprivileged && geteuid() == 0 &&
	    (chmod(tmpdir, 0711) < 0 || chown(dir, NOBODY, NOBODY) < 0)) {
		bt_test_fail(t, __FILE__, __LINE__, "chown %s: %s", dir, strerror(errno));
		return NULL;
	}
	snprintf(out, sizeof(out), "%s/out.btrace", dir);
	pid = fork();
	if (pid == 0) {
		struct btrace_record_opts o = { .sz = sizeof(o) };
		struct btrace_record_result res;
		struct bt_engine_opts eo;
		int code = 1;

		close(pfd[0]);
		if (h->unprivileged && geteuid() == 0 &&
		    (setgroups(0, NULL) < 0 || setgid(NOBODY) < 0 ||
		     setuid(NOBODY) < 0)) {
			dprintf(pfd[1], "setuid(%d): %s", NOBODY, strerror(errno));
			_exit(1);
		}
		/* setuid() left the process not dumpable, which a user's
		 * own shell is: its children would not be ptrace-readable
		 * before their exec, and perf_event_open() on them fails */
		prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
		/* the user's own places, not root's */
		unsetenv("XDG_RUNTIME_DIR");
		setenv("HOME", dir, 1);
		setenv("XDG_CACHE_HOME", dir, 1);
		if (access(h->argv[0], X_OK) < 0) {
			dprintf(pfd[1], "uid %d cannot run %s (%s): is its directory mounted noexec?",
				(int)getuid(), h->argv[0], strerror(errno));
			_exit(77);
		}
		o.backend = h->backend;
		o.argv = h->argv;
		o.output = out;
		o.size = h->size;
		o.flags = BTRACE_RECORD_QUIET;
		if (bt_perf_engine_opts(h->backend, &o, &eo, &err) < 0) {
			dprintf(pfd[1], "engine options: %s (%s)", err.msg, err.hint);
			_exit(1);
		}
		eo.max_tasks = h->max_tasks;
		if (h->uncapped)
			eo.max_ring = 0;
		if (bt_engine_run(&eo, &res, &err) < 0)
			dprintf(pfd[1], "record: %s (%s)", err.msg, err.hint);
		else if (!res.snapshots)
			dprintf(pfd[1], "record: no snapshot written (exit status 0x%x)",
				res.exit_status);
		else
			code = 0;
		_exit(code);
	}
	close(pfd[1]);
	n = read(pfd[0], msg, sizeof(msg) - 1);
	msg[n > 0 ? n : 0] = 0;
	close(pfd[0]);
	if (pid < 0 || waitpid(pid, &st, 0) != pid) {
		bt_test_fail(t, __FILE__, __LINE__, "fork/waitpid: %s", strerror(errno));
		return NULL;
	}
	if (WIFEXITED(st) && WEXITSTATUS(st) == 77) {
		bt_test_diag("%s", msg);
		*skip = true;
		return NULL;
	}
	snprintf(last_msg, sizeof(last_msg), "%s", msg);
	if (h->expect_fail) {
		if (WIFEXITED(st) && WEXITSTATUS(st) == 1 && msg[0])
			return NULL;
		bt_test_fail(t, __FILE__, __LINE__, "%s %s: the recording was expected to fail (status 0x%x)",
			     h->name, pmu_name(h->backend), st);
		return NULL;
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		bt_test_fail(t, __FILE__, __LINE__, "%s %s: %s", h->name,
			     pmu_name(h->backend), msg[0] ? msg : "the recording process failed");
		return NULL;
	}
	if (btrace_snapshot_read(out, 0, &s, &err) < 0) {
		bt_test_fail(t, __FILE__, __LINE__, "read %s: %s", out, err.msg);
		return NULL;
	}
	return s;
}

/* Backends with an AUX ring (the legacy BTS event has none). */
static int aux_backends(uint32_t *out)
{
	int n = 0;

	for (int i = 0; i < nbackends; i++)
		if (access(PMU_DIR, F_OK) == 0 &&
		    (backends[i] == BTRACE_BACKEND_PT || bts_backend()))
			out[n++] = backends[i];
	return n;
}

static int count_tids(const char *list)
{
	int n = 0;

	for (const char *p = list; p && *p; p++)
		if ((*p >= '0' && *p <= '9') && (p == list || p[-1] == ' '))
			n++;
	return n;
}

/* The crashed thread's decoded history holds at least @min instructions. */
static void check_crashed_history(struct bt_test *t,
				  const struct btrace_snapshot *s, uint64_t min)
{
	struct btrace_decode_result *res = NULL;
	struct btrace_error err = { 0 };

	if (!BT_CHECK(t, btrace_decode(s, NULL, &res, &err) == 0))
		return;
	if (BT_CHECK(t, res->crashed_thread >= 0)) {
		const struct btrace_thread *th = &res->threads[res->crashed_thread];

		bt_test_diag("crashed thread %d (cpu %d): %llu instructions decoded",
			     (int)th->tid, (int)th->cpu, (unsigned long long)th->ninsn);
		BT_CHECK(t, th->ninsn >= min);
	}
	btrace_decode_result_free(res);
}

/* Eight busy threads launched by an unprivileged user, every thread but
 * main on the catch-all rings (one event per CPU per thread, SET_OUTPUT to
 * the CPU's ring, allowed at paranoid 2 because each is bound to its
 * thread), split by thread in the snapshot. */
static void test_unprivileged_catch_all(struct bt_test *t)
{
	uint32_t be[2];
	int nb = aux_backends(be), par = paranoid_at_most(2);

	if (!nb)
		BT_SKIP(t, "no intel_pt or intel_bts PMU: the catch-all rings are AUX rings");
	if (par > 2)
		BT_SKIP(t, "kernel.perf_event_paranoid > 2 and not root: perf is closed to unprivileged users here");
	for (int i = 0; i < nb; i++) {
		char *argv[] = { child_path, "busy", "8", "300", NULL };
		struct hw_run h = { "unpriv8", be[i], argv, 64 << 10, 1, false, true,
				    false };
		struct btrace_snapshot *s;
		const char *ev, *ca;
		int pieces = 0, crashed_piece = 0;
		bool skip;

		/* bts_event_init(): intel_bts leaks kernel addresses, so it
		 * needs perf_allow_kernel() (paranoid <= 1 or CAP_PERFMON) */
		h.expect_fail = be[i] == BTRACE_BACKEND_BTS && geteuid() == 0;
		s = run_engine(t, &h, &skip);
		if (skip)
			BT_SKIP(t, "uid 65534 cannot run the copy of the test program in the test's directory (noexec?)");
		if (h.expect_fail) {
			bt_test_diag("intel_bts unprivileged at paranoid 2: %s", last_msg);
			BT_CONTAINS(t, last_msg, "perf_event_paranoid");
			continue;
		}
		BT_REQUIRE(t, s != NULL);
		ev = btrace_snapshot_meta(s, "capture.events");
		bt_test_diag("%s: capture.events: %s", pmu_name(be[i]), ev ? ev : "-");
		bt_test_diag("capture.cpu_split: %s",
			     btrace_snapshot_meta(s, "capture.cpu_split") ?
			     btrace_snapshot_meta(s, "capture.cpu_split") : "-");
		ca = ev ? strstr(ev, "catch-all:") : NULL;
		BT_REQUIRE(t, ca != NULL);
		BT_CHECK(t, count_tids(ca + 10) >= 8);
		BT_REQUIRE(t, s->signal != NULL);
		for (size_t k = 0; k < s->nbuffers; k++)
			if (s->buffers[k].cpu >= 0 && s->buffers[k].tid > 0) {
				pieces++;
				crashed_piece += s->buffers[k].tid == s->signal->tid;
			}
		BT_CHECK(t, pieces >= 2);
		BT_CHECK(t, crashed_piece >= 1);
		check_trace(t, be[i], s, 2, "busy_crash");
		btrace_snapshot_free(s);
	}
}

/* Precise mode with busy siblings: the siblings (and on a shared CPU ring
 * the crashed thread's own neighbours) are disabled at the stop, so the
 * crashed thread's last work is in the snapshot: per-task buffers and the
 * catch-all rings forced. */
static void test_precise_busy_siblings(struct bt_test *t)
{
	uint32_t be[2];
	int nb = aux_backends(be);
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	char nbusy[16];

	if (!nb)
		BT_SKIP(t, "no intel_pt or intel_bts PMU");
	snprintf(nbusy, sizeof(nbusy), "%ld", ncpu * 2 < 4 ? 4 : ncpu * 2 > 16 ? 16 : ncpu * 2);
	for (int i = 0; i < nb; i++)
		for (int catch_all = 0; catch_all < 2; catch_all++) {
			char *argv[] = { child_path, "busy", nbusy, "300", NULL };
			struct hw_run h = { "busy", be[i], argv, 64 << 10,
					    catch_all, false, false, false };
			struct btrace_snapshot *s;
			const char *d;
			bool skip;

			s = run_engine(t, &h, &skip);
			BT_REQUIRE(t, s != NULL);
			d = btrace_snapshot_meta(s, "capture.disable_ns");
			bt_test_diag("%s, %s, %s busy threads: capture.disable_ns %s",
				     pmu_name(be[i]), catch_all ? "catch-all" : "per-task",
				     nbusy, d ? d : "-");
			BT_CHECK(t, d != NULL);
			check_trace(t, be[i], s, 2, "busy_crash");
			/* busy_crash's loop: 2000 calls of step() */
			check_crashed_history(t, s, 2000);
			btrace_snapshot_free(s);
		}
}

/* Page-table isolation: the kernel does not register intel_bts
 * (bts_init() returns -ENODEV with X86_FEATURE_PTI), doctor says BTS goes
 * through the branch-instructions event, and an unprivileged user records
 * with it at paranoid 2. */
static void test_avail_pti(struct bt_test *t)
{
	char m[256] = "";
	int fd = open("/sys/devices/system/cpu/vulnerabilities/meltdown", O_RDONLY | O_CLOEXEC);
	struct btrace_doctor_report rep = { .sz = sizeof(rep) };
	struct btrace_error err = { 0 };
	unsigned a, b, c, d;
	ssize_t n = fd >= 0 ? read(fd, m, sizeof(m) - 1) : -1;
	char *argv[] = { child_path, "crash", NULL };
	struct hw_run h = { "pti", BTRACE_BACKEND_BTS, argv, 0, 0, false, true, false };
	struct btrace_snapshot *s;
	bool skip;

	if (fd >= 0)
		close(fd);
	m[n > 0 ? n : 0] = 0;
	if (!strstr(m, "PTI"))
		BT_SKIP(t, "page-table isolation is off here (vulnerabilities/meltdown does not say PTI)");
	BT_CHECK(t, access(PMU_DIR "intel_bts", F_OK) != 0);
	if (!__get_cpuid(1, &a, &b, &c, &d) || !(d & (1u << 21)))
		BT_SKIP(t, "no DS area (CPUID.1:EDX[21]): no BTS at all");
	BT_REQUIRE(t, btrace_doctor(NULL, &rep, &err) == 0);
	BT_EQ_INT(t, 1, rep.kpti);
	BT_EQ_STR(t, "branch-instructions", rep.bts_path);
	if (paranoid_at_most(2) > 2)
		BT_SKIP(t, "kernel.perf_event_paranoid > 2 and not root");
	s = run_engine(t, &h, &skip);
	if (skip)
		BT_SKIP(t, "uid 65534 cannot run the copy of the test program in the test's directory (noexec?)");
	BT_REQUIRE(t, s != NULL);
	BT_CONTAINS(t, btrace_snapshot_meta(s, "capture.bts_path"), "branch-instructions");
	check_trace(t, BTRACE_BACKEND_BTS, s, 1, NULL);
	btrace_snapshot_free(s);
}

/* kernel.perf_event_paranoid 2 (user-space measurement only): an
 * unprivileged user records a crash with every backend here.  Not root and
 * paranoid above 2: recording must fail and say why. */
static void test_avail_paranoid2(struct bt_test *t)
{
	int par = paranoid_at_most(2);

	if (par > 2) {
		struct btrace_record_opts o = { .sz = sizeof(o) };
		struct btrace_record_result res = { .sz = sizeof(res) };
		struct btrace_error err = { 0 };
		char *argv[] = { child_path, "crash", NULL };
		char out[400];

		snprintf(out, sizeof(out), "%s/paranoid3.btrace", tmpdir);
		o.backend = backends[0];
		o.argv = argv;
		o.output = out;
		o.flags = BTRACE_RECORD_QUIET;
		BT_CHECK(t, btrace_record(&o, &res, &err) < 0);
		bt_test_diag("paranoid %d: %s (%s)", par, err.msg, err.hint);
		BT_CHECK(t, strstr(err.msg, "paranoid") || strstr(err.hint, "paranoid"));
		return;
	}
	for (int i = 0; i < nbackends; i++) {
		char *argv[] = { child_path, "crash", NULL };
		struct hw_run h = { "paranoid2", backends[i], argv, 0, 0, false, true,
				    false };
		struct btrace_snapshot *s;
		bool skip;

		/* intel_bts needs paranoid <= 1 (bts_event_init() ->
		 * perf_allow_kernel()); the legacy BTS event and intel_pt
		 * with exclude_kernel do not */
		h.expect_fail = backends[i] == BTRACE_BACKEND_BTS && bts_backend() &&
				geteuid() == 0;
		s = run_engine(t, &h, &skip);
		if (skip)
			BT_SKIP(t, "uid 65534 cannot run the copy of the test program in the test's directory (noexec?)");
		if (h.expect_fail) {
			bt_test_diag("intel_bts unprivileged at paranoid 2: %s", last_msg);
			BT_CONTAINS(t, last_msg, "perf_event_paranoid");
			continue;
		}
		BT_REQUIRE(t, s != NULL);
		check_trace(t, backends[i], s, 1, "main");
		btrace_snapshot_free(s);
	}
}

/* rb_alloc_aux() (kernel/events/ring_buffer.c): in overwrite mode a PMU
 * with PERF_PMU_CAP_AUX_NO_SG (intel_bts; intel_pt without
 * topa_multiple_entries) needs the whole ring as one block of order
 * ilog2(pages); above MAX_PAGE_ORDER (4 MiB with 4 KiB pages) that can never
 * be had, as on a fragmented host it often cannot: ENOMEM.  Asked for a
 * 16 MiB ring with btrace's 4 MiB cap lifted, the engine must halve until
 * the kernel gives one, record, and say so (limit.aux-ring).  intel_pt with
 * multi-entry ToPA takes any pages: no halving. */
static void test_avail_enomem(struct bt_test *t)
{
	uint32_t be[2];
	int nb = aux_backends(be);

	if (!nb)
		BT_SKIP(t, "no intel_pt or intel_bts PMU");
	if (geteuid() != 0)
		BT_SKIP(t, "a 16 MiB ring needs more locked memory than a user is allowed: run as root");
	for (int i = 0; i < nb; i++) {
		char *argv[] = { child_path, "loop", "200000", NULL };
		struct hw_run h = { "enomem", be[i], argv, 16u << 20, 0, true, false,
				    false };
		bool no_sg = be[i] == BTRACE_BACKEND_BTS ||
			     read_int(PMU_DIR "intel_pt/caps/topa_multiple_entries", 0) == 0;
		const char *ring, *lim, *p;
		unsigned long long got = 0, req = 0;
		struct btrace_snapshot *s;
		bool skip;

		s = run_engine(t, &h, &skip);
		BT_REQUIRE(t, s != NULL);
		ring = btrace_snapshot_meta(s, "capture.aux_ring");
		lim = btrace_snapshot_meta(s, "limit.aux-ring");
		bt_test_diag("%s%s: capture.aux_ring: %s", pmu_name(be[i]),
			     no_sg ? " (one block)" : "", ring ? ring : "-");
		BT_REQUIRE(t, ring != NULL);
		p = strstr(ring, "obtained ");
		BT_REQUIRE(t, p && sscanf(p, "obtained %llu", &got) == 1);
		BT_REQUIRE(t, sscanf(ring, "requested %llu", &req) == 1);
		BT_CHECK(t, req >= 16384);
		if (no_sg) {
			BT_CHECK(t, lim != NULL);
			BT_CHECK(t, got <= 4096);
		} else {
			BT_CHECK(t, lim == NULL);
			BT_EQ_U64(t, req, got);
		}
		check_trace(t, be[i], s, 1, "main");
		btrace_snapshot_free(s);
	}
}

/* PT wrap in rings of two, four and sixteen pages (one ToPA entry or
 * several; a single-range output without multi-entry ToPA), loops of
 * different lengths so that the write offset ends at different places:
 * the whole ring kept, decoded to the fault. */
static void test_pt_wrap_boundaries(struct bt_test *t)
{
	static const uint64_t hist[] = { 4096, 4 * 4096 - 4096, 16 * 4096 - 4096 };
	int pt = 0;

	for (int i = 0; i < nbackends; i++)
		pt |= backends[i] == BTRACE_BACKEND_PT;
	if (!pt)
		BT_SKIP(t, "no intel_pt PMU in " PMU_DIR);
	for (size_t k = 0; k < sizeof(hist) / sizeof(hist[0]); k++)
		for (long n = 200000; n < 200000 + 3 * 977; n += 977) {
			char num[32], *argv[] = { child_path, "loop", num, NULL };
			struct btrace_snapshot *s;
			const struct btrace_buffer *b;

			snprintf(num, sizeof(num), "%ld", n);
			ring_history = hist[k];
			s = run(t, BTRACE_BACKEND_PT, argv, 0, "ptwrap", NULL);
			ring_history = 256 << 10;
			BT_REQUIRE(t, s && s->nbuffers >= 1);
			b = &s->buffers[0];
			bt_test_diag("ring %llu KiB, %ld calls: head %llu (page %llu)",
				     (unsigned long long)(b->ring_size >> 10), n,
				     (unsigned long long)b->head,
				     (unsigned long long)(b->head / 4096));
			BT_CHECK(t, b->flags & BTRACE_BUF_WRAPPED);
			BT_EQ_U64(t, b->ring_size, b->size);
			BT_CHECK(t, b->head < b->ring_size);
			check_trace(t, BTRACE_BACKEND_PT, s, 1, "main");
			btrace_snapshot_free(s);
		}
}

int main(void)
{
	static const struct bt_test_case cases[] = {
		/* the five a reviewer runs first */
		BT_TEST_CASE(test_bts_wrap_off_zero),
		BT_TEST_CASE(test_bts_wrap_at_zero),
		BT_TEST_CASE(test_pt_wrap_boundaries),
		BT_TEST_CASE(test_unprivileged_catch_all),
		BT_TEST_CASE(test_precise_busy_siblings),
		BT_TEST_CASE(test_avail_pti),
		BT_TEST_CASE(test_avail_paranoid2),
		BT_TEST_CASE(test_avail_enomem),
		/* then the rest */
		BT_TEST_CASE(test_probe),
		BT_TEST_CASE(test_launch_crash),
		BT_TEST_CASE(test_handler_reraise),
		BT_TEST_CASE(test_threads),
		BT_TEST_CASE(test_attach),
		BT_TEST_CASE(test_calibrate),
		BT_TEST_CASE(test_pt_wrap),
		BT_TEST_CASE(test_bts_legacy),
	};
	const char *b = getenv("BT_BUILD_ROOT");
	int r;

	if (access(PMU_DIR "intel_pt", F_OK) == 0)
		backends[nbackends++] = BTRACE_BACKEND_PT;
	if (access(PMU_DIR "intel_bts", F_OK) == 0)
		backends[nbackends++] = BTRACE_BACKEND_BTS;
	if (!nbackends) {
		unsigned ea, eb, ec, ed;

		/* no PMU, but BTS through the branch-instructions event
		 * when intel_bts is missing (page-table isolation) */
		if (__get_cpuid(0, &ea, &eb, &ec, &ed) && eb == 0x756e6547 /* Genu */ &&
		    __get_cpuid(1, &ea, &eb, &ec, &ed) && (ed & (1u << 21)))
			backends[nbackends++] = BTRACE_BACKEND_BTS;
	}
	if (!nbackends)
		bt_test_skip_all("this machine has no Intel PT or BTS (no intel_pt "
				 "or intel_bts in " PMU_DIR ", and not an Intel "
				 "CPU with the DS area for the legacy BTS event)");
	snprintf(child_path, sizeof(child_path), "%s/tests/capture/sbchild",
		 b ? b : ".");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bt-hw-test-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		return 1;
	}
	/* uid 65534 may not enter the build tree (a clone in a private
	 * directory): every case runs a copy in the test's own directory,
	 * which run_engine() opens (0711) to that uid */
	{
		char copy[sizeof(tmpdir) + 16];
		int e;

		snprintf(copy, sizeof(copy), "%s/sbchild", tmpdir);
		e = bt_test_copy_file(child_path, copy, 0755);
		if (e < 0) {
			fprintf(stderr, "copy %s to %s: %s\n", child_path, copy,
				strerror(-e));
			return 1;
		}
		snprintf(child_path, sizeof(child_path), "%s", copy);
	}
	atexit(restore_paranoid);
	r = bt_test_run(cases, (int)(sizeof(cases) / sizeof(cases[0])));
	restore_paranoid();
	{
		char cmd[300];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return r;
}
