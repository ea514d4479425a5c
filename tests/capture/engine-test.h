/* SPDX-License-Identifier: MIT */
/*
 * What the kernel tests of the engine share (test-kernel-engine.c,
 * test-kernel-threads.c): the engine set up with a software dummy event in
 * place of Intel PT, paths in the test's directory, child processes.
 * Included by one test program each: everything here is static.
 */
#ifndef BT_ENGINE_TEST_H
#define BT_ENGINE_TEST_H

#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <linux/perf_event.h>

#include "bt-test.h"
#include "capture/engine.h"
#include "capture/engine-internal.h"
#include "capture/perf.h"

static char child_path[1024], tmpdir[256];

/* A bare engine for @pid over @o, @rec and @res: no descriptors yet, and
 * nothing else set (bt_engine_prepare() comes next). */
static inline void engine_bare(struct bt_engine *e,
			       const struct bt_engine_opts *o,
			       const struct btrace_record_opts *rec,
			       struct btrace_record_result *res, pid_t pid)
{
	memset(e, 0, sizeof(*e));
	e->o = o;
	e->rec = rec;
	e->res = res;
	e->pidfd = -1;
	e->sigfd = -1;
	e->pid = pid;
}

/* The engine with a dummy software event standing in for intel_pt. */
static void engine_opts(struct bt_engine_opts *o,
			const struct btrace_record_opts *rec, bool registry)
{
	memset(o, 0, sizeof(*o));
	o->rec = rec;
	o->trace_attr.type = PERF_TYPE_SOFTWARE;
	o->trace_attr.config = PERF_COUNT_SW_DUMMY;
	o->trace_attr.exclude_kernel = 1;
	o->trace_attr.exclude_hv = 1;
	o->pmu_name = "dummy (stand-in for intel_pt)";
	o->has_aux = false;
	o->data_pages = 1;
	o->sideband_pages = 8;
	o->use_registry = registry;
	o->test_event = true;
	o->cfg.backend = BTRACE_BACKEND_PT;
	o->cfg.trace_kind = BTRACE_TRACE_PT;
}

/* @name in the test's directory (four results may be in use at once). */
static const char *out_path(const char *name)
{
	static char buf[4][512];
	static int n;
	char *p = buf[n++ % 4];

	snprintf(p, 512, "%s/%s", tmpdir, name);
	return p;
}

/* The engine's messages on stderr with BT_TEST_VERBOSE (the library
 * says nothing by itself): rec.log = engine_test_log(). */
static void engine_test_print(int level, const char *msg, void *ctx)
{
	(void)level;
	(void)ctx;
	fprintf(stderr, "%s\n", msg);
}
static inline btrace_log_fn engine_test_log(void)
{
	return getenv("BT_TEST_VERBOSE") ? engine_test_print : NULL;
}

/* Run @argv with its output on /dev/null (stderr kept with
 * BT_TEST_VERBOSE). */
static pid_t spawn(char **argv)
{
	pid_t p = fork();

	if (p == 0) {
		int fd = open("/dev/null", O_RDWR);

		dup2(fd, 0);
		dup2(fd, 1);
		if (!getenv("BT_TEST_VERBOSE"))
			dup2(fd, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	return p;
}

/* The wait status of @p, or -1 (and @p killed) after @ms milliseconds: a
 * hang guard. */
static int wait_exit(pid_t p, int ms)
{
	int st;

	for (int i = 0; i < ms / 10; i++) {
		if (waitpid(p, &st, WNOHANG) == p)
			return st;
		usleep(10000);
	}
	kill(p, SIGKILL);
	waitpid(p, &st, 0);
	return -1;
}

/* The program's start: sbchild's path, a fresh directory /tmp/@name-XXXXXX
 * (skip when it cannot be made, or when the kernel refuses the dummy
 * event the engine runs on). */
static void engine_test_setup(const char *name)
{
	const char *b = getenv("BT_BUILD_ROOT");
	struct perf_event_attr a;
	int fd;

	snprintf(child_path, sizeof(child_path), "%s/tests/capture/sbchild",
		 b ? b : ".");
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/%s-XXXXXX", name);
	if (!mkdtemp(tmpdir))
		bt_test_skip_all("mkdtemp failed");
	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.exclude_kernel = 1;
	fd = bt_perf_sys_open(&a, 0, -1, -1, 0);
	if (fd < 0)
		bt_test_skip_all("perf_event_open of a dummy event failed");
	close(fd);
}

/* The directory removed (unless BT_TEST_KEEP); @r passed through. */
static int engine_test_finish(int r)
{
	if (!getenv("BT_TEST_KEEP")) {
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			r = r ? r : 0;
	}
	return r;
}

#endif
