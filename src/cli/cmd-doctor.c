/* SPDX-License-Identifier: MIT */
/* btrace doctor: what this machine supports for hardware capture, and why not. */
#include <getopt.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <btrace/capture.h>
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
	switch (b) {
	case BTRACE_BACKEND_PT: return "pt";
	case BTRACE_BACKEND_BTS: return "bts";
	case BTRACE_BACKEND_QEMU: return "qemu";
	}
	return "unknown";
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

static void print_pmu(const char *label, const struct btrace_doctor_pmu *p)
{
	printf("%-14s %s", label, p->usable ? "usable" : "unavailable");
	if (p->present)
		printf(" (PMU type %d)", p->type);
	printf("\n");
	if (!p->usable) {
		printf("%-14s why: %s\n", "", p->why);
		if (p->hint[0])
			printf("%-14s hint: %s\n", "", p->hint);
	}
	if (p->ncaps) {
		printf("%-14s caps:", "");
		for (uint32_t i = 0; i < p->ncaps; i++)
			printf("%s %s=%x", i && i % 5 == 0 ? "\n               " : "",
			       p->caps[i].name, p->caps[i].value);
		printf("\n");
	}
	if (p->default_config)
		printf("%-14s config: 0x%llx (as perf's intel_pt//u)\n", "",
		       (unsigned long long)p->default_config);
}

static void text(const struct btrace_doctor_report *r)
{
	char a[32], b[32], c[32];

	printf("%-14s %s%s%s (family 0x%x, model 0x%x, stepping %u)%s\n", "CPU:",
	       r->cpu_vendor, r->cpu_brand[0] ? ", " : "", r->cpu_brand,
	       r->cpu_family, r->cpu_model, r->cpu_stepping,
	       r->hypervisor ? ", in a virtual machine" : "");
	printf("%-14s Intel PT in CPUID: %s\n", "", yes(r->cpuid_pt));
	printf("%-14s %s\n", "Kernel:", r->kernel);
	print_pmu("Intel PT:", &r->pt);
	print_pmu("Intel BTS:", &r->bts);
	printf("%-14s perf_event_paranoid %d: %s\n", "Privilege:", r->paranoid,
	       r->paranoid <= -1 ? "no restrictions" :
	       r->paranoid <= 0 ? "per-CPU and kernel tracing allowed" :
	       r->paranoid <= 1 ? "kernel tracing and BTS allowed, no per-CPU events" :
	       r->paranoid == 2 ? "user-space tracing of your own processes only (BTS and kernel tracing need <= 1 or CAP_PERFMON)" :
	       "perf only for CAP_SYS_ADMIN");
	printf("%-14s uid %d; CAP_PERFMON %s, CAP_SYS_ADMIN %s, CAP_IPC_LOCK %s, CAP_SYS_PTRACE %s\n",
	       "", r->uid, yes(r->cap_perfmon), yes(r->cap_sys_admin),
	       yes(r->cap_ipc_lock), yes(r->cap_sys_ptrace));
	size_str(a, sizeof(a), r->user_allowance);
	size_str(b, sizeof(b), r->rlimit_memlock);
	size_str(c, sizeof(c), r->pinned);
	printf("%-14s per-user perf allowance %s (perf_event_mlock_kb %llu x %d CPUs), then RLIMIT_MEMLOCK %s (%s pinned already)\n",
	       "Locked memory:", a, (unsigned long long)r->mlock_kb,
	       r->online_cpus, b, c);
	if (r->budget_bypass) {
		printf("%-14s no limit applies (%s)\n", "",
		       r->cap_ipc_lock ? "CAP_IPC_LOCK" : "perf_event_paranoid -1");
	} else {
		size_str(a, sizeof(a), r->max_single_ring);
		printf("%-14s largest AUX ring for one thread: %s; raise with ulimit -l or sysctl kernel.perf_event_mlock_kb\n",
		       "", a);
	}
	printf("%-14s %s\n", "KPTI:",
	       r->kpti < 0 ? "unknown" :
	       r->kpti ? "on: the kernel does not offer intel_bts" :
	       "off");
	if (r->ptrace_scope < 0)
		printf("%-14s no Yama: precise crash handling can attach to your processes\n",
		       "ptrace:");
	else
		printf("%-14s Yama ptrace_scope %d: %s\n", "ptrace:", r->ptrace_scope,
		       r->ptrace_scope == 0 ? "precise crash handling can attach to your processes" :
		       r->ptrace_scope == 1 ? "launch mode is precise; -p PID needs CAP_SYS_PTRACE for precise mode, else passive" :
		       r->ptrace_scope == 2 ? "only CAP_SYS_PTRACE may attach: -p PID runs passive otherwise" :
		       "ptrace attach is disabled: -p PID runs passive");
	printf("%-14s %s: %s\n", "Backend auto:", backend_name(r->auto_backend),
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
	json_str(&j, "auto_backend", backend_name(r->auto_backend));
	json_str(&j, "auto_why", r->auto_why);
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
	if (btrace_doctor(root, &rep, &err) < 0)
		return cli_fail("doctor", &err);
	if (json)
		as_json(&rep);
	else
		text(&rep);
	return CLI_EXIT_OK;
}
