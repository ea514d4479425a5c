/* SPDX-License-Identifier: MIT */
/*
 * Threads and resources of the capture engine against the real kernel, with
 * a software event standing in for the trace PMU:
 *   - a catch-all ring whose AUX mmap the kernel refuses (a software event
 *     has no AUX area: rb_alloc_aux() in kernel/events/ring_buffer.c says
 *     EOPNOTSUPP) leaves no ring holding the thread's descriptor;
 *   - threads the locked-memory budget has no room for are recorded in the
 *     snapshot (limit.untraced-threads, task flag UNTRACED), as an
 *     unprivileged uid with RLIMIT_MEMLOCK 0;
 *   - every perf descriptor of the engine is close-on-exec;
 *   - a low soft RLIMIT_NOFILE is raised for one event per CPU per thread;
 *   - a capability held in a user namespace other than the initial one does
 *     not count (capable() asks init_user_ns);
 *   - a new thread's first stop before its parent's clone event;
 *   - PERF_RECORD_LOST in a trace data ring is a limit, AUX marks keep their
 *     offsets; code mapped over while recording; the perf clock.
 */
#include <errno.h>
#include <dirent.h>
#include <fcntl.h>
#include <grp.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <btrace/snapshot.h>

#include "bt-test.h"
#include "capture/budget.h"
#include "capture/capture-internal.h"
#include "capture/engine-internal.h"
#include "capture/perf.h"
#include "util.h"
#include "engine-test.h"

static void end_target(pid_t target)
{
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
}

/* Descriptors of /proc/@pid/fd that are perf events; @cloexec counts those
 * with O_CLOEXEC in their fdinfo flags. */
static int perf_fds(pid_t pid, int *cloexec)
{
	char dir[64], path[400], link[128];
	struct dirent *d;
	DIR *dp;
	int n = 0;

	*cloexec = 0;
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	dp = opendir(dir);
	if (!dp)
		return -1;
	while ((d = readdir(dp))) {
		ssize_t l;
		char *buf = NULL, *f;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, d->d_name);
		l = readlink(path, link, sizeof(link) - 1);
		if (l < 0)
			continue;
		link[l] = '\0';
		if (!strstr(link, "perf_event"))
			continue;
		n++;
		snprintf(path, sizeof(path), "/proc/%d/fdinfo/%s", (int)pid,
			 d->d_name);
		if (bt_read_file(path, &buf, NULL, 1 << 16) < 0)
			continue;
		f = strstr(buf, "flags:");
		if (f && (strtoul(f + 6, NULL, 8) & O_CLOEXEC))
			(*cloexec)++;
		free(buf);
	}
	closedir(dp);
	return n;
}

/* --- a refused catch-all mapping leaves no stale descriptor --- */

static void test_catch_all_failure_no_stale_fd(struct bt_test *t)
{
	char *targv[] = { child_path, "sleep", "30", NULL };
	struct btrace_record_opts rec = { .sz = sizeof(rec) };
	struct btrace_record_result res = { 0 };
	struct btrace_error err = { 0 };
	struct bt_engine_opts o;
	struct bt_engine e;
	pid_t target;
	int before, after, cx, r, probe;

	engine_opts(&o, &rec, false);
	rec.flags = BTRACE_RECORD_QUIET;
	o.has_aux = true;       /* the AUX mmap is refused by the kernel */
	o.max_tasks = 1;        /* the thread goes to the catch-all rings */
	target = spawn(targv);
	engine_bare(&e, &o, &rec, &res, 0);
	BT_REQUIRE(t, bt_engine_prepare(&e, &err) == 0);
	bt_budget_env_current(&e.env);
	bt_budget_state_init(&e.env, &e.st);
	e.plan.ring.ring = (uint64_t)sysconf(_SC_PAGESIZE);
	e.plan.task_cost = 1 + 1 + 1;
	/* one thread already holds a per-task buffer (max_tasks = 1) */
	BT_REQUIRE(t, bt_grow((void **)&e.tevs, &e.ctev, 0, sizeof(*e.tevs)) == 0);
	memset(&e.tevs[0], 0, sizeof(e.tevs[0]));
	bt_perf_ring_init(&e.tevs[0].ring);
	e.tevs[0].tid = getpid();
	e.tevs[0].per_task = true;
	e.ntev = 1;
	before = perf_fds(getpid(), &cx);
	r = bt_engine_open_thread(&e, target, false, false, &err);
	bt_test_diag("catch-all open: %d (%s)", r, err.msg);
	BT_EQ_INT(t, -EOPNOTSUPP, r);
	BT_EQ_INT(t, 1, (int)e.ntev);
	for (int c = 0; c < e.ncpus; c++)
		BT_EQ_INT(t, -1, e.cpu_rings[c].fd);
	BT_CHECK(t, !e.cpu_rings_open);
	after = perf_fds(getpid(), &cx);
	BT_EQ_INT(t, before, after);   /* nothing leaked */
	/* A descriptor opened now takes the lowest free number, the one a
	 * stale ring entry would hold: the release must not close it. */
	probe = open("/dev/null", O_RDONLY | O_CLOEXEC);
	BT_REQUIRE(t, probe >= 0);
	bt_engine_release(&e);
	BT_CHECK(t, fcntl(probe, F_GETFD) >= 0);
	close(probe);
	end_target(target);
}

/* --- a new thread's first stop before its parent's clone event --- */

static void *pauser(void *arg)
{
	(void)arg;
	for (;;)
		pause();
	return NULL;
}

/*
 * With PTRACE_O_TRACECLONE the kernel reports the parent's
 * PTRACE_EVENT_CLONE and the new thread's first stop (PTRACE_EVENT_STOP of
 * a seized tracee, ptrace_init_task() with JOBCTL_TRAP_STOP) in either
 * order.  The test holds both stops and hands the engine the thread's
 * first: its event must exist before the engine resumes it.
 */
static void test_first_stop_before_clone_event(struct bt_test *t)
{
	struct btrace_record_opts rec = { .sz = sizeof(rec) };
	struct btrace_record_result res = { 0 };
	struct btrace_error err = { 0 };
	struct bt_engine_opts o;
	struct bt_engine e;
	int go[2], clone_status = 0, new_status = 0, st;
	pid_t child, newtid = 0, w;
	bool have_clone = false;
	unsigned long msg = 0;

	BT_REQUIRE(t, pipe(go) == 0);
	child = fork();
	if (child == 0) {
		pthread_t th;
		char c;

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(1);
		pthread_create(&th, NULL, pauser, NULL);
		for (;;)
			pause();
	}
	close(go[0]);
	engine_opts(&o, &rec, false);
	rec.flags = BTRACE_RECORD_QUIET;
	rec.on = BTRACE_ON_DEFAULT;
	engine_bare(&e, &o, &rec, &res, child);
	e.precise = true;
	BT_REQUIRE(t, bt_engine_prepare(&e, &err) == 0);
	bt_budget_env_current(&e.env);
	bt_budget_state_init(&e.env, &e.st);
	e.plan.task_cost = 1 + 1;
	BT_REQUIRE(t, ptrace(PTRACE_SEIZE, child, NULL,
			     (void *)(long)PTRACE_O_TRACECLONE) == 0);
	BT_REQUIRE(t, bt_engine_open_thread(&e, child, false, true, &err) == 0);
	BT_REQUIRE(t, write(go[1], "g", 1) == 1);
	/* collect both stops, resuming neither */
	while (!have_clone || !newtid) {
		w = waitpid(-1, &st, __WALL);
		if (w < 0 || !WIFSTOPPED(st))
			break;
		if (w == child && (st >> 16) == PTRACE_EVENT_CLONE) {
			have_clone = true;
			clone_status = st;
			ptrace(PTRACE_GETEVENTMSG, child, NULL, &msg);
		} else if (w != child) {
			newtid = w;
			new_status = st;
		}
	}
	BT_REQUIRE(t, have_clone && newtid);
	BT_EQ_INT(t, (int)newtid, (int)msg);
	BT_EQ_INT(t, PTRACE_EVENT_STOP, new_status >> 16);
	bt_test_diag("thread %d: first stop 0x%x; parent's clone event 0x%x",
		     (int)newtid, new_status, clone_status);
	/* the thread's stop first: the engine opens its event, then resumes it */
	bt_engine_handle_stop(&e, newtid, new_status);
	BT_EQ_INT(t, 2, (int)e.ntev);
	BT_CHECK(t, e.ntev == 2 && e.tevs[1].tid == newtid && e.tevs[1].ring.fd >= 0);
	/* the parent's event afterwards opens nothing twice */
	bt_engine_handle_stop(&e, child, clone_status);
	BT_EQ_INT(t, 2, (int)e.ntev);
	BT_EQ_INT(t, 0, (int)e.nuntraced);
	kill(child, SIGKILL);
	while (waitpid(-1, &st, __WALL) > 0)
		;
	close(go[1]);
	bt_engine_release(&e);
}

/* --- threads without room in the budget are recorded --- */

static bool first_pow2_fit(uint64_t room, uint64_t *dp)
{
	uint64_t p = 1;

	if (room < 1)
		return false;
	while (p * 2 <= room)
		p *= 2;
	*dp = p;
	return true;
}

static void test_untraced_threads_recorded(struct bt_test *t)
{
	char prog[600];
	char *argv[] = { prog, "threads", "2", "1", NULL };
	const char *dir = out_path("untraced"), *out;
	struct btrace_snapshot *s = NULL;
	struct btrace_error err = { 0 };
	struct bt_budget_env env;
	uint64_t limit, sideband, dp = 0;
	uid_t uid = (uid_t)(52000 + getpid() % 4000);
	const char *v;
	int st, untraced = 0, crashed_untraced = 0;
	pid_t p;

	if (getuid() != 0)
		BT_SKIP(t, "needs root to run the engine as a fresh unprivileged uid");
	bt_budget_env_current(&env);
	limit = bt_budget_user_limit(&env);
	sideband = (uint64_t)env.online_cpus * (1 + 8);
	/* one per-task buffer fits beside the sideband, a second one and
	 * the per-CPU rings do not */
	if (limit <= sideband + 2 || !first_pow2_fit(limit - sideband - 1, &dp) ||
	    sideband + 2 * (1 + dp) <= limit)
		BT_SKIP(t, "the per-user perf allowance of this machine does not allow the split");
	bt_test_diag("per-user allowance %" PRIu64 " pages, sideband %" PRIu64 ", data ring 1 + %" PRIu64,
		     limit, sideband, dp);
	BT_REQUIRE(t, mkdir(dir, 0700) == 0 && chown(dir, uid, uid) == 0);
	/* the uid may not enter the build tree (a clone in a private
	 * directory): it runs a copy in the test's directory (mode 0711) */
	snprintf(prog, sizeof(prog), "%s", out_path("sbchild"));
	BT_REQUIRE(t, bt_test_copy_file(child_path, prog, 0755) == 0);
	out = out_path("untraced/untraced.btrace");
	p = fork();
	if (p == 0) {
		struct rlimit rl = { 0, 0 };
		struct btrace_record_opts rec = { .sz = sizeof(rec) };
		struct btrace_record_result res;
		struct bt_engine_opts o;
		int r;

		if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0 || setgroups(0, NULL) < 0 ||
		    setgid(uid) < 0 || setuid(uid) < 0)
			_exit(90);
		/* setuid() cleared dumpable; the launched child inherits it
		 * until exec and ptrace_may_access() would refuse its events */
		if (prctl(PR_SET_DUMPABLE, 1) < 0)
			_exit(92);
		rec.argv = argv;
		rec.output = out;
		rec.flags = getenv("BT_TEST_VERBOSE") ? 0 : BTRACE_RECORD_QUIET;
		rec.log = engine_test_log();
		rec.on = BTRACE_ON_DEFAULT;
		engine_opts(&o, &rec, false);
		o.data_pages = dp;
		r = bt_engine_run(&o, &res, &err);
		if (r < 0)
			fprintf(stderr, "engine: %s\n", err.msg);
		_exit(r < 0 ? 1 : res.snapshots == 1 ? 0 : 2);
	}
	st = wait_exit(p, 120000);
	BT_REQUIRE(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_EQ_INT(t, BTRACE_CRASH_PRECISE, s->config.crash_mode);
	v = btrace_snapshot_meta(s, "capture.untraced");
	BT_REQUIRE(t, v != NULL);
	bt_test_diag("capture.untraced: %s", v);
	BT_EQ_INT(t, 2, atoi(v));
	v = btrace_snapshot_meta(s, "limit.untraced-threads");
	BT_REQUIRE(t, v != NULL);
	bt_test_diag("limit.untraced-threads: %s", v);
	BT_CONTAINS(t, v, "2 threads had no trace buffer");
	BT_CONTAINS(t, v, "locked-memory budget");
	/* thread 1 crashed: it is one of them, and the limit says so */
	BT_CONTAINS(t, v, "among them the thread that died");
	for (size_t i = 0; i < s->ntasks; i++) {
		if (s->tasks[i].flags & BTRACE_TASK_UNTRACED) {
			untraced++;
			BT_CHECK(t, s->tasks[i].tid != s->tasks[i].pid);
			if (s->tasks[i].flags & BTRACE_TASK_CRASHED)
				crashed_untraced++;
		}
	}
	BT_EQ_INT(t, 2, untraced);
	BT_EQ_INT(t, 1, crashed_untraced);
	v = btrace_snapshot_meta(s, "capture.plan");
	BT_CONTAINS(t, v, "no room to reserve per-CPU rings");
	btrace_snapshot_free(s);
}

/* --- close-on-exec, RLIMIT_NOFILE --- */

/* An attach-mode engine in a child process; exit 0 = ran, and the soft
 * RLIMIT_NOFILE is the caller's again afterwards. */
static pid_t spawn_attach(pid_t target, int max_tasks, rlim_t nofile)
{
	pid_t p = fork();

	if (p == 0) {
		struct btrace_record_opts rec = { .sz = sizeof(rec) };
		struct btrace_record_result res;
		struct btrace_error err = { 0 };
		struct bt_engine_opts o;
		struct rlimit rl;
		int r;

		if (nofile) {
			getrlimit(RLIMIT_NOFILE, &rl);
			rl.rlim_cur = nofile;
			if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
				_exit(91);
		}
		rec.pid = target;
		rec.output = out_path("attach.btrace");
		rec.flags = getenv("BT_TEST_VERBOSE") ? 0 : BTRACE_RECORD_QUIET;
		rec.log = engine_test_log();
		rec.on = BTRACE_ON_DEFAULT;
		engine_opts(&o, &rec, false);
		o.max_tasks = max_tasks;
		r = bt_engine_run(&o, &res, &err);
		if (r < 0)
			fprintf(stderr, "engine: %s\n", err.msg);
		getrlimit(RLIMIT_NOFILE, &rl);
		if (r == 0 && bt_proc_status_long(target, "TracerPid") == getpid())
			_exit(4);   /* still ptraced by the engine that left */
		_exit(r < 0 ? 1 : nofile && rl.rlim_cur != nofile ? 3 : 0);
	}
	return p;
}

static bool engine_traces(pid_t target, pid_t eng, int want_fds)
{
	int cx;

	for (int i = 0; i < 3000; i++) {
		if (bt_proc_status_long(target, "TracerPid") == eng &&
		    perf_fds(eng, &cx) >= want_fds)
			return true;
		usleep(10000);
	}
	return false;
}

static void test_perf_fds_cloexec(struct bt_test *t)
{
	char *targv[] = { child_path, "threads", "3", "60", NULL };
	struct bt_budget_env env;
	pid_t target, eng;
	int n, cx, st, want;

	bt_budget_env_current(&env);
	target = spawn(targv);
	usleep(200000);
	/* main per-task; three threads on the catch-all rings */
	eng = spawn_attach(target, 1, 0);
	/* sideband: rings + 3 threads per CPU; trace: 1 + 3 per CPU + rings */
	want = env.online_cpus * (1 + 3) + 1 + env.online_cpus * (3 + 1);
	BT_CHECK(t, engine_traces(target, eng, want));
	n = perf_fds(eng, &cx);
	bt_test_diag("%d perf descriptors, %d close-on-exec", n, cx);
	BT_CHECK(t, n >= want);
	BT_EQ_INT(t, n, cx);
	kill(eng, SIGTERM);
	st = wait_exit(eng, 60000);
	BT_CHECK(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	end_target(target);
}

/* An owner asked to stop while the target lives ends its ptrace link
 * itself, before it releases the registry (an heir taking over must be
 * able to seize the target; the kernel ends the link only when the tracer
 * exits, exit_ptrace(), and a library caller may live on). */
static void test_stop_detaches(struct bt_test *t)
{
	char *targv[] = { child_path, "threads", "3", "60", NULL };
	pid_t target, eng;
	int st;

	target = spawn(targv);
	usleep(200000);
	eng = spawn_attach(target, 0, 0);
	BT_REQUIRE(t, engine_traces(target, eng, 4));
	kill(eng, SIGTERM);
	st = wait_exit(eng, 60000);
	bt_test_diag("engine status %d (4: the target was still ptraced)",
		     st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	BT_CHECK(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	/* it runs on: not stopped, not killed by the detach */
	BT_EQ_INT(t, 0, kill(target, 0));
	BT_EQ_INT(t, 0, (int)bt_proc_status_long(target, "TracerPid"));
	end_target(target);
}

static void test_nofile_raised(struct bt_test *t)
{
	char *targv[] = { child_path, "threads", "40", "60", NULL };
	struct bt_budget_env env;
	struct rlimit rl;
	pid_t target, eng;
	int st, need;

	bt_budget_env_current(&env);
	getrlimit(RLIMIT_NOFILE, &rl);
	/* sideband: one per CPU per thread; trace: one per thread */
	need = env.online_cpus * 41 + 41;
	if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < (rlim_t)need + 64)
		BT_SKIP(t, "the hard RLIMIT_NOFILE is too low for the case");
	target = spawn(targv);
	usleep(300000);
	eng = spawn_attach(target, 0, 64);   /* soft limit below the need */
	BT_CHECK(t, engine_traces(target, eng, need));
	kill(eng, SIGTERM);
	st = wait_exit(eng, 60000);
	bt_test_diag("engine status %d (1: setup failed, 3: limit not restored)",
		     st >= 0 && WIFEXITED(st) ? WEXITSTATUS(st) : -1);
	BT_CHECK(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	end_target(target);
}

/* --- the trace event's data ring: LOST records are no lost trace --- */

/* A page-fault sampling event stands in for the trace event, with a data
 * ring of one page: the burst of faults overflows it, and the kernel
 * writes PERF_RECORD_LOST at the next record that fits (perf_output_begin()
 * in kernel/events/ring_buffer.c).  Those are data-ring records, not trace
 * bytes: a limit, no gap. */
static void test_data_ring_lost_records(struct bt_test *t)
{
	char *argv[] = { child_path, "faults", "2000", NULL };
	struct btrace_record_opts rec = { .sz = sizeof(rec) };
	struct btrace_record_result res = { 0 };
	struct btrace_error err = { 0 };
	const char *out = out_path("lost.btrace");
	struct btrace_snapshot *s = NULL;
	struct bt_engine_opts o;
	const char *v;
	char want[64];

	rec.argv = argv;
	rec.output = out;
	rec.flags = BTRACE_RECORD_QUIET;
	rec.on = BTRACE_ON_DEFAULT;
	engine_opts(&o, &rec, false);
	o.trace_attr.config = PERF_COUNT_SW_PAGE_FAULTS;
	o.trace_attr.sample_period = 1;
	o.trace_attr.sample_type = PERF_SAMPLE_TID;
	BT_REQUIRE(t, bt_engine_run(&o, &res, &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	v = btrace_snapshot_meta(s, "limit.trace-records-lost");
	BT_REQUIRE(t, v != NULL);
	bt_test_diag("%s", v);
	BT_CONTAINS(t, v, "not known to be lost");
	BT_REQUIRE(t, s->signal != NULL);
	snprintf(want, sizeof(want), "thread %d: ", (int)s->signal->tid);
	BT_CONTAINS(t, v, want);
	for (size_t i = 0; i < s->nbuffers; i++)
		BT_CHECK(t, !(s->buffers[i].flags & BTRACE_BUF_LOST) &&
			    !s->buffers[i].lost);
	btrace_snapshot_free(s);
}

/* --- AUX marks keep their offsets (record layouts of
 *     include/uapi/linux/perf_event.h, in a ring laid out like the kernel's:
 *     user page, then the data area from data_tail to data_head) --- */

static size_t put_rec(uint8_t *d, uint32_t type, const uint64_t *v, int n)
{
	struct perf_event_header h = { .type = type, .misc = 0,
				       .size = (uint16_t)(8 + 8 * n) };

	memcpy(d, &h, sizeof(h));
	memcpy(d + 8, v, 8 * (size_t)n);
	return h.size;
}

static void test_aux_marks_kept(struct bt_test *t)
{
	struct btrace_record_opts rec = { .sz = sizeof(rec) };
	struct btrace_record_result res = { 0 };
	struct btrace_error err = { 0 };
	const char *out = out_path("marks.btrace");
	struct btrace_snapshot *s = NULL;
	struct perf_event_mmap_page *pc;
	struct bt_engine_opts o;
	struct bt_engine e;
	struct bt_tev *tv;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), n = 0;
	uint8_t *ring, *d;
	char key[64];
	const char *v;
	const uint64_t a1[] = { 4096, 512, PERF_AUX_FLAG_TRUNCATED };
	const uint64_t a2[] = { 8192, 100, PERF_AUX_FLAG_OVERWRITE };
	const uint64_t a3[] = { 12288, 64, PERF_AUX_FLAG_PARTIAL | PERF_AUX_FLAG_OVERWRITE };
	const uint64_t l1[] = { 7, 5 };   /* id, lost */

	ring = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	BT_REQUIRE(t, ring != MAP_FAILED);
	d = ring + ps;
	n += put_rec(d + n, PERF_RECORD_AUX, a1, 3);
	n += put_rec(d + n, PERF_RECORD_AUX, a2, 3);
	n += put_rec(d + n, PERF_RECORD_LOST, l1, 2);
	n += put_rec(d + n, PERF_RECORD_AUX, a3, 3);
	pc = (void *)ring;
	pc->data_head = n;
	engine_opts(&o, &rec, false);
	rec.flags = BTRACE_RECORD_QUIET | BTRACE_RECORD_NO_CODE;
	engine_bare(&e, &o, &rec, &res, getpid());
	BT_REQUIRE(t, bt_engine_prepare(&e, &err) == 0);
	bt_sideband_init(&e.sb, e.pid);
	BT_REQUIRE(t, bt_grow((void **)&e.tevs, &e.ctev, 0, sizeof(*e.tevs)) == 0);
	tv = &e.tevs[0];
	memset(tv, 0, sizeof(*tv));
	bt_perf_ring_init(&tv->ring);
	tv->tid = getpid();
	tv->per_task = true;
	tv->ring.base = ring;
	tv->ring.data_size = ps;
	tv->ring.writable = true;
	e.ntev = 1;
	bt_engine_drain_trace(&e);
	BT_EQ_U64(t, n, pc->data_tail);
	BT_EQ_INT(t, BTRACE_BUF_TRUNCATED | BTRACE_BUF_PARTIAL, (int)tv->flags);
	BT_EQ_U64(t, 5, tv->records_lost);
	BT_EQ_U64(t, 0, tv->lost);
	BT_EQ_U64(t, 2, tv->marks.seen);
	BT_EQ_U64(t, 4096, tv->marks.m[0].offset);
	BT_EQ_U64(t, 12288, tv->marks.m[1].offset);
	BT_REQUIRE(t, bt_engine_write(&e, out, BTRACE_CRASH_ONDEMAND, NULL, true,
				      &err) == 0);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	snprintf(key, sizeof(key), "capture.aux_marks.tid-%d", (int)getpid());
	v = btrace_snapshot_meta(s, key);
	BT_REQUIRE(t, v != NULL);
	bt_test_diag("%s: %s", key, v);
	BT_CONTAINS(t, v, "4096+512:T 12288+64:P");
	v = btrace_snapshot_meta(s, "limit.trace-records-lost");
	BT_REQUIRE(t, v != NULL);
	BT_CONTAINS(t, v, "5 record(s)");
	btrace_snapshot_free(s);
	bt_engine_release(&e);   /* unmaps the ring, frees the sideband */
}

/* --- a catch-all CPU ring split by thread from the AUX records --- */

struct fake_stop {
	uint64_t head;
	int32_t tid;
	uint64_t time;
};

/* An engine whose CPU ring (the first CPU) is laid out like the kernel's in
 * overwrite mode: @aux (one page) written up to @aux_head, and one
 * PERF_RECORD_AUX per stop in the data ring, each with the sample_id
 * { pid, tid, time } of the catch-all events (offset = the write offset at
 * the stop, size = the whole buffer, flags OVERWRITE: pt_event_stop() and
 * perf_aux_output_end()).  Writes the snapshot to @out. */
static int split_case(const char *out, const uint8_t *aux, uint64_t aux_head,
		      const struct fake_stop *st, int nst, uint64_t records_lost,
		      struct btrace_error *err)
{
	struct btrace_record_opts rec = { .sz = sizeof(rec) };
	struct btrace_record_result res = { 0 };
	struct perf_event_mmap_page *pc;
	struct bt_engine_opts o;
	struct bt_engine e;
	size_t ps = (size_t)sysconf(_SC_PAGESIZE), n = 0;
	struct bt_perf_ring *r;
	int ret;

	engine_opts(&o, &rec, false);
	o.has_aux = true;
	rec.flags = BTRACE_RECORD_QUIET | BTRACE_RECORD_NO_CODE;
	engine_bare(&e, &o, &rec, &res, getpid());
	if ((ret = bt_engine_prepare(&e, err)) < 0)
		return ret;
	bt_sideband_init(&e.sb, e.pid);
	r = &e.cpu_rings[0];
	r->base = mmap(NULL, 2 * ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	r->aux = mmap(NULL, ps, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r->base == MAP_FAILED || r->aux == MAP_FAILED)
		return -ENOMEM;
	r->data_size = ps;
	r->aux_size = ps;
	r->writable = true;
	memcpy(r->aux, aux, ps);
	for (int i = 0; i < nst; i++) {
		const uint64_t v[] = { st[i].head, ps,
				       PERF_AUX_FLAG_OVERWRITE,
				       (uint64_t)(uint32_t)e.pid |
				       (uint64_t)(uint32_t)st[i].tid << 32,
				       st[i].time };

		n += put_rec(r->base + ps + n, PERF_RECORD_AUX, v, 5);
	}
	pc = (void *)r->base;
	pc->data_head = n;
	pc->aux_head = aux_head;
	e.cpu_rings_open = true;
	e.cpu_records_lost[0] = records_lost;
	ret = bt_engine_write(&e, out, BTRACE_CRASH_ONDEMAND, NULL, true, err);
	bt_engine_release(&e);
	return ret;
}

static bool all_bytes(const struct btrace_buffer *b, uint8_t v, uint64_t from,
		      uint64_t to)
{
	for (uint64_t i = from; i < to; i++)
		if (b->data[i] != v)
			return false;
	return true;
}

static void test_cpu_ring_split(struct bt_test *t)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	struct btrace_error err = { 0 };
	const char *out = out_path("split.btrace");
	struct btrace_snapshot *s = NULL;
	uint8_t *aux = calloc(1, ps);
	const struct btrace_buffer *b;
	const char *v;

	BT_REQUIRE(t, aux != NULL && ps >= 4096);
	/* A ran, then B, then A again; the ring has not wrapped */
	memset(aux, 0x11, 1000);
	memset(aux + 1000, 0x22, 800);
	memset(aux + 1800, 0x33, 1200);
	{
		const struct fake_stop st[] = {
			{ 1000, 101, 1 }, { 1800, 102, 2 }, { 3000, 101, 3 },
		};

		BT_REQUIRE(t, split_case(out, aux, 3000, st, 3, 0, &err) == 0);
	}
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	v = btrace_snapshot_meta(s, "capture.cpu_split");
	bt_test_diag("%s", v ? v : "(none)");
	BT_CONTAINS(t, v, "3 slice(s) of 2 thread(s) (0 after lost records, given none), 0 of 3000 bytes not attributed");
	BT_CHECK(t, btrace_snapshot_meta(s, "limit.cpu-split") == NULL);
	BT_REQUIRE(t, s->nbuffers == 2);
	b = &s->buffers[0];                 /* the thread that ran last first */
	BT_EQ_INT(t, 101, b->tid);
	BT_EQ_U64(t, 2200, b->size);
	BT_CHECK(t, all_bytes(b, 0x11, 0, 1000) && all_bytes(b, 0x33, 1000, 2200));
	BT_CHECK(t, !(b->flags & BTRACE_BUF_WRAPPED));
	b = &s->buffers[1];
	BT_EQ_INT(t, 102, b->tid);
	BT_EQ_U64(t, 800, b->size);
	BT_CHECK(t, all_bytes(b, 0x22, 0, 800));
	btrace_snapshot_free(s);
	s = NULL;

	/* Wrapped: C wrote [0, 3000), then D wrote 2096 bytes across the end
	 * (the ring is one page: only its first 4096 bytes are used when the
	 * page is larger) */
	if (ps == 4096) {
		const struct fake_stop st[] = { { 3000, 201, 10 }, { 1000, 202, 11 } };

		memset(aux, 0x44, ps);
		memset(aux + 1000, 0x55, 2000);
		BT_REQUIRE(t, split_case(out, aux, 1000, st, 2, 0, &err) == 0);
		BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
		BT_REQUIRE(t, s->nbuffers == 2);
		b = &s->buffers[0];
		BT_EQ_INT(t, 202, b->tid);
		BT_EQ_U64(t, 2096, b->size);
		BT_CHECK(t, all_bytes(b, 0x44, 0, 2096));
		BT_CHECK(t, b->flags & BTRACE_BUF_WRAPPED);
		b = &s->buffers[1];
		BT_EQ_INT(t, 201, b->tid);
		BT_EQ_U64(t, 2000, b->size);
		BT_CHECK(t, all_bytes(b, 0x55, 0, 2000));
		btrace_snapshot_free(s);
		s = NULL;
		/* the same with a record lost: C's slice start is unknown */
		BT_REQUIRE(t, split_case(out, aux, 1000, st, 2, 1, &err) == 0);
		BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
		BT_REQUIRE(t, s->nbuffers == 2);
		BT_EQ_INT(t, 202, s->buffers[0].tid);
		BT_EQ_INT(t, -1, s->buffers[1].tid);
		BT_EQ_U64(t, 2000, s->buffers[1].size);
		v = btrace_snapshot_meta(s, "limit.cpu-split");
		BT_REQUIRE(t, v != NULL);
		bt_test_diag("%s", v);
		BT_CONTAINS(t, v, "2000 byte(s)");
		btrace_snapshot_free(s);
	}
	free(aux);
}

/* --- code mapped over while recording; the perf clock --- */

static void test_replaced_code_and_time(struct bt_test *t)
{
	char lib[1100];
	char *argv[] = { child_path, "remap", lib, NULL };
	struct btrace_record_opts rec = { .sz = sizeof(rec) };
	struct btrace_record_result res = { 0 };
	struct btrace_error err = { 0 };
	const char *out = out_path("remap.btrace");
	struct btrace_snapshot *s = NULL;
	struct perf_event_attr a;
	struct bt_engine_opts o;
	struct perf_event_mmap_page *pc;
	char want[2400], *path;
	const char *v;
	void *p;
	int fd;

	snprintf(lib, sizeof(lib), "%s", child_path);
	path = strrchr(lib, '/');
	BT_REQUIRE(t, path != NULL);
	snprintf(path + 1, sizeof(lib) - (size_t)(path + 1 - lib), "libbtsblib.so");
	rec.argv = argv;
	rec.output = out;
	rec.flags = BTRACE_RECORD_QUIET;
	rec.on = BTRACE_ON_DEFAULT;
	engine_opts(&o, &rec, false);
	BT_REQUIRE(t, bt_engine_run(&o, &res, &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	v = btrace_snapshot_meta(s, "limit.replaced-code");
	BT_REQUIRE(t, v != NULL);
	bt_test_diag("%s", v);
	BT_CONTAINS(t, v, "1 executable range(s) were mapped over");
	snprintf(want, sizeof(want), "%s+0x0 replaced by %s+0x1000", lib, lib);
	BT_CONTAINS(t, v, want);
	/* the conversion the kernel offers this process, read here */
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.exclude_kernel = 1;
	fd = bt_perf_sys_open(&a, 0, -1, -1, 0);
	BT_REQUIRE(t, fd >= 0);
	p = mmap(NULL, (size_t)sysconf(_SC_PAGESIZE), PROT_READ, MAP_SHARED, fd, 0);
	BT_REQUIRE(t, p != MAP_FAILED);
	pc = p;
	if (pc->cap_user_time_zero)
		snprintf(want, sizeof(want), "time_shift=%u time_mult=%u time_zero=%llu",
			 (unsigned)pc->time_shift, pc->time_mult,
			 (unsigned long long)pc->time_zero);
	else
		snprintf(want, sizeof(want), "unavailable");
	munmap(p, (size_t)sysconf(_SC_PAGESIZE));
	close(fd);
	v = btrace_snapshot_meta(s, "capture.perf_time");
	BT_REQUIRE(t, v != NULL);
	bt_test_diag("capture.perf_time: %s", v);
	BT_CONTAINS(t, v, want);
	btrace_snapshot_free(s);
}

/* --- capabilities in a user namespace --- */

static void test_cap_in_user_namespace(struct bt_test *t)
{
	int pfd[2], st;
	char res[4] = { 0 };
	pid_t p;

	BT_REQUIRE(t, pipe(pfd) == 0);
	p = fork();
	if (p == 0) {
		char *buf = NULL, *c;
		unsigned long long caps = 0;

		close(pfd[0]);
		if (unshare(CLONE_NEWUSER) < 0) {
			res[0] = 'U';
		} else {
			if (bt_read_file("/proc/self/status", &buf, NULL, 1 << 16) == 0 &&
			    (c = strstr(buf, "CapEff:")))
				caps = strtoull(c + 7, NULL, 16);
			res[0] = (caps >> BT_CAP_IPC_LOCK) & 1 ? 'y' : 'n';
			res[1] = bt_has_cap(BT_CAP_IPC_LOCK) ? 'y' : 'n';
			res[2] = bt_in_initial_userns() ? 'y' : 'n';
			free(buf);
		}
		if (write(pfd[1], res, 3) != 3)
			_exit(1);
		_exit(0);
	}
	close(pfd[1]);
	BT_REQUIRE(t, read(pfd[0], res, 3) >= 1);
	close(pfd[0]);
	waitpid(p, &st, 0);
	if (res[0] == 'U')
		BT_SKIP(t, "unshare(CLONE_NEWUSER) is refused on this machine");
	bt_test_diag("in a new user namespace: CapEff has IPC_LOCK %c, btrace counts it %c, initial namespace %c",
		     res[0], res[1], res[2]);
	BT_EQ_INT(t, 'y', res[0]);   /* the namespace's owner has every cap */
	BT_EQ_INT(t, 'n', res[1]);   /* but not for capable() */
	BT_EQ_INT(t, 'n', res[2]);
}

int main(void)
{
	static const struct bt_test_case cases[] = {
		BT_TEST_CASE(test_catch_all_failure_no_stale_fd),
		BT_TEST_CASE(test_first_stop_before_clone_event),
		BT_TEST_CASE(test_untraced_threads_recorded),
		BT_TEST_CASE(test_perf_fds_cloexec),
		BT_TEST_CASE(test_nofile_raised),
		BT_TEST_CASE(test_stop_detaches),
		BT_TEST_CASE(test_data_ring_lost_records),
		BT_TEST_CASE(test_aux_marks_kept),
		BT_TEST_CASE(test_cpu_ring_split),
		BT_TEST_CASE(test_replaced_code_and_time),
		BT_TEST_CASE(test_cap_in_user_namespace),
	};
	int r;

	engine_test_setup("bt-threads-test");
	chmod(tmpdir, 0711);   /* the unprivileged uid reaches its own subdir */
	r = bt_test_run(cases, (int)(sizeof(cases) / sizeof(cases[0])));
	return engine_test_finish(r);
}
