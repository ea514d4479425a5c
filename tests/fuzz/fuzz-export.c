/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: perf.data export of any snapshot the salvaging reader
 * accepts, build-id cache included.  Checked besides the sanitizers: a
 * failed export leaves nothing behind in its directory, and nothing it
 * writes is larger than the input allows (the bytes a snapshot's code and
 * trace can fill, plus headers: no multi-GiB file from a crafted offset).
 */
#include <ftw.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <btrace/export.h>
#include <btrace/snapshot.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];
static uint64_t biggest, entries;

static int visit(const char *p, const struct stat *st, int type,
		 struct FTW *f)
{
	(void)p;
	(void)type;
	if (f->level > 0)
		entries++;
	if (S_ISREG(st->st_mode) && (uint64_t)st->st_size > biggest)
		biggest = (uint64_t)st->st_size;
	return 0;
}

static int rm(const char *p, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)type;
	if (f->level > 0)
		remove(p);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct btrace_export_opts o = { .sz = sizeof(o),
					.flags = BTRACE_EXPORT_FORCE };
	struct btrace_export_result *res;
	struct btrace_snapshot *s;
	struct btrace_error err;
	char out[128];
	int rc;

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/bt-fuzz-export-XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	if (btrace_snapshot_read_mem(data, size, BTRACE_READ_LENIENT, &s, &err))
		return 0;
	res = calloc(1, sizeof(*res));
	if (!res)
		abort();
	snprintf(out, sizeof(out), "%s/out.data", dir);
	rc = btrace_export_perf_data(s, out, &o, res, &err);
	biggest = entries = 0;
	nftw(dir, visit, 16, FTW_PHYS);
	if (rc && entries) {
		fprintf(stderr, "export failed (%s) but left %llu entries in %s\n",
			err.msg, (unsigned long long)entries, dir);
		abort();
	}
	/* 4 GiB: the reader's bound on where a code section may end */
	if (biggest > (4ull << 30) + (1u << 20)) {
		fprintf(stderr, "export wrote a %llu-byte file\n",
			(unsigned long long)biggest);
		abort();
	}
	nftw(dir, rm, 16, FTW_DEPTH | FTW_PHYS);
	free(res);
	btrace_snapshot_free(s);
	return 0;
}
