/* SPDX-License-Identifier: MIT */
/*
 * The allocator's locked-memory model against the real kernel: as an
 * unprivileged user, map a sweep of software-event rings under a sweep of
 * RLIMIT_MEMLOCK values and check that every mmap succeeds or fails with
 * EPERM exactly as bt_budget_charge() predicts.  The kernel charges data
 * rings of software events through the same perf_mmap() accounting as AUX
 * rings.
 */
#include <errno.h>
#include <grp.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bt-test.h"
#include "capture/budget.h"
#include "capture/capture-internal.h"
#include "capture/perf.h"

#define BT_ARRAY_N(a) (sizeof(a) / sizeof((a)[0]))

struct sweep_result {
	int mismatches;
	int mmaps;
	int eperm;
	int other_errors;
	char first[256];
};

static int open_dummy(void)
{
	struct perf_event_attr a;

	memset(&a, 0, sizeof(a));
	a.type = PERF_TYPE_SOFTWARE;
	a.config = PERF_COUNT_SW_DUMMY;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	a.disabled = 1;
	return bt_perf_sys_open(&a, 0, -1, -1, 0);
}

/* In the child: drop to @uid, map @n rings of 1 + pages[i] pages. */
static void run_sweep(uid_t uid, uint64_t rlimit_bytes, const uint64_t *pages,
		      int n, struct sweep_result *res)
{
	struct bt_budget_env env;
	struct bt_budget_state st;
	struct rlimit rl = { rlimit_bytes, rlimit_bytes };
	long ps = sysconf(_SC_PAGESIZE);

	memset(res, 0, sizeof(*res));
	if (getuid() == 0) {
		if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0 || setgroups(0, NULL) < 0 ||
		    setgid(uid) < 0 || setuid(uid) < 0) {
			res->other_errors++;
			snprintf(res->first, sizeof(res->first),
				 "dropping privileges failed: %s", strerror(errno));
			return;
		}
	} else if (setrlimit(RLIMIT_MEMLOCK, &rl) < 0) {
		res->other_errors++;
		snprintf(res->first, sizeof(res->first), "setrlimit: %s",
			 strerror(errno));
		return;
	}
	bt_budget_env_current(&env);
	bt_budget_state_init(&env, &st);
	for (int i = 0; i < n; i++) {
		int fd = open_dummy(), predicted, actual = 0;
		size_t len = (size_t)(1 + pages[i]) * (size_t)ps;
		void *p;

		if (fd < 0) {
			res->other_errors++;
			snprintf(res->first, sizeof(res->first),
				 "perf_event_open: %s", strerror(-fd));
			return;
		}
		predicted = bt_budget_charge(&env, &st, 1 + pages[i]);
		p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (p == MAP_FAILED)
			actual = -errno;
		res->mmaps++;
		if (actual == -EPERM)
			res->eperm++;
		else if (actual)
			res->other_errors++;
		if (actual != predicted) {
			if (!res->mismatches)
				snprintf(res->first, sizeof(res->first),
					 "uid %d rlimit %llu: mmap #%d of %llu pages: kernel %d, model %d (user %llu pinned %llu)",
					 (int)uid, (unsigned long long)rlimit_bytes,
					 i, (unsigned long long)(1 + pages[i]),
					 actual, predicted,
					 (unsigned long long)st.user_locked,
					 (unsigned long long)st.pinned);
			res->mismatches++;
		}
		/* keep the mapping and fd: the charges accumulate */
	}
}

static int sweep(struct bt_test *t, uint64_t rlimit_bytes, const uint64_t *pages,
		 int n, struct sweep_result *out)
{
	int pfd[2];
	pid_t pid;
	uid_t uid = getuid() == 0 ? (uid_t)(60000 + getpid() % 4000) : getuid();

	if (pipe(pfd) < 0)
		return -1;
	pid = fork();
	if (pid == 0) {
		struct sweep_result r;

		close(pfd[0]);
		run_sweep(uid, rlimit_bytes, pages, n, &r);
		if (write(pfd[1], &r, sizeof(r)) != sizeof(r))
			_exit(2);
		_exit(0);
	}
	close(pfd[1]);
	memset(out, 0, sizeof(*out));
	if (read(pfd[0], out, sizeof(*out)) != sizeof(*out))
		out->other_errors = 1;
	close(pfd[0]);
	waitpid(pid, NULL, 0);
	(void)t;
	return 0;
}

static void test_sweep(struct bt_test *t)
{
	/* data pages (power of two) per mmap, in order */
	static const uint64_t seqs[][10] = {
		{ 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096 },
		{ 128, 128, 128, 1, 1, 2, 4, 8, 16, 0 },
		{ 1024, 256, 64, 16, 4, 1, 0, 0, 0, 0 },
		{ 64, 64, 64, 64, 64, 64, 64, 64, 64, 64 },
		{ 0, 0, 0, 0, 0, 256, 0, 0, 512, 1 },
	};
	static const uint64_t rlimits[] = { 0, 4096, 64 << 10, 256 << 10,
					    1 << 20, 4 << 20, 8 << 20, 64 << 20 };
	int total = 0, eperm = 0, ok = 0;

	if (getuid() != 0 && bt_has_cap(BT_CAP_IPC_LOCK))
		BT_SKIP(t, "the test user has CAP_IPC_LOCK: nothing to check");
	struct rlimit hard;

	getrlimit(RLIMIT_MEMLOCK, &hard);
	for (size_t r = 0; r < BT_ARRAY_N(rlimits); r++) {
		if (hard.rlim_max != RLIM_INFINITY && rlimits[r] > hard.rlim_max) {
			bt_test_diag("RLIMIT_MEMLOCK %llu is above the hard limit %llu: left out",
				     (unsigned long long)rlimits[r],
				     (unsigned long long)hard.rlim_max);
			continue;
		}
		for (size_t s = 0; s < BT_ARRAY_N(seqs); s++) {
			struct sweep_result res;

			sweep(t, rlimits[r], seqs[s], 10, &res);
			BT_EQ_INT(t, 0, res.other_errors);
			BT_EQ_INT(t, 0, res.mismatches);
			if (res.mismatches || res.other_errors)
				bt_test_diag("%s", res.first);
			else
				ok++;
			total += res.mmaps;
			eperm += res.eperm;
		}
	}
	bt_test_diag("%d mmaps: %d refused with EPERM, all as predicted in %d sweeps",
		     total, eperm, ok);
	/* the sweep must exercise both outcomes */
	BT_CHECK(t, eperm > 0);
	BT_CHECK(t, eperm < total);
}

/* The planner's verdict for a whole plan matches the real mmaps. */
static void test_plan_matches_kernel(struct bt_test *t)
{
	static const uint64_t rlimits[] = { 0, 128 << 10, 1 << 20 };

	for (size_t r = 0; r < BT_ARRAY_N(rlimits); r++) {
		struct bt_budget_env env;
		struct bt_plan plan;
		struct btrace_error err = { 0 };
		struct bt_plan_req req = {
			.nthreads = 6, .ncpus = 1, .history = 0,
			.pad = 0, .data_pages = 64, .has_aux = false,
		};
		struct sweep_result res;
		uint64_t seq[10];
		int n, pr;

		bt_budget_env_current(&env);
		env.rlimit_memlock = rlimits[r];
		env.cap_ipc_lock = false;
		env.pinned = 0;
		if (env.paranoid == -1)
			BT_SKIP(t, "perf_event_paranoid is -1: no limit to check");
		pr = bt_budget_plan(&env, &req, &plan, &err);
		for (n = 0; n < 6; n++)
			seq[n] = 64;
		sweep(t, rlimits[r], seq, n, &res);
		BT_EQ_INT(t, 0, res.other_errors);
		/* plan refused <=> some mmap of the real sequence failed */
		BT_EQ_INT(t, pr == 0 && plan.per_task == 6, res.eperm == 0);
	}
}

int main(void)
{
	static const struct bt_test_case cases[] = {
		BT_TEST_CASE(test_sweep),
		BT_TEST_CASE(test_plan_matches_kernel),
	};
	int fd = open_dummy();

	if (fd < 0) {
		static char why[128];

		snprintf(why, sizeof(why), "perf_event_open of a dummy event failed: %s",
			 strerror(-fd));
		bt_test_skip_all(why);
	}
	close(fd);
	return bt_test_run(cases, (int)BT_ARRAY_N(cases));
}
