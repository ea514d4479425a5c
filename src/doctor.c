/* SPDX-License-Identifier: MIT */
/*
 * btrace_doctor(), btrace_snapshot_request(), btrace_qemu_emulator(),
 * btrace_calibrate() (its default backend; the measuring is capture's).  The
 * backends and the order `auto` tries them come from the backend table
 * (src/backend.c), as for btrace_record().
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <btrace/capture.h>
#include <btrace/record.h>
#include <btrace/snapshot.h>

#include "backend.h"
#include "capture/budget.h"
#include "capture/perf-backend.h"
#include "capture/capture-internal.h"
#include "capture/pmu.h"
#include "capture/registry.h"
#include "qemu/qemu-record.h"
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
	r = bt_backend_get(backend)->probe(backend, root, &err);
	p->usable = r == 0;
	if (r < 0) {
		snprintf(p->why, sizeof(p->why), "%s", err.msg);
		snprintf(p->hint, sizeof(p->hint), "%s", err.hint);
	}
}

/* "7.2.22" from the first line of `EMU --version` ("qemu-x86_64 version
 * 7.2.22 (Debian ...)"); "" when it does not run or says otherwise. */
static void qemu_version(const char *emu, char *out, size_t len)
{
	char buf[512], *v, *end;
	int fds[2], st = 0;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	out[0] = 0;
	if (pipe2(fds, O_CLOEXEC) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(fds[1], STDOUT_FILENO);
		if (null >= 0) {
			dup2(null, STDIN_FILENO);
			dup2(null, STDERR_FILENO);
		}
		execl(emu, emu, "--version", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (pid > 0 && n < sizeof(buf) - 1 &&
	       ((r = read(fds[0], buf + n, sizeof(buf) - 1 - n)) > 0 ||
		(r < 0 && errno == EINTR)))
		n += r > 0 ? (size_t)r : 0;
	close(fds[0]);
	if (pid < 0)
		return;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	buf[n] = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 ||
	    !(v = strstr(buf, " version ")))
		return;
	v += strlen(" version ");
	end = v + strcspn(v, " \n");
	snprintf(out, len, "%.*s", (int)(end - v), v);
}

int btrace_qemu_emulator(char *path, size_t path_len, char *version,
			 size_t version_len, struct btrace_error *err)
{
	int r;

	if (version && version_len)
		version[0] = 0;
	if (!path || !path_len)
		return bt_error(err, -EINVAL, "qemu-x86_64: find emulator "
				"failed: no room for its path");
	r = bt_qemu_find_emulator(path, path_len, err);
	if (r < 0 && access(path, X_OK) != 0)
		path[0] = 0;
	if (path[0] && version && version_len)
		qemu_version(path, version, version_len);
	return r;
}

static void qemu_fail(struct btrace_doctor_qemu *q, const struct btrace_error *e)
{
	q->usable = 0;
	snprintf(q->why, sizeof(q->why), "%s", e->msg);
	snprintf(q->hint, sizeof(q->hint), "%s", e->hint);
}

/* The QEMU backend, as btrace record would use it: the emulator, its
 * version, the plugin and its preload library, then a probe run. */
static void fill_qemu(const char *sysfs_root, struct btrace_doctor_qemu *q)
{
	static const char *const probes[] = { "/bin/true", "/usr/bin/true" };
	struct btrace_record_opts ro = { .sz = sizeof(ro) };
	struct btrace_record_result res = { .sz = sizeof(res),
					     .exit_status = -1 };
	struct btrace_error err = { 0 };
	char preload[PATH_MAX], *argv[2] = { NULL, NULL };

	memset(q, 0, sizeof(*q));
	if (btrace_qemu_emulator(q->emulator, sizeof(q->emulator), q->version,
				 sizeof(q->version), &err) < 0) {
		q->version[0] = 0;
		qemu_fail(q, &err);
		return;
	}
	q->found = 1;
	if (!q->version[0]) {
		bt_error(&err, -ENOEXEC, "%s: run failed: '%s --version' did not "
			 "print a version", q->emulator, q->emulator);
		bt_hint(&err, "reinstall the qemu-user package (apt install "
			"--reinstall qemu-user) or set BTRACE_QEMU to a working "
			"qemu-x86_64");
		qemu_fail(q, &err);
		return;
	}
	if (bt_qemu_find_plugin(q->plugin, sizeof(q->plugin), &err) < 0) {
		q->plugin[0] = 0;
		qemu_fail(q, &err);
		return;
	}
	if (bt_qemu_find_preload(q->plugin, preload, sizeof(preload), &err) < 0) {
		qemu_fail(q, &err);
		return;
	}
	if (sysfs_root && *sysfs_root) {
		q->usable = -1;
		snprintf(q->why, sizeof(q->why), "not probed: a recorded sysfs "
			 "tree describes another machine");
		return;
	}
	for (size_t i = 0; i < sizeof(probes) / sizeof(probes[0]) && !argv[0]; i++)
		if (access(probes[i], X_OK) == 0)
			argv[0] = (char *)probes[i];
	if (!argv[0]) {
		q->usable = -1;
		snprintf(q->why, sizeof(q->why), "not probed: no /bin/true "
			 "to run under the plugin");
		return;
	}
	ro.argv = argv;
	ro.backend = BTRACE_BACKEND_QEMU;
	ro.flags = BTRACE_RECORD_QUIET;
	if (btrace_record(&ro, &res, &err) < 0) {
		qemu_fail(q, &err);
		return;
	}
	if (res.exit_status != 0) {
		bt_error(&err, -ENOEXEC, "%s: probe run failed: %s under %s "
			 "with the plugin exited with wait status 0x%x",
			 q->plugin, argv[0], q->emulator, (unsigned)res.exit_status);
		bt_hint(&err, "run 'btrace record --backend qemu -- /bin/true' "
			"to see QEMU's message");
		qemu_fail(q, &err);
		return;
	}
	q->usable = 1;
}

/* What the doctor found for backend @id ("usable" and "why"): its PMU,
 * or the QEMU part of the report. */
static int usable_of(const struct btrace_doctor_report *r, uint32_t id,
		     const char **why)
{
	switch (id) {
	case BTRACE_BACKEND_PT:
		*why = r->pt.why;
		return r->pt.usable;
	case BTRACE_BACKEND_BTS:
		*why = r->bts.why;
		return r->bts.usable;
	case BTRACE_BACKEND_QEMU:
		*why = r->qemu.why;
		return r->qemu.usable;
	}
	*why = "";
	return 0;
}

/* The backend `auto` would pick, and why, as btrace_record() decides it:
 * the first usable probed backend of the table, else its last resort. */
static void pick_auto(struct btrace_doctor_report *r)
{
	const struct bt_backend *b, *last = NULL;
	/* room left in auto_why for "; <brief> is" after what failed */
	char failed[sizeof(r->auto_why) - 64] = "", names[256] = "";
	size_t nfailed = 0, nprobed = 0;
	const char *why;

	for (size_t i = 0; (b = bt_backend_at(i)); i++) {
		if (!(b->d.flags & BTRACE_BACKEND_F_AUTO))
			continue;
		if (!(b->d.flags & BTRACE_BACKEND_F_PROBED)) {
			if (!last)
				last = b;
			continue;
		}
		nprobed++;
		if (usable_of(r, b->d.id, &why)) {
			r->auto_backend = b->d.id;
			if (nfailed)
				snprintf(r->auto_why, sizeof(r->auto_why),
					 "%s; %s is", failed, b->brief);
			else
				snprintf(r->auto_why, sizeof(r->auto_why),
					 "%s is usable", b->brief);
			return;
		}
		/* "Intel PT is not usable (why)[; ...]" */
		snprintf(failed + strlen(failed), sizeof(failed) - strlen(failed),
			 "%s%s is not usable (%s)", nfailed ? "; " : "",
			 b->brief, why);
		nfailed++;
	}
	if (!last)
		return;
	/* "neither Intel PT nor BTS" ("neither A, B nor C") */
	for (size_t i = 0, k = 0; (b = bt_backend_at(i)); i++) {
		if ((b->d.flags & (BTRACE_BACKEND_F_AUTO | BTRACE_BACKEND_F_PROBED)) !=
		    (BTRACE_BACKEND_F_AUTO | BTRACE_BACKEND_F_PROBED))
			continue;
		k++;
		snprintf(names + strlen(names), sizeof(names) - strlen(names),
			 "%s%s", k == 1 ? "" : k == nprobed ? " nor " : ", ",
			 b->brief);
	}
	r->auto_backend = last->d.id;
	if (usable_of(r, last->d.id, &why) != 0)
		snprintf(r->auto_why, sizeof(r->auto_why), "neither %s is usable "
			 "here: %s is used", names, last->brief);
	else
		snprintf(r->auto_why, sizeof(r->auto_why), "neither %s is usable "
			 "here; %s would be used, but it is not usable (see "
			 "QEMU)", names, last->brief);
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
		fill_qemu(sysfs_root, &r.qemu);
		pick_auto(&r);
		memcpy(rep, &r, sz);
	}
	return 0;
}

/* The backend calibrate measures when none is asked for: the first
 * usable hardware backend of the table, else the last one (whose probe
 * then says why it cannot). */
static uint32_t calibrate_default(const char *sysfs_root)
{
	const struct bt_backend *b;
	uint32_t last = BTRACE_BACKEND_UNKNOWN;

	for (size_t i = 0; (b = bt_backend_at(i)); i++) {
		struct btrace_error why = { 0 };

		if (!(b->d.flags & BTRACE_BACKEND_F_HARDWARE) || !b->probe)
			continue;
		if (b->probe(b->d.id, sysfs_root, &why) == 0)
			return b->d.id;
		last = b->d.id;
	}
	return last;
}

int btrace_calibrate(uint32_t backend, unsigned runs, const char *sysfs_root,
		     struct btrace_calibration *out, struct btrace_error *err)
{
	struct btrace_calibration c;
	size_t n;
	int r = bt_result_size(out, sizeof(c), "calibration result", &n, err);

	if (r < 0)
		return r;
	if (!backend)
		backend = calibrate_default(sysfs_root);
	r = bt_calibrate(backend, runs, sysfs_root, &c, err);
	c.sz = out->sz;
	memcpy(out, &c, n);
	return r;
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
