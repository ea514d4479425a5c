/* SPDX-License-Identifier: MIT */
/*
 * End to end through the AUX ring simulator with real streams: a real
 * program (crash-loop) is single-stepped to its crash (tests/decode/gen.c),
 * its true path encoded as Intel PT and as BTS by the software encoder
 * (src/encode), and the stream is written by the simulated hardware into
 * an overwrite-mode AUX ring (aux-sim.h, the kernel's rules as written),
 * stopping now and then as sched-out does.  After the last stop the
 * engine's ring code (bt_aux_buffer) makes the snapshot buffer, the
 * snapshot writer stores it, and the decoder must return the true path
 * for the part the ring kept: wrapped and not, wrapped exactly, BTS with
 * the DS index published at the base or at the trimmed end.  The BTS
 * snapshots are also exported to perf.data, and a snapshot in the layout
 * btrace wrote before it knew the trimmed end is still read right.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <btrace/decode.h>
#include <btrace/export.h>
#include <btrace/snapshot.h>

#include "../decode/gen.h"
#include "aux-sim.h"
#include "bt-test.h"
#include "capture/aux-ring.h"
#include "util.h"

#define PS 4096ull

static char tmpdir[256];

struct src {
	struct gen_truth truth;
	struct btrace_snapshot *snap;   /* the whole stream, never wrapped */
	const uint8_t *stream;
	uint64_t len;
};

static struct src pt_src, bts_src;
static int have_pt, have_bts;

static int load(struct src *s, int bts)
{
	const char *prog = getenv("BT_PROG_LOOP");
	/* PT without return compression, so that the stream is several
	 * pages long; BTS has a record per taken branch anyway */
	char *argv[3] = { (char *)prog, (char *)(bts ? "1500" : "4000"), NULL };
	char path[512], eb[512];
	struct gen_opts o = { 0 };
	struct btrace_error err;

	if (!prog || !*prog) {
		bt_test_diag("BT_PROG_LOOP not set");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/full-%s.btrace", tmpdir,
		 bts ? "bts" : "pt");
	o.argv = argv;
	o.out = path;
	o.bts = bts;
	o.retcomp = 0;
	o.psb_period = 256;
	if (gen_run(&o, &s->truth, eb, sizeof(eb))) {
		bt_test_diag("generator: %s", eb);
		return -1;
	}
	if (btrace_snapshot_read(path, 0, &s->snap, &err) < 0 ||
	    s->snap->nbuffers != 1) {
		bt_test_diag("read %s failed", path);
		return -1;
	}
	s->stream = s->snap->buffers[0].data;
	s->len = s->snap->buffers[0].size;
	return 0;
}

/* A snapshot like @orig (config, tasks, mappings, code, signal) with one
 * buffer: from the simulated ring (@ring, @aux_head) or, with @raw, those
 * bytes as they are. */
static int write_snap(const char *path, const struct btrace_snapshot *orig,
		      uint32_t kind, const uint8_t *ring, uint64_t ring_size,
		      uint64_t aux_head, const struct btrace_buffer *raw)
{
	struct btrace_writer *w = NULL;
	struct btrace_error err;
	struct btrace_buffer b;
	int rc;

	unlink(path);
	rc = btrace_writer_open(path, 0, &w, &err);
	if (rc < 0)
		return rc;
	rc = btrace_writer_set_config(w, &orig->config, &err);
	memset(&b, 0, sizeof(b));
	b.tid = orig->buffers[0].tid;
	b.cpu = -1;
	if (!rc && raw) {
		rc = btrace_writer_add_buffer(w, raw, &err);
	} else if (!rc) {
		bt_aux_buffer(kind, ring, ring_size, aux_head, &b);
		b.requested_size = ring_size;
		rc = btrace_writer_add_ring(w, &b, ring, &err);
	}
	for (size_t i = 0; !rc && i < orig->ntasks; i++)
		rc = btrace_writer_add_task(w, &orig->tasks[i], &err);
	for (size_t i = 0; !rc && i < orig->nmappings; i++)
		rc = btrace_writer_add_mapping(w, &orig->mappings[i], &err);
	for (size_t i = 0; !rc && i < orig->ncode; i++)
		rc = btrace_writer_add_code(w, &orig->code[i], &err);
	if (!rc && orig->signal)
		rc = btrace_writer_set_signal(w, orig->signal, &err);
	if (!rc)
		return btrace_writer_commit(w, &err);
	btrace_writer_free(w);
	return rc;
}

/* The decoded instructions of thread 0 of the snapshot at @path. */
static int decode_ips(const char *path, uint64_t **ips, size_t *n)
{
	struct btrace_snapshot *snap = NULL;
	struct btrace_decode_result *res = NULL;
	struct btrace_error err;
	size_t cap = 0;
	int rc = -1;

	*ips = NULL;
	*n = 0;
	if (btrace_snapshot_read(path, 0, &snap, &err) < 0)
		return -1;
	if (btrace_decode(snap, NULL, &res, &err) < 0 || !res->nthreads)
		goto out;
	const struct btrace_thread *t = &res->threads[0];
	for (size_t i = 0; i < t->nblocks; i++) {
		const struct btrace_block *b = &t->blocks[i];
		struct btrace_insn *in;
		int k;

		if (b->kind != BTRACE_ITEM_BLOCK)
			continue;
		in = calloc(b->ninsn + 1, sizeof(*in));
		k = btrace_decode_block_insns(res, b, in, b->ninsn);
		if (k != (int)b->ninsn) {
			free(in);
			goto out;
		}
		if (*n + (size_t)k > cap) {
			cap = (*n + (size_t)k) * 2;
			*ips = realloc(*ips, cap * sizeof(**ips));
		}
		for (int j = 0; j < k; j++)
			(*ips)[(*n)++] = in[j].ip;
		free(in);
	}
	rc = 0;
out:
	btrace_decode_result_free(res);
	btrace_snapshot_free(snap);
	return rc;
}

/* @ips must be the end of the true path. */
static bool is_truth_tail(const struct gen_truth *tr, const uint64_t *ips,
			  size_t n)
{
	if (!n || n > tr->n)
		return false;
	for (size_t i = 0; i < n; i++)
		if (ips[i] != tr->ip[tr->n - n + i]) {
			bt_test_diag("decoded[%zu] 0x%llx, truth 0x%llx", i,
				     (unsigned long long)ips[i],
				     (unsigned long long)tr->ip[tr->n - n + i]);
			return false;
		}
	return true;
}

static const uint8_t psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
				 0x02, 0x82, 0x02, 0x82, 0x02, 0x82, 0x02, 0x82 };

/* PT: write @pad PAD bytes (hardware PAD packets), then the whole
 * stream, stopping every @stop_every bytes; decode what the ring kept and
 * compare with the truth and with the stream decoded from the first PSB
 * the ring kept. */
static void pt_case(struct bt_test *t, enum aux_sim_pmu pmu, uint64_t ring,
		    uint64_t pad, uint64_t stop_every, bool expect_wrap,
		    bool expect_head_zero)
{
	struct aux_sim_host h;
	struct aux_sim s;
	char path[512], ref[512];
	uint64_t *ips = NULL, *rips = NULL, kept, q;
	size_t n = 0, rn = 0;
	struct btrace_buffer rb;
	const uint8_t *p;
	uint8_t zero = 0;

	snprintf(path, sizeof(path), "%s/pt-%llu-%llu.btrace", tmpdir,
		 (unsigned long long)ring, (unsigned long long)pad);
	snprintf(ref, sizeof(ref), "%s/pt-ref.btrace", tmpdir);
	aux_sim_host_default(&h);
	aux_sim_init(&s, pmu, &h);
	s.sample_id_all = true;
	BT_REQUIRE(t, aux_sim_mmap_data(&s, 9 * PS, true) == 0);
	aux_sim_set_aux_area(&s, 9 * PS, ring);
	BT_REQUIRE(t, aux_sim_mmap_aux(&s, ring, 9 * PS, false) == 0);
	aux_sim_start(&s);
	for (uint64_t i = 0; i < pad; i++)
		aux_sim_write(&s, &zero, 1);
	for (uint64_t i = 0; i < pt_src.len; i += stop_every) {
		uint64_t k = pt_src.len - i < stop_every ? pt_src.len - i : stop_every;

		aux_sim_write(&s, pt_src.stream + i, k);
		aux_sim_stop(&s);
		aux_sim_start(&s);
	}
	aux_sim_stop(&s);
	BT_EQ_INT(t, expect_head_zero, aux_sim_aux_head(&s) == 0);
	BT_REQUIRE(t, write_snap(path, pt_src.snap, BTRACE_TRACE_PT, s.aux,
				 ring, aux_sim_aux_head(&s), NULL) == 0);
	{
		struct btrace_snapshot *snap = NULL;
		struct btrace_error err;

		BT_REQUIRE(t, btrace_snapshot_read(path, 0, &snap, &err) == 0);
		BT_EQ_INT(t, expect_wrap,
			  !!(snap->buffers[0].flags & BTRACE_BUF_WRAPPED));
		BT_EQ_U64(t, expect_wrap ? ring : pad + pt_src.len,
			  snap->buffers[0].size);
		btrace_snapshot_free(snap);
	}
	BT_REQUIRE(t, decode_ips(path, &ips, &n) == 0);
	BT_CHECK(t, is_truth_tail(&pt_src.truth, ips, n));
	/* the reference: the stream from the first PSB the ring kept */
	kept = expect_wrap ? ring : pad + pt_src.len;
	q = kept >= pt_src.len ? 0 : pt_src.len - kept;
	p = memmem(pt_src.stream + q, pt_src.len - q, psb, sizeof(psb));
	BT_REQUIRE(t, p != NULL);
	memset(&rb, 0, sizeof(rb));
	rb.kind = BTRACE_TRACE_PT;
	rb.tid = pt_src.snap->buffers[0].tid;
	rb.cpu = -1;
	rb.data = p;
	rb.size = pt_src.len - (uint64_t)(p - pt_src.stream);
	rb.ring_size = rb.head = rb.size;
	BT_REQUIRE(t, write_snap(ref, pt_src.snap, BTRACE_TRACE_PT, NULL, 0, 0,
				 &rb) == 0);
	BT_REQUIRE(t, decode_ips(ref, &rips, &rn) == 0);
	BT_EQ_U64(t, rn, n);
	BT_CHECK(t, rn > 0 && n == rn && !memcmp(rips, ips, n * sizeof(*ips)));
	bt_test_diag("PT ring %llu KiB, %llu pad bytes: %zu of %llu instructions kept",
		     (unsigned long long)(ring >> 10), (unsigned long long)pad,
		     n, (unsigned long long)pt_src.truth.n);
	free(ips);
	free(rips);
	aux_sim_fini(&s);
}

static uint64_t pow2_pages_at_least(uint64_t bytes)
{
	uint64_t r = PS;

	while (r < bytes)
		r *= 2;
	return r;
}

static void test_pt_not_wrapped(struct bt_test *t)
{
	BT_REQUIRE(t, have_pt);
	pt_case(t, AUX_SIM_PT, pow2_pages_at_least(pt_src.len + 1), 0, 1000,
		false, false);
}

static void test_pt_wrapped(struct bt_test *t)
{
	uint64_t ring = PS;

	BT_REQUIRE(t, have_pt);
	BT_REQUIRE(t, pt_src.len > 4 * ring && pt_src.len % ring);
	pt_case(t, AUX_SIM_PT, ring, 0, 1000, true, false);
	pt_case(t, AUX_SIM_PT_NO_SG, 2 * ring, 0, 777, true, false);
}

/* The hardware wrote exactly a whole number of rings: head 0, and the
 * ring is full (twice round, and once with the stream shorter than the
 * ring after PAD packets). */
static void test_pt_wrapped_exactly(struct bt_test *t)
{
	uint64_t ring = 4 * PS, big;

	BT_REQUIRE(t, have_pt);
	pt_case(t, AUX_SIM_PT, ring, ring - pt_src.len % ring, 1000, true, true);
	big = pow2_pages_at_least(pt_src.len + 1);
	pt_case(t, AUX_SIM_PT, big, big - pt_src.len, 1000, true, true);
}

/* BTS: write records [first, nrec) of the stream. */
static void bts_case(struct bt_test *t, uint64_t ring, uint64_t first,
		     bool lazy, int expect_head /* 0 base, 1 end, 2 other */,
		     bool old_layout)
{
	struct aux_sim_host h;
	struct aux_sim s;
	char path[512], out[600];
	uint64_t end = ring - ring % 24, cap = end / 24;
	uint64_t nrec = bts_src.len / 24, written = nrec - first;
	uint64_t keep = written < cap ? written : cap, k0 = nrec - keep;
	uint64_t *ips = NULL, head;
	size_t n = 0;

	snprintf(path, sizeof(path), "%s/bts-%llu-%llu-%d.btrace", tmpdir,
		 (unsigned long long)ring, (unsigned long long)first, lazy);
	aux_sim_host_default(&h);
	aux_sim_init(&s, AUX_SIM_BTS, &h);
	s.bts_lazy_wrap = lazy;
	BT_REQUIRE(t, aux_sim_mmap_data(&s, 9 * PS, true) == 0);
	aux_sim_set_aux_area(&s, 9 * PS, ring);
	BT_REQUIRE(t, aux_sim_mmap_aux(&s, ring, 9 * PS, false) == 0);
	aux_sim_start(&s);
	for (uint64_t r = first; r < nrec; r++) {
		aux_sim_write(&s, bts_src.stream + r * 24, 24);
		if ((r - first) % 100 == 99) {
			aux_sim_stop(&s);
			aux_sim_start(&s);
		}
	}
	aux_sim_stop(&s);
	head = aux_sim_aux_head(&s);
	BT_EQ_INT(t, expect_head, head == 0 ? 0 : head == end ? 1 : 2);
	if (old_layout) {
		/* what btrace stored before: [head, ring) + [0, head) */
		struct btrace_buffer rb;
		uint8_t *lin = malloc(ring);

		memcpy(lin, s.aux + head, ring - head);
		memcpy(lin + ring - head, s.aux, head);
		memset(&rb, 0, sizeof(rb));
		rb.kind = BTRACE_TRACE_BTS;
		rb.flags = BTRACE_BUF_WRAPPED;
		rb.tid = bts_src.snap->buffers[0].tid;
		rb.cpu = -1;
		rb.ring_size = ring;
		rb.head = head;
		rb.data = lin;
		rb.size = ring;
		BT_REQUIRE(t, write_snap(path, bts_src.snap, BTRACE_TRACE_BTS,
					 NULL, 0, 0, &rb) == 0);
		free(lin);
	} else {
		BT_REQUIRE(t, write_snap(path, bts_src.snap, BTRACE_TRACE_BTS,
					 s.aux, ring, head, NULL) == 0);
	}
	BT_REQUIRE(t, decode_ips(path, &ips, &n) == 0);
	BT_CHECK(t, is_truth_tail(&bts_src.truth, ips, n));
	/* it starts at the first record kept: its source, then its target */
	BT_REQUIRE(t, n >= 2);
	BT_EQ_U64(t, bt_le64(bts_src.stream + k0 * 24), ips[0]);
	BT_EQ_U64(t, bt_le64(bts_src.stream + k0 * 24 + 8), ips[1]);
	BT_CHECK(t, n >= keep);

	/* perf.data: the kept records, whole and in order, nothing noted */
	{
		struct btrace_snapshot *snap = NULL;
		struct btrace_export_opts eo = { .sz = sizeof(eo),
						 .flags = BTRACE_EXPORT_NO_CACHE };
		struct btrace_export_result res = { .sz = sizeof(res) };
		struct btrace_error err;
		char *file = NULL;
		size_t flen = 0;

		snprintf(out, sizeof(out), "%s.perf.data", path);
		unlink(out);
		BT_REQUIRE(t, btrace_snapshot_read(path, 0, &snap, &err) == 0);
		BT_EQ_INT(t, 0, btrace_export_perf_data(snap, out, &eo, &res, &err));
		BT_EQ_U64(t, keep * 24, res.trace_bytes);
		for (uint32_t i = 0; i < res.nnotes; i++)
			BT_CHECK(t, !strstr(res.notes[i], "BTS record"));
		BT_REQUIRE(t, bt_read_file(out, &file, &flen, 64u << 20) == 0);
		BT_CHECK(t, memmem(file, flen, bts_src.stream + k0 * 24,
				   keep * 24) != NULL);
		free(file);
		btrace_snapshot_free(snap);
	}
	bt_test_diag("BTS ring %llu KiB from record %llu%s%s: %llu records, %zu instructions",
		     (unsigned long long)(ring >> 10), (unsigned long long)first,
		     lazy ? ", index wrapped late" : "",
		     old_layout ? ", old layout" : "",
		     (unsigned long long)keep, n);
	free(ips);
	aux_sim_fini(&s);
}

static void test_bts_not_wrapped(struct bt_test *t)
{
	BT_REQUIRE(t, have_bts);
	bts_case(t, pow2_pages_at_least(bts_src.len + 24), 0, false, 2, false);
}

/* Wrapped with the index off the base: the case whose never-written tail
 * used to end up between the records. */
static void test_bts_wrapped_off_zero(struct bt_test *t)
{
	uint64_t nrec = bts_src.len / 24;

	BT_REQUIRE(t, have_bts);
	for (uint64_t ring = PS; ring <= 4 * PS; ring *= 2) {
		uint64_t cap = (ring - ring % 24) / 24;

		BT_REQUIRE(t, nrec > 2 * cap);
		/* start so that the index ends mid-ring */
		bts_case(t, ring, nrec % cap ? 0 : 1, false, 2, false);
		bts_case(t, ring, nrec % cap ? 0 : 1, true, 2, false);
		bts_case(t, ring, nrec % cap ? 0 : 1, false, 2, true);
	}
}

/* Wrapped exactly: the last record at the trimmed end, the index at the
 * base (or, wrapped late, at the end). */
static void test_bts_wrapped_at_zero(struct bt_test *t)
{
	uint64_t nrec = bts_src.len / 24;

	BT_REQUIRE(t, have_bts);
	for (uint64_t ring = PS; ring <= 2 * PS; ring *= 2) {
		uint64_t cap = (ring - ring % 24) / 24;

		BT_REQUIRE(t, nrec > 3 * cap);
		bts_case(t, ring, nrec - cap, false, 0, false);
		bts_case(t, ring, nrec - 3 * cap, false, 0, false);
		bts_case(t, ring, nrec - cap, true, 1, false);
		bts_case(t, ring, nrec - 3 * cap, true, 1, false);
		bts_case(t, ring, nrec - 3 * cap, false, 0, true);
	}
}

int main(void)
{
	static const struct bt_test_case cases[] = {
		BT_TEST_CASE(test_pt_not_wrapped),
		BT_TEST_CASE(test_pt_wrapped),
		BT_TEST_CASE(test_pt_wrapped_exactly),
		BT_TEST_CASE(test_bts_not_wrapped),
		BT_TEST_CASE(test_bts_wrapped_off_zero),
		BT_TEST_CASE(test_bts_wrapped_at_zero),
	};
	int rc;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bt-aux-e2e-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	have_pt = load(&pt_src, 0) == 0;
	have_bts = load(&bts_src, 1) == 0;
	rc = bt_test_run(cases, (int)(sizeof(cases) / sizeof(cases[0])));
	if (!have_pt || !have_bts)
		rc = 1;    /* the generator must work here: ptrace is allowed */
	{
		char cmd[600];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	btrace_snapshot_free(pt_src.snap);
	btrace_snapshot_free(bts_src.snap);
	gen_truth_free(&pt_src.truth);
	gen_truth_free(&bts_src.truth);
	return rc;
}
