/* SPDX-License-Identifier: MIT */
/* btrace doctor: what this machine supports for hardware capture, and why not. */
#include <getopt.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/capture.h>
#include <btrace/record.h>
#include <btrace/snapshot.h>

#include "cli.h"

static void help(void)
{
	printf(
"usage: btrace doctor [--json] [--sysfs-root DIR]\n\n"
"Report what this machine supports for hardware branch tracing: the CPU,\n"
"Intel PT and BTS availability (and why not), the PMU caps, the\n"
"perf_event_paranoid level, capabilities, the locked-memory budget, KPTI,\n"
"ptrace restrictions, and which backend 'btrace record --backend auto'\n"
"would pick.\n\n"
"  --json             one JSON object on standard output\n"
"  --sysfs-root DIR   read PMUs from DIR instead of /sys\n"
"  -h, --help         this text\n");
	cli_help_end(stdout, "doctor");
}

static const char *backend_name(uint32_t b)
{
	const struct btrace_backend_desc *d = btrace_backend_by_id(b);

	return d ? d->name : "unknown";
}

static const char *yes(int v)
{
	return v ? "yes" : "no";
}

static void size_str(char *buf, size_t len, uint64_t v)
{
	if (v == UINT64_MAX)
		snprintf(buf, len, "unlimited");
	else if (v >= (1u << 20) && !(v % (1u << 20)))
		snprintf(buf, len, "%llu MiB", (unsigned long long)(v >> 20));
	else if (v >= 1024)
		snprintf(buf, len, "%.1f KiB", (double)v / 1024);
	else
		snprintf(buf, len, "%llu B", (unsigned long long)v);
}

/*
 * One field of the text report: the label in a 15-column margin, then the
 * text, wrapped at word boundaries so that no line passes 80 columns
 * (unless one word is longer); continuation lines are indented under the
 * text, past @prefix ("why: ").
 */
static void field(const char *label, const char *prefix, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static void field(const char *label, const char *prefix, const char *fmt, ...)
{
	enum { MARGIN = 15, WIDTH = 80 };
	char raw[2048], buf[4096];
	const char *p, *e;
	size_t col, indent = MARGIN + strlen(prefix);
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(raw, sizeof(raw), fmt, ap);
	va_end(ap);
	snprintf(buf, sizeof(buf), "%s", cli_esc(raw));  /* sysfs text */
	printf("%-14s %s", label, prefix);
	col = indent;
	for (p = buf; *p;) {
		while (*p == ' ')
			p++;
		if (!*p)
			break;
		e = p + strcspn(p, " ");
		if (col > indent && col + 1 + (size_t)(e - p) > WIDTH) {
			printf("\n%*s", (int)indent, "");
			col = indent;
		} else if (col > indent) {
			putchar(' ');
			col++;
		}
		printf("%.*s", (int)(e - p), p);
		col += (size_t)(e - p);
		p = e;
	}
	putchar('\n');
}

static void print_pmu(const char *label, const struct btrace_doctor_pmu *p)
{
	char caps[1024];
	size_t n = 0;

	if (p->present)
		field(label, "", "%s (PMU type %d)",
		      p->usable ? "usable" : "unavailable", p->type);
	else
		field(label, "", "%s", p->usable ? "usable" : "unavailable");
	if (!p->usable) {
		field("", "why: ", "%s", p->why);
		if (p->hint[0])
			field("", "hint: ", "%s", p->hint);
	}
	caps[0] = 0;
	for (uint32_t i = 0; i < p->ncaps && n < sizeof(caps); i++)
		n += (size_t)snprintf(caps + n, sizeof(caps) - n, "%s%s=%x",
				      i ? " " : "", p->caps[i].name,
				      p->caps[i].value);
	if (p->ncaps)
		field("", "caps: ", "%s", caps);
	if (p->default_config)
		field("", "", "config: 0x%llx (as perf's intel_pt//u)",
		      (unsigned long long)p->default_config);
}

static void print_qemu(const struct btrace_doctor_qemu *q)
{
	if (!q->found)
		field("QEMU:", "", "%s", q->emulator[0] ? q->emulator : "not found");
	else
		field("QEMU:", "", "%s, version %s", q->emulator,
		      q->version[0] ? q->version : "unknown");
	if (q->plugin[0])
		field("", "", "plugin %s", q->plugin);
	field("", "", "%s", q->usable > 0 ? "usable: a probe run recorded /bin/true" :
	      q->usable < 0 ? "usable as far as checked" : "unavailable");
	if (q->why[0])
		field("", q->usable ? "" : "why: ", "%s", q->why);
	if (q->usable == 0 && q->hint[0])
		field("", "hint: ", "%s", q->hint);
}

static void text(const struct btrace_doctor_report *r)
{
	char a[32], b[32], c[32];

	field("CPU:", "", "%s%s%s (family 0x%x, model 0x%x, stepping %u)%s",
	      r->cpu_vendor, r->cpu_brand[0] ? ", " : "", r->cpu_brand,
	      r->cpu_family, r->cpu_model, r->cpu_stepping,
	      r->hypervisor ? ", in a virtual machine" : "");
	field("", "", "Intel PT in CPUID: %s", yes(r->cpuid_pt));
	field("Kernel:", "", "%s", r->kernel);
	print_pmu("Intel PT:", &r->pt);
	print_pmu("Intel BTS:", &r->bts);
	if (r->sz >= offsetof(struct btrace_doctor_report, bts_path) + sizeof(r->bts_path))
		field("", "", "BTS path: %s",
		      !r->bts_path[0] ? "none (BTS is not usable)" :
		      !strcmp(r->bts_path, "intel_bts") ? "intel_bts (AUX ring)" :
		      "branch-instructions sampling (intel_bts is missing, e.g. under page-table isolation; works at perf_event_paranoid 2)");
	if (r->sz >= offsetof(struct btrace_doctor_report, qemu) + sizeof(r->qemu))
		print_qemu(&r->qemu);
	field("Privilege:", "", "perf_event_paranoid %d: %s", r->paranoid,
	      r->paranoid <= -1 ? "no restrictions" :
	      r->paranoid <= 0 ? "per-CPU and kernel tracing allowed" :
	      r->paranoid <= 1 ? "kernel tracing and BTS allowed, no per-CPU events" :
	      r->paranoid == 2 ? "user-space tracing of your own processes only (BTS and kernel tracing need <= 1 or CAP_PERFMON)" :
	      "perf only for CAP_SYS_ADMIN");
	field("", "", "uid %d; CAP_PERFMON %s, CAP_SYS_ADMIN %s, CAP_IPC_LOCK %s, CAP_SYS_PTRACE %s",
	      r->uid, yes(r->cap_perfmon), yes(r->cap_sys_admin),
	      yes(r->cap_ipc_lock), yes(r->cap_sys_ptrace));
	size_str(a, sizeof(a), r->user_allowance);
	size_str(b, sizeof(b), r->rlimit_memlock);
	size_str(c, sizeof(c), r->pinned);
	field("Locked memory:", "", "per-user perf allowance %s (perf_event_mlock_kb %llu x %d CPUs), then RLIMIT_MEMLOCK %s (%s pinned already)",
	      a, (unsigned long long)r->mlock_kb, r->online_cpus, b, c);
	if (r->budget_bypass) {
		field("", "", "no limit applies (%s)",
		      r->cap_ipc_lock ? "CAP_IPC_LOCK" : "perf_event_paranoid -1");
	} else {
		size_str(a, sizeof(a), r->max_single_ring);
		field("", "", "largest AUX ring for one thread: %s; raise with ulimit -l or sysctl kernel.perf_event_mlock_kb",
		      a);
	}
	field("KPTI:", "", "%s",
	      r->kpti < 0 ? "unknown" :
	      r->kpti ? "on: the kernel does not offer intel_bts" :
	      "off");
	if (r->ptrace_scope < 0)
		field("ptrace:", "", "no Yama: precise crash handling can attach to your processes");
	else
		field("ptrace:", "", "Yama ptrace_scope %d: %s", r->ptrace_scope,
		      r->ptrace_scope == 0 ? "precise crash handling can attach to your processes" :
		      r->ptrace_scope == 1 ? "launch mode is precise; -p PID needs CAP_SYS_PTRACE for precise mode, else passive" :
		      r->ptrace_scope == 2 ? "only CAP_SYS_PTRACE may attach: -p PID runs passive otherwise" :
		      "ptrace attach is disabled: -p PID runs passive");
	field("Backend auto:", "", "%s: %s", backend_name(r->auto_backend),
	      r->auto_why);
}

static void pmu_json(struct json *j, const char *key,
		     const struct btrace_doctor_pmu *p)
{
	json_begin_object(j, key);
	json_str(j, "name", p->name);
	json_bool(j, "present", p->present);
	json_bool(j, "usable", p->usable);
	if (p->present)
		json_int(j, "type", p->type);
	else
		json_null(j, "type");
	json_str(j, "why", p->usable ? NULL : p->why);
	json_str(j, "hint", p->hint[0] ? p->hint : NULL);
	if (p->default_config)
		json_hex(j, "default_config", p->default_config);
	json_begin_object(j, "caps");
	for (uint32_t i = 0; i < p->ncaps; i++)
		json_hex(j, p->caps[i].name, p->caps[i].value);
	json_end_object(j);
	json_end_object(j);
}

static void as_json(const struct btrace_doctor_report *r)
{
	struct json j;

	json_init(&j, stdout, true);
	json_begin_object(&j, NULL);
	json_begin_object(&j, "cpu");
	json_str(&j, "vendor", r->cpu_vendor);
	json_str(&j, "brand", r->cpu_brand);
	json_uint(&j, "family", r->cpu_family);
	json_uint(&j, "model", r->cpu_model);
	json_uint(&j, "stepping", r->cpu_stepping);
	json_bool(&j, "hypervisor", r->hypervisor);
	json_bool(&j, "cpuid_intel_pt", r->cpuid_pt);
	json_end_object(&j);
	json_str(&j, "kernel", r->kernel);
	pmu_json(&j, "intel_pt", &r->pt);
	pmu_json(&j, "intel_bts", &r->bts);
	json_int(&j, "perf_event_paranoid", r->paranoid);
	json_int(&j, "uid", r->uid);
	json_begin_object(&j, "capabilities");
	json_bool(&j, "CAP_PERFMON", r->cap_perfmon);
	json_bool(&j, "CAP_SYS_ADMIN", r->cap_sys_admin);
	json_bool(&j, "CAP_IPC_LOCK", r->cap_ipc_lock);
	json_bool(&j, "CAP_SYS_PTRACE", r->cap_sys_ptrace);
	json_end_object(&j);
	json_begin_object(&j, "locked_memory");
	json_uint(&j, "perf_event_mlock_kb", r->mlock_kb);
	json_int(&j, "online_cpus", r->online_cpus);
	json_uint(&j, "user_allowance", r->user_allowance);
	if (r->rlimit_memlock == UINT64_MAX)
		json_null(&j, "rlimit_memlock");
	else
		json_uint(&j, "rlimit_memlock", r->rlimit_memlock);
	json_uint(&j, "pinned", r->pinned);
	json_bool(&j, "bypass", r->budget_bypass);
	if (r->budget_bypass)
		json_null(&j, "max_single_ring");
	else
		json_uint(&j, "max_single_ring", r->max_single_ring);
	json_end_object(&j);
	if (r->kpti < 0)
		json_null(&j, "kpti");
	else
		json_bool(&j, "kpti", r->kpti);
	if (r->ptrace_scope < 0)
		json_null(&j, "yama_ptrace_scope");
	else
		json_int(&j, "yama_ptrace_scope", r->ptrace_scope);
	json_begin_object(&j, "qemu");
	json_str(&j, "emulator", r->qemu.emulator[0] ? r->qemu.emulator : NULL);
	json_str(&j, "version", r->qemu.version[0] ? r->qemu.version : NULL);
	json_str(&j, "plugin", r->qemu.plugin[0] ? r->qemu.plugin : NULL);
	if (r->qemu.usable < 0)
		json_null(&j, "usable");
	else
		json_bool(&j, "usable", r->qemu.usable);
	json_str(&j, "why", r->qemu.why[0] ? r->qemu.why : NULL);
	json_str(&j, "hint", r->qemu.hint[0] ? r->qemu.hint : NULL);
	json_end_object(&j);
	json_str(&j, "auto_backend", backend_name(r->auto_backend));
	json_str(&j, "auto_why", r->auto_why);
	if (r->bts_path[0])
		json_str(&j, "bts_path", r->bts_path);
	else
		json_null(&j, "bts_path");
	json_end_object(&j);
	json_finish(&j);
}

int cmd_doctor(int argc, char **argv)
{
	enum { O_JSON = 256, O_ROOT };
	static const struct option opts[] = {
		{ "json", no_argument, NULL, O_JSON },
		{ "sysfs-root", required_argument, NULL, O_ROOT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct btrace_doctor_report rep;
	struct btrace_error err = { 0 };
	const char *root = NULL;
	bool json = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
		switch (c) {
		case O_JSON:
			json = true;
			break;
		case O_ROOT:
			root = optarg;
			break;
		case 'h':
			help();
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("doctor", c, argv);
		}
	}
	if (optind != argc)
		return cli_usage("doctor", "unexpected argument '%s'", argv[optind]);
	memset(&rep, 0, sizeof(rep));
	rep.sz = sizeof(rep);
	if ((!root || !*root) && getenv("BTRACE_SYSFS_ROOT"))
		root = getenv("BTRACE_SYSFS_ROOT");
	if (btrace_doctor(root, &rep, &err) < 0)
		return cli_fail("doctor", &err);
	if (json)
		as_json(&rep);
	else
		text(&rep);
	return CLI_EXIT_OK;
}
