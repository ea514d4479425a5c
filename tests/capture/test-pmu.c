/* SPDX-License-Identifier: MIT */
/* PMU discovery, config building and validation over recorded sysfs trees. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bt-test.h"
#include "capture/pmu.h"

static const char *tree(const char *name)
{
	static char buf[1024];
	const char *d = getenv("BT_TEST_DATA");

	snprintf(buf, sizeof(buf), "%s/sysfs/%s", d ? d : "tests/data", name);
	return buf;
}

static void intel(struct bt_cpu *cpu, unsigned fam, unsigned model,
		  unsigned step)
{
	memset(cpu, 0, sizeof(*cpu));
	cpu->vendor = BT_VENDOR_INTEL;
	cpu->family = (uint16_t)fam;
	cpu->model = (uint8_t)model;
	cpu->stepping = (uint8_t)step;
}

static void test_skylake_discovery(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_pmu pmu;
	uint32_t v;

	BT_REQUIRE(t, bt_pmu_read(tree("skylake"), "intel_pt", &pmu, &err) == 0);
	BT_EQ_INT(t, 8, pmu.type);
	BT_CHECK(t, pmu.present);
	BT_CHECK(t, bt_pmu_cap(&pmu, "mtc_periods", &v));
	BT_EQ_U64(t, 0x249, v);          /* printed in hex */
	BT_CHECK(t, bt_pmu_cap(&pmu, "cycle_thresholds", &v));
	BT_EQ_U64(t, 0x3fff, v);
	BT_CHECK(t, bt_pmu_cap(&pmu, "psb_cyc", &v));
	BT_EQ_INT(t, 1, v);
	BT_CHECK(t, bt_pmu_cap(&pmu, "ptwrite", &v));
	BT_EQ_INT(t, 0, v);
	BT_CHECK(t, !bt_pmu_cap(&pmu, "no_such_cap", &v));
	BT_EQ_U64(t, 0x3c000, bt_pmu_field_mask(&pmu, "mtc_period"));
	BT_EQ_U64(t, 1ull << 55, bt_pmu_field_mask(&pmu, "notnt"));
	BT_EQ_U64(t, 0xf000000, bt_pmu_field_mask(&pmu, "psb_period"));
	BT_EQ_INT(t, 34, pmu.max_nonturbo_ratio);
	BT_CHECK(t, pmu.has_art);
	BT_EQ_INT(t, 216, pmu.tsc_art_num);
	BT_EQ_INT(t, 2, pmu.tsc_art_den);
	BT_EQ_INT(t, 2, pmu.nr_addr_filters);

	BT_REQUIRE(t, bt_pmu_read(tree("skylake"), "intel_bts", &pmu, &err) == 0);
	BT_EQ_INT(t, 9, pmu.type);
	BT_EQ_INT(t, 0, pmu.nfields);
	BT_EQ_INT(t, 0, pmu.ncaps);
}

static void test_missing_pmu(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_pmu pmu;

	BT_EQ_INT(t, -ENOENT, bt_pmu_read(tree("amd-vm"), "intel_pt", &pmu, &err));
	BT_CONTAINS(t, err.msg, "intel_pt");
	BT_CHECK(t, !pmu.present);
	BT_EQ_INT(t, -ENOENT, bt_pmu_read(tree("haswell-kpti"), "intel_bts",
					  &pmu, &err));
	BT_EQ_INT(t, 0, bt_pmu_read(tree("haswell"), "intel_bts", &pmu, &err));
	BT_EQ_INT(t, 6, pmu.type);
	BT_EQ_INT(t, -ENOENT, bt_pmu_read("/nonexistent-root", "intel_pt", &pmu,
					  &err));
}

static void test_malformed_trees(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_pmu pmu;

	BT_EQ_INT(t, -EINVAL, bt_pmu_read(tree("broken-type"), "intel_pt", &pmu,
					  &err));
	BT_CONTAINS(t, err.msg, "not a decimal PMU type");
	BT_EQ_INT(t, -EINVAL, bt_pmu_read(tree("broken-caps"), "intel_pt", &pmu,
					  &err));
	BT_CONTAINS(t, err.msg, "caps/mtc");
	BT_CONTAINS(t, err.msg, "not a hex value");
	BT_EQ_INT(t, -EINVAL, bt_pmu_read(tree("broken-format"), "intel_pt",
					  &pmu, &err));
	BT_CONTAINS(t, err.msg, "format/mtc_period");
}

struct cfg_case {
	const char *tree;
	unsigned fam, model, step;
	uint64_t config;          /* perf's intel_pt// default */
	uint32_t mtc_period, psb_period;
};

/* Expected values worked out by hand from perf's intel_pt_default_config()
 * over each tree's caps. */
static const struct cfg_case cfg_cases[] = {
	/* tsc|mtc|mtc_period=3|psb_period=3|pt|branch */
	{ "skylake", 6, 0x5e, 3, 0x300e601, 3, 3 },
	{ "icelake", 6, 0x7e, 5, 0x300e601, 3, 3 },
	{ "sapphirerapids", 6, 0x8f, 8, 0x300e601, 3, 3 },
	/* no caps/mtc, no psb_cyc: tsc|pt|branch */
	{ "broadwell", 6, 0x3d, 4, 0x2401, 0, 0 },
	/* mtc_periods 0x24a: 3 valid; psb_periods 0x3e: 3 valid */
	{ "goldmont", 6, 0x5c, 9, 0x300e601, 3, 3 },
};

static void test_default_config(struct bt_test *t)
{
	for (size_t i = 0; i < sizeof(cfg_cases) / sizeof(cfg_cases[0]); i++) {
		const struct cfg_case *c = &cfg_cases[i];
		struct btrace_error err = { 0 };
		struct bt_pt_config cfg;
		struct bt_pmu pmu;
		struct bt_cpu cpu;

		intel(&cpu, c->fam, c->model, c->step);
		BT_REQUIRE(t, bt_pmu_read(tree(c->tree), "intel_pt", &pmu, &err) == 0);
		BT_REQUIRE(t, bt_pt_default_config(&pmu, &cpu, &cfg, &err) == 0);
		if (cfg.config != c->config)
			bt_test_diag("tree %s", c->tree);
		BT_EQ_U64(t, c->config, cfg.config);
		BT_EQ_INT(t, c->mtc_period, cfg.mtc_period);
		BT_EQ_INT(t, c->psb_period, cfg.psb_period);
		BT_CHECK(t, cfg.tsc && cfg.pt && cfg.branch);
		/* What perf would open passes our model of pt_event_valid(). */
		BT_EQ_INT(t, 0, bt_pt_validate(&pmu, &cpu, cfg.config, &err));
	}
}

static void test_pick_bit(struct bt_test *t)
{
	BT_EQ_INT(t, 3, bt_pmu_pick_bit(0x249, 3));
	BT_EQ_INT(t, 0, bt_pmu_pick_bit(0x1, 3));
	BT_EQ_INT(t, 6, bt_pmu_pick_bit(0x40, 3));   /* none <= 3: lowest above */
	BT_EQ_INT(t, 2, bt_pmu_pick_bit(0x6, 3));
	BT_EQ_INT(t, -1, bt_pmu_pick_bit(0, 3));
}

static void test_parse_terms(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_pmu pmu;
	uint64_t c;

	BT_REQUIRE(t, bt_pmu_read(tree("skylake"), "intel_pt", &pmu, &err) == 0);
	BT_EQ_INT(t, 0, bt_pt_parse_config(&pmu, "tsc,mtc,mtc_period=3,psb_period=3,pt,branch",
					   &c, &err));
	BT_EQ_U64(t, 0x300e601, c);
	BT_EQ_INT(t, 0, bt_pt_parse_config(&pmu, "config=0x2001", &c, &err));
	BT_EQ_U64(t, 0x2001, c);
	BT_EQ_INT(t, -EINVAL, bt_pt_parse_config(&pmu, "tsc,bogus", &c, &err));
	BT_CONTAINS(t, err.msg, "\"bogus\"");
	BT_EQ_INT(t, -EINVAL, bt_pt_parse_config(&pmu, "mtc_period=16", &c, &err));
	BT_CONTAINS(t, err.msg, "mtc_period=16");
	BT_CONTAINS(t, err.msg, "bits 14-17");
	BT_EQ_INT(t, -EINVAL, bt_pt_parse_config(&pmu, "cyc=x", &c, &err));
}

struct bad_case {
	const char *tree;
	unsigned model;
	const char *terms;
	const char *needle;       /* the offending field in the message */
};

static const struct bad_case bad_cases[] = {
	{ "skylake", 0x5e, "pt,branch,mtc,mtc_period=4", "mtc_period=4" },
	{ "skylake", 0x5e, "pt,branch,psb_period=7", "psb_period=7" },
	{ "skylake", 0x5e, "pt,branch,cyc,cyc_thresh=15", "cyc_thresh=15" },
	{ "skylake", 0x5e, "pt,branch,ptw", "caps/ptwrite" },
	{ "skylake", 0x5e, "pt,branch,pwr_evt", "caps/power_event_trace" },
	{ "skylake", 0x5e, "pt,branch,event", "caps/event_trace" },
	{ "skylake", 0x5e, "pt,branch,notnt", "caps/tnt_disable" },
	{ "skylake", 0x5e, "branch", "branch is set without pt" },
	{ "skylake", 0x5e, "config=0x40", "bit 6" },
	{ "broadwell", 0x3d, "pt,branch,mtc", "caps/mtc" },
	{ "broadwell", 0x3d, "pt,branch,cyc", "caps/psb_cyc" },
	{ "broadwell", 0x3d, "pt,tsc", "BDM106" },
	/* goldmont lists mtc_periods 0x24a: value 0 (the default) is invalid */
	{ "goldmont", 0x5c, "pt,branch,mtc", "mtc_period=0" },
	{ "goldmont", 0x5c, "pt,branch,psb_period=0,cyc_thresh=1", NULL },
};

static void test_validate_rejects(struct bt_test *t)
{
	for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
		const struct bad_case *c = &bad_cases[i];
		struct btrace_error err = { 0 };
		struct bt_pmu pmu;
		struct bt_cpu cpu;
		uint64_t config;
		int r;

		intel(&cpu, 6, c->model, 1);
		BT_REQUIRE(t, bt_pmu_read(tree(c->tree), "intel_pt", &pmu, &err) == 0);
		BT_REQUIRE(t, bt_pt_parse_config(&pmu, c->terms, &config, &err) == 0);
		r = bt_pt_validate(&pmu, &cpu, config, &err);
		if (!c->needle) {
			/* psb_period 0 means "default" and is always allowed */
			BT_EQ_INT(t, 0, r);
			continue;
		}
		BT_EQ_INT(t, -EINVAL, r);
		BT_CONTAINS(t, err.msg, c->needle);
		BT_CHECK(t, err.hint[0] != '\0');
	}
}

static void test_validate_accepts(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_pmu pmu;
	struct bt_cpu cpu;
	uint64_t config;

	intel(&cpu, 6, 0x8f, 8);
	BT_REQUIRE(t, bt_pmu_read(tree("sapphirerapids"), "intel_pt", &pmu, &err) == 0);
	BT_REQUIRE(t, bt_pt_parse_config(&pmu, "pt,branch,ptw,fup_on_ptw,pwr_evt,event,notnt,cyc,cyc_thresh=13",
					 &config, &err) == 0);
	BT_EQ_INT(t, 0, bt_pt_validate(&pmu, &cpu, config, &err));
	/* no pt, no branch: legacy behaviour, allowed */
	BT_EQ_INT(t, 0, bt_pt_validate(&pmu, &cpu, 0x400, &err));
	/* Broadwell with pt,branch is fine */
	intel(&cpu, 6, 0x3d, 4);
	BT_REQUIRE(t, bt_pmu_read(tree("broadwell"), "intel_pt", &pmu, &err) == 0);
	BT_EQ_INT(t, 0, bt_pt_validate(&pmu, &cpu, 0x2401, &err));
	/* the same without branch is fine on a non-Broadwell CPU */
	BT_REQUIRE(t, bt_pmu_read(tree("skylake"), "intel_pt", &pmu, &err) == 0);
	intel(&cpu, 6, 0x5e, 3);
	BT_EQ_INT(t, 0, bt_pt_validate(&pmu, &cpu, 0x401, &err));
}

static void test_sysinfo_from_tree(struct bt_test *t)
{
	struct bt_sysinfo si;

	bt_sysinfo_read(tree("skylake"), &si);
	BT_EQ_INT(t, 8, si.online_cpus);
	BT_CHECK(t, si.kpti_known && si.kpti);
	bt_sysinfo_read(tree("icelake"), &si);
	BT_CHECK(t, si.kpti_known && !si.kpti);
	bt_sysinfo_read(tree("sapphirerapids"), &si);
	BT_EQ_INT(t, 16, si.online_cpus);
	BT_EQ_INT(t, 4, bt_parse_cpulist("0-2,5"));
	BT_EQ_INT(t, 1, bt_parse_cpulist("0"));
	BT_EQ_INT(t, -1, bt_parse_cpulist("x"));
	BT_EQ_INT(t, -1, bt_parse_cpulist("3-1"));
}

static void test_cpuid_here(struct bt_test *t)
{
	struct bt_cpu cpu;

	bt_cpu_identify(&cpu);
	BT_CHECK(t, cpu.vendor != BT_VENDOR_UNKNOWN);
	BT_CHECK(t, cpu.family != 0);
	BT_EQ_INT(t, 12, (int)strlen(cpu.vendor_str));
	/* Without PT the leaf 0x14 values stay zero. */
	if (!cpu.has_pt)
		BT_EQ_INT(t, 0, cpu.leaf14[0][1]);
}

static void test_explain_absent(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	struct bt_sysinfo si;
	struct bt_cpu cpu;

	/* Haswell with KPTI: no intel_bts because of PTI */
	intel(&cpu, 6, 0x3c, 3);
	cpu.has_ds = cpu.has_dtes64 = true;
	bt_sysinfo_read(tree("haswell-kpti"), &si);
	BT_EQ_INT(t, -BTRACE_ERR_NOPMU,
		  bt_pmu_explain_absent("intel_bts", &cpu, &si, true, &err));
	BT_CONTAINS(t, err.msg, "KPTI");
	BT_CONTAINS(t, err.hint, "qemu");
	/* ... and no PT in CPUID: PT came with Broadwell */
	BT_EQ_INT(t, -BTRACE_ERR_NOPMU,
		  bt_pmu_explain_absent("intel_pt", &cpu, &si, false, &err));
	BT_CONTAINS(t, err.msg, "no Intel PT");
	/* an AMD VM */
	memset(&cpu, 0, sizeof(cpu));
	cpu.vendor = BT_VENDOR_AMD;
	strcpy(cpu.vendor_str, "AuthenticAMD");
	cpu.hypervisor = true;
	bt_sysinfo_read(tree("amd-vm"), &si);
	bt_pmu_explain_absent("intel_pt", &cpu, &si, false, &err);
	BT_CONTAINS(t, err.msg, "AMD");
	BT_CONTAINS(t, err.hint, "--backend qemu");
	/* an Intel VM without PT pass-through */
	intel(&cpu, 6, 0x55, 4);
	cpu.has_pt = true;
	cpu.hypervisor = true;
	bt_sysinfo_read(tree("amd-vm"), &si);
	bt_pmu_explain_absent("intel_pt", &cpu, &si, false, &err);
	BT_CONTAINS(t, err.msg, "virtual machine");
	BT_CONTAINS(t, err.hint, "pass-through");
	/* bare-metal Intel with PT in CPUID: the kernel */
	cpu.hypervisor = false;
	bt_pmu_explain_absent("intel_pt", &cpu, &si, false, &err);
	BT_CONTAINS(t, err.msg, "CONFIG_PERF_EVENTS_INTEL_PT");
}

BT_TESTS(test_explain_absent, test_skylake_discovery, test_missing_pmu, test_malformed_trees,
	 test_default_config, test_pick_bit, test_parse_terms,
	 test_validate_rejects, test_validate_accepts, test_sysinfo_from_tree,
	 test_cpuid_here)
