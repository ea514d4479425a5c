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

/*
 * What each file of the tree is now: the tree is kept from one input to the
 * next and only the files whose content or kind changed are rewritten (a
 * mutation usually changes one chunk): the parsers still open and read
 * every file, the cost of rewriting the whole tree per input (some 70
 * system calls) is gone.
 */
enum { FZ_UNKNOWN, FZ_ABSENT, FZ_DIR, FZ_FILE };
static struct fz_state {
	int kind;
	size_t len;
	uint8_t *data;   /* FZ_FILE: its content (malloc'd) */
} fz_state[FZ_NFILES];

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

static void fz_remove(const char *path)
{
	if (unlink(path) && (errno == EISDIR || errno == EPERM))
		rmdir(path);
}

/* Make file @i absent (@kind FZ_ABSENT), a directory (FZ_DIR) or a file
 * holding @len bytes of @p (FZ_FILE), unless it already is. */
static void fz_put(size_t i, int kind, const uint8_t *p, size_t len)
{
	struct fz_state *st = &fz_state[i];
	char path[FZ_PATH];
	FILE *f;

	if (st->kind == kind && (kind != FZ_FILE ||
	    (st->len == len && (!len || !memcmp(st->data, p, len)))))
		return;
	snprintf(path, sizeof(path), "%s/%s", fz_root, fz_files[i]);
	if (st->kind != FZ_ABSENT &&
	    !(st->kind == FZ_FILE && kind == FZ_FILE))
		fz_remove(path);
	free(st->data);
	st->data = NULL;
	st->kind = FZ_UNKNOWN;
	if (kind == FZ_DIR) {
		if (mkdir(path, 0700))
			return;
	} else if (kind == FZ_FILE) {
		if (!(f = fopen(path, "wb")))
			return;
		size_t w = fwrite(p, 1, len, f);
		if (fclose(f) || w != len)
			return;
		st->data = malloc(len ? len : 1);
		if (!st->data)
			return;
		if (len)
			memcpy(st->data, p, len);
		st->len = len;
	}
	st->kind = kind;
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
	/* the parent directories, once (no file of the list is the parent
	 * of another) */
	for (size_t i = 0; i < FZ_NFILES; i++) {
		char path[FZ_PATH];

		snprintf(path, sizeof(path), "%s/%s", fz_root, fz_files[i]);
		mkdirs(path);
		fz_state[i].kind = FZ_ABSENT;
	}
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
	for (size_t i = 0; i <= FZ_NFILES; i++) {
		if (p > end) {
			/* past the input: the file is absent */
			if (i < FZ_NFILES)
				fz_put(i, FZ_ABSENT, NULL, 0);
			continue;
		}
		const uint8_t *nul = p < end ?
			memchr(p, 0, (size_t)(end - p)) : NULL;
		size_t len = nul ? (size_t)(nul - p) : (size_t)(end - p);

		if (i == FZ_NFILES) {
			snprintf(terms, sizeof(terms), "%.*s",
				 (int)(len < 599 ? len : 599), (const char *)p);
			break;
		}
		if (len && p[0] == 0x7f)
			fz_put(i, FZ_ABSENT, NULL, 0);
		else if (len && p[0] == 0x7e)
			fz_put(i, FZ_DIR, NULL, 0);
		else
			fz_put(i, FZ_FILE, p, len);
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
