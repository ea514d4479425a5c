/* SPDX-License-Identifier: MIT */
/*
 * decode-bench: time decoding a snapshot's first buffer.
 *
 *   decode-bench raw FILE      libipt alone: pt_blk_next over the same bytes,
 *                              image from the files on disk through an image
 *                              section cache, as btrace's (the baseline)
 *   decode-bench full FILE     btrace_decode() of the whole buffer the way
 *                              `btrace report --full` does: every block
 *                              analysed (call history, stack, fault), the
 *                              last 24 calls and blocks kept with symbols
 *                              (opts.keep: bounded memory)
 *   decode-bench all FILE      the same, keeping every block and call in
 *                              the result (what `btrace decode` prints)
 *   decode-bench tail FILE N   btrace_decode() of the last N calls (what
 *                              btrace report decodes by default: N = 24)
 *
 * Prints "<mode> <seconds> <instructions>"; the snapshot is read before the
 * clock starts.  Best of @BENCH_RUNS (default 3) runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <intel-pt.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static __attribute__((noinline)) int run_raw(const struct btrace_snapshot *s, uint64_t *ninsn)
{
	const struct btrace_buffer *b = &s->buffers[0];
	struct pt_image *img = pt_image_alloc("bench");
	struct pt_image_section_cache *isc = pt_iscache_alloc("bench");
	struct pt_config cfg;
	struct pt_block_decoder *d;
	int st;

	for (size_t i = 0; i < s->nmappings; i++) {
		const struct btrace_mapping *m = &s->mappings[i];
		if (!(m->prot & 4) || !m->path || m->path[0] != '/')
			continue;
		int isid = pt_iscache_add_file(isc, m->path, m->pgoff,
					       m->end - m->start, m->start);
		if (isid >= 0)
			pt_image_add_cached(img, isc, isid, NULL);
	}
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)b->data;
	cfg.end = (uint8_t *)b->data + b->size;
	d = pt_blk_alloc_decoder(&cfg);
	pt_blk_set_image(d, img);
	*ninsn = 0;
	for (;;) {
		st = pt_blk_sync_forward(d);
		if (st < 0)
			break;
		for (;;) {
			struct pt_block blk;
			while (st & pts_event_pending) {
				struct pt_event ev;
				st = pt_blk_event(d, &ev, sizeof(ev));
				if (st < 0)
					break;
			}
			if (st < 0 || (st & pts_eos))
				break;
			st = pt_blk_next(d, &blk, sizeof(blk));
			*ninsn += blk.ninsn;
			if (st < 0)
				break;
		}
		if (st >= 0 || pt_errcode(st) == pte_eos)
			break;
	}
	pt_blk_free_decoder(d);
	pt_image_free(img);
	pt_iscache_free(isc);
	return 0;
}

static int run_ours(const struct btrace_snapshot *s, uint64_t last,
		    uint64_t keep, uint64_t *ninsn)
{
	struct btrace_decode_opts o = { .sz = sizeof(o) };
	struct btrace_decode_result *r;
	struct btrace_error err;

	if (last) {
		o.last = last;
		o.unit = BTRACE_UNIT_CALLS;
	} else {
		o.flags = BTRACE_DECODE_FULL;
		o.unit = BTRACE_UNIT_CALLS;
		o.keep = keep;
	}
	if (btrace_decode(s, &o, &r, &err) < 0) {
		fprintf(stderr, "decode-bench: %s\n", err.msg);
		return -1;
	}
	*ninsn = r->nthreads ? r->threads[0].ninsn : 0;
	btrace_decode_result_free(r);
	return 0;
}

int main(int argc, char **argv)
{
	struct btrace_snapshot *s;
	struct btrace_error err;
	int runs = getenv("BENCH_RUNS") ? atoi(getenv("BENCH_RUNS")) : 3;
	double best = 1e9;
	uint64_t n = 0;

	if (argc < 3) {
		fprintf(stderr, "usage: decode-bench raw|full|all|tail FILE [N]\n");
		return 2;
	}
	if (btrace_snapshot_read(argv[2], 0, &s, &err) < 0 || !s->nbuffers) {
		fprintf(stderr, "decode-bench: %s\n", err.msg);
		return 1;
	}
	for (int i = 0; i < runs; i++) {
		double t0 = now();
		int rc;
		if (!strcmp(argv[1], "raw"))
			rc = run_raw(s, &n);
		else
			rc = run_ours(s, !strcmp(argv[1], "tail") ?
				      strtoull(argc > 3 ? argv[3] : "24", NULL, 0) : 0,
				      !strcmp(argv[1], "full") ? 24 : 0, &n);
		if (rc < 0)
			return 1;
		double dt = now() - t0;
		if (dt < best)
			best = dt;
	}
	printf("%s %.6f %llu\n", argv[1], best, (unsigned long long)n);
	btrace_snapshot_free(s);
	return 0;
}
