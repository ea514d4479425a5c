/* SPDX-License-Identifier: MIT */
/* btrace export: convert a snapshot for other tools (perf.data, the
 * timeline in the Chrome Trace Event format). */
#include <getopt.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/decode.h>
#include <btrace/export.h>
#include <btrace/report.h>
#include <btrace/snapshot.h>

#include "cli.h"

static void usage(void)
{
	printf("usage: btrace export FILE --perf-data OUT [options]\n"
	       "       btrace export FILE --timeline OUT.json [options]\n\n"
	       "Write a perf.data file that perf script, perf report and perf "
	       "inject decode\nwith perf's own Intel PT (or Intel BTS) decoder, "
	       "and the code embedded in\nthe snapshot as a perf build-id "
	       "cache (OUT.symfs/.debug); or the timeline of\nevery thread in "
	       "the Chrome Trace Event format (Perfetto, chrome://tracing).\n\n"
	       "  -o, --perf-data OUT    the perf.data file to write\n"
	       "      --timeline OUT     the timeline (JSON) to write\n"
	       "      --last N           timeline: the last N call entries of "
	       "each thread\n"
	       "                         (default %d)\n"
	       "      --buildid-dir DIR  write the build-id cache to DIR "
	       "(default OUT.symfs/.debug)\n"
	       "      --no-cache         write no build-id cache\n"
	       "      --use-disk         cache the files on disk whose build ID "
	       "matches\n"
	       "                         (full files, with symbols) instead of "
	       "ELF files\n"
	       "                         rebuilt from the embedded code\n"
	       "      --tid TID          only this thread's trace\n"
	       "      --chunk SIZE       bytes per AUXTRACE record (default "
	       "1M)\n"
	       "  -f, --force            replace OUT if it exists\n"
	       "      --lenient          read a damaged snapshot, skipping bad "
	       "sections\n"
	       "  -q, --quiet            print nothing on success\n"
	       "  -h, --help             this text\n\n"
	       "Then: perf script --symfs OUT.symfs -i OUT --itrace=i0nse\n",
	       CLI_TIMELINE_LAST);
	cli_help_end(stdout, "export");
}

/* --timeline OUT: decode, build the report, write its timeline. */
static int export_timeline(const struct btrace_snapshot *snap,
			   const char *path, const char *out, int32_t tid,
			   uint64_t last, uint32_t flags, int quiet)
{
	struct btrace_decode_opts d = { .sz = sizeof(d), .tid = tid };
	struct btrace_decode_result *r;
	struct btrace_report *rep;
	struct btrace_error err;
	char dir[PATH_MAX], *buf = NULL;
	size_t len = 0;
	FILE *m;
	int rc;

	cli_snapshot_dir(path, dir);
	cli_decode_env(&d, dir);
	rc = cli_timeline_decode("export", snap, &d, last, &r, &rep);
	if (rc)
		return rc;
	m = open_memstream(&buf, &len);
	if (m)
		cli_timeline_chrome(m, rep);
	if (!m || fflush(m) || ferror(m))
		rc = cli_failf("export", NULL, "%s: write the timeline failed: "
			       "out of memory", out);
	else if (btrace_export_file(out, buf, len, flags, &err) < 0)
		rc = cli_fail("export", &err);
	else if (!quiet)
		printf("wrote %s: the timeline of %zu thread%s, %s (Perfetto: "
		       "ui.perfetto.dev, Open trace file; or chrome://tracing)\n",
		       out, rep->nthreads, rep->nthreads == 1 ? "" : "s",
		       rep->timeline_timed ? "in time" : "by instructions per "
		       "thread (no times in the trace)");
	if (m)
		fclose(m);
	free(buf);
	btrace_report_free(rep);
	btrace_decode_result_free(r);
	return rc;
}

int cmd_export(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "perf-data", required_argument, NULL, 'o' },
		{ "timeline", required_argument, NULL, 'T' },
		{ "last", required_argument, NULL, 'L' },
		{ "buildid-dir", required_argument, NULL, 'b' },
		{ "no-cache", no_argument, NULL, 'n' },
		{ "use-disk", no_argument, NULL, 'd' },
		{ "tid", required_argument, NULL, 't' },
		{ "chunk", required_argument, NULL, 'c' },
		{ "force", no_argument, NULL, 'f' },
		{ "lenient", no_argument, NULL, 'l' },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct btrace_export_opts opts = { .sz = sizeof(opts) };
	struct btrace_export_result *res;
	struct btrace_snapshot *snap = NULL;
	struct btrace_error err = { 0 };
	const char *out = NULL, *tl = NULL;
	uint64_t last = CLI_TIMELINE_LAST;
	unsigned int rflags = 0;
	const char *itrace;
	int quiet = 0, c, rc;
	uint64_t v;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:fqh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'T':
			tl = optarg;
			break;
		case 'L':
			if (cli_parse_u64(optarg, &last) || !last)
				return cli_usage("export", "--last: '%s' is not a positive number",
						 optarg);
			break;
		case 'b':
			opts.buildid_dir = optarg;
			break;
		case 'n':
			opts.flags |= BTRACE_EXPORT_NO_CACHE;
			break;
		case 'd':
			opts.flags |= BTRACE_EXPORT_USE_DISK;
			break;
		case 't':
			if (cli_parse_u64(optarg, &v) || !v || v > 0x7fffffff)
				return cli_usage("export", "--tid: not a thread id: '%s'",
						 optarg);
			opts.tid = (int32_t)v;
			break;
		case 'c':
			if (cli_parse_size(optarg, &v) || v < 64)
				return cli_usage("export", "--chunk: not a size of at least 64 bytes: '%s'",
						 optarg);
			opts.max_chunk = v;
			break;
		case 'f':
			opts.flags |= BTRACE_EXPORT_FORCE;
			break;
		case 'l':
			rflags |= BTRACE_READ_LENIENT;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'h':
			usage();
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("export", c, argv);
		}
	}
	if (optind >= argc)
		return cli_usage("export", "no snapshot FILE given");
	if (optind + 1 < argc)
		return cli_usage("export", "unexpected argument '%s'",
				 argv[optind + 1]);
	if (!out && !tl)
		return cli_usage("export", "no output given: --perf-data OUT or "
				 "--timeline OUT.json is required");
	if ((opts.flags & BTRACE_EXPORT_NO_CACHE) && opts.buildid_dir)
		return cli_usage("export", "--no-cache and --buildid-dir exclude each other");

	rc = btrace_snapshot_read(argv[optind], rflags, &snap, &err);
	if (rc < 0)
		return cli_fail("export", &err);
	if (tl) {
		rc = export_timeline(snap, argv[optind], tl, opts.tid, last,
				     opts.flags & BTRACE_EXPORT_FORCE, quiet);
		if (rc || !out) {
			btrace_snapshot_free(snap);
			return rc;
		}
	}
	res = calloc(1, sizeof(*res));
	if (!res) {
		btrace_snapshot_free(snap);
		return cli_failf("export", NULL, "out of memory");
	}
	res->sz = sizeof(*res);
	rc = btrace_export_perf_data(snap, out, &opts, res, &err);
	btrace_snapshot_free(snap);
	if (rc < 0) {
		free(res);
		return cli_fail("export", &err);
	}
	for (uint32_t i = 0; i < res->nnotes; i++)
		fprintf(stderr, "btrace export: note: %s\n", cli_esc(res->notes[i]));
	if (!quiet) {
		printf("wrote %s: %u trace buffer%s in %llu AUXTRACE record%s "
		       "(%llu bytes), %u mmap%s\n",
		       out, res->nbuffers, res->nbuffers == 1 ? "" : "s",
		       (unsigned long long)res->nchunks,
		       res->nchunks == 1 ? "" : "s",
		       (unsigned long long)res->trace_bytes, res->nmmaps,
		       res->nmmaps == 1 ? "" : "s");
		if (res->dropped_bytes)
			printf("dropped %llu bytes before the first sync point\n",
			       (unsigned long long)res->dropped_bytes);
		itrace = res->trace_kind == BTRACE_TRACE_BTS ?
			 "--itrace=be -F ip,addr,sym" : "--itrace=i0nse";
		if (res->buildid_dir[0]) {
			printf("build-id cache %s: %u file%s (%u rebuilt from "
			       "the embedded code)\n",
			       res->buildid_dir, res->nbinaries,
			       res->nbinaries == 1 ? "" : "s", res->nrebuilt);
			if (res->symfs_dir[0])
				printf("decode with the snapshot's code only:\n"
				       "  perf script --symfs %s -i %s %s\n",
				       res->symfs_dir, out, itrace);
			printf("decode with this machine's files where their "
			       "build ID matches (symbols):\n"
			       "  perf --buildid-dir %s script -i %s %s\n",
			       res->buildid_dir, out, itrace);
		} else {
			printf("decode with:\n  perf script -i %s %s "
			       "[--symfs DIR]\n", out, itrace);
		}
	}
	free(res);
	return CLI_EXIT_OK;
}
