/* SPDX-License-Identifier: MIT */
/*
 * The resource allocator: a model of the kernel's locked-memory charging of
 * perf ring buffers (perf_mmap_calc_limits / perf_mmap_account) and the
 * planner that sizes every buffer of a recording before the first mmap.
 *
 * Kernel rule, per mmap of P pages (data: 1 + 2^n, AUX: 2^m):
 *   limit  = perf_event_mlock_kb / (page/1024) * online CPUs   (per user)
 *   locked = min(user->locked, limit) + P
 *   extra  = max(0, locked - limit)          charged to mm->pinned_vm
 *   ok     = pinned + extra <= RLIMIT_MEMLOCK/page
 *            || perf_event_paranoid <= -1 || CAP_IPC_LOCK
 *   on success user->locked += P - extra, pinned += extra; else EPERM.
 */
#ifndef BT_CAPTURE_BUDGET_H
#define BT_CAPTURE_BUDGET_H

#include <stdbool.h>
#include <stdint.h>

#include <btrace/btrace.h>

#define BT_UNLIMITED UINT64_MAX

struct bt_budget_env {
	uint64_t page_size;
	uint64_t mlock_kb;         /* kernel.perf_event_mlock_kb */
	int online_cpus;
	uint64_t rlimit_memlock;   /* bytes, BT_UNLIMITED for infinity */
	int paranoid;
	bool cap_ipc_lock;
	uint64_t user_locked;      /* pages already charged to the user */
	uint64_t pinned;           /* pages already pinned by this process */
};

struct bt_budget_state {
	uint64_t user_locked;      /* pages */
	uint64_t pinned;           /* pages */
};

/* The environment of the calling process (sysctls, rlimit, VmPin, caps). */
void bt_budget_env_current(struct bt_budget_env *env);

/* True when the limit does not apply (paranoid -1 or CAP_IPC_LOCK). */
bool bt_budget_bypass(const struct bt_budget_env *env);

/* Per-user allowance in pages. */
uint64_t bt_budget_user_limit(const struct bt_budget_env *env);

/* RLIMIT_MEMLOCK in pages (BT_UNLIMITED if infinite). */
uint64_t bt_budget_rlimit_pages(const struct bt_budget_env *env);

void bt_budget_state_init(const struct bt_budget_env *env,
			  struct bt_budget_state *st);

/*
 * Model one mmap of @pages: returns 0 and updates @st when the kernel would
 * allow it, -EPERM (and @st unchanged) when it would refuse it.
 */
int bt_budget_charge(const struct bt_budget_env *env,
		     struct bt_budget_state *st, uint64_t pages);

/* Pages that can still be mapped from @st (BT_UNLIMITED with a bypass). */
uint64_t bt_budget_available(const struct bt_budget_env *env,
			     const struct bt_budget_state *st);

/* --- AUX ring sizing --- */


struct bt_ring_choice {
	uint64_t history;          /* bytes of history asked for */
	uint64_t pad;              /* bytes added for the post-fault tail */
	uint64_t ring;             /* bytes of the AUX ring (2^n pages) */
	uint64_t slack;            /* ring - history - pad (may be 0) */
	bool pad_in_slack;         /* roundup(history) already held the pad */
	bool shrunk;               /* history had to be reduced */
	bool pad_in_ring;          /* ... by the pad only: the ring the history
				    * rounds up to was kept, pad taken from it */
};

/*
 * Size one AUX ring: history + pad rounded up to a power of two pages, at
 * most @max_ring bytes (0: no maximum).  Returns -EINVAL when even
 * @max_ring cannot hold the pad.
 */
int bt_ring_choose(uint64_t history, uint64_t pad, uint64_t page,
		   uint64_t max_ring, struct bt_ring_choice *out);

/* --- planning --- */

struct bt_plan_req {
	int nthreads;              /* threads to trace now */
	int ncpus;                 /* CPUs for the catch-all rings */
	uint64_t history;          /* per buffer, bytes */
	uint64_t pad;
	uint64_t data_pages;       /* data ring pages (2^n) of a trace event */
	uint64_t sideband_pages;   /* data ring pages (2^n) of each per-CPU
				    * sideband ring; 0 for none */
	uint64_t max_ring;         /* PMU limit on one AUX ring, 0: none */
	bool has_aux;              /* false for the software test events */
	bool allow_shrink;         /* shrink rings instead of refusing */
	int max_tasks;             /* cap on per-task buffers, 0: none */
	bool new_threads;          /* threads may appear later (launch, attach):
				    * reserve the catch-all rings for them */
};

struct bt_plan {
	struct bt_ring_choice ring;
	int per_task;              /* threads with their own buffers */
	int catch_all;             /* threads left for the per-CPU rings */
	bool catch_all_rings;      /* per-CPU rings are reserved */
	bool unreserved;           /* new_threads, but the catch-all rings did
				    * not fit beside the buffers: later threads
				    * are traced only while the budget lasts */
	uint64_t task_cost;        /* pages per per-task buffer */
	uint64_t cpu_cost;         /* pages of all per-CPU catch-all rings */
	uint64_t sideband_cost;    /* pages of the sideband rings */
	uint64_t total;            /* pages charged by the plan */
	uint64_t available;        /* pages the budget allowed */
	bool bypass;
	char summary[512];         /* what was chosen, for the user */
};

/*
 * Plan a recording.  Returns 0 with @plan filled, or -EPERM with @err
 * holding the arithmetic (what is needed, what the per-user allowance and
 * RLIMIT_MEMLOCK give) and the fixes (--size, ulimit -l, the sysctl).
 */
int bt_budget_plan(const struct bt_budget_env *env,
		   const struct bt_plan_req *req, struct bt_plan *plan,
		   struct btrace_error *err);

/* Explain an EPERM from an mmap of @pages with the current numbers. */
int bt_budget_explain_eperm(const struct bt_budget_env *env, uint64_t pages,
			    const char *what, struct btrace_error *err);

#endif /* BT_CAPTURE_BUDGET_H */
