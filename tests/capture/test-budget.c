/* SPDX-License-Identifier: MIT */
/* The locked-memory model, AUX ring sizing and the buffer planner. */
#include <errno.h>
#include <string.h>

#include "bt-test.h"
#include "capture/budget.h"
#include "capture/capture-internal.h"
#include "util.h"

static void env_default(struct bt_budget_env *e)
{
	memset(e, 0, sizeof(*e));
	e->page_size = 4096;
	e->mlock_kb = 516;          /* 129 pages per CPU */
	e->online_cpus = 2;         /* 258 pages per user */
	e->rlimit_memlock = 8u << 20; /* 2048 pages */
	e->paranoid = 2;
}

static void test_user_limit(struct bt_test *t)
{
	struct bt_budget_env e;

	env_default(&e);
	BT_EQ_U64(t, 258, bt_budget_user_limit(&e));
	e.online_cpus = 8;
	BT_EQ_U64(t, 1032, bt_budget_user_limit(&e));
	BT_EQ_U64(t, 2048, bt_budget_rlimit_pages(&e));
	e.rlimit_memlock = BT_UNLIMITED;
	BT_EQ_U64(t, BT_UNLIMITED, bt_budget_rlimit_pages(&e));
}

static void test_charge_sequence(struct bt_test *t)
{
	struct bt_budget_env e;
	struct bt_budget_state st;

	env_default(&e);
	e.rlimit_memlock = 64 * 4096;   /* 64 pages beyond the allowance */
	bt_budget_state_init(&e, &st);
	/* 1+128 pages: within the 258-page allowance */
	BT_EQ_INT(t, 0, bt_budget_charge(&e, &st, 129));
	BT_EQ_U64(t, 129, st.user_locked);
	BT_EQ_U64(t, 0, st.pinned);
	/* another 129: exactly the allowance */
	BT_EQ_INT(t, 0, bt_budget_charge(&e, &st, 129));
	BT_EQ_U64(t, 258, st.user_locked);
	/* 65 pages all beyond: pinned 65 > 64 -> EPERM, nothing charged */
	BT_EQ_INT(t, -EPERM, bt_budget_charge(&e, &st, 65));
	BT_EQ_U64(t, 0, st.pinned);
	/* 64 fits exactly (<=) */
	BT_EQ_INT(t, 0, bt_budget_charge(&e, &st, 64));
	BT_EQ_U64(t, 64, st.pinned);
	BT_EQ_INT(t, -EPERM, bt_budget_charge(&e, &st, 1));
	BT_EQ_U64(t, 0, bt_budget_available(&e, &st));
	/* the bypasses */
	e.cap_ipc_lock = true;
	BT_EQ_INT(t, 0, bt_budget_charge(&e, &st, 1000));
	e.cap_ipc_lock = false;
	e.paranoid = -1;
	BT_EQ_INT(t, 0, bt_budget_charge(&e, &st, 1000));
	e.paranoid = 0;     /* CAP_PERFMON-like privilege does not bypass */
	BT_EQ_INT(t, -EPERM, bt_budget_charge(&e, &st, 1));
}

static void test_split_charge(struct bt_test *t)
{
	struct bt_budget_env e;
	struct bt_budget_state st;

	env_default(&e);
	e.rlimit_memlock = 10 * 4096;
	bt_budget_state_init(&e, &st);
	BT_EQ_INT(t, 0, bt_budget_charge(&e, &st, 250));
	/* 17 pages: 8 from the allowance, 9 pinned */
	BT_EQ_INT(t, 0, bt_budget_charge(&e, &st, 17));
	BT_EQ_U64(t, 258, st.user_locked);
	BT_EQ_U64(t, 9, st.pinned);
	/* user counter above the limit (sysctl lowered) is clamped */
	e.user_locked = 1000;
	e.pinned = 0;
	bt_budget_state_init(&e, &st);
	BT_EQ_INT(t, 0, bt_budget_charge(&e, &st, 10));
	BT_EQ_U64(t, 10, st.pinned);
}

static void test_ring_choose(struct bt_test *t)
{
	struct bt_ring_choice c;

	/* 100 KiB + 16 KiB pad: 116 KiB -> 128 KiB, pad in the slack */
	BT_EQ_INT(t, 0, bt_ring_choose(100 << 10, 16 << 10, 4096, 0, &c));
	BT_EQ_U64(t, 128 << 10, c.ring);
	BT_CHECK(t, c.pad_in_slack);
	BT_EQ_U64(t, 12 << 10, c.slack);
	/* 128 KiB + 16 KiB: doubles to 256 KiB, pad not in the slack */
	BT_EQ_INT(t, 0, bt_ring_choose(128 << 10, 16 << 10, 4096, 0, &c));
	BT_EQ_U64(t, 256 << 10, c.ring);
	BT_CHECK(t, !c.pad_in_slack);
	BT_EQ_U64(t, 112 << 10, c.slack);
	/* 1 byte of history still needs a page */
	BT_EQ_INT(t, 0, bt_ring_choose(1, 0, 4096, 0, &c));
	BT_EQ_U64(t, 4096, c.ring);
	/* BTS single-block limit: 4 MiB + pad is cut to 4 MiB */
	BT_EQ_INT(t, 0, bt_ring_choose(4 << 20, 12 << 10, 4096, 4 << 20, &c));
	BT_EQ_U64(t, 4 << 20, c.ring);
	BT_EQ_U64(t, (4 << 20) - (12 << 10), c.history);
	BT_CHECK(t, c.shrunk);
	BT_EQ_INT(t, -EINVAL, bt_ring_choose(1, 8192, 4096, 4096, &c));
	BT_EQ_U64(t, 1, bt_pow2_roundup(1));
	BT_EQ_U64(t, 64, bt_pow2_roundup(33));
	BT_EQ_U64(t, 0, bt_pow2_roundup(UINT64_MAX));
}

static void test_plan_fits(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_budget_env e;
	struct bt_plan p;
	struct bt_plan_req r = {
		.nthreads = 4, .ncpus = 2, .history = 60 << 10, .pad = 4096,
		.data_pages = 8, .has_aux = true,
	};

	env_default(&e);
	/* 4 x (1 + 8 + 16) = 100 pages */
	BT_EQ_INT(t, 0, bt_budget_plan(&e, &r, &p, &err));
	BT_EQ_INT(t, 4, p.per_task);
	BT_EQ_INT(t, 0, p.catch_all);
	BT_EQ_U64(t, 25, p.task_cost);
	BT_EQ_U64(t, 100, p.total);
	BT_CONTAINS(t, p.summary, "64.0 KiB");
}

static void test_plan_catch_all(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_budget_env e;
	struct bt_plan p;
	struct bt_plan_req r = {
		.nthreads = 40, .ncpus = 2, .history = 124 << 10, .pad = 4096,
		.data_pages = 8, .has_aux = true,
	};

	env_default(&e);
	e.rlimit_memlock = 0;
	/* 258 pages; per buffer 1 + 8 + 32 = 41; catch-all 2 x 41 = 82;
	 * (258 - 82) / 41 = 4 per-task buffers */
	BT_EQ_INT(t, 0, bt_budget_plan(&e, &r, &p, &err));
	BT_EQ_INT(t, 4, p.per_task);
	BT_EQ_INT(t, 36, p.catch_all);
	BT_CHECK(t, p.catch_all_rings);
	BT_EQ_U64(t, 82 + 4 * 41, p.total);
	BT_CHECK(t, p.total <= 258);
}

static void test_plan_refused(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_budget_env e;
	struct bt_plan p;
	struct bt_plan_req r = {
		.nthreads = 1, .ncpus = 2, .history = 4 << 20, .pad = 16 << 10,
		.data_pages = 8, .has_aux = true,
	};

	env_default(&e);
	e.rlimit_memlock = 64 << 10;
	BT_EQ_INT(t, -EPERM, bt_budget_plan(&e, &r, &p, &err));
	BT_CONTAINS(t, err.msg, "perf_event_mlock_kb 516 KiB x 2 CPUs");
	BT_CONTAINS(t, err.msg, "RLIMIT_MEMLOCK 64.0 KiB");
	BT_CONTAINS(t, err.hint, "--size");
	BT_CONTAINS(t, err.hint, "ulimit -l");
	BT_CONTAINS(t, err.hint, "perf_event_mlock_kb");
	/* allowed to shrink (a handover): halves until it fits */
	r.allow_shrink = true;
	BT_EQ_INT(t, 0, bt_budget_plan(&e, &r, &p, &err));
	BT_CHECK(t, p.ring.shrunk);
	BT_CHECK(t, p.total <= 258 + 16);
	BT_EQ_U64(t, p.ring.ring - (16 << 10), p.ring.history);
	BT_CONTAINS(t, p.summary, "reduced");
	/* with CAP_IPC_LOCK anything goes */
	r.allow_shrink = false;
	e.cap_ipc_lock = true;
	BT_EQ_INT(t, 0, bt_budget_plan(&e, &r, &p, &err));
	BT_CHECK(t, p.bypass);
	/* not a power of two */
	r.data_pages = 6;
	BT_EQ_INT(t, -EINVAL, bt_budget_plan(&e, &r, &p, &err));
}

/* --size 128K with a 16K pad needs a 256K ring; when only the 128K ring
 * fits, the pad is taken from it instead of refusing. */
static void test_plan_prefers_pad_in_slack(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_budget_env e;
	struct bt_plan p;
	struct bt_plan_req r = {
		.nthreads = 1, .ncpus = 1, .history = 128 << 10, .pad = 16 << 10,
		.data_pages = 8, .has_aux = true,
	};

	env_default(&e);
	e.online_cpus = 1;
	e.mlock_kb = 240;           /* 60 pages */
	e.rlimit_memlock = 0;
	BT_EQ_INT(t, 0, bt_budget_plan(&e, &r, &p, &err));
	BT_EQ_U64(t, 128 << 10, p.ring.ring);
	BT_EQ_U64(t, 112 << 10, p.ring.history);
	BT_CHECK(t, p.ring.pad_in_ring);
	BT_CONTAINS(t, p.summary, "reduced by the pad");
	/* with room for the full request it is kept */
	e.mlock_kb = 400;           /* 100 pages >= 1 + 8 + 64 */
	BT_EQ_INT(t, 0, bt_budget_plan(&e, &r, &p, &err));
	BT_EQ_U64(t, 256 << 10, p.ring.ring);
	BT_EQ_U64(t, 128 << 10, p.ring.history);
	BT_CHECK(t, !p.ring.shrunk);
	/* too little even for that: refused, naming the full request */
	e.mlock_kb = 160;           /* 40 pages */
	BT_EQ_INT(t, -EPERM, bt_budget_plan(&e, &r, &p, &err));
	BT_CONTAINS(t, err.msg, "locking 292.0 KiB");
}

/* Sideband rings: one per CPU, each its data pages plus the header
 * (user) page the kernel also charges to locked memory. */
static void test_plan_sideband(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_budget_env e;
	struct bt_plan p;
	struct bt_plan_req r = {
		.nthreads = 2, .ncpus = 4, .history = 60 << 10, .pad = 4096,
		.data_pages = 8, .sideband_pages = 16, .has_aux = true,
	};

	env_default(&e);
	BT_EQ_INT(t, 0, bt_budget_plan(&e, &r, &p, &err));
	/* 4 CPUs x (1 header page + 16 data pages) */
	BT_EQ_U64(t, 4 * (1 + 16), p.sideband_cost);
	/* 2 x (1 + 8 + 16) per-task pages on top */
	BT_EQ_U64(t, 68 + 2 * 25, p.total);
	/* 258 pages, no RLIMIT_MEMLOCK: 68 + 7 x 25 = 243 fits, 68 + 8 x 25
	 * = 268 does not, so of 8 threads the plan puts some on the
	 * catch-all rings (4 x 25 = 100): (258 - 68 - 100) / 25 = 3 */
	e.rlimit_memlock = 0;
	r.nthreads = 8;
	BT_EQ_INT(t, 0, bt_budget_plan(&e, &r, &p, &err));
	BT_CHECK(t, p.catch_all_rings);
	BT_EQ_INT(t, 3, p.per_task);
	BT_EQ_U64(t, 68 + 100 + 3 * 25, p.total);
}

/* Threads created later (launch, attach): the plan reserves the catch-all
 * rings beside the buffers when they fit, without shrinking the history;
 * when they do not fit it says so instead. */
static void test_plan_new_threads(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_budget_env e;
	struct bt_plan p;
	struct bt_plan_req r = {
		.nthreads = 1, .ncpus = 2, .history = 60 << 10, .pad = 4096,
		.data_pages = 8, .has_aux = true, .allow_shrink = true,
		.new_threads = true,
	};

	env_default(&e);
	e.rlimit_memlock = 0;          /* 258 pages */
	/* 1 x 25 + catch-all 2 x 25 = 75 pages */
	BT_EQ_INT(t, 0, bt_budget_plan(&e, &r, &p, &err));
	BT_EQ_INT(t, 1, p.per_task);
	BT_CHECK(t, p.catch_all_rings);
	BT_CHECK(t, !p.unreserved);
	BT_EQ_U64(t, 50, p.cpu_cost);
	BT_EQ_U64(t, 75, p.total);
	BT_CONTAINS(t, p.summary, "reserved for later threads");
	/* 16 CPUs: 16 x 25 = 400 pages do not fit beside the buffer; the
	 * history is kept and the plan says the rings are not reserved */
	r.ncpus = 16;
	BT_EQ_INT(t, 0, bt_budget_plan(&e, &r, &p, &err));
	BT_EQ_INT(t, 1, p.per_task);
	BT_CHECK(t, !p.catch_all_rings);
	BT_CHECK(t, p.unreserved);
	BT_CHECK(t, !p.ring.shrunk);
	BT_EQ_U64(t, 64 << 10, p.ring.ring);
	BT_EQ_U64(t, 25, p.total);
	BT_CONTAINS(t, p.summary, "no room to reserve");
	/* no limit: nothing to reserve */
	e.rlimit_memlock = BT_UNLIMITED;
	BT_EQ_INT(t, 0, bt_budget_plan(&e, &r, &p, &err));
	BT_CHECK(t, !p.catch_all_rings && !p.unreserved);
}

/* perf_mmap() refuses beyond the limit only if perf_is_paranoid(), which is
 * sysctl_perf_event_paranoid > -1 (include/linux/perf_event.h): -1 and
 * every value below bypass the limit. */
static void test_paranoid_bypass(struct bt_test *t)
{
	struct bt_budget_env e;
	struct bt_budget_state st;

	env_default(&e);
	e.rlimit_memlock = 0;
	for (int p = 2; p >= -3; p--) {
		e.paranoid = p;
		bt_budget_state_init(&e, &st);
		BT_EQ_INT(t, p <= -1, bt_budget_bypass(&e));
		BT_EQ_INT(t, p <= -1 ? 0 : -EPERM, bt_budget_charge(&e, &st, 1000));
	}
}

/* capable() is ns_capable(&init_user_ns, ...) (kernel/capability.c): a
 * capability in CapEff counts only in the initial user namespace. */
static void test_cap_initial_userns(struct bt_test *t)
{
	uint64_t all = (1ull << 41) - 1;

	BT_CHECK(t, bt_cap_effective(all, true, BT_CAP_IPC_LOCK));
	BT_CHECK(t, !bt_cap_effective(all, false, BT_CAP_IPC_LOCK));
	BT_CHECK(t, !bt_cap_effective(all & ~(1ull << BT_CAP_IPC_LOCK), true,
				      BT_CAP_IPC_LOCK));
	BT_CHECK(t, bt_cap_effective(1ull << BT_CAP_PERFMON, true, BT_CAP_PERFMON));
}

BT_TESTS(test_plan_new_threads, test_paranoid_bypass, test_cap_initial_userns,
	 test_plan_prefers_pad_in_slack, test_user_limit, test_charge_sequence, test_split_charge,
	 test_ring_choose, test_plan_fits, test_plan_catch_all,
	 test_plan_refused, test_plan_sideband)
