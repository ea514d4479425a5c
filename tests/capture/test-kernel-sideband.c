/* SPDX-License-Identifier: MIT */
/*
 * Sideband from real dummy events on a launched child: the MMAP2 of a
 * dlopen()ed library (with its build ID), the COMM of an exec, FORK and EXIT
 * of threads.  Also /proc synthesis of a running process.
 */
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bt-test.h"
#include "capture/capture-internal.h"
#include "elf-buildid.h"
#include "capture/sbrings.h"

static char child_path[1024], lib_path[1024];

static void paths(void)
{
	const char *b = getenv("BT_BUILD_ROOT");

	snprintf(child_path, sizeof(child_path), "%s/tests/capture/sbchild",
		 b ? b : ".");
	snprintf(lib_path, sizeof(lib_path), "%s/tests/capture/libbtsblib.so",
		 b ? b : ".");
}

struct collect {
	int forks, exits, comm_exec, lib_maps, lib_build_id;
	int32_t fork_tids[16];
	int32_t exit_tids[16];
	char comm[16];
};

/* Launch sbchild exec LIB 3 with sideband rings; return the wait status. */
static int launch(struct bt_test *t, struct bt_sideband *sb,
		  struct bt_sb_rings *rings, const char *mode)
{
	struct btrace_error err = { 0 };
	int go[2], status = -1;
	pid_t pid;

	if (pipe(go) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		char c;
		char *argv[] = { child_path, (char *)mode, lib_path, "3", NULL };

		close(go[1]);
		if (read(go[0], &c, 1) != 1)
			_exit(126);
		execv(child_path, argv);
		_exit(127);
	}
	close(go[0]);
	bt_sideband_init(sb, pid);
	if (bt_sb_rings_open(rings, pid, true, 64, &err) < 0) {
		bt_test_diag("%s (hint: %s)", err.msg, err.hint);
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(go[1]);
		bt_test_fail(t, __FILE__, __LINE__, "sideband rings did not open");
		return -1;
	}
	if (write(go[1], "g", 1) != 1)
		return -1;
	close(go[1]);
	for (;;) {
		struct pollfd pfd[64];
		int n = rings->ncpus < 64 ? rings->ncpus : 64;

		for (int i = 0; i < n; i++) {
			pfd[i].fd = bt_sb_rings_fd(rings, i);
			pfd[i].events = POLLIN;
		}
		poll(pfd, (nfds_t)n, 20);
		BT_CHECK(t, bt_sb_rings_drain(rings, sb) >= 0);
		if (waitpid(pid, &status, WNOHANG) == pid)
			break;
	}
	BT_CHECK(t, bt_sb_rings_drain(rings, sb) >= 0);
	return status;
}

static void test_launch_sideband(struct bt_test *t)
{
	struct bt_sideband sb;
	struct bt_sb_rings rings;
	int status, lib = 0, lib_bid = 0, exited = 0, threads = 0;
	uint8_t bid[20];
	int bid_size;

	status = launch(t, &sb, &rings, "exec");
	BT_REQUIRE(t, status != -1);
	BT_CHECK(t, WIFEXITED(status) && WEXITSTATUS(status) == 0);
	BT_EQ_INT(t, 0, (int)sb.lost);
	bid_size = bt_elf_build_id(lib_path, bid, sizeof(bid));
	BT_CHECK(t, bid_size > 0);
	for (size_t i = 0; i < sb.nmaps; i++) {
		const struct btrace_mapping *m = &sb.maps[i];

		if (m->path && strstr(m->path, "libbtsblib.so")) {
			lib++;
			if (bid_size > 0 && (int)m->build_id_size == bid_size &&
			    !memcmp(m->build_id, bid, (size_t)bid_size))
				lib_bid++;
		}
	}
	BT_CHECK(t, lib >= 1);      /* MMAP2 of the dlopen */
	BT_CHECK(t, lib_bid >= 1);  /* with the library's build ID */
	/* the main thread got COMM "sbchild" from the exec */
	{
		struct bt_sb_task *main_task = bt_sideband_task(&sb, sb.pid, false);

		BT_REQUIRE(t, main_task != NULL);
		BT_EQ_STR(t, "sbchild", main_task->comm);
	}
	BT_CHECK(t, sb.comm_execs >= 1);     /* COMM with MISC_COMM_EXEC */
	for (size_t i = 0; i < sb.ntasks; i++) {
		if (sb.tasks[i].tid == sb.pid)
			continue;
		threads++;
		if (sb.tasks[i].exited)
			exited++;
	}
	BT_EQ_INT(t, 3, threads);            /* FORK of each thread */
	BT_EQ_INT(t, 3, exited);             /* and its EXIT */
	BT_EQ_INT(t, 3, (int)sb.nnew);       /* new threads for the engine */
	bt_test_diag("%llu records, %zu exec mappings, build IDs from %s",
		     (unsigned long long)sb.records, sb.nmaps,
		     rings.build_id ? "the kernel (attr.build_id)" : "the files");
	bt_sb_rings_close(&rings);
	bt_sideband_fini(&sb);
}

static void test_synthesize_self(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_sideband sb;
	int with_bid = 0, exe = 0;
	char self[1024];
	ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);

	BT_REQUIRE(t, n > 0);
	self[n] = '\0';
	bt_sideband_init(&sb, getpid());
	BT_REQUIRE(t, bt_sideband_synthesize(&sb, getpid(), &err) == 0);
	BT_CHECK(t, sb.nmaps >= 2);
	for (size_t i = 0; i < sb.nmaps; i++) {
		BT_CHECK(t, sb.maps[i].prot & 4);
		if (sb.maps[i].build_id_size)
			with_bid++;
		if (sb.maps[i].path && !strcmp(sb.maps[i].path, self))
			exe++;
	}
	BT_CHECK(t, exe >= 1);
	BT_CHECK(t, with_bid >= 2);  /* the test and libc */
	BT_CHECK(t, bt_sideband_task(&sb, getpid(), false) != NULL);
	bt_sideband_fini(&sb);
	BT_EQ_INT(t, -ENOENT, bt_sideband_synthesize(&sb, 0x7ffffff0, &err));
	BT_CONTAINS(t, err.msg, "/maps");
}

static void test_map_replace(struct bt_test *t)
{
	struct bt_sideband sb;
	struct btrace_mapping a = { .start = 0x1000, .end = 0x5000, .prot = 5,
				    .path = "a" };
	struct btrace_mapping b = { .start = 0x2000, .end = 0x3000, .prot = 5,
				    .path = "b" };

	bt_sideband_init(&sb, 1);
	BT_EQ_INT(t, 0, bt_sideband_add_map(&sb, &a));
	BT_EQ_INT(t, 0, bt_sideband_add_map(&sb, &b));
	/* a is split around b */
	BT_EQ_INT(t, 3, (int)sb.nmaps);
	for (size_t i = 0; i < sb.nmaps; i++) {
		if (!strcmp(sb.maps[i].path, "a") && sb.maps[i].start == 0x3000)
			BT_EQ_U64(t, 0x2000, sb.maps[i].pgoff);
	}
	bt_sideband_fini(&sb);
}

int main(void)
{
	static const struct bt_test_case cases[] = {
		BT_TEST_CASE(test_launch_sideband),
		BT_TEST_CASE(test_synthesize_self),
		BT_TEST_CASE(test_map_replace),
	};
	struct perf_event_attr a;
	int fd;

	paths();
	bt_sideband_attr(&a, false, false);
	fd = bt_perf_sys_open(&a, 0, -1, -1, 0);
	if (fd < 0) {
		static char why[128];

		snprintf(why, sizeof(why), "perf_event_open of a dummy event failed: %s",
			 strerror(-fd));
		bt_test_skip_all(why);
	}
	close(fd);
	return bt_test_run(cases, 3);
}
