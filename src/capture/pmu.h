/* SPDX-License-Identifier: MIT */
/*
 * Trace PMU discovery (sysfs), CPU identity (CPUID) and the intel_pt config
 * word: built from the PMU's format files the way perf builds intel_pt//u,
 * and validated against the caps before any syscall (a model of the
 * kernel's pt_event_valid()).
 */
#ifndef BT_CAPTURE_PMU_H
#define BT_CAPTURE_PMU_H

#include <stdbool.h>
#include <stdint.h>

#include <btrace/btrace.h>

#define BT_PMU_MAX_FIELDS 40
#define BT_PMU_MAX_CAPS 40

struct bt_pmu_field {
	char name[32];
	uint8_t config;     /* 0: config, 1: config1, 2: config2 */
	uint8_t lo, hi;     /* bit range, inclusive */
};

struct bt_pmu_cap {
	char name[40];
	uint32_t value;     /* caps files are printed in hex */
};

struct bt_pmu {
	char name[32];             /* "intel_pt", "intel_bts" */
	char path[512];            /* sysfs directory */
	bool present;
	int type;                  /* attr.type */
	struct bt_pmu_field fields[BT_PMU_MAX_FIELDS];
	unsigned nfields;
	struct bt_pmu_cap caps[BT_PMU_MAX_CAPS];
	unsigned ncaps;
	bool has_nonturbo;
	uint32_t max_nonturbo_ratio;
	bool has_art;
	uint32_t tsc_art_num;      /* ebx of CPUID 0x15 */
	uint32_t tsc_art_den;      /* eax of CPUID 0x15 */
	int nr_addr_filters;       /* -1 when absent */
	bool legacy_bts;           /* not a sysfs PMU: BTS through the
				    * branch-instructions event (no AUX; see
				    * bt_perf_bts_sample_attr()) */
};

/*
 * Read /<root>/bus/event_source/devices/<name>.  Returns 0 (pmu->present
 * set), -ENOENT when the PMU is not registered, or another negative code for
 * a malformed tree (err names the file and the problem).  @root NULL means
 * "/sys".
 */
int bt_pmu_read(const char *root, const char *name, struct bt_pmu *pmu,
		struct btrace_error *err);

/* A cap's value; false when the PMU has no such cap file. */
bool bt_pmu_cap(const struct bt_pmu *pmu, const char *name, uint32_t *val);
/* A format field; NULL when absent. */
const struct bt_pmu_field *bt_pmu_field(const struct bt_pmu *pmu,
					const char *name);
/* Mask of a field in its config word (0 when absent). */
uint64_t bt_pmu_field_mask(const struct bt_pmu *pmu, const char *name);
/* Value of field @name in @config (0 when absent). */
uint64_t bt_pmu_field_get(const struct bt_pmu *pmu, const char *name,
			  uint64_t config);

/* --- CPU identity --- */

enum bt_vendor { BT_VENDOR_UNKNOWN, BT_VENDOR_INTEL, BT_VENDOR_AMD,
		 BT_VENDOR_OTHER };

struct bt_cpu {
	int vendor;              /* enum bt_vendor */
	char vendor_str[13];
	char brand[49];
	uint16_t family;         /* extended family folded in */
	uint8_t model;           /* extended model folded in */
	uint8_t stepping;
	uint32_t max_leaf;
	bool hypervisor;         /* CPUID.1:ECX[31] */
	bool has_pt;             /* CPUID.7.0:EBX[25] */
	bool has_ds;             /* CPUID.1:EDX[21] (BTS needs DS) */
	bool has_dtes64;         /* CPUID.1:ECX[2] */
	uint32_t leaf14[2][4];   /* eax, ebx, ecx, edx of 0x14.0 and 0x14.1 */
	uint32_t leaf15[4];      /* eax, ebx, ecx, edx of 0x15 */
};

/* Fill @cpu from the CPUID instruction of the running CPU. */
void bt_cpu_identify(struct bt_cpu *cpu);

/* True on Broadwell models (erratum BDM106: pt needs branch). */
bool bt_cpu_is_broadwell(const struct bt_cpu *cpu);

/* --- intel_pt config --- */

struct bt_pt_config {
	uint64_t config;
	uint32_t mtc_period;      /* field values as put in @config */
	uint32_t psb_period;
	uint32_t cyc_thresh;
	bool tsc, mtc, cyc, noretcomp, branch, pt;
};

/*
 * The config perf uses for intel_pt//: "tsc", then mtc with the valid
 * mtc_period nearest to 3 when caps/mtc, then psb_period nearest to 3 when
 * psb_cyc, then "pt,branch".  Every term is resolved through the format
 * files; a term whose field is missing is left out.
 */
int bt_pt_default_config(const struct bt_pmu *pmu, const struct bt_cpu *cpu,
			 struct bt_pt_config *out, struct btrace_error *err);

/*
 * Parse a perf-style term list ("tsc,mtc,mtc_period=3,pt,branch" or
 * "config=0x2001") through the format files into a config word.  Unknown
 * terms and out-of-range values fail with -EINVAL naming the term.
 */
int bt_pt_parse_config(const struct bt_pmu *pmu, const char *terms,
		       uint64_t *config, struct btrace_error *err);

/*
 * The kernel's pt_event_valid() checks, before the syscall.  Returns 0 or
 * -EINVAL with a message naming the offending field, the value and what the
 * caps allow.
 */
int bt_pt_validate(const struct bt_pmu *pmu, const struct bt_cpu *cpu,
		   uint64_t config, struct btrace_error *err);

/* Decode @config into its fields (bt_pt_config without validation). */
void bt_pt_describe(const struct bt_pmu *pmu, uint64_t config,
		    struct bt_pt_config *out);

/* The valid value nearest @target in bitmap @bits, as perf picks it: the
 * highest set bit <= @target, else the lowest above it; -1 if none. */
int bt_pmu_pick_bit(uint32_t bits, int target);

/* --- system state that decides what may be opened --- */

struct bt_sysinfo {
	int paranoid;              /* kernel.perf_event_paranoid */
	bool have_paranoid;
	uint64_t mlock_kb;         /* kernel.perf_event_mlock_kb */
	int online_cpus;
	long page_size;
	bool kpti;                 /* Meltdown mitigation by PTI is active */
	bool kpti_known;
	int ptrace_scope;          /* kernel.yama.ptrace_scope, -1 without Yama */
	char kernel[128];
};

/* Read paranoid, mlock_kb, online CPUs (from @root/devices/system/cpu/online),
 * KPTI (from @root/devices/system/cpu/vulnerabilities/meltdown), Yama. */
void bt_sysinfo_read(const char *root, struct bt_sysinfo *si);

/* Why trace PMU @name (intel_pt, or intel_bts when @bts) is not registered,
 * from the CPU identity and system state: AMD, another vendor, KPTI (BTS),
 * no PT in CPUID, a hypervisor, or the kernel.  Returns
 * -BTRACE_ERR_NOPMU with message and hint. */
int bt_pmu_explain_absent(const char *name, const struct bt_cpu *cpu,
			  const struct bt_sysinfo *si, bool bts,
			  struct btrace_error *err);

/* Parse a CPU list such as "0-3,6" and return the count, -1 if malformed. */
int bt_parse_cpulist(const char *s);

#endif /* BT_CAPTURE_PMU_H */
