/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the sysfs parsers of src/capture/pmu.c.  The input is a
 * sysfs tree: NUL-separated chunks, the i-th chunk the content of the i-th
 * file of fz_files[] (a chunk starting with 0x7f leaves the file out, one
 * starting with 0x7e makes it a directory).  The last chunk is a config
 * term list.  The tree is written under a private temporary root, then
 * read with bt_pmu_read() and bt_sysinfo_read() and used to build, parse
 * and validate intel_pt configs.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pmu.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define PMU "bus/event_source/devices/intel_pt/"

static const char *const fz_files[] = {
	PMU "type",
	PMU "format/pt", PMU "format/tsc", PMU "format/mtc",
	PMU "format/mtc_period", PMU "format/psb_period", PMU "format/cyc",
	PMU "format/cyc_thresh", PMU "format/branch", PMU "format/noretcomp",
	PMU "format/ptw", PMU "format/pwr_evt",
	PMU "caps/psb_cyc", PMU "caps/mtc", PMU "caps/mtc_periods",
	PMU "caps/psb_periods", PMU "caps/cycle_thresholds", PMU "caps/ptwrite",
	PMU "caps/power_event_trace",
	PMU "max_nonturbo_ratio", PMU "tsc_art_ratio", PMU "nr_addr_filters",
	"devices/system/cpu/online",
	"devices/system/cpu/vulnerabilities/meltdown",
};
#define FZ_NFILES (sizeof(fz_files) / sizeof(fz_files[0]))

#define FZ_PATH 1024
static char fz_root[512];

static void mkdirs(const char *path)
{
	char p[FZ_PATH];

	strcpy(p, path);
	for (char *s = p + strlen(fz_root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(p, 0700);
		*s = '/';
	}
}

static void clear(void)
{
	char p[FZ_PATH];

	for (size_t i = 0; i < FZ_NFILES; i++) {
		snprintf(p, sizeof(p), "%s/%s", fz_root, fz_files[i]);
		if (unlink(p) && errno == EISDIR)
			rmdir(p);
		else if (errno == EPERM)
			rmdir(p);
	}
}

static void cleanup(void)
{
	char cmd[sizeof(fz_root) + 16];

	if (fz_root[0]) {
		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", fz_root);
		if (system(cmd))
			fprintf(stderr, "fuzz-sysfs: cannot remove %s\n", fz_root);
	}
}

/* The tree is rewritten for every input: on a tmpfs (/dev/shm when there
 * is one; BT_FUZZ_TMPDIR or TMPDIR override it) that costs far less than
 * on a disk file system. */
static int setup(void)
{
	const char *tmp = getenv("BT_FUZZ_TMPDIR");
	struct stat st;

	if (!tmp || !*tmp)
		tmp = getenv("TMPDIR");
	if ((!tmp || !*tmp) && !stat("/dev/shm", &st) && S_ISDIR(st.st_mode) &&
	    !access("/dev/shm", W_OK))
		tmp = "/dev/shm";

	snprintf(fz_root, sizeof(fz_root), "%.400s/fuzz-sysfs-XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(fz_root)) {
		perror(fz_root);
		abort();
	}
	atexit(cleanup);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int ready;
	const uint8_t *p = data, *end = data + size;
	char terms[600] = "";
	struct btrace_error err;
	struct bt_pt_config pc;
	struct bt_sysinfo si;
	struct bt_pmu pmu;
	struct bt_cpu cpu;
	uint64_t config = 0;

	if (!ready)
		ready = !setup();
	clear();
	for (size_t i = 0; i <= FZ_NFILES && p <= end; i++) {
		const uint8_t *nul = memchr(p, 0, (size_t)(end - p));
		size_t len = nul ? (size_t)(nul - p) : (size_t)(end - p);
		char path[FZ_PATH];
		FILE *f;

		if (i == FZ_NFILES) {
			snprintf(terms, sizeof(terms), "%.*s",
				 (int)(len < 599 ? len : 599), (const char *)p);
			break;
		}
		snprintf(path, sizeof(path), "%s/%s", fz_root, fz_files[i]);
		mkdirs(path);
		if (len && p[0] == 0x7f) {
			/* absent */
		} else if (len && p[0] == 0x7e) {
			mkdir(path, 0700);
		} else if ((f = fopen(path, "wb"))) {
			fwrite(p, 1, len, f);
			fclose(f);
		}
		p += len + 1;
	}

	memset(&cpu, 0, sizeof(cpu));
	cpu.vendor = BT_VENDOR_INTEL;
	cpu.family = 6;
	cpu.model = size & 1 ? 0x3d : 0x8f;
	cpu.has_pt = true;

	bt_sysinfo_read(fz_root, &si);
	if (bt_pmu_read(fz_root, "intel_pt", &pmu, &err) == 0) {
		uint32_t v;

		bt_pmu_cap(&pmu, "mtc_periods", &v);
		if (bt_pt_default_config(&pmu, &cpu, &pc, &err) == 0)
			bt_pt_validate(&pmu, &cpu, pc.config, &err);
		if (bt_pt_parse_config(&pmu, terms, &config, &err) == 0) {
			bt_pt_validate(&pmu, &cpu, config, &err);
			bt_pt_describe(&pmu, config, &pc);
		}
	}
	bt_pmu_explain_absent("intel_pt", &cpu, &si, false, &err);
	bt_pmu_explain_absent("intel_bts", &cpu, &si, true, &err);
	bt_parse_cpulist(terms);
	return 0;
}
