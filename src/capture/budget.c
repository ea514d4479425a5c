/* SPDX-License-Identifier: MIT */
/* Locked-memory model and buffer planning. */
#include "budget.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "capture-internal.h"
#include "pmu.h"
#include "util.h"

void bt_budget_env_current(struct bt_budget_env *env)
{
	struct bt_sysinfo si;
	struct rlimit rl;

	memset(env, 0, sizeof(*env));
	bt_sysinfo_read(NULL, &si);
	env->page_size = (uint64_t)si.page_size;
	env->mlock_kb = si.mlock_kb;
	env->online_cpus = si.online_cpus;
	env->paranoid = si.paranoid;
	env->rlimit_memlock = BT_UNLIMITED;
	if (getrlimit(RLIMIT_MEMLOCK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		env->rlimit_memlock = rl.rlim_cur;
	env->cap_ipc_lock = bt_has_cap(BT_CAP_IPC_LOCK);
	env->pinned = bt_proc_status_kb(0, "VmPin") * 1024 / env->page_size;
	env->user_locked = 0;   /* not visible from user space */
}

bool bt_budget_bypass(const struct bt_budget_env *env)
{
	/* perf_mmap(): locked > lock_limit && perf_is_paranoid() &&
	 * !capable(CAP_IPC_LOCK) -> EPERM; perf_is_paranoid() is
	 * sysctl_perf_event_paranoid > -1 (include/linux/perf_event.h) */
	return env->paranoid <= -1 || env->cap_ipc_lock;
}

uint64_t bt_budget_user_limit(const struct bt_budget_env *env)
{
	/* sysctl_perf_event_mlock >> (PAGE_SHIFT - 10), times online CPUs */
	return env->mlock_kb / (env->page_size / 1024) *
	       (uint64_t)(env->online_cpus > 0 ? env->online_cpus : 1);
}

uint64_t bt_budget_rlimit_pages(const struct bt_budget_env *env)
{
	if (env->rlimit_memlock == BT_UNLIMITED)
		return BT_UNLIMITED;
	return env->rlimit_memlock / env->page_size;
}

void bt_budget_state_init(const struct bt_budget_env *env,
			  struct bt_budget_state *st)
{
	st->user_locked = env->user_locked;
	st->pinned = env->pinned;
}

int bt_budget_charge(const struct bt_budget_env *env,
		     struct bt_budget_state *st, uint64_t pages)
{
	uint64_t limit = bt_budget_user_limit(env);
	uint64_t rl = bt_budget_rlimit_pages(env);
	uint64_t locked = st->user_locked, extra = 0;

	if (locked > limit)
		locked = limit;
	locked += pages;
	if (locked > limit)
		extra = locked - limit;
	if (!(rl == BT_UNLIMITED || st->pinned + extra <= rl) &&
	    !bt_budget_bypass(env))
		return -EPERM;
	st->user_locked += pages - extra;
	st->pinned += extra;
	return 0;
}

uint64_t bt_budget_available(const struct bt_budget_env *env,
			     const struct bt_budget_state *st)
{
	uint64_t limit = bt_budget_user_limit(env);
	uint64_t rl = bt_budget_rlimit_pages(env);
	uint64_t user_left = st->user_locked < limit ? limit - st->user_locked : 0;

	if (bt_budget_bypass(env) || rl == BT_UNLIMITED)
		return BT_UNLIMITED;
	return user_left + (st->pinned < rl ? rl - st->pinned : 0);
}

int bt_ring_choose(uint64_t history, uint64_t pad, uint64_t page,
		   uint64_t max_ring, struct bt_ring_choice *out)
{
	uint64_t need = history + pad, pages, lo;

	memset(out, 0, sizeof(*out));
	out->history = history;
	out->pad = pad;
	if (page == 0 || need < history)
		return -EINVAL;
	pages = bt_pow2_roundup((need + page - 1) / page);
	if (pages == 0)
		return -EINVAL;
	out->ring = pages * page;
	lo = bt_pow2_roundup((history + page - 1) / page) * page;
	out->pad_in_slack = lo == out->ring;
	if (max_ring && out->ring > max_ring) {
		if (max_ring <= pad)
			return -EINVAL;
		out->ring = max_ring;
		out->history = max_ring - pad;
		out->shrunk = true;
		out->pad_in_slack = false;
	}
	out->slack = out->ring - out->history - out->pad;
	return 0;
}

/* Pages charged by the per-task buffer of one thread. */
static uint64_t task_cost(const struct bt_plan_req *req, uint64_t ring_pages)
{
	return 1 + req->data_pages + (req->has_aux ? ring_pages : 0);
}

static void size_str(char *buf, size_t len, uint64_t pages, uint64_t page)
{
	bt_fmt_size(buf, len, pages * page);
}

int bt_budget_plan(const struct bt_budget_env *env,
		   const struct bt_plan_req *req, struct bt_plan *plan,
		   struct btrace_error *err)
{
	uint64_t page = env->page_size, avail, ring_pages, need;
	struct bt_budget_state st;
	int ncpus = req->ncpus > 0 ? req->ncpus : 1;
	int r, nthreads = req->nthreads > 0 ? req->nthreads : 1;
	char a[32], b[32], c[32], d[32], e[32];

	memset(plan, 0, sizeof(*plan));
	if ((req->data_pages & (req->data_pages - 1)) ||
	    (req->sideband_pages & (req->sideband_pages - 1)))
		return bt_error(err, -EINVAL,
				"buffer plan: data ring of %" PRIu64 " pages failed: not a power of two",
				req->data_pages);
	r = bt_ring_choose(req->history, req->pad, page, req->max_ring,
			   &plan->ring);
	if (r < 0)
		return bt_error(err, r,
				"buffer plan: AUX ring for %" PRIu64 " bytes of history + %" PRIu64 " pad failed: larger than the PMU allows",
				req->history, req->pad);
	bt_budget_state_init(env, &st);
	plan->bypass = bt_budget_bypass(env);
	plan->available = avail = bt_budget_available(env, &st);
	plan->sideband_cost = req->sideband_pages ?
		(uint64_t)ncpus * (1 + req->sideband_pages) : 0;

	for (;;) {
		uint64_t left;
		int k;

		ring_pages = plan->ring.ring / page;
		plan->task_cost = task_cost(req, ring_pages);
		plan->cpu_cost = (uint64_t)ncpus * plan->task_cost;
		need = plan->sideband_cost + (uint64_t)nthreads * plan->task_cost;
		if (req->max_tasks && nthreads > req->max_tasks)
			need = BT_UNLIMITED;
		if (avail == BT_UNLIMITED || need <= avail) {
			plan->per_task = nthreads;
			plan->total = plan->sideband_cost +
				      (uint64_t)nthreads * plan->task_cost;
			break;
		}
		/* Some threads on the catch-all per-CPU rings. */
		if (nthreads > 1 &&
		    avail >= plan->sideband_cost + plan->cpu_cost) {
			left = avail - plan->sideband_cost - plan->cpu_cost;
			k = (int)(left / plan->task_cost);
			if (k >= nthreads)
				k = nthreads - 1;
			if (req->max_tasks && k > req->max_tasks)
				k = req->max_tasks;
			plan->per_task = k;
			plan->catch_all = nthreads - k;
			plan->catch_all_rings = true;
			plan->total = plan->sideband_cost + plan->cpu_cost +
				      (uint64_t)k * plan->task_cost;
			break;
		}
		/* Prefer the ring the history alone rounds up to, with the pad
		 * taken from its slack (history shrinks by at most the pad). */
		if (!plan->ring.shrunk && req->has_aux && !plan->ring.pad_in_slack &&
		    plan->ring.ring / 2 > req->pad &&
		    plan->ring.ring / 2 >= page) {
			plan->ring.ring /= 2;
			plan->ring.history = plan->ring.ring - req->pad;
			plan->ring.slack = 0;
			plan->ring.shrunk = true;
			plan->ring.pad_in_ring = true;
			continue;
		}
		if (!req->allow_shrink || !req->has_aux ||
		    plan->ring.ring / 2 <= req->pad ||
		    plan->ring.ring / 2 < page) {
			if (plan->ring.pad_in_ring) {
				/* report the full request, not the fallback */
				bt_ring_choose(req->history, req->pad, page,
					       req->max_ring, &plan->ring);
				plan->task_cost = task_cost(req, plan->ring.ring / page);
				need = plan->sideband_cost +
				       (uint64_t)nthreads * plan->task_cost;
			}
			size_str(a, sizeof(a), need == BT_UNLIMITED ?
				 plan->sideband_cost + plan->task_cost :
				 need, page);
			size_str(b, sizeof(b), bt_budget_user_limit(env), page);
			size_str(c, sizeof(c), avail, page);
			if (env->rlimit_memlock == BT_UNLIMITED)
				snprintf(d, sizeof(d), "unlimited");
			else
				bt_fmt_size(d, sizeof(d), env->rlimit_memlock);
			bt_error(err, -EPERM,
				 "buffer plan: locking %s failed: only %s can be locked (per-user perf allowance %s = perf_event_mlock_kb %" PRIu64 " KiB x %d CPUs, plus RLIMIT_MEMLOCK %s, already pinned %" PRIu64 " KiB); %d thread(s) x %" PRIu64 " pages (%s AUX ring + %" PRIu64 " data pages)%s",
				 a, c, b, env->mlock_kb, env->online_cpus, d,
				 env->pinned * page / 1024, nthreads,
				 plan->task_cost, bt_fmt_size(e, sizeof(e), plan->ring.ring),
				 1 + req->data_pages,
				 plan->sideband_cost ? " + sideband rings" : "");
			return bt_hint(err,
				       "ask for less history (--size), raise the limit (ulimit -l, or LimitMEMLOCK= for a service), raise sysctl kernel.perf_event_mlock_kb, or run with CAP_IPC_LOCK");
		}
		/* Halve the ring; the history is what the pad leaves. */
		plan->ring.ring /= 2;
		plan->ring.history = plan->ring.ring - req->pad;
		plan->ring.slack = 0;
		plan->ring.pad_in_slack = false;
		plan->ring.pad_in_ring = false;
		plan->ring.shrunk = true;
	}

	/* Threads created later go to the catch-all rings once the per-task
	 * budget is spent: reserve them now, beside the buffers at the size
	 * chosen (they never shrink the history of the threads at hand). */
	if (req->new_threads && !plan->catch_all_rings && avail != BT_UNLIMITED) {
		if (plan->total + plan->cpu_cost <= avail) {
			plan->catch_all_rings = true;
			plan->total += plan->cpu_cost;
		} else {
			plan->unreserved = true;
		}
	}

	{
		char h[32], p[32], rs[32], t[32];

		bt_fmt_size(h, sizeof(h), plan->ring.history);
		bt_fmt_size(p, sizeof(p), plan->ring.pad);
		bt_fmt_size(rs, sizeof(rs), plan->ring.ring);
		size_str(t, sizeof(t), plan->total, page);
		if (req->has_aux)
			snprintf(plan->summary, sizeof(plan->summary),
				 "AUX ring %s per buffer = history %s + pad %s%s%s; %d per-task buffer(s)%s; %s locked%s",
				 rs, h, p,
				 plan->ring.pad_in_slack ? " (pad fits in the rounding slack)" : "",
				 plan->ring.pad_in_ring ? " (history reduced by the pad so that the ring need not double)" :
				 plan->ring.shrunk ? " (history reduced to fit the budget)" : "",
				 plan->per_task,
				 plan->catch_all ? ", threads beyond that on per-CPU rings" :
				 plan->catch_all_rings ? ", per-CPU rings reserved for later threads" :
				 plan->unreserved ? ", no room to reserve per-CPU rings for later threads" : "",
				 t, plan->bypass ? " (limit bypassed)" : "");
		else
			snprintf(plan->summary, sizeof(plan->summary),
				 "%d per-task buffer(s) of %" PRIu64 " data pages%s; %s locked",
				 plan->per_task, req->data_pages + 1,
				 plan->catch_all ? ", threads beyond that on per-CPU rings" :
				 plan->catch_all_rings ? ", per-CPU rings reserved for later threads" :
				 plan->unreserved ? ", no room to reserve per-CPU rings for later threads" : "",
				 t);
	}
	return 0;
}

int bt_budget_explain_eperm(const struct bt_budget_env *env, uint64_t pages,
			    const char *what, struct btrace_error *err)
{
	char a[32], b[32], d[32];

	bt_fmt_size(a, sizeof(a), pages * env->page_size);
	bt_fmt_size(b, sizeof(b), bt_budget_user_limit(env) * env->page_size);
	if (env->rlimit_memlock == BT_UNLIMITED)
		snprintf(d, sizeof(d), "unlimited");
	else
		bt_fmt_size(d, sizeof(d), env->rlimit_memlock);
	bt_error(err, -EPERM,
		 "%s: mmap of %s failed: locked-memory budget exhausted (per-user perf allowance %s = perf_event_mlock_kb %" PRIu64 " KiB x %d CPUs, shared by every perf user of this uid; beyond it RLIMIT_MEMLOCK %s)",
		 what, a, b, env->mlock_kb, env->online_cpus, d);
	return bt_hint(err,
		       "use a smaller --size, raise ulimit -l, raise sysctl kernel.perf_event_mlock_kb, or run with CAP_IPC_LOCK; other perf or io_uring users of the same uid share the allowance");
}
