/* SPDX-License-Identifier: MIT */
/*
 * The engine's ring code against the AUX ring simulator (aux-sim.h: the
 * kernel's rules as written): mmap errors and the ENOMEM retry, BTS and PT
 * wrap (not wrapped, wrapped at and off zero, wrapped exactly), aux_head
 * published only at stops, PERF_RECORD_AUX at every stop, lost records,
 * and the legacy BTS path's samples.  The trace bytes here are patterns;
 * tests/capture/test-aux-e2e.c runs real programs' streams through the
 * same path and decodes them.
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <btrace/snapshot.h>

#include "aux-sim.h"
#include "bt-test.h"
#include "capture/aux-ring.h"
#include "capture/sideband.h"
#include "util.h"

#define PS 4096ull

/* Map a data ring of 1 + 8 pages writable and an AUX ring of @aux bytes
 * read-only the way bt_perf_map_aux() does. */
static int sim_map(struct aux_sim *s, uint64_t aux)
{
	int r = aux_sim_mmap_data(s, 9 * PS, true);

	if (r)
		return r;
	aux_sim_set_aux_area(s, PS + s->data_size, aux);
	return aux_sim_mmap_aux(s, aux, PS + s->data_size, false);
}

static void test_mmap_rules(struct bt_test *t)
{
	struct aux_sim_host h;
	struct aux_sim s;

	/* perf_mmap(): a power-of-two count of data pages */
	aux_sim_host_default(&h);
	aux_sim_init(&s, AUX_SIM_PT, &h);
	BT_EQ_INT(t, -EINVAL, aux_sim_mmap_data(&s, 4 * PS, true));
	BT_EQ_INT(t, 0, aux_sim_mmap_data(&s, 5 * PS, true));
	/* perf_mmap_aux(): offset below the data ring, offset != pgoff,
	 * size != length, non-power-of-two pages */
	aux_sim_set_aux_area(&s, 2 * PS, 4 * PS);
	BT_EQ_INT(t, -EINVAL, aux_sim_mmap_aux(&s, 4 * PS, 2 * PS, false));
	aux_sim_set_aux_area(&s, 5 * PS, 4 * PS);
	BT_EQ_INT(t, -EINVAL, aux_sim_mmap_aux(&s, 4 * PS, 6 * PS, false));
	BT_EQ_INT(t, -EINVAL, aux_sim_mmap_aux(&s, 8 * PS, 5 * PS, false));
	aux_sim_set_aux_area(&s, 5 * PS, 3 * PS);
	BT_EQ_INT(t, -EINVAL, aux_sim_mmap_aux(&s, 3 * PS, 5 * PS, false));
	aux_sim_set_aux_area(&s, 5 * PS, 4 * PS);
	BT_EQ_INT(t, 0, aux_sim_mmap_aux(&s, 4 * PS, 5 * PS, false));
	aux_sim_fini(&s);

	/* rb_alloc_aux(): no AUX on a software PMU */
	aux_sim_init(&s, AUX_SIM_SOFTWARE, &h);
	BT_EQ_INT(t, -EOPNOTSUPP, sim_map(&s, 16 * PS));
	aux_sim_fini(&s);

	/* perf_mmap_calc_limits(): over the per-user allowance and
	 * RLIMIT_MEMLOCK -> EPERM; paranoid -1 or CAP_IPC_LOCK let it by */
	aux_sim_host_default(&h);
	h.rlimit_memlock = 64 << 10;
	aux_sim_init(&s, AUX_SIM_PT, &h);
	BT_EQ_INT(t, -EPERM, sim_map(&s, 4ull << 20));
	aux_sim_fini(&s);
	h.paranoid = -1;
	aux_sim_init(&s, AUX_SIM_PT, &h);
	BT_EQ_INT(t, 0, sim_map(&s, 4ull << 20));
	aux_sim_fini(&s);
	aux_sim_host_default(&h);
	h.rlimit_memlock = 64 << 10;
	h.cap_ipc_lock = true;
	aux_sim_init(&s, AUX_SIM_BTS, &h);
	BT_EQ_INT(t, 0, sim_map(&s, 4ull << 20));
	/* charged: 9 data pages + 1024 AUX pages, the allowance first */
	BT_EQ_U64(t, 9 + 1024, h.user_locked + h.pinned);
	BT_EQ_U64(t, 129 * 2, h.user_locked);
	aux_sim_fini(&s);
}

/* rb_alloc_aux(): NO_SG PMUs in overwrite mode need one block of order
 * ilog2(pages), at most MAX_PAGE_ORDER; PT with multi-entry ToPA takes
 * smaller blocks. */
static void test_contiguous_enomem(struct bt_test *t)
{
	static const enum aux_sim_pmu pmus[] = { AUX_SIM_BTS, AUX_SIM_PT_NO_SG,
						 AUX_SIM_PT };
	struct aux_sim_host h;
	struct aux_sim s;

	for (size_t i = 0; i < 3; i++) {
		bool nosg = pmus[i] != AUX_SIM_PT;

		aux_sim_host_default(&h);
		aux_sim_init(&s, pmus[i], &h);
		/* 8 MiB: order 11 > MAX_PAGE_ORDER, never one block */
		BT_EQ_INT(t, nosg ? -ENOMEM : 0, sim_map(&s, 8ull << 20));
		aux_sim_fini(&s);
		aux_sim_host_default(&h);
		h.largest_free_order = 8;      /* 1 MiB blocks at most */
		aux_sim_init(&s, pmus[i], &h);
		BT_EQ_INT(t, nosg ? -ENOMEM : 0, sim_map(&s, 4ull << 20));
		aux_sim_fini(&s);
		aux_sim_host_default(&h);
		h.largest_free_order = 8;
		aux_sim_init(&s, pmus[i], &h);
		BT_EQ_INT(t, 0, sim_map(&s, 1ull << 20));
		aux_sim_fini(&s);
	}
}

struct try_ctx {
	struct aux_sim *s;
	int calls;
};

/* What bt_perf_map_aux() does per attempt: set aux_offset / aux_size,
 * then mmap read-only. */
static int try_sim(uint64_t len, void *arg)
{
	struct try_ctx *c = arg;

	c->calls++;
	aux_sim_set_aux_area(c->s, PS + c->s->data_size, len);
	return aux_sim_mmap_aux(c->s, len, PS + c->s->data_size, false);
}

static void test_enomem_halving(struct bt_test *t)
{
	struct aux_sim_host h;
	struct aux_sim s;
	struct try_ctx c;
	uint64_t got;

	/* a busy host: 1 MiB blocks at most; BTS asks 4 MiB */
	aux_sim_host_default(&h);
	h.largest_free_order = 8;
	aux_sim_init(&s, AUX_SIM_BTS, &h);
	BT_EQ_INT(t, 0, aux_sim_mmap_data(&s, 9 * PS, true));
	c = (struct try_ctx){ &s, 0 };
	BT_EQ_INT(t, 0, bt_aux_map_halving(4ull << 20, PS, try_sim, &c, &got));
	BT_EQ_U64(t, 1ull << 20, got);
	BT_EQ_INT(t, 3, c.calls);
	BT_EQ_U64(t, 1ull << 20, s.aux_size);
	/* the failed attempts charged nothing */
	BT_EQ_U64(t, 9 + 256, h.user_locked + h.pinned);
	aux_sim_fini(&s);

	/* 8 MiB BTS on an idle host: 4 MiB, the most one block holds */
	aux_sim_host_default(&h);
	aux_sim_init(&s, AUX_SIM_BTS, &h);
	BT_EQ_INT(t, 0, aux_sim_mmap_data(&s, 9 * PS, true));
	c = (struct try_ctx){ &s, 0 };
	BT_EQ_INT(t, 0, bt_aux_map_halving(8ull << 20, PS, try_sim, &c, &got));
	BT_EQ_U64(t, 4ull << 20, got);
	aux_sim_fini(&s);

	/* no memory at all: ENOMEM down to one page */
	aux_sim_host_default(&h);
	h.free_pages = 0;
	aux_sim_init(&s, AUX_SIM_BTS, &h);
	BT_EQ_INT(t, 0, aux_sim_mmap_data(&s, 9 * PS, true));
	c = (struct try_ctx){ &s, 0 };
	BT_EQ_INT(t, -ENOMEM, bt_aux_map_halving(64 * PS, PS, try_sim, &c, &got));
	BT_EQ_INT(t, 7, c.calls);
	BT_EQ_U64(t, 0, got);
	aux_sim_fini(&s);

	/* EPERM is the budget's business: no halving */
	aux_sim_host_default(&h);
	h.rlimit_memlock = 0;
	h.mlock_kb = 0;
	aux_sim_init(&s, AUX_SIM_PT, &h);
	h.mlock_kb = 516;
	BT_EQ_INT(t, 0, aux_sim_mmap_data(&s, 9 * PS, true));
	h.mlock_kb = 0;
	c = (struct try_ctx){ &s, 0 };
	BT_EQ_INT(t, -EPERM, bt_aux_map_halving(64 * PS, PS, try_sim, &c, &got));
	BT_EQ_INT(t, 1, c.calls);
	aux_sim_fini(&s);
}

/* BTS record n: from/to never zero, never kernel */
static void bts_rec(uint8_t *p, uint64_t n)
{
	bt_put64(p, 0x401000 + n * 16);
	bt_put64(p + 8, 0x402000 + n * 16);
	bt_put64(p + 16, 0x10);
}

/* Write @nrec records starting with record @first, stopping every
 * @stop_every records (sched-out), then take the snapshot buffer the way
 * engine-snap's add_buffer() does and check it holds the newest records,
 * whole, oldest first. */
static void bts_case(struct bt_test *t, uint64_t ring, uint64_t nrec,
		     uint64_t stop_every, bool lazy)
{
	struct aux_sim_host h;
	struct aux_sim s;
	struct btrace_buffer b;
	struct bt_aux_span span;
	uint64_t end = ring - ring % 24, cap = end / 24, keep, len;
	uint8_t rec[24], *lin;
	bool ok = true;

	aux_sim_host_default(&h);
	aux_sim_init(&s, AUX_SIM_BTS, &h);
	s.bts_lazy_wrap = lazy;
	BT_REQUIRE(t, sim_map(&s, ring) == 0);
	BT_EQ_U64(t, end, s.hw_end);
	aux_sim_start(&s);
	for (uint64_t i = 0; i < nrec; i++) {
		bts_rec(rec, i);
		aux_sim_write(&s, rec, 24);
		if (stop_every && (i + 1) % stop_every == 0) {
			aux_sim_stop(&s);
			aux_sim_start(&s);
		}
	}
	aux_sim_stop(&s);
	/* the tail of the ring is never written */
	for (uint64_t i = end; i < ring; i++)
		ok &= s.aux[i] == 0;
	BT_CHECK(t, ok);
	memset(&b, 0, sizeof(b));
	len = bt_aux_buffer(2 /* BTS */, s.aux, ring, aux_sim_aux_head(&s), &b);
	keep = nrec < cap ? nrec : cap;
	BT_EQ_U64(t, keep * 24, len);
	BT_EQ_INT(t, nrec > cap || (nrec == cap), !!(b.flags & BTRACE_BUF_WRAPPED));
	bt_aux_locate_kind(2, s.aux, ring, aux_sim_aux_head(&s), &span);
	lin = malloc(len ? len : 1);
	bt_aux_linearize(s.aux, &span, lin);
	for (uint64_t i = 0; i < keep && ok; i++) {
		bts_rec(rec, nrec - keep + i);
		ok = !memcmp(lin + i * 24, rec, 24);
		if (!ok)
			bt_test_diag("ring %llu nrec %llu lazy %d: record %llu wrong",
				     (unsigned long long)ring,
				     (unsigned long long)nrec, lazy,
				     (unsigned long long)i);
	}
	BT_CHECK(t, ok);
	free(lin);
	aux_sim_fini(&s);
}

static void test_bts_wrap(struct bt_test *t)
{
	static const uint64_t rings[] = { PS, 2 * PS, 4 * PS };

	for (size_t r = 0; r < 3; r++) {
		uint64_t cap = (rings[r] - rings[r] % 24) / 24;
		const uint64_t runs[] = { 0, 1, cap - 1, cap, cap + 1,
					  2 * cap, 2 * cap + 7, 5 * cap + 3 };

		for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++)
			for (int lazy = 0; lazy < 2; lazy++) {
				bts_case(t, rings[r], runs[i], 0, lazy);
				bts_case(t, rings[r], runs[i], 37, lazy);
			}
	}
}

/* Through the snapshot writer and reader: the stored BTS buffer is whole
 * records, its size a multiple of 24. */
static void test_bts_snapshot_roundtrip(struct bt_test *t)
{
	struct aux_sim_host h;
	struct aux_sim s;
	struct btrace_buffer b;
	struct btrace_writer *w = NULL;
	struct btrace_snapshot *snap = NULL;
	struct btrace_error err;
	char path[] = "/tmp/bt-aux-sim-XXXXXX";
	uint64_t cap = (2 * PS - 2 * PS % 24) / 24, nrec = 3 * cap + 5;
	uint8_t rec[24];
	int fd = mkstemp(path);
	bool ok = true;

	BT_REQUIRE(t, fd >= 0);
	close(fd);
	aux_sim_host_default(&h);
	aux_sim_init(&s, AUX_SIM_BTS, &h);
	BT_REQUIRE(t, sim_map(&s, 2 * PS) == 0);
	aux_sim_start(&s);
	for (uint64_t i = 0; i < nrec; i++) {
		bts_rec(rec, i);
		aux_sim_write(&s, rec, 24);
	}
	aux_sim_stop(&s);
	memset(&b, 0, sizeof(b));
	b.tid = 1;
	b.cpu = -1;
	bt_aux_buffer(BTRACE_TRACE_BTS, s.aux, 2 * PS, aux_sim_aux_head(&s), &b);
	BT_REQUIRE(t, btrace_writer_open(path, 0, &w, &err) == 0);
	BT_EQ_INT(t, 0, btrace_writer_add_ring(w, &b, s.aux, &err));
	BT_EQ_INT(t, 0, btrace_writer_commit(w, &err));
	BT_REQUIRE(t, btrace_snapshot_read(path, 0, &snap, &err) == 0);
	BT_REQUIRE(t, snap->nbuffers == 1);
	BT_EQ_U64(t, cap * 24, snap->buffers[0].size);
	BT_EQ_U64(t, 2 * PS, snap->buffers[0].ring_size);
	for (uint64_t i = 0; i < cap && ok; i++) {
		bts_rec(rec, nrec - cap + i);
		ok = !memcmp(snap->buffers[0].data + i * 24, rec, 24);
	}
	BT_CHECK(t, ok);
	btrace_snapshot_free(snap);
	unlink(path);
	aux_sim_fini(&s);
}

/* Byte n of a PT-like stream: never zero, so a wrap is visible. */
static uint8_t pt_byte(uint64_t n)
{
	return (uint8_t)(1 + (n * 7 + n / 251) % 255);
}

static void pt_case(struct bt_test *t, enum aux_sim_pmu pmu, uint64_t ring,
		    uint64_t total, uint64_t stop_every)
{
	struct aux_sim_host h;
	struct aux_sim s;
	struct btrace_buffer b;
	struct bt_aux_span span;
	uint64_t keep = total < ring ? total : ring, len;
	uint8_t *lin;
	bool ok = true;

	aux_sim_host_default(&h);
	aux_sim_init(&s, pmu, &h);
	BT_REQUIRE(t, sim_map(&s, ring) == 0);
	aux_sim_start(&s);
	for (uint64_t i = 0; i < total; i++) {
		uint8_t c = pt_byte(i);

		aux_sim_write(&s, &c, 1);
		if (stop_every && (i + 1) % stop_every == 0) {
			aux_sim_stop(&s);
			aux_sim_start(&s);
		}
	}
	aux_sim_stop(&s);
	memset(&b, 0, sizeof(b));
	len = bt_aux_buffer(BTRACE_TRACE_PT, s.aux, ring, aux_sim_aux_head(&s), &b);
	BT_EQ_U64(t, keep, len);
	BT_EQ_INT(t, total >= ring, !!(b.flags & BTRACE_BUF_WRAPPED));
	bt_aux_locate_kind(BTRACE_TRACE_PT, s.aux, ring, aux_sim_aux_head(&s),
			   &span);
	lin = malloc(len ? len : 1);
	bt_aux_linearize(s.aux, &span, lin);
	for (uint64_t i = 0; i < keep && ok; i++)
		ok = lin[i] == pt_byte(total - keep + i);
	BT_CHECK(t, ok);
	free(lin);
	aux_sim_fini(&s);
}

static void test_pt_wrap(struct bt_test *t)
{
	static const uint64_t rings[] = { PS, 4 * PS };

	for (size_t r = 0; r < 2; r++) {
		uint64_t R = rings[r];
		const uint64_t runs[] = { 0, 1, R - 1, R, R + 1, 2 * R, 3 * R + 100 };

		for (size_t i = 0; i < sizeof(runs) / sizeof(runs[0]); i++) {
			pt_case(t, AUX_SIM_PT, R, runs[i], 0);
			pt_case(t, AUX_SIM_PT_NO_SG, R, runs[i], 1000);
		}
	}
}

/* aux_head is published only at a stop: read while running it is the
 * last stop's, and the bytes past it look like a wrap. */
static void test_stale_head(struct bt_test *t)
{
	struct aux_sim_host h;
	struct aux_sim s;
	struct btrace_buffer b;
	uint8_t c;

	aux_sim_host_default(&h);
	aux_sim_init(&s, AUX_SIM_PT, &h);
	BT_REQUIRE(t, sim_map(&s, PS) == 0);
	aux_sim_start(&s);
	for (uint64_t i = 0; i < 1000; i++) {
		c = pt_byte(i);
		aux_sim_write(&s, &c, 1);
	}
	aux_sim_stop(&s);
	aux_sim_start(&s);
	for (uint64_t i = 1000; i < 1500; i++) {
		c = pt_byte(i);
		aux_sim_write(&s, &c, 1);
	}
	BT_EQ_U64(t, 1000, aux_sim_aux_head(&s));
	memset(&b, 0, sizeof(b));
	BT_EQ_U64(t, PS, bt_aux_buffer(BTRACE_TRACE_PT, s.aux, PS,
				       aux_sim_aux_head(&s), &b));
	aux_sim_stop(&s);
	BT_EQ_U64(t, 1500, aux_sim_aux_head(&s));
	memset(&b, 0, sizeof(b));
	BT_EQ_U64(t, 1500, bt_aux_buffer(BTRACE_TRACE_PT, s.aux, PS,
					 aux_sim_aux_head(&s), &b));
	aux_sim_fini(&s);
}

struct aux_seen {
	int aux, lost, other, bad;
	uint64_t last_offset, last_size, last_flags, lost_total;
};

static int seen_rec(const struct bt_rec *rec, void *arg)
{
	struct aux_seen *a = arg;
	struct bt_sb_event ev;

	if (bt_sideband_parse(rec, &ev) < 0) {
		a->bad++;
		return 0;
	}
	if (rec->type == PERF_RECORD_AUX) {
		a->aux++;
		a->last_offset = ev.aux_offset;
		a->last_size = ev.aux_size;
		a->last_flags = ev.aux_flags;
	} else if (rec->type == PERF_RECORD_LOST) {
		a->lost++;
		a->lost_total += ev.lost;
	} else {
		a->other++;
	}
	return 0;
}

/* perf_aux_output_end(): one PERF_RECORD_AUX per stop, offset = head,
 * size = the whole buffer, OVERWRITE; a full data ring (normal mode)
 * drops them and says so with PERF_RECORD_LOST. */
static void test_record_aux(struct bt_test *t)
{
	struct aux_sim_host h;
	struct aux_sim s;
	struct aux_seen a = { 0 };
	uint8_t scratch[65536], rec[24];
	uint64_t tail = 0;
	bool corrupt;

	aux_sim_host_default(&h);
	aux_sim_init(&s, AUX_SIM_BTS, &h);
	s.sample_id_all = true;
	BT_REQUIRE(t, sim_map(&s, 2 * PS) == 0);
	for (int i = 0; i < 10; i++) {
		aux_sim_start(&s);
		for (int k = 0; k < 50; k++) {
			bts_rec(rec, (uint64_t)(i * 50 + k));
			aux_sim_write(&s, rec, 24);
		}
		if (i == 4)
			s.aux_flags = PERF_AUX_FLAG_PARTIAL;
		aux_sim_stop(&s);
		tail = bt_ring_iterate(s.base + PS, s.data_size, tail,
				       s.data_head, scratch, seen_rec, &a,
				       &corrupt);
		aux_sim_set_data_tail(&s, tail);
		BT_CHECK(t, !corrupt);
		BT_EQ_U64(t, aux_sim_aux_head(&s), a.last_offset);
		BT_EQ_U64(t, 2 * PS, a.last_size);
		BT_EQ_U64(t, PERF_AUX_FLAG_OVERWRITE |
			  (i == 4 ? PERF_AUX_FLAG_PARTIAL : 0), a.last_flags);
	}
	BT_EQ_INT(t, 10, a.aux);
	BT_EQ_INT(t, 0, a.bad);
	/* 500 records: wrapped once in 341, head at 159 records */
	BT_EQ_U64(t, (500 - 341) * 24, aux_sim_aux_head(&s));

	/* nobody drains: the data ring fills, records are lost, then a
	 * PERF_RECORD_LOST says how many once there is room */
	memset(&a, 0, sizeof(a));
	for (int i = 0; i < 2000; i++) {
		aux_sim_start(&s);
		aux_sim_stop(&s);
	}
	BT_CHECK(t, s.lost > 0);
	tail = bt_ring_iterate(s.base + PS, s.data_size, tail, s.data_head,
			       scratch, seen_rec, &a, &corrupt);
	aux_sim_set_data_tail(&s, tail);
	aux_sim_start(&s);
	aux_sim_stop(&s);
	tail = bt_ring_iterate(s.base + PS, s.data_size, tail, s.data_head,
			       scratch, seen_rec, &a, &corrupt);
	BT_EQ_INT(t, 1, a.lost);
	BT_EQ_U64(t, 2000 - (uint64_t)a.aux + 1, a.lost_total);
	BT_EQ_INT(t, 0, a.bad);
	aux_sim_fini(&s);
}

/* The legacy BTS path: samples from intel_pmu_drain_bts_buffer() in an
 * overwrite data ring, read back as BTS records, newest kept. */
static void test_bts_samples(struct bt_test *t)
{
	struct aux_sim_host h;
	struct aux_sim s;
	struct bt_bts_samples st;
	uint8_t batch[24 * 40], *out;
	uint64_t user = 0, nuser_expected;
	bool ok = true;

	aux_sim_host_default(&h);
	aux_sim_init(&s, AUX_SIM_SOFTWARE, &h);
	BT_REQUIRE(t, aux_sim_mmap_data(&s, 3 * PS, false) == 0);
	/* batches of 40 DS records, every 7th one across the kernel
	 * boundary (a syscall, a fault): left out by the kernel */
	for (int d = 0; d < 30; d++) {
		for (int k = 0; k < 40; k++) {
			uint64_t n = (uint64_t)d * 40 + (uint64_t)k;

			if (n % 7 == 3) {
				bt_put64(batch + k * 24, 0x401000 + n * 16);
				bt_put64(batch + k * 24 + 8, 0xffffffff81000000ull);
			} else {
				bts_rec(batch + k * 24, n);
			}
		}
		user += aux_sim_drain_bts(&s, batch, 40);
	}
	out = malloc(s.data_size);
	bt_bts_samples_read(s.base + PS, s.data_size, s.data_head, out, &st);
	nuser_expected = s.data_size / 24 < user ? s.data_size / 24 : user;
	BT_EQ_U64(t, nuser_expected, st.records);
	BT_CHECK(t, st.wrapped);
	BT_CHECK(t, !st.stopped);
	BT_EQ_U64(t, 0, st.kernel);
	/* the newest user records, oldest first */
	for (uint64_t i = 0, n = 30 * 40; i < st.records && ok; ) {
		n--;
		if (n % 7 == 3)
			continue;
		uint64_t at = st.records - 1 - i;
		uint8_t want[24];

		bts_rec(want, n);
		ok = bt_le64(out + at * 24) == bt_le64(want) &&
		     bt_le64(out + at * 24 + 8) == bt_le64(want + 8) &&
		     bt_le64(out + at * 24 + 16) == 0;
		i++;
	}
	BT_CHECK(t, ok);

	/* a record that is not a 24-byte sample ends the walk */
	{
		uint8_t lost[24] = { 0 };
		uint64_t before;

		bt_put64(lost, 0);
		lost[0] = PERF_RECORD_LOST;
		lost[6] = 24;
		for (int i = 0; i < 24; i++)
			s.base[PS + ((s.data_head + (uint64_t)i) & (s.data_size - 1))] = lost[i];
		s.data_head += 24;
		before = s.data_head;
		for (int k = 0; k < 5; k++)
			bts_rec(batch + k * 24, 5000 + (uint64_t)k);
		aux_sim_drain_bts(&s, batch, 5);
		BT_EQ_U64(t, before + 5 * 24, s.data_head);
		bt_bts_samples_read(s.base + PS, s.data_size, s.data_head, out, &st);
		BT_EQ_U64(t, 5, st.records);
		BT_CHECK(t, st.stopped);
		BT_EQ_U64(t, 0x401000 + 5000 * 16, bt_le64(out));
	}
	free(out);
	aux_sim_fini(&s);
}

BT_TESTS(test_mmap_rules, test_contiguous_enomem, test_enomem_halving,
	 test_bts_wrap, test_bts_snapshot_roundtrip, test_pt_wrap,
	 test_stale_head, test_record_aux, test_bts_samples)
