/* SPDX-License-Identifier: MIT */
/*
 * The capture engine against the real kernel, with a software event standing
 * in for the trace PMU (the AUX part runs only on hardware): launch and
 * attach, precise (ptrace) and passive crash handling, a handler that
 * re-raises, new threads, catch-all per-CPU rings through SET_OUTPUT, gdb
 * ptracing the target (passive chosen), two btrace processes on one target
 * (join, owner snapshots, on-demand snapshot, owner exit and handover).
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <btrace/capture.h>
#include <btrace/snapshot.h>

#include "bt-test.h"
#include "capture/perf-backend.h"
#include "capture/capture-internal.h"
#include "capture/registry.h"
#include "capture/engine.h"
#include "capture/perf.h"
#include "util.h"
#include "engine-test.h"

static struct btrace_snapshot *read_snap(struct bt_test *t, const char *path)
{
	struct btrace_snapshot *s = NULL;
	struct btrace_error err = { 0 };

	if (btrace_snapshot_read(path, 0, &s, &err) < 0) {
		bt_test_fail(t, __FILE__, __LINE__, "reading %s: %s", path, err.msg);
		return NULL;
	}
	return s;
}

static int launch_mem(const char *out, uint32_t flags, int max_tasks,
		      char **argv, uint64_t memory,
		      struct btrace_record_result *res,
		      struct btrace_error *err)
{
	struct btrace_record_opts rec = { .sz = sizeof(rec) };
	struct bt_engine_opts o;

	rec.memory = memory;
	rec.argv = argv;
	rec.output = out;
	rec.flags = flags | BTRACE_RECORD_QUIET;
	rec.on = BTRACE_ON_DEFAULT;
	engine_opts(&o, &rec, true);
	o.max_tasks = max_tasks;
	memset(res, 0, sizeof(*res));
	return bt_engine_run(&o, res, err);
}

static int launch(const char *out, uint32_t flags, int max_tasks,
		  char **argv, struct btrace_record_result *res,
		  struct btrace_error *err)
{
	return launch_mem(out, flags, max_tasks, argv, 0, res, err);
}

static bool ip_in_text(const struct btrace_snapshot *s, uint64_t ip,
		       const char *name)
{
	for (size_t i = 0; i < s->nmappings; i++)
		if (ip >= s->mappings[i].start && ip < s->mappings[i].end &&
		    s->mappings[i].path && strstr(s->mappings[i].path, name))
			return true;
	return false;
}

/*
 * The standard metadata every backend's snapshot carries (the snapshot
 * builder, src/snapbuild.c): host, kernel, btrace_version, time, and the
 * command, @cmd.
 */
static void check_std_meta(struct bt_test *t, const struct btrace_snapshot *s,
			   const char *cmd)
{
	const char *tm = btrace_snapshot_meta(s, "time");
	struct utsname u;

	BT_REQUIRE(t, uname(&u) == 0);
	BT_EQ_STR(t, u.nodename, btrace_snapshot_meta(s, "host"));
	BT_EQ_STR(t, u.release, btrace_snapshot_meta(s, "kernel"));
	BT_EQ_STR(t, btrace_version(), btrace_snapshot_meta(s, "btrace_version"));
	/* 2026-11-27T15:40:00Z */
	BT_CHECK(t, tm && strlen(tm) == 20 && tm[4] == '-' && tm[10] == 'T' &&
		    tm[19] == 'Z');
	BT_EQ_STR(t, cmd, btrace_snapshot_meta(s, "command"));
}

static void test_launch_precise(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err = { 0 };
	char *argv[] = { child_path, "crash", NULL };
	const char *out = out_path("precise.btrace");
	struct btrace_snapshot *s;
	bool vdso = false;

	BT_REQUIRE(t, launch(out, 0, 0, argv, &res, &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	BT_EQ_INT(t, 1, res.snapshots);
	s = read_snap(t, out);
	BT_REQUIRE(t, s);
	BT_EQ_INT(t, BTRACE_CRASH_PRECISE, s->config.crash_mode);
	BT_REQUIRE(t, s->signal != NULL);
	BT_EQ_INT(t, SIGSEGV, s->signal->signo);
	BT_CHECK(t, s->signal->code > 0);               /* kernel-generated */
	BT_CHECK(t, s->signal->has_regs);
	BT_EQ_INT(t, BTRACE_FAULT_REGS, s->signal->fault_source);
	BT_EQ_U64(t, s->signal->regs[BTRACE_REG_RIP], s->signal->fault_ip);
	BT_CHECK(t, ip_in_text(s, s->signal->fault_ip, "sbchild"));
	for (size_t i = 0; i < s->ncode; i++)
		if (s->code[i].kind == BTRACE_CODE_VDSO && s->code[i].size)
			vdso = true;
	BT_CHECK(t, vdso);
	BT_CONTAINS(t, btrace_snapshot_meta(s, "capture.mode"), "precise");
	{
		/* the time from the stop to every event disabled, in ns */
		const char *d = btrace_snapshot_meta(s, "capture.disable_ns");
		char *end = NULL;

		BT_REQUIRE(t, d != NULL);
		bt_test_diag("capture.disable_ns: %s", d);
		BT_CHECK(t, strtoull(d, &end, 10) > 0 && end && !*end);
	}
	BT_CONTAINS(t, btrace_snapshot_meta(s, "capture.test_event"), "software event");
	BT_EQ_STR(t, "0", btrace_snapshot_meta(s, "sideband.lost_records"));
	{
		char cmd[sizeof(child_path) + 16];

		snprintf(cmd, sizeof(cmd), "%s crash", child_path);
		check_std_meta(t, s, cmd);
	}
	btrace_snapshot_free(s);
}

/*
 * The memory of a precise snapshot (docs/format.md, "memory"): the
 * crashed thread's stack, then the process's other memory (tid 0) up to
 * the budget: by default (8 MiB) it holds sbchild's global `sink` (100
 * worker() calls: 54900000), never executable code; 4 KiB stores 4 KiB;
 * BTRACE_RECORD_NO_MEMORY the stack alone.
 */
static void memory_of(const struct btrace_snapshot *s, uint64_t *stack,
		      uint64_t *data, bool *sink, bool *in_code)
{
	const uint8_t want[4] = { 0x20, 0xb5, 0x45, 0x03 };   /* 54900000 */

	*stack = *data = 0;
	*sink = *in_code = false;
	for (size_t i = 0; i < s->nmemory; i++) {
		const struct btrace_memory *m = &s->memory[i];

		if (m->tid != BTRACE_MEMORY_PROCESS) {
			*stack += m->size;
			continue;
		}
		*data += m->size;
		for (uint64_t k = 0; k + 4 <= m->size && !*sink; k += 4)
			*sink = !memcmp(m->data + k, want, 4);
		for (size_t c = 0; c < s->ncode; c++)
			*in_code |= m->vaddr < s->code[c].vaddr + s->code[c].size &&
				    s->code[c].vaddr < m->vaddr + m->size;
	}
}

static void test_launch_memory(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err = { 0 };
	char *argv[] = { child_path, "crash", NULL };
	const char *out = out_path("memory.btrace");
	struct btrace_snapshot *s;
	uint64_t stack, data;
	bool sink, in_code;
	int nstack = 0;

	BT_REQUIRE(t, launch(out, 0, 0, argv, &res, &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	s = read_snap(t, out);
	BT_REQUIRE(t, s && s->signal);
	for (size_t i = 0; i < s->nmemory; i++)
		if (s->memory[i].tid) {
			nstack++;
			BT_EQ_INT(t, s->signal->tid, s->memory[i].tid);
		}
	BT_EQ_INT(t, 1, nstack);
	memory_of(s, &stack, &data, &sink, &in_code);
	bt_test_diag("default: stack %llu bytes, other memory %llu bytes in "
		     "%zu ranges", (unsigned long long)stack,
		     (unsigned long long)data, s->nmemory - 1);
	BT_CHECK(t, stack > 0);
	BT_CHECK(t, data > 0 && data <= BTRACE_MEMORY_DEFAULT);
	BT_CHECK_(t, sink, "no process range holds sink = 54900000");
	BT_CHECK_(t, !in_code, "a process range overlaps the code");
	btrace_snapshot_free(s);

	BT_REQUIRE(t, launch_mem(out, 0, 0, argv, 4096, &res, &err) == 0);
	s = read_snap(t, out);
	BT_REQUIRE(t, s);
	memory_of(s, &stack, &data, &sink, &in_code);
	BT_CHECK(t, stack > 0);
	BT_EQ_U64(t, 4096, data);
	btrace_snapshot_free(s);

	BT_REQUIRE(t, launch(out, BTRACE_RECORD_NO_MEMORY, 0, argv, &res,
			     &err) == 0);
	s = read_snap(t, out);
	BT_REQUIRE(t, s);
	memory_of(s, &stack, &data, &sink, &in_code);
	BT_EQ_INT(t, 1, (int)s->nmemory);
	BT_CHECK(t, stack > 0);
	BT_EQ_U64(t, 0, data);
	btrace_snapshot_free(s);
}

static void test_launch_handler_reraise(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err = { 0 };
	char *argv[] = { child_path, "handler", NULL };
	const char *out = out_path("handler.btrace");
	struct btrace_snapshot *s;

	BT_REQUIRE(t, launch(out, 0, 0, argv, &res, &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	s = read_snap(t, out);
	BT_REQUIRE(t, s && s->signal);
	/* the snapshot is taken at the re-raise, but names the first fault */
	BT_EQ_INT(t, SIGSEGV, s->signal->signo);
	BT_CHECK(t, s->signal->code > 0);
	BT_CHECK(t, ip_in_text(s, s->signal->fault_ip, "sbchild"));
	btrace_snapshot_free(s);
}

static void test_launch_passive(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err = { 0 };
	char *argv[] = { child_path, "crash", NULL };
	const char *out = out_path("passive.btrace");
	struct btrace_snapshot *s;

	BT_REQUIRE(t, launch(out, BTRACE_RECORD_NO_PTRACE, 0, argv, &res, &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	s = read_snap(t, out);
	BT_REQUIRE(t, s && s->signal);
	BT_EQ_INT(t, BTRACE_CRASH_PASSIVE, s->config.crash_mode);
	BT_EQ_INT(t, SIGSEGV, s->signal->signo);
	BT_CHECK(t, !s->signal->has_regs);
	BT_CONTAINS(t, btrace_snapshot_meta(s, "capture.passive_reason"), "--no-ptrace");
	btrace_snapshot_free(s);
}

static int count_tids(const char *events, bool catch_all)
{
	const char *p = strstr(events, "; catch-all:");
	int n = 0;

	if (!p)
		return -1;
	if (catch_all)
		events = p + 12;
	for (const char *q = events; *q && (catch_all || q < p); q++)
		if (*q == ' ' && q[1] >= '0' && q[1] <= '9')
			n++;
	return n;
}

/* Threads: new ones opened through ptrace (precise) or FORK records
 * (passive); beyond max_tasks on the catch-all per-CPU rings. */
static void threads_case(struct bt_test *t, uint32_t flags, int max_tasks,
			 int want_per_task, int want_catch_all)
{
	struct btrace_record_result res;
	struct btrace_error err = { 0 };
	char *argv[] = { child_path, "threads", "3", "1", NULL };
	const char *out = out_path("threads.btrace");
	struct btrace_snapshot *s;
	const char *ev;
	int crashed = 0;

	BT_REQUIRE(t, launch(out, flags, max_tasks, argv, &res, &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	s = read_snap(t, out);
	BT_REQUIRE(t, s);
	ev = btrace_snapshot_meta(s, "capture.events");
	BT_REQUIRE(t, ev != NULL);
	bt_test_diag("%s: %s", flags ? "passive" : "precise", ev);
	BT_EQ_INT(t, want_per_task, count_tids(ev, false));
	BT_EQ_INT(t, want_catch_all, count_tids(ev, true));
	BT_CHECK(t, s->ntasks >= 4);
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].flags & BTRACE_TASK_CRASHED) {
			crashed++;
			if (!flags)   /* precise: thread 1 crashed, not main */
				BT_CHECK(t, s->tasks[i].tid != s->tasks[i].pid);
		}
	if (!flags)
		BT_EQ_INT(t, 1, crashed);
	btrace_snapshot_free(s);
}

static void test_threads_precise(struct bt_test *t)
{
	threads_case(t, 0, 0, 4, 0);
}

static void test_threads_passive_fork_records(struct bt_test *t)
{
	threads_case(t, BTRACE_RECORD_NO_PTRACE, 0, 4, 0);
}

static void test_threads_catch_all(struct bt_test *t)
{
	threads_case(t, 0, 2, 2, 2);
}

/* A launch-mode engine in a child process (a hang can be killed);
 * exit code 0 = ran. */
static pid_t spawn_launcher(char **argv, const char *out, int tick_ms,
			    int max_tasks)
{
	pid_t p = fork();

	if (p == 0) {
		struct btrace_record_opts rec = { .sz = sizeof(rec) };
		struct btrace_record_result res;
		struct btrace_error err = { 0 };
		struct bt_engine_opts o;
		int r;

		rec.argv = argv;
		rec.output = out;
		rec.flags = getenv("BT_TEST_VERBOSE") ? 0 : BTRACE_RECORD_QUIET;
		rec.log = engine_test_log();
		rec.on = BTRACE_ON_DEFAULT;
		engine_opts(&o, &rec, true);
		o.tick_ms = tick_ms;
		o.max_tasks = max_tasks;
		r = bt_engine_run(&o, &res, &err);
		if (r < 0)
			fprintf(stderr, "engine: %s\n", err.msg);
		_exit(r < 0 ? 1 : res.snapshots == 1 ? 0 : 2);
	}
	return p;
}

/* The crash stop wakes the loop by itself (SIGCHLD through a signalfd):
 * with the periodic tick switched off, an engine that only polled would
 * never see the stop of a thread that crashes after the sideband went
 * quiet, and the time limit (a hang guard) would end it. */
static void test_stop_wakes_loop(struct bt_test *t)
{
	char *argv[] = { child_path, "threads", "2", "1", NULL };
	const char *out = out_path("nowake.btrace");
	struct btrace_snapshot *s;
	uint64_t t0 = bt_now_ns();
	pid_t eng;
	int st;

	eng = spawn_launcher(argv, out, -1, 0);
	st = wait_exit(eng, 120000);
	BT_REQUIRE(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	bt_test_diag("engine ran %.1f ms (the crash comes after 1000 ms)",
		     (double)(bt_now_ns() - t0) / 1e6);
	s = read_snap(t, out);
	BT_REQUIRE(t, s && s->signal);
	BT_EQ_INT(t, BTRACE_CRASH_PRECISE, s->config.crash_mode);
	BT_EQ_INT(t, SIGSEGV, s->signal->signo);
	btrace_snapshot_free(s);
}

/* --- attach: gdb beside, two btrace processes --- */

/* Run an attach-mode engine in a child process; exit code 0 = ran. */
static pid_t spawn_engine(pid_t target, const char *out, uint32_t flags)
{
	pid_t p = fork();

	if (p == 0) {
		struct btrace_record_opts rec = { .sz = sizeof(rec) };
		struct btrace_record_result res;
		struct btrace_error err = { 0 };
		struct bt_engine_opts o;
		int r;

		rec.pid = target;
		rec.output = out;
		rec.flags = flags | (getenv("BT_TEST_VERBOSE") ? 0 : BTRACE_RECORD_QUIET);
		rec.log = engine_test_log();
		rec.on = BTRACE_ON_DEFAULT;
		engine_opts(&o, &rec, true);
		r = bt_engine_run(&o, &res, &err);
		if (r < 0)
			fprintf(stderr, "engine: %s\n", err.msg);
		_exit(r < 0 ? 1 : 0);
	}
	return p;
}

static bool wait_for(bool (*cond)(pid_t, pid_t), pid_t a, pid_t b, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (cond(a, b))
			return true;
		usleep(10000);
	}
	return false;
}

/* The engine has seized @target with ptrace (precise mode is armed). */
static bool tracer_is(pid_t target, pid_t engine)
{
	char path[64], *buf, *p;
	int tracer = 0;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)target);
	if (bt_read_file(path, &buf, NULL, 1 << 16) < 0)
		return false;
	p = strstr(buf, "TracerPid:");
	if (p)
		sscanf(p, "TracerPid: %d", &tracer);
	free(buf);
	return tracer == engine;
}

static bool owner_is(pid_t target, pid_t engine)
{
	char path[600], *buf;
	const char *dir = getenv("BTRACE_REGISTRY");
	int owner = 0;

	snprintf(path, sizeof(path), "%s/%d-%llu.lock", dir, (int)target,
		 (unsigned long long)bt_proc_starttime(target));
	if (bt_read_file(path, &buf, NULL, 4096) < 0)
		return false;
	sscanf(buf, "owner=%d", &owner);
	free(buf);
	if (owner != engine)
		return false;
	/* and its socket is up */
	snprintf(path, sizeof(path), "%s/%d-%llu.sock", dir, (int)target,
		 (unsigned long long)bt_proc_starttime(target));
	return access(path, F_OK) == 0;
}

static bool traced(pid_t target, pid_t unused)
{
	(void)unused;
	return bt_proc_status_long(target, "TracerPid") > 0;
}

static bool exists(pid_t unused, pid_t unused2)
{
	(void)unused;
	(void)unused2;
	return false;
}

static void test_attach_beside_gdb(struct bt_test *t)
{
	char *targv[] = { child_path, "sleep", "20", NULL };
	const char *out = out_path("gdb.btrace");
	struct btrace_snapshot *s;
	char pidbuf[16];
	pid_t target, gdb, eng;
	int st;

	if (access("/usr/bin/gdb", X_OK) != 0)
		BT_SKIP(t, "gdb is not installed");
	target = spawn(targv);
	snprintf(pidbuf, sizeof(pidbuf), "%d", (int)target);
	{
		char *gargv[] = { "gdb", "-nx", "-batch", "-p", pidbuf,
				  "-ex", "handle SIGUSR1 nostop noprint pass",
				  "-ex", "continue", "-ex", "continue", NULL };

		usleep(100000);
		gdb = spawn(gargv);
	}
	if (!wait_for(traced, target, 0, 10000)) {
		kill(target, SIGKILL);
		kill(gdb, SIGKILL);
		waitpid(target, NULL, 0);
		waitpid(gdb, NULL, 0);
		BT_SKIP(t, "gdb could not attach to the target");
	}
	eng = spawn_engine(target, out, 0);
	BT_CHECK(t, wait_for(owner_is, target, eng, 5000));
	usleep(200000);
	kill(target, SIGUSR1);         /* the target crashes; gdb passes it */
	st = wait_exit(eng, 20000);
	BT_CHECK(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	wait_exit(gdb, 10000);
	waitpid(target, NULL, 0);
	s = read_snap(t, out);
	BT_REQUIRE(t, s);
	BT_EQ_INT(t, BTRACE_CRASH_PASSIVE, s->config.crash_mode);
	BT_CONTAINS(t, btrace_snapshot_meta(s, "capture.passive_reason"), "gdb");
	if (s->signal)
		bt_test_diag("passive signal: %d (0 = cause unknown)", s->signal->signo);
	btrace_snapshot_free(s);
}

static bool file_exists(const char *p)
{
	return access(p, F_OK) == 0;
}

static void test_two_btrace_join_and_snapshots(struct bt_test *t)
{
	char *targv[] = { child_path, "sleep", "20", NULL };
	const char *a_out = out_path("owner.btrace"), *b_out = out_path("joiner.btrace");
	const char *od = out_path("ondemand.btrace");
	struct btrace_error err = { 0 };
	struct btrace_snapshot *a, *b, *o;
	pid_t target, ea, eb;
	int st;

	target = spawn(targv);
	usleep(50000);
	ea = spawn_engine(target, a_out, 0);
	BT_REQUIRE(t, wait_for(owner_is, target, ea, 5000));
	eb = spawn_engine(target, b_out, 0);
	usleep(300000);
	/* B did not become owner and is still running (joined) */
	BT_CHECK(t, owner_is(target, ea));
	BT_CHECK(t, waitpid(eb, &st, WNOHANG) == 0);
	/* on-demand snapshot from the owner */
	BT_EQ_INT(t, 0, btrace_snapshot_request(target, od, &err));
	o = read_snap(t, od);
	if (o) {
		char cmd[sizeof(child_path) + 16];

		BT_EQ_INT(t, BTRACE_CRASH_ONDEMAND, o->config.crash_mode);
		/* attached: the command is the target's /proc/PID/cmdline */
		snprintf(cmd, sizeof(cmd), "%s sleep 20", child_path);
		check_std_meta(t, o, cmd);
		btrace_snapshot_free(o);
	}
	BT_EQ_INT(t, 0, kill(target, 0));   /* the target kept running */
	kill(target, SIGUSR1);
	st = wait_exit(ea, 20000);
	BT_CHECK(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	st = wait_exit(eb, 20000);
	BT_CHECK(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	waitpid(target, NULL, 0);
	BT_REQUIRE(t, file_exists(a_out));
	BT_REQUIRE(t, file_exists(b_out));
	a = read_snap(t, a_out);
	b = read_snap(t, b_out);
	if (a && b) {
		BT_EQ_INT(t, BTRACE_CRASH_PRECISE, a->config.crash_mode);
		BT_EQ_U64(t, a->file_size, b->file_size);   /* the owner's file */
		BT_CHECK(t, a->signal && b->signal &&
			    a->signal->signo == SIGSEGV && b->signal->signo == SIGSEGV);
	}
	btrace_snapshot_free(a);
	btrace_snapshot_free(b);
	/* no owner any more */
	BT_EQ_INT(t, -ESRCH, btrace_snapshot_request(target, od, &err));
}

static void test_two_btrace_handover(struct bt_test *t)
{
	char *targv[] = { child_path, "sleep", "120", NULL };
	const char *a_out = out_path("owner2.btrace"), *b_out = out_path("heir.btrace");
	struct btrace_snapshot *b;
	pid_t target, ea, eb;
	int st;

	/* Time limits catch hangs: generous, the machine may be busy. */
	target = spawn(targv);
	usleep(50000);
	ea = spawn_engine(target, a_out, 0);
	BT_REQUIRE(t, wait_for(owner_is, target, ea, 30000));
	eb = spawn_engine(target, b_out, 0);
	usleep(300000);
	BT_CHECK(t, owner_is(target, ea));
	kill(ea, SIGTERM);                  /* the owner leaves */
	st = wait_exit(ea, 60000);
	BT_CHECK(t, st >= 0 && WIFEXITED(st));
	BT_CHECK(t, wait_for(owner_is, target, eb, 60000));
	BT_EQ_INT(t, 0, kill(target, 0));   /* the target survived the hand-over */
	/* The heir owns the target before it has re-seized it; a crash in
	 * between would be caught passively.  Crash once precise mode is armed. */
	BT_CHECK(t, wait_for(tracer_is, target, eb, 60000));
	usleep(100000);
	kill(target, SIGUSR1);
	st = wait_exit(eb, 60000);
	BT_CHECK(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	waitpid(target, NULL, 0);
	BT_CHECK(t, !file_exists(a_out));   /* the old owner wrote nothing */
	b = read_snap(t, b_out);
	BT_REQUIRE(t, b);
	BT_EQ_INT(t, BTRACE_CRASH_PRECISE, b->config.crash_mode);
	BT_REQUIRE(t, b->signal != NULL);
	BT_EQ_INT(t, SIGSEGV, b->signal->signo);
	BT_CONTAINS(t, btrace_snapshot_meta(b, "capture.gap"), "ownership passed");
	bt_test_diag("%s", btrace_snapshot_meta(b, "capture.gap"));
	btrace_snapshot_free(b);
}

/* A joiner of a non-hardware owner (what the QEMU backend does through
 * the registry): it receives the owner's snapshots; when the owner leaves
 * while the target lives, it can only take over with hardware. */
static pid_t spawn_joiner(pid_t target, const char *out)
{
	static const uint32_t hw_order[] = { BTRACE_BACKEND_PT,
					     BTRACE_BACKEND_BTS };

	pid_t p = fork();

	if (p == 0) {
		struct btrace_record_opts rec = { .sz = sizeof(rec) };
		struct btrace_record_result res;
		struct btrace_error err = { 0 };
		int r;

		rec.pid = target;
		rec.output = out;
		rec.flags = getenv("BT_TEST_VERBOSE") ? 0 : BTRACE_RECORD_QUIET;
		rec.log = engine_test_log();
		memset(&res, 0, sizeof(res));
		r = bt_capture_join(&rec, hw_order, 2, &res, &err);
		if (r < 0)
			fprintf(stderr, "join: %s\n", err.msg);
		_exit(r == 0 && res.snapshots >= 0 ? (res.snapshots > 9 ? 9 : res.snapshots) :
		      r == 1 ? 20 : 30);
	}
	return p;
}

static bool accept_join(struct bt_registry_owner *o)
{
	for (int i = 0; i < 500; i++) {
		int client;

		if (bt_registry_accept(o, &client) == BT_REG_JOINED)
			return true;
		usleep(10000);
	}
	return false;
}

static void test_join_foreign_owner(struct bt_test *t)
{
	char *targv[] = { child_path, "sleep", "20", NULL };
	const char *src = out_path("foreign-src.btrace"), *out = out_path("foreign-join.btrace");
	struct btrace_error err = { 0 };
	struct bt_registry_owner *o = NULL;
	struct btrace_writer *w = NULL;
	struct btrace_snapshot *s;
	struct btrace_config cfg = { .backend = BTRACE_BACKEND_QEMU,
				     .trace_kind = BTRACE_TRACE_PT };
	pid_t target, j, other = 0;
	int fd, st;

	target = spawn(targv);
	usleep(50000);
	/* nobody owns it: bt_capture_join says so */
	j = spawn_joiner(target, out);
	st = wait_exit(j, 5000);
	BT_CHECK(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 20);
	BT_REQUIRE(t, bt_registry_claim(target, BTRACE_BACKEND_QEMU, &o, &other, &err) == 0);
	j = spawn_joiner(target, out);
	BT_REQUIRE(t, accept_join(o));
	BT_EQ_INT(t, 1, bt_registry_subscribers(o));
	/* the owner writes a snapshot and publishes it */
	BT_REQUIRE(t, btrace_writer_open(src, 0, &w, &err) == 0);
	BT_REQUIRE(t, btrace_writer_set_config(w, &cfg, &err) == 0);
	BT_REQUIRE(t, btrace_writer_add_meta(w, "test.owner", "qemu-like", &err) == 0);
	BT_REQUIRE(t, btrace_writer_commit(w, &err) == 0);
	fd = open(src, O_RDONLY);
	BT_EQ_INT(t, 1, bt_registry_publish(o, fd, "crash, from the test owner"));
	close(fd);
	usleep(300000);
	/* the target dies, then the owner leaves: the joiner ends */
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
	bt_registry_release(o);
	st = wait_exit(j, 10000);
	BT_CHECK(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 1);
	s = read_snap(t, out);
	BT_REQUIRE(t, s);
	BT_EQ_STR(t, "qemu-like", btrace_snapshot_meta(s, "test.owner"));
	BT_EQ_INT(t, BTRACE_BACKEND_QEMU, s->config.backend);
	btrace_snapshot_free(s);
}

static void test_join_owner_leaves_no_hardware(struct bt_test *t)
{
	char *targv[] = { child_path, "sleep", "20", NULL };
	struct btrace_error err = { 0 };
	struct bt_registry_owner *o = NULL;
	pid_t target, j, other = 0;
	int st;

	/* decided from the machine (the kernel's PMUs), not btrace's probe */
	if (access("/sys/bus/event_source/devices/intel_pt", F_OK) == 0 ||
	    access("/sys/bus/event_source/devices/intel_bts", F_OK) == 0)
		BT_SKIP(t, "trace hardware present: the joiner would take over");
	target = spawn(targv);
	usleep(50000);
	BT_REQUIRE(t, bt_registry_claim(target, BTRACE_BACKEND_QEMU, &o, &other, &err) == 0);
	j = spawn_joiner(target, out_path("nohw.btrace"));
	BT_REQUIRE(t, accept_join(o));
	bt_registry_release(o);
	st = wait_exit(j, 10000);
	/* it stops (no snapshot), and the target lives on */
	BT_CHECK(t, st >= 0 && WIFEXITED(st) && WEXITSTATUS(st) == 0);
	BT_EQ_INT(t, 0, kill(target, 0));
	kill(target, SIGKILL);
	waitpid(target, NULL, 0);
}

int main(void)
{
	static const struct bt_test_case cases[] = {
		BT_TEST_CASE(test_launch_precise),
		BT_TEST_CASE(test_launch_memory),
		BT_TEST_CASE(test_launch_handler_reraise),
		BT_TEST_CASE(test_launch_passive),
		BT_TEST_CASE(test_threads_precise),
		BT_TEST_CASE(test_threads_passive_fork_records),
		BT_TEST_CASE(test_threads_catch_all),
		BT_TEST_CASE(test_stop_wakes_loop),
		BT_TEST_CASE(test_attach_beside_gdb),
		BT_TEST_CASE(test_two_btrace_join_and_snapshots),
		BT_TEST_CASE(test_two_btrace_handover),
		BT_TEST_CASE(test_join_foreign_owner),
		BT_TEST_CASE(test_join_owner_leaves_no_hardware),
	};
	char reg[300];
	int r;

	(void)exists;
	engine_test_setup("bt-engine-test");
	snprintf(reg, sizeof(reg), "%s/registry", tmpdir);
	setenv("BTRACE_REGISTRY", reg, 1);
	r = bt_test_run(cases, (int)(sizeof(cases) / sizeof(cases[0])));
	return engine_test_finish(r);
}
