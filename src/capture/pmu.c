/* SPDX-License-Identifier: MIT */
/* Trace PMU discovery, CPU identity and intel_pt config building. */
#include "pmu.h"

#include <cpuid.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "util.h"

static const char *root_or_default(const char *root)
{
	return root && *root ? root : "/sys";
}

static int read_trimmed(const char *path, char *buf, size_t len)
{
	char *data;
	size_t n;
	int r;

	r = bt_read_file(path, &data, &n, 4096);
	if (r < 0)
		return r;
	while (n && isspace((unsigned char)data[n - 1]))
		data[--n] = '\0';
	snprintf(buf, len, "%s", data);
	free(data);
	return 0;
}

/* "config:0", "config:14-17", "config1:0-31" */
static int parse_format(const char *s, struct bt_pmu_field *f)
{
	unsigned lo, hi;
	int n = 0;

	if (!strncmp(s, "config2:", 8)) {
		f->config = 2;
		s += 8;
	} else if (!strncmp(s, "config1:", 8)) {
		f->config = 1;
		s += 8;
	} else if (!strncmp(s, "config:", 7)) {
		f->config = 0;
		s += 7;
	} else {
		return -EINVAL;
	}
	if (sscanf(s, "%u-%u%n", &lo, &hi, &n) == 2 && s[n] == '\0') {
		/* range */
	} else if (sscanf(s, "%u%n", &lo, &n) == 1 && s[n] == '\0') {
		hi = lo;
	} else {
		return -EINVAL;
	}
	if (lo > hi || hi > 63)
		return -EINVAL;
	f->lo = (uint8_t)lo;
	f->hi = (uint8_t)hi;
	return 0;
}

static int read_dir_entries(const char *dir, char names[][40], unsigned max,
			    unsigned *count)
{
	struct dirent *de;
	DIR *d;

	*count = 0;
	d = opendir(dir);
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		if (*count >= max) {
			/* Never keep an arbitrary subset: a field we need
			 * could be among the ones left out. */
			closedir(d);
			return -E2BIG;
		}
		if (strlen(de->d_name) >= 40)
			continue;
		strcpy(names[(*count)++], de->d_name);
	}
	closedir(d);
	/* Deterministic order. */
	qsort(names, *count, 40, (int (*)(const void *, const void *))strcmp);
	return 0;
}

int bt_pmu_read(const char *root, const char *name, struct bt_pmu *pmu,
		struct btrace_error *err)
{
	char names[BT_PMU_MAX_FIELDS > BT_PMU_MAX_CAPS ? BT_PMU_MAX_FIELDS
						       : BT_PMU_MAX_CAPS][40];
	char path[700], val[256];
	unsigned n, i;
	char *end;
	int r;

	memset(pmu, 0, sizeof(*pmu));
	pmu->nr_addr_filters = -1;
	snprintf(pmu->name, sizeof(pmu->name), "%s", name);
	snprintf(pmu->path, sizeof(pmu->path), "%s/bus/event_source/devices/%s",
		 root_or_default(root), name);

	snprintf(path, sizeof(path), "%s/type", pmu->path);
	r = read_trimmed(path, val, sizeof(val));
	if (r == -ENOENT || r == -ENOTDIR)
		return bt_error(err, -ENOENT, "%s: PMU lookup failed: %s is absent",
				name, path);
	if (r < 0)
		return bt_error(err, r, "%s: reading %s failed: %s", name, path,
				strerror(-r));
	errno = 0;
	pmu->type = (int)strtol(val, &end, 10);
	if (errno || end == val || *end || pmu->type < 0)
		return bt_error(err, -EINVAL,
				"%s: parsing %s failed: \"%s\" is not a decimal PMU type",
				name, path, val);

	snprintf(path, sizeof(path), "%s/format", pmu->path);
	r = read_dir_entries(path, names, BT_PMU_MAX_FIELDS, &n);
	if (r == -E2BIG)
		return bt_error(err, r, "%s: reading %s failed: more than %d "
				"entries (not a PMU format btrace knows; damaged "
				"sysfs?)", name, path, BT_PMU_MAX_FIELDS);
	if (r == 0) {
		for (i = 0; i < n; i++) {
			struct bt_pmu_field *f = &pmu->fields[pmu->nfields];
			char fpath[800];

			snprintf(fpath, sizeof(fpath), "%.600s/%.39s", path, names[i]);
			r = read_trimmed(fpath, val, sizeof(val));
			if (r < 0)
				return bt_error(err, r, "%s: reading %s failed: %s",
						name, fpath, strerror(-r));
			if (parse_format(val, f) < 0)
				return bt_error(err, -EINVAL,
						"%s: parsing %s failed: \"%s\" is not configN:lo[-hi]",
						name, fpath, val);
			snprintf(f->name, sizeof(f->name), "%.31s", names[i]);
			pmu->nfields++;
		}
	}

	snprintf(path, sizeof(path), "%s/caps", pmu->path);
	r = read_dir_entries(path, names, BT_PMU_MAX_CAPS, &n);
	if (r == -E2BIG)
		return bt_error(err, r, "%s: reading %s failed: more than %d "
				"entries (not a PMU btrace knows; damaged "
				"sysfs?)", name, path, BT_PMU_MAX_CAPS);
	if (r == 0) {
		for (i = 0; i < n; i++) {
			struct bt_pmu_cap *c = &pmu->caps[pmu->ncaps];
			char fpath[800];
			unsigned long v;

			snprintf(fpath, sizeof(fpath), "%.600s/%.39s", path, names[i]);
			r = read_trimmed(fpath, val, sizeof(val));
			if (r < 0)
				return bt_error(err, r, "%s: reading %s failed: %s",
						name, fpath, strerror(-r));
			/* pt_cap_show() prints "%x\n": always hex, no 0x. */
			errno = 0;
			v = strtoul(val, &end, 16);
			if (errno || end == val || *end || v > UINT32_MAX)
				return bt_error(err, -EINVAL,
						"%s: parsing %s failed: \"%s\" is not a hex value",
						name, fpath, val);
			snprintf(c->name, sizeof(c->name), "%.39s", names[i]);
			c->value = (uint32_t)v;
			pmu->ncaps++;
		}
	}

	snprintf(path, sizeof(path), "%s/max_nonturbo_ratio", pmu->path);
	if (read_trimmed(path, val, sizeof(val)) == 0) {
		pmu->max_nonturbo_ratio = (uint32_t)strtoul(val, NULL, 10);
		pmu->has_nonturbo = true;
	}
	snprintf(path, sizeof(path), "%s/tsc_art_ratio", pmu->path);
	if (read_trimmed(path, val, sizeof(val)) == 0) {
		unsigned num, den;

		if (sscanf(val, "%u:%u", &num, &den) == 2) {
			pmu->tsc_art_num = num;
			pmu->tsc_art_den = den;
			pmu->has_art = true;
		}
	}
	snprintf(path, sizeof(path), "%s/nr_addr_filters", pmu->path);
	if (read_trimmed(path, val, sizeof(val)) == 0)
		pmu->nr_addr_filters = (int)strtol(val, NULL, 10);
	pmu->present = true;
	return 0;
}

bool bt_pmu_cap(const struct bt_pmu *pmu, const char *name, uint32_t *val)
{
	for (unsigned i = 0; i < pmu->ncaps; i++) {
		if (!strcmp(pmu->caps[i].name, name)) {
			if (val)
				*val = pmu->caps[i].value;
			return true;
		}
	}
	if (val)
		*val = 0;
	return false;
}

const struct bt_pmu_field *bt_pmu_field(const struct bt_pmu *pmu,
					const char *name)
{
	for (unsigned i = 0; i < pmu->nfields; i++)
		if (!strcmp(pmu->fields[i].name, name))
			return &pmu->fields[i];
	return NULL;
}

static uint64_t field_mask(const struct bt_pmu_field *f)
{
	unsigned w = f->hi - f->lo + 1u;

	return (w >= 64 ? ~0ull : ((1ull << w) - 1)) << f->lo;
}

uint64_t bt_pmu_field_mask(const struct bt_pmu *pmu, const char *name)
{
	const struct bt_pmu_field *f = bt_pmu_field(pmu, name);

	return f && f->config == 0 ? field_mask(f) : 0;
}

uint64_t bt_pmu_field_get(const struct bt_pmu *pmu, const char *name,
			  uint64_t config)
{
	const struct bt_pmu_field *f = bt_pmu_field(pmu, name);

	if (!f || f->config != 0)
		return 0;
	return (config & field_mask(f)) >> f->lo;
}

int bt_pmu_pick_bit(uint32_t bits, int target)
{
	int pos, pick = -1;

	for (pos = 0; bits; bits >>= 1, pos++) {
		if (bits & 1) {
			if (pos <= target || pick < 0)
				pick = pos;
			if (pos >= target)
				break;
		}
	}
	return pick;
}

/* --- CPU identity --- */

void bt_cpu_identify(struct bt_cpu *cpu)
{
	unsigned a, b, c, d;

	memset(cpu, 0, sizeof(*cpu));
	if (!__get_cpuid(0, &a, &b, &c, &d))
		return;
	cpu->max_leaf = a;
	memcpy(cpu->vendor_str, &b, 4);
	memcpy(cpu->vendor_str + 4, &d, 4);
	memcpy(cpu->vendor_str + 8, &c, 4);
	cpu->vendor_str[12] = '\0';
	if (!strcmp(cpu->vendor_str, "GenuineIntel"))
		cpu->vendor = BT_VENDOR_INTEL;
	else if (!strcmp(cpu->vendor_str, "AuthenticAMD") ||
		 !strcmp(cpu->vendor_str, "HygonGenuine"))
		cpu->vendor = BT_VENDOR_AMD;
	else
		cpu->vendor = BT_VENDOR_OTHER;

	if (cpu->max_leaf >= 1) {
		unsigned fam, model;

		__cpuid(1, a, b, c, d);
		fam = (a >> 8) & 0xf;
		model = (a >> 4) & 0xf;
		if (fam == 0xf)
			fam += (a >> 20) & 0xff;
		if (fam == 0x6 || fam >= 0xf)
			model |= ((a >> 16) & 0xf) << 4;
		cpu->family = (uint16_t)fam;
		cpu->model = (uint8_t)model;
		cpu->stepping = (uint8_t)(a & 0xf);
		cpu->hypervisor = (c >> 31) & 1;
		cpu->has_dtes64 = (c >> 2) & 1;
		cpu->has_ds = (d >> 21) & 1;
	}
	if (cpu->max_leaf >= 7) {
		__cpuid_count(7, 0, a, b, c, d);
		cpu->has_pt = (b >> 25) & 1;
	}
	if (cpu->max_leaf >= 0x14 && cpu->has_pt) {
		__cpuid_count(0x14, 0, a, b, c, d);
		cpu->leaf14[0][0] = a, cpu->leaf14[0][1] = b;
		cpu->leaf14[0][2] = c, cpu->leaf14[0][3] = d;
		if (a >= 1) {
			__cpuid_count(0x14, 1, a, b, c, d);
			cpu->leaf14[1][0] = a, cpu->leaf14[1][1] = b;
			cpu->leaf14[1][2] = c, cpu->leaf14[1][3] = d;
		}
	}
	if (cpu->max_leaf >= 0x15) {
		__cpuid(0x15, a, b, c, d);
		cpu->leaf15[0] = a, cpu->leaf15[1] = b;
		cpu->leaf15[2] = c, cpu->leaf15[3] = d;
	}
	__cpuid(0x80000000, a, b, c, d);
	if (a >= 0x80000004) {
		unsigned *p = (unsigned *)cpu->brand;

		for (unsigned l = 0; l < 3; l++)
			__cpuid(0x80000002 + l, p[4 * l], p[4 * l + 1],
				p[4 * l + 2], p[4 * l + 3]);
		cpu->brand[48] = '\0';
		/* Trim the padding some CPUs put around the name. */
		for (size_t i = strlen(cpu->brand); i && cpu->brand[i - 1] == ' ';)
			cpu->brand[--i] = '\0';
		if (cpu->brand[0] == ' ') {
			size_t s = strspn(cpu->brand, " ");

			memmove(cpu->brand, cpu->brand + s,
				strlen(cpu->brand + s) + 1);
		}
	}
}

bool bt_cpu_is_broadwell(const struct bt_cpu *cpu)
{
	if (cpu->vendor != BT_VENDOR_INTEL || cpu->family != 6)
		return false;
	switch (cpu->model) {
	case 0x3d: case 0x47: case 0x4f: case 0x56:
		return true;
	}
	return false;
}

/* --- config --- */

static int set_field(const struct bt_pmu *pmu, const char *name, uint64_t v,
		     uint64_t *config, struct btrace_error *err)
{
	const struct bt_pmu_field *f = bt_pmu_field(pmu, name);
	uint64_t mask;

	if (!f)
		return bt_error(err, -EINVAL,
				"%s: config term \"%s\" failed: no such format field in %s/format",
				pmu->name, name, pmu->path);
	if (f->config != 0)
		return bt_error(err, -EINVAL,
				"%s: config term \"%s\" failed: the field is in config%u, only config is supported",
				pmu->name, name, f->config);
	mask = field_mask(f);
	if (((v << f->lo) & ~mask) || (f->hi - f->lo < 63 &&
				       v >> (f->hi - f->lo + 1)))
		return bt_error(err, -EINVAL,
				"%s: config term \"%s=%" PRIu64 "\" failed: value does not fit bits %u-%u",
				pmu->name, name, v, f->lo, f->hi);
	*config = (*config & ~mask) | (v << f->lo);
	return 0;
}

void bt_pt_describe(const struct bt_pmu *pmu, uint64_t config,
		    struct bt_pt_config *out)
{
	memset(out, 0, sizeof(*out));
	out->config = config;
	out->pt = bt_pmu_field_get(pmu, "pt", config) != 0;
	out->tsc = bt_pmu_field_get(pmu, "tsc", config) != 0;
	out->mtc = bt_pmu_field_get(pmu, "mtc", config) != 0;
	out->cyc = bt_pmu_field_get(pmu, "cyc", config) != 0;
	out->noretcomp = bt_pmu_field_get(pmu, "noretcomp", config) != 0;
	out->branch = bt_pmu_field_get(pmu, "branch", config) != 0;
	out->mtc_period = (uint32_t)bt_pmu_field_get(pmu, "mtc_period", config);
	out->psb_period = (uint32_t)bt_pmu_field_get(pmu, "psb_period", config);
	out->cyc_thresh = (uint32_t)bt_pmu_field_get(pmu, "cyc_thresh", config);
}

int bt_pt_default_config(const struct bt_pmu *pmu, const struct bt_cpu *cpu,
			 struct bt_pt_config *out, struct btrace_error *err)
{
	uint64_t config = 0;
	uint32_t mtc_periods = 0, psb_periods = 0, v;
	int r;

	(void)cpu;
	if (!pmu->present)
		return bt_error(err, -ENOENT, "%s: config failed: PMU not present",
				pmu->name);
	if (bt_pmu_field(pmu, "tsc") &&
	    (r = set_field(pmu, "tsc", 1, &config, err)) < 0)
		return r;
	bt_pmu_cap(pmu, "mtc_periods", &mtc_periods);
	if (bt_pmu_cap(pmu, "mtc", &v) && v && bt_pmu_field(pmu, "mtc")) {
		int p = bt_pmu_pick_bit(mtc_periods, 3);

		if (p >= 0) {
			if ((r = set_field(pmu, "mtc", 1, &config, err)) < 0 ||
			    (r = set_field(pmu, "mtc_period", (uint64_t)p,
					   &config, err)) < 0)
				return r;
		}
	}
	if (bt_pmu_cap(pmu, "psb_cyc", &v) && v && mtc_periods &&
	    bt_pmu_cap(pmu, "psb_periods", &psb_periods) && psb_periods &&
	    bt_pmu_field(pmu, "psb_period")) {
		int p = bt_pmu_pick_bit(psb_periods, 3);

		if (p >= 0 && (r = set_field(pmu, "psb_period", (uint64_t)p,
					     &config, err)) < 0)
			return r;
	}
	if (bt_pmu_field(pmu, "pt") &&
	    (r = set_field(pmu, "pt", 1, &config, err)) < 0)
		return r;
	if (bt_pmu_field(pmu, "branch") &&
	    (r = set_field(pmu, "branch", 1, &config, err)) < 0)
		return r;
	bt_pt_describe(pmu, config, out);
	return 0;
}

int bt_pt_parse_config(const struct bt_pmu *pmu, const char *terms,
		       uint64_t *config, struct btrace_error *err)
{
	char buf[512], *save = NULL, *tok;
	uint64_t c = 0;
	int r;

	if (strlen(terms) >= sizeof(buf))
		return bt_error(err, -EINVAL, "%s: config failed: term list too long",
				pmu->name);
	strcpy(buf, terms);
	for (tok = strtok_r(buf, ",", &save); tok;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		uint64_t v = 1;

		while (isspace((unsigned char)*tok))
			tok++;
		if (eq) {
			char *end;

			*eq = '\0';
			errno = 0;
			v = strtoull(eq + 1, &end, 0);
			if (errno || end == eq + 1 || *end)
				return bt_error(err, -EINVAL,
						"%s: config term \"%s=%s\" failed: not a number",
						pmu->name, tok, eq + 1);
		}
		if (!*tok)
			continue;
		if (!strcmp(tok, "config")) {
			c = v;
			continue;
		}
		r = set_field(pmu, tok, v, &c, err);
		if (r < 0)
			return r;
	}
	*config = c;
	return 0;
}

static void list_bits(char *buf, size_t len, uint32_t bits)
{
	size_t n = 0;

	buf[0] = '\0';
	for (int i = 0; i < 32 && n < len; i++)
		if (bits & (1u << i))
			n += (size_t)snprintf(buf + n, len - n, "%s%d",
					      n ? "," : "", i);
	if (!bits)
		snprintf(buf, len, "none");
}

static int bad_value(const struct bt_pmu *pmu, const char *field,
		     uint64_t value, const char *cap, uint32_t allowed,
		     struct btrace_error *err)
{
	char list[128];

	list_bits(list, sizeof(list), allowed);
	bt_error(err, -EINVAL,
		 "%s: config check failed: %s=%" PRIu64 " is not valid on this CPU (caps/%s=%x allows %s)",
		 pmu->name, field, value, cap, allowed, list);
	return bt_hint(err, "choose one of the allowed %s values, or leave %s out",
		       field, field);
}

static int needs_cap(const struct bt_pmu *pmu, const char *field,
		     const char *cap, struct btrace_error *err)
{
	uint32_t v;

	if (bt_pmu_cap(pmu, cap, &v) && v)
		return 0;
	bt_error(err, -EINVAL,
		 "%s: config check failed: field %s is set but this CPU lacks caps/%s",
		 pmu->name, field, cap);
	return bt_hint(err, "remove %s from the config", field);
}

int bt_pt_validate(const struct bt_pmu *pmu, const struct bt_cpu *cpu,
		   uint64_t config, struct btrace_error *err)
{
	uint64_t known = 0, v;
	uint32_t allowed;
	int r;

	if (!pmu->present)
		return bt_error(err, -ENOENT, "%s: config check failed: PMU not present",
				pmu->name);
	for (unsigned i = 0; i < pmu->nfields; i++)
		if (pmu->fields[i].config == 0)
			known |= field_mask(&pmu->fields[i]);
	if (config & ~known) {
		int bit = __builtin_ctzll(config & ~known);

		bt_error(err, -EINVAL,
			 "%s: config check failed: config 0x%" PRIx64 " sets bit %d, which is no field of %s/format",
			 pmu->name, config, bit, pmu->path);
		return bt_hint(err, "use only the fields listed in %s/format",
			       pmu->path);
	}

	/* cyc, cyc_thresh and psb_period (RTIT_CTL_CYC_PSB). */
	if (config & (bt_pmu_field_mask(pmu, "cyc") |
		      bt_pmu_field_mask(pmu, "cyc_thresh") |
		      bt_pmu_field_mask(pmu, "psb_period"))) {
		const char *which = bt_pmu_field_get(pmu, "cyc", config) ? "cyc" :
			bt_pmu_field_get(pmu, "cyc_thresh", config) ? "cyc_thresh" :
			"psb_period";

		if ((r = needs_cap(pmu, which, "psb_cyc", err)) < 0)
			return r;
		bt_pmu_cap(pmu, "cycle_thresholds", &allowed);
		v = bt_pmu_field_get(pmu, "cyc_thresh", config);
		if (v && (v >= 32 || !(allowed & (1u << v))))
			return bad_value(pmu, "cyc_thresh", v, "cycle_thresholds",
					 allowed, err);
		bt_pmu_cap(pmu, "psb_periods", &allowed);
		v = bt_pmu_field_get(pmu, "psb_period", config);
		if (v && (v >= 32 || !(allowed & (1u << v))))
			return bad_value(pmu, "psb_period", v, "psb_periods",
					 allowed, err);
	}

	/* mtc and mtc_period (RTIT_CTL_MTC): value 0 must be listed too. */
	if (config & (bt_pmu_field_mask(pmu, "mtc") |
		      bt_pmu_field_mask(pmu, "mtc_period"))) {
		const char *which = bt_pmu_field_get(pmu, "mtc", config) ?
			"mtc" : "mtc_period";

		if ((r = needs_cap(pmu, which, "mtc", err)) < 0)
			return r;
		bt_pmu_cap(pmu, "mtc_periods", &allowed);
		v = bt_pmu_field_get(pmu, "mtc_period", config);
		if (v >= 32 || !(allowed & (1u << v)))
			return bad_value(pmu, "mtc_period", v, "mtc_periods",
					 allowed, err);
	}

	if (bt_pmu_field_get(pmu, "pwr_evt", config) &&
	    (r = needs_cap(pmu, "pwr_evt", "power_event_trace", err)) < 0)
		return r;
	if ((bt_pmu_field_get(pmu, "ptw", config) ||
	     bt_pmu_field_get(pmu, "fup_on_ptw", config)) &&
	    (r = needs_cap(pmu, bt_pmu_field_get(pmu, "ptw", config) ?
			   "ptw" : "fup_on_ptw", "ptwrite", err)) < 0)
		return r;
	if (bt_pmu_field_get(pmu, "event", config) &&
	    (r = needs_cap(pmu, "event", "event_trace", err)) < 0)
		return r;
	if (bt_pmu_field_get(pmu, "notnt", config) &&
	    (r = needs_cap(pmu, "notnt", "tnt_disable", err)) < 0)
		return r;

	if (bt_pmu_field_get(pmu, "pt", config)) {
		if (cpu && bt_cpu_is_broadwell(cpu) &&
		    !bt_pmu_field_get(pmu, "branch", config)) {
			bt_error(err, -EINVAL,
				 "%s: config check failed: pt is set without branch, which Broadwell does not allow (erratum BDM106)",
				 pmu->name);
			return bt_hint(err, "add branch to the config");
		}
	} else if (bt_pmu_field_get(pmu, "branch", config)) {
		bt_error(err, -EINVAL,
			 "%s: config check failed: branch is set without pt",
			 pmu->name);
		return bt_hint(err, "add pt, or leave both out (branch tracing is then always on)");
	}
	return 0;
}

/* --- system state --- */

#define BT_MAX_CPU_NUMBER 8192

int bt_parse_cpulist(const char *s)
{
	int count = 0;

	while (*s && *s != '\n') {
		char *end;
		long lo = strtol(s, &end, 10), hi;

		/* The kernel's NR_CPUS is at most 8192: anything larger is
		 * garbage, not a CPU number. */
		if (end == s || lo < 0 || lo >= BT_MAX_CPU_NUMBER)
			return -1;
		hi = lo;
		s = end;
		if (*s == '-') {
			hi = strtol(s + 1, &end, 10);
			if (end == s + 1 || hi < lo || hi >= BT_MAX_CPU_NUMBER)
				return -1;
			s = end;
		}
		count += (int)(hi - lo + 1);
		if (count > BT_MAX_CPU_NUMBER)
			return -1;
		if (*s == ',')
			s++;
		else if (*s && *s != '\n')
			return -1;
	}
	return count;
}

static int read_int_file(const char *path, long *out)
{
	char buf[64], *end;

	if (read_trimmed(path, buf, sizeof(buf)) < 0)
		return -1;
	errno = 0;
	*out = strtol(buf, &end, 10);
	return errno || end == buf ? -1 : 0;
}

void bt_sysinfo_read(const char *root, struct bt_sysinfo *si)
{
	char path[600], buf[256];
	struct utsname u;
	long v;

	memset(si, 0, sizeof(*si));
	root = root_or_default(root);
	if (read_int_file("/proc/sys/kernel/perf_event_paranoid", &v) == 0) {
		si->paranoid = (int)v;
		si->have_paranoid = true;
	} else {
		si->paranoid = 2;
	}
	si->mlock_kb = 516;
	if (read_int_file("/proc/sys/kernel/perf_event_mlock_kb", &v) == 0 &&
	    v >= 0)
		si->mlock_kb = (uint64_t)v;
	si->page_size = sysconf(_SC_PAGESIZE);
	snprintf(path, sizeof(path), "%s/devices/system/cpu/online", root);
	if (read_trimmed(path, buf, sizeof(buf)) == 0)
		si->online_cpus = bt_parse_cpulist(buf);
	if (si->online_cpus <= 0)
		si->online_cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
	snprintf(path, sizeof(path),
		 "%s/devices/system/cpu/vulnerabilities/meltdown", root);
	if (read_trimmed(path, buf, sizeof(buf)) == 0) {
		si->kpti_known = true;
		si->kpti = strstr(buf, "PTI") != NULL;
	}
	si->ptrace_scope = -1;
	if (read_int_file("/proc/sys/kernel/yama/ptrace_scope", &v) == 0)
		si->ptrace_scope = (int)v;
	if (uname(&u) == 0)
		snprintf(si->kernel, sizeof(si->kernel), "%s", u.release);
}
