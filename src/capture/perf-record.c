/* SPDX-License-Identifier: MIT */
/* bt_perf_probe() and bt_perf_record(): Intel PT and BTS backends. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "budget.h"
#include "capture-internal.h"
#include "perf-backend.h"
#include "engine.h"
#include "perf.h"
#include "pmu.h"
#include "util.h"

/* The sysfs root to read, NULL for /sys ($BTRACE_SYSFS_ROOT is the
 * command line's: it passes it as the root). */
static const char *sysfs_root_of(const char *root)
{
	return root && *root ? root : NULL;
}

static bool real_sysfs(const char *root)
{
	return !root || !strcmp(root, "/sys");
}

int bt_pmu_explain_absent(const char *name, const struct bt_cpu *cpu,
			  const struct bt_sysinfo *si, bool bts,
			  struct btrace_error *err)
{
	const char *hint = "use --backend qemu (software trace, same PT stream)";

	if (cpu->vendor == BT_VENDOR_AMD) {
		bt_error(err, -BTRACE_ERR_NOPMU,
			 "%s: PMU lookup failed: this is an AMD CPU (%s%s%s), which has no Intel %s",
			 name, cpu->vendor_str, cpu->brand[0] ? ", " : "", cpu->brand,
			 bts ? "BTS" : "Processor Trace");
	} else if (cpu->vendor != BT_VENDOR_INTEL) {
		bt_error(err, -BTRACE_ERR_NOPMU,
			 "%s: PMU lookup failed: the CPU vendor is %s, not Intel",
			 name, cpu->vendor_str);
	} else if (bts && si->kpti_known && si->kpti) {
		bt_error(err, -BTRACE_ERR_NOPMU,
			 "%s: PMU lookup failed: the kernel does not register intel_bts while KPTI (page table isolation) is on",
			 name);
		hint = "use --backend pt if available, or --backend qemu; BTS needs a kernel booted without PTI (only safe on CPUs not affected by Meltdown)";
	} else if (!bts && !cpu->has_pt) {
		bt_error(err, -BTRACE_ERR_NOPMU,
			 "%s: PMU lookup failed: CPUID reports no Intel PT on this CPU (family %u model 0x%x%s; PT came with Broadwell)",
			 name, cpu->family, cpu->model,
			 cpu->hypervisor ? ", under a hypervisor that may hide it" : "");
	} else if (cpu->hypervisor) {
		bt_error(err, -BTRACE_ERR_NOPMU,
			 "%s: PMU lookup failed: running in a virtual machine whose hypervisor does not expose %s",
			 name, bts ? "BTS (debug store)" : "Intel PT");
		hint = "enable PT pass-through in the hypervisor, or use --backend qemu";
	} else {
		bt_error(err, -BTRACE_ERR_NOPMU,
			 "%s: PMU lookup failed: the kernel has not registered it (built without CONFIG_PERF_EVENTS_INTEL_%s, or disabled by firmware)",
			 name, bts ? "BTS" : "PT");
	}
	return bt_hint(err, "%s", hint);
}

/* Fill @pmu, @cpu and @cfg for @backend; 0 when usable. */
static int probe_full(uint32_t backend, const char *root, struct bt_pmu *pmu,
		      struct bt_cpu *cpu, struct btrace_config *cfg,
		      struct bt_pt_config *ptc, struct btrace_error *err)
{
	bool bts = backend == BTRACE_BACKEND_BTS;
	const char *name = bts ? "intel_bts" : "intel_pt";
	struct bt_sysinfo si;
	int r;

	if (backend != BTRACE_BACKEND_PT && backend != BTRACE_BACKEND_BTS)
		return bt_error(err, -EINVAL, "probe: backend %u is not a hardware backend",
				backend);
	root = sysfs_root_of(root);
	bt_cpu_identify(cpu);
	bt_sysinfo_read(root, &si);
	r = bt_pmu_read(root, name, pmu, err);
	if (r == -ENOENT && bts && real_sysfs(root)) {
		/* No intel_bts (bts_init(): -ENODEV under PTI): gdb's way,
		 * the branch-instructions event, at paranoid 2. */
		struct btrace_error why = { 0 };

		if (bt_perf_bts_sample_probe(cpu->vendor == BT_VENDOR_INTEL &&
					     cpu->has_ds, &why) == 0) {
			memset(pmu, 0, sizeof(*pmu));
			snprintf(pmu->name, sizeof(pmu->name), "bts-sampling");
			pmu->type = PERF_TYPE_HARDWARE;
			pmu->present = true;
			pmu->legacy_bts = true;
			pmu->nr_addr_filters = -1;
			r = 0;
			name = pmu->name;
		} else {
			char msg[sizeof(err->msg)], hint[sizeof(err->hint)];

			bt_pmu_explain_absent(name, cpu, &si, bts, err);
			snprintf(msg, sizeof(msg), "%s", err->msg);
			snprintf(hint, sizeof(hint), "%s", err->hint);
			bt_error(err, err->code,
				 "%s; the legacy BTS event is not usable either: %s",
				 msg, why.msg);
			return bt_hint(err, "%s", hint);
		}
	}
	if (r == -ENOENT)
		return bt_pmu_explain_absent(name, cpu, &si, bts, err);
	if (r < 0)
		return r;
	if (si.paranoid > 2 && !bt_has_cap(BT_CAP_SYS_ADMIN)) {
		bt_error(err, -EACCES,
			 "%s: permission check failed: kernel.perf_event_paranoid is %d, which allows perf only to CAP_SYS_ADMIN",
			 name, si.paranoid);
		return bt_hint(err, "run as root, or sysctl -w kernel.perf_event_paranoid=2");
	}
	if (bts && !pmu->legacy_bts && si.paranoid > 1 &&
	    !bt_has_cap(BT_CAP_PERFMON) &&
	    !bt_has_cap(BT_CAP_SYS_ADMIN)) {
		bt_error(err, -EACCES,
			 "intel_bts: permission check failed: BTS records kernel branches too, so it needs kernel.perf_event_paranoid <= 1 (it is %d) or CAP_PERFMON",
			 si.paranoid);
		return bt_hint(err, "sysctl -w kernel.perf_event_paranoid=1, or give btrace CAP_PERFMON");
	}
	memset(cfg, 0, sizeof(*cfg));
	memset(ptc, 0, sizeof(*ptc));
	cfg->backend = backend;
	cfg->trace_kind = bts ? BTRACE_TRACE_BTS : BTRACE_TRACE_PT;
	cfg->cpu_vendor = cpu->vendor == BT_VENDOR_INTEL ? BTRACE_CPU_INTEL :
			  cpu->vendor == BT_VENDOR_AMD ? BTRACE_CPU_AMD : BTRACE_CPU_OTHER;
	cfg->cpu_family = cpu->family;
	cfg->cpu_model = cpu->model;
	cfg->cpu_stepping = cpu->stepping;
	cfg->cpuid_0x15_eax = pmu->has_art ? pmu->tsc_art_den : cpu->leaf15[0];
	cfg->cpuid_0x15_ebx = pmu->has_art ? pmu->tsc_art_num : cpu->leaf15[1];
	cfg->nom_freq = pmu->max_nonturbo_ratio;
	cfg->pmu_type = (uint32_t)pmu->type;
	cfg->user_only = 1;
	if (!bts) {
		r = bt_pt_default_config(pmu, cpu, ptc, err);
		if (r == 0)
			r = bt_pt_validate(pmu, cpu, ptc->config, err);
		if (r < 0)
			return r;
		cfg->pt_config = ptc->config;
		cfg->mtc_freq = ptc->mtc_period;
		cfg->psb_period = ptc->psb_period;
		cfg->tsc_bit = bt_pmu_field_mask(pmu, "tsc");
		cfg->mtc_bit = bt_pmu_field_mask(pmu, "mtc");
		cfg->cyc_bit = bt_pmu_field_mask(pmu, "cyc");
		cfg->noretcomp_bit = bt_pmu_field_mask(pmu, "noretcomp");
		cfg->branch_bit = bt_pmu_field_mask(pmu, "branch");
	}
	/* On the real system, try the event itself (EBUSY, EACCES, ...);
	 * the legacy BTS event was just tried. */
	if (real_sysfs(root) && !pmu->legacy_bts) {
		struct perf_event_attr a;
		struct bt_perf_ctx cx = { .pmu = name, .tid = getpid(), .cpu = -1,
					  .aux_pmu = true };
		int fd;

		memset(&a, 0, sizeof(a));
		a.type = (uint32_t)pmu->type;
		a.config = cfg->pt_config;
		a.exclude_kernel = 1;
		a.exclude_hv = 1;
		a.disabled = 1;
		fd = bt_perf_sys_open(&a, 0, -1, -1, 0);
		if (fd < 0)
			return bt_perf_explain(-fd, BT_OP_OPEN, &cx, err);
		close(fd);
	}
	return 0;
}

int bt_perf_probe(uint32_t backend, const char *sysfs_root,
		  struct btrace_error *err)
{
	struct btrace_config cfg;
	struct bt_pt_config ptc;
	struct bt_pmu pmu;
	struct bt_cpu cpu;

	return probe_full(backend, sysfs_root, &pmu, &cpu, &cfg, &ptc, err);
}

/* Engine options for a hardware backend; @pmu must outlive @eo. */
static int hw_opts(uint32_t backend, const struct btrace_record_opts *opts,
		   struct bt_engine_opts *eo, struct bt_pmu *pmu,
		   struct btrace_error *err)
{
	struct bt_pt_config ptc;
	struct bt_cpu cpu;
	uint32_t v;
	uint64_t pad;
	int r;

	memset(eo, 0, sizeof(*eo));
	r = probe_full(backend, opts->sysfs_root, pmu, &cpu, &eo->cfg, &ptc, err);
	if (r < 0)
		return r;
	eo->rec = opts;
	eo->pmu_name = pmu->name;
	eo->has_aux = true;
	if (pmu->legacy_bts) {
		/* samples in an overwrite data ring as big as the history;
		 * the planner cannot shrink a data ring, so without --size
		 * take the biggest (4 MiB down to 64 KiB, gdb's default)
		 * that one thread and the sideband fit in the budget */
		uint64_t hist = opts->size ? opts->size : 4u << 20;
		long ps = sysconf(_SC_PAGESIZE);

		bt_perf_bts_sample_attr(&eo->trace_attr);
		eo->has_aux = false;
		eo->bts_samples = true;
		eo->data_pages = 1;
		while (eo->data_pages * (uint64_t)ps < hist)
			eo->data_pages *= 2;
		if (!opts->size) {
			struct bt_budget_env env;
			struct bt_budget_state st;
			uint64_t avail, sb;

			bt_budget_env_current(&env);
			bt_budget_state_init(&env, &st);
			avail = bt_budget_available(&env, &st);
			sb = (uint64_t)(env.online_cpus > 0 ? env.online_cpus : 1) * 9;
			while (avail != BT_UNLIMITED &&
			       eo->data_pages * (uint64_t)ps > (64u << 10) &&
			       1 + eo->data_pages + sb > avail)
				eo->data_pages /= 2;
		}
		eo->sideband_pages = 8;
		eo->use_registry = true;
		eo->pad = 0;
		eo->history = eo->data_pages * (uint64_t)ps;
		eo->allow_shrink = false;
		return 0;
	}
	eo->trace_attr.type = (uint32_t)pmu->type;
	eo->trace_attr.config = eo->cfg.pt_config;
	eo->trace_attr.exclude_kernel = 1;
	eo->trace_attr.exclude_hv = 1;
	eo->trace_attr.sample_period = 1;
	eo->trace_attr.sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	eo->trace_attr.sample_id_all = 1;
	eo->data_pages = 8;
	eo->sideband_pages = 8;
	eo->use_registry = true;
	/* BTS (and PT without multi-entry ToPA) need one contiguous block */
	if (backend == BTRACE_BACKEND_BTS ||
	    !bt_pmu_cap(pmu, "topa_multiple_entries", &v) || !v)
		eo->max_ring = 4u << 20;
	pad = opts->pad ? opts->pad : bt_calibration_load(backend);
	if (!pad)
		pad = backend == BTRACE_BACKEND_BTS ? BT_PAD_BTS : BT_PAD_PT;
	eo->pad = pad;
	eo->history = opts->size ? opts->size : (4u << 20) - pad;
	eo->allow_shrink = !opts->size;
	return 0;
}

int bt_perf_engine_opts(uint32_t backend, const struct btrace_record_opts *opts,
			struct bt_engine_opts *eo, struct btrace_error *err)
{
	/* eo->pmu_name points into it: valid until the next call */
	static struct bt_pmu pmu;

	return hw_opts(backend, opts, eo, &pmu, err);
}

int bt_perf_record(const struct btrace_record_opts *opts,
		   struct btrace_record_result *res, struct btrace_error *err)
{
	struct bt_engine_opts eo;
	struct bt_pmu pmu;
	int r = hw_opts(opts->backend, opts, &eo, &pmu, err);

	if (r < 0)
		return r;
	return bt_engine_run(&eo, res, err);
}

int bt_capture_join(const struct btrace_record_opts *opts,
		    const uint32_t *order, size_t norder,
		    struct btrace_record_result *res, struct btrace_error *err)
{
	struct btrace_error why = { 0 };
	struct bt_engine_opts eo;
	struct bt_pmu pmu;
	bool hw = false;

	if (!opts->pid)
		return 1;
	for (size_t i = 0; i < norder && !hw; i++) {
		bt_error_clear(&why);
		hw = hw_opts(order[i], opts, &eo, &pmu, &why) == 0;
	}
	if (!hw) {
		memset(&eo, 0, sizeof(eo));
		eo.rec = opts;
		eo.cfg.backend = opts->backend;
	}
	return bt_engine_join(&eo, hw, why.msg, res, err);
}

uint64_t bt_calibration_load(uint32_t backend)
{
	char path[512], *buf;
	const char *home = getenv("XDG_CACHE_HOME");
	unsigned long long v = 0;

	if (home && *home)
		snprintf(path, sizeof(path), "%s/btrace/pad-%s", home,
			 backend == BTRACE_BACKEND_BTS ? "bts" : "pt");
	else if ((home = getenv("HOME")) && *home)
		snprintf(path, sizeof(path), "%s/.cache/btrace/pad-%s", home,
			 backend == BTRACE_BACKEND_BTS ? "bts" : "pt");
	else
		return 0;
	if (bt_read_file(path, &buf, NULL, 4096) < 0)
		return 0;
	v = strtoull(buf, NULL, 10);
	free(buf);
	return v;
}
