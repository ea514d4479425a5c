/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer targets over a whole snapshot file, from the reader to what
 * the commands make of it (snapmut.c, the custom mutator of their
 * libFuzzer builds, keeps the files past the reader's checksums):
 *   FUZZ_VALUES    the decoder, then the value recovery of every thread
 *                  (decoder/values.c: the access log, folds, memory)
 *   FUZZ_REPORT    the report model (decoder/report.c, analyze.c, the
 *                  origin) and its text and JSON (src/cli/cmd-report.c)
 *   FUZZ_VIEW      the timeline (src/cli/timeline.c: the Chrome Trace
 *                  Event JSON) and the HTML page (src/cli/cmd-view.c),
 *                  which must hold its two script elements, no more
 * Code comes from the snapshot only (no disk, no symbol files): what the
 * file says, nothing of the machine that runs the target.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/decode.h>
#include <btrace/report.h>
#include <btrace/snapshot.h>
#include <btrace/values.h>

#include "cli.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t fz_sink;
static FILE *devnull;

#ifdef FUZZ_VALUES
static void values(const struct btrace_decode_result *r)
{
	for (size_t i = 0; i < r->nthreads; i++) {
		struct btrace_values *v;
		struct btrace_error err;
		uint64_t val;

		if (btrace_values_build(r, i, 0, &v, &err) < 0) {
			fz_sink += strlen(err.msg);
			continue;
		}
		for (size_t k = 0; k <= v->ninsn; k++)
			for (unsigned reg = 0; reg < BTRACE_NVREGS; reg++)
				if (btrace_values_get(v, k, reg, &val))
					fz_sink += val;
		for (size_t k = 0; k < v->origin.nchain; k++)
			fz_sink += v->origin.chain[k].ip;
		btrace_values_free(v);
	}
}
#endif

#ifdef FUZZ_VIEW
/* The page holds its two script elements and no third: nothing the
 * snapshot says closed one early or opened another. */
static void check_page(const struct btrace_report *rep)
{
	char *page = NULL;
	size_t len = 0, open = 0, close = 0;
	FILE *f = open_memstream(&page, &len);

	if (!f || cli_view_page(f, "fuzz.btrace", rep) < 0 || fclose(f))
		abort();
	for (const char *p = page; (p = strcasestr(p, "<script")); p++)
		open++;
	for (const char *p = page; (p = strcasestr(p, "</script")); p++)
		close++;
	if (open != 2 || close != 2)
		abort();
	free(page);
}
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct btrace_decode_opts o = { .sz = sizeof(o) };
	struct btrace_decode_result *r = NULL;
	struct btrace_snapshot *s;
	struct btrace_error err;

	if (!devnull) {
		devnull = fopen("/dev/null", "w");
		if (!devnull)
			abort();
		setvbuf(devnull, NULL, _IOFBF, 1 << 20);
	}
	if (btrace_snapshot_read_mem(data, size, BTRACE_READ_LENIENT, &s, &err))
		return 0;
	o.flags = BTRACE_DECODE_NO_DISK | BTRACE_DECODE_NO_SYMS;
	o.unit = BTRACE_UNIT_CALLS;
#ifdef FUZZ_VIEW
	o.last = o.keep = 64;
#else
	o.last = o.keep = 24;
#endif
	if (btrace_decode(s, &o, &r, &err) < 0) {
		fz_sink += strlen(err.msg);
		btrace_snapshot_free(s);
		return 0;
	}
#ifdef FUZZ_VALUES
	values(r);
#else
	struct btrace_report *rep;

	if (btrace_report_build(s, r, &rep, &err) == 0) {
#ifdef FUZZ_REPORT
		cli_report_text(devnull, "fuzz.btrace", rep, 16, 16);
		cli_report_json(devnull, rep, 16, 16);
#else
		cli_timeline_chrome(devnull, rep);
		check_page(rep);
#endif
		btrace_report_free(rep);
	} else {
		fz_sink += strlen(err.msg);
	}
#endif
	btrace_decode_result_free(r);
	btrace_snapshot_free(s);
	return 0;
}
