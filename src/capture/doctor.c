/* SPDX-License-Identifier: MIT */
/* btrace_doctor(), btrace_snapshot_request(). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <btrace/capture.h>
#include <btrace/snapshot.h>

#include "budget.h"
#include "capture-internal.h"
#include "capture.h"
#include "pmu.h"
#include "registry.h"
#include "util.h"

static void fill_pmu(const char *root, uint32_t backend,
		     struct btrace_doctor_pmu *p)
{
	const char *name = backend == BTRACE_BACKEND_BTS ? "intel_bts" : "intel_pt";
	struct btrace_error err = { 0 };
	struct bt_pmu pmu;
	struct bt_pt_config ptc;
	struct bt_cpu cpu;
	int r;

	memset(p, 0, sizeof(*p));
	snprintf(p->name, sizeof(p->name), "%s", name);
	p->type = -1;
	if (bt_pmu_read(root, name, &pmu, &err) == 0) {
		p->present = 1;
		p->type = pmu.type;
		for (unsigned i = 0; i < pmu.ncaps && i < BTRACE_DOCTOR_MAX_CAPS; i++) {
			snprintf(p->caps[i].name, sizeof(p->caps[i].name), "%s",
				 pmu.caps[i].name);
			p->caps[i].value = pmu.caps[i].value;
			p->ncaps++;
		}
		bt_cpu_identify(&cpu);
		if (backend == BTRACE_BACKEND_PT &&
		    bt_pt_default_config(&pmu, &cpu, &ptc, NULL) == 0)
			p->default_config = ptc.config;
	}
	bt_error_clear(&err);
	r = bt_perf_probe(backend, root, &err);
	p->usable = r == 0;
	if (r < 0) {
		snprintf(p->why, sizeof(p->why), "%s", err.msg);
		snprintf(p->hint, sizeof(p->hint), "%s", err.hint);
	}
}

int btrace_doctor(const char *sysfs_root, struct btrace_doctor_report *rep,
		  struct btrace_error *err)
{
	struct bt_budget_env env;
	struct bt_budget_state st;
	struct bt_sysinfo si;
	struct bt_cpu cpu;
	size_t sz;
	uint64_t avail;

	if (!rep || rep->sz < sizeof(size_t))
		return bt_error(err, -EINVAL, "doctor: report failed: invalid report structure");
	sz = rep->sz < sizeof(*rep) ? rep->sz : sizeof(*rep);
	{
		struct btrace_doctor_report r;

		memset(&r, 0, sizeof(r));
		r.sz = sz;
		if (!sysfs_root || !*sysfs_root)
			sysfs_root = getenv("BTRACE_SYSFS_ROOT");
		bt_cpu_identify(&cpu);
		snprintf(r.cpu_vendor, sizeof(r.cpu_vendor), "%s", cpu.vendor_str);
		snprintf(r.cpu_brand, sizeof(r.cpu_brand), "%s", cpu.brand);
		r.cpu_family = cpu.family;
		r.cpu_model = cpu.model;
		r.cpu_stepping = cpu.stepping;
		r.hypervisor = cpu.hypervisor;
		r.cpuid_pt = cpu.has_pt;
		bt_sysinfo_read(sysfs_root, &si);
		snprintf(r.kernel, sizeof(r.kernel), "%s", si.kernel);
		fill_pmu(sysfs_root, BTRACE_BACKEND_PT, &r.pt);
		fill_pmu(sysfs_root, BTRACE_BACKEND_BTS, &r.bts);
		r.paranoid = si.paranoid;
		r.uid = (int)getuid();
		r.cap_perfmon = bt_has_cap(BT_CAP_PERFMON);
		r.cap_sys_admin = bt_has_cap(BT_CAP_SYS_ADMIN);
		r.cap_ipc_lock = bt_has_cap(BT_CAP_IPC_LOCK);
		r.cap_sys_ptrace = bt_has_cap(BT_CAP_SYS_PTRACE);
		bt_budget_env_current(&env);
		env.online_cpus = si.online_cpus;
		r.mlock_kb = env.mlock_kb;
		r.online_cpus = env.online_cpus;
		r.user_allowance = bt_budget_user_limit(&env) * env.page_size;
		r.rlimit_memlock = env.rlimit_memlock;
		r.pinned = env.pinned * env.page_size;
		r.budget_bypass = bt_budget_bypass(&env);
		bt_budget_state_init(&env, &st);
		avail = bt_budget_available(&env, &st);
		if (avail == BT_UNLIMITED) {
			r.max_single_ring = 0;  /* only the PMU limits it */
		} else {
			/* one thread: 1+8 data pages, 8 sideband pages per CPU */
			uint64_t fixed = 9 + (uint64_t)env.online_cpus * 9;
			uint64_t left = avail > fixed ? avail - fixed : 0, ring = 1;

			while (ring * 2 <= left)
				ring *= 2;
			r.max_single_ring = left ? ring * env.page_size : 0;
		}
		if (r.bts.usable)
			snprintf(r.bts_path, sizeof(r.bts_path), "%s",
				 r.bts.present ? "intel_bts" : "branch-instructions");
		r.kpti = si.kpti_known ? si.kpti : -1;
		r.ptrace_scope = si.ptrace_scope;
		if (r.pt.usable) {
			r.auto_backend = BTRACE_BACKEND_PT;
			snprintf(r.auto_why, sizeof(r.auto_why), "Intel PT is usable");
		} else if (r.bts.usable) {
			r.auto_backend = BTRACE_BACKEND_BTS;
			snprintf(r.auto_why, sizeof(r.auto_why),
				 "Intel PT is not usable (%s); BTS is", r.pt.why);
		} else {
			r.auto_backend = BTRACE_BACKEND_QEMU;
			snprintf(r.auto_why, sizeof(r.auto_why),
				 "neither Intel PT nor BTS is usable here: the QEMU software trace is used");
		}
		memcpy(rep, &r, sz);
	}
	return 0;
}

int btrace_snapshot_request(int pid, const char *path, struct btrace_error *err)
{
	char note[256];
	int fd, r;

	if (pid <= 0 || !path || !*path)
		return bt_error(err, -EINVAL, "snapshot: request failed: invalid pid or path");
	r = bt_registry_request_snapshot(pid, &fd, note, sizeof(note), err);
	if (r < 0)
		return r;
	r = bt_registry_save(fd, path, err);
	close(fd);
	return r;
}
