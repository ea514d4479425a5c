/* SPDX-License-Identifier: MIT */
/*
 * Time from PT timing packets (docs/format.md, "Time"): a hand-made stream
 * (libipt's encoder) over a synthetic image of three blocks ending in
 * not-taken conditional branches, with a TSC packet before the first
 * block's branch and one before the third's, then an asynchronous
 * disable.  The first block and the disable get the packets' times
 * (BTRACE_TIME_PACKET), the blocks between them times interpolated by
 * instruction count; the TSC becomes ns by the snapshot's time.tsc
 * (perf's rule, quot/rem without overflow); without time.tsc, or for BTS,
 * every time is 0 and the result has no clock.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>

#include "bt-test.h"

#define BASE 0x10000ull

static const uint8_t code[] = {
	0x90, 0x90, 0x90, 0x74, 0x00,                   /* A: 3 nop, je +0 */
	0x90, 0x90, 0x90, 0x90, 0x90, 0x90, 0x90,       /* B: 7 nop, */
	0x74, 0x00,                                     /*    je +0 */
	0x90, 0x90, 0x90, 0x74, 0x00,                   /* C: 3 nop, je +0 */
	0x0f, 0x0b,                                     /* ud2: interrupted */
};
#define UD2 (BASE + sizeof(code) - 2)

/* One packet: @type with the payload @v (an IP, a TSC or TNT bits: not
 * taken, one bit). */
static int pkt(struct pt_encoder *e, enum pt_packet_type type, uint64_t v)
{
	struct pt_packet p;

	memset(&p, 0, sizeof(p));
	p.type = type;
	switch (type) {
	case ppt_mode:
		p.payload.mode.leaf = pt_mol_exec;
		p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
		break;
	case ppt_tip_pge:
	case ppt_fup:
		p.payload.ip.ipc = pt_ipc_sext_48;
		p.payload.ip.ip = v;
		break;
	case ppt_tip_pgd:
		p.payload.ip.ipc = pt_ipc_suppressed;
		break;
	case ppt_tsc:
		p.payload.tsc.tsc = v;
		break;
	case ppt_tnt_8:
		p.payload.tnt.bit_size = 1;
		break;
	default:
		break;
	}
	return pt_enc_next(e, &p) < 0 ? -1 : 0;
}

/* PSB PSBEND MODE TIP.PGE(A) TSC(t0) TNT(A) TNT(B) TSC(t1) TNT(C)
 * FUP(ud2) TIP.PGD: returns the size. */
static int make_trace(uint8_t *buf, size_t len, uint64_t t0, uint64_t t1)
{
	const struct {
		enum pt_packet_type type;
		uint64_t v;
	} seq[] = {
		{ ppt_psb, 0 }, { ppt_psbend, 0 }, { ppt_mode, 0 },
		{ ppt_tip_pge, BASE }, { ppt_tsc, t0 }, { ppt_tnt_8, 0 },
		{ ppt_tnt_8, 0 }, { ppt_tsc, t1 }, { ppt_tnt_8, 0 },
		{ ppt_fup, UD2 }, { ppt_tip_pgd, 0 },
	};
	/* what pt_config_init() sets, and the buffer */
	struct pt_config cfg = { .size = sizeof(cfg), .begin = buf,
				 .end = buf + len };
	struct pt_encoder *e = pt_alloc_encoder(&cfg);
	uint64_t off = 0;
	int bad = !e;

	for (size_t i = 0; e && i < sizeof(seq) / sizeof(seq[0]); i++)
		bad |= pkt(e, seq[i].type, seq[i].v);
	if (!bad && pt_enc_get_offset(e, &off) < 0)
		bad = 1;
	pt_free_encoder(e);
	return bad ? -1 : (int)off;
}

/* Decode the trace with metadata time.tsc = @conv (NULL: none). */
static struct btrace_decode_result *decode(struct bt_test *t, uint32_t kind,
					   const char *conv, uint64_t t0,
					   uint64_t t1)
{
	static uint8_t trace[256];
	static struct btrace_mapping map;
	static struct btrace_code cd;
	static struct btrace_buffer buf;
	static struct btrace_meta meta[2];
	static struct btrace_snapshot s;
	struct btrace_decode_result *r = NULL;
	struct btrace_error err;
	int n = make_trace(trace, sizeof(trace), t0, t1);

	if (n <= 0)
		return NULL;
	map = (struct btrace_mapping){ .prot = 5, .start = BASE,
				       .end = BASE + 0x1000,
				       .path = (char *)"//anon" };
	cd = (struct btrace_code){ .kind = BTRACE_CODE_ANON, .vaddr = BASE,
				   .data = code, .size = sizeof(code) };
	buf = (struct btrace_buffer){ .kind = kind, .tid = 1, .cpu = -1,
				      .data = trace, .size = (uint64_t)n };
	meta[0] = (struct btrace_meta){ (char *)"time.clock",
					(char *)"CLOCK_MONOTONIC" };
	meta[1] = (struct btrace_meta){ (char *)"time.tsc", (char *)conv };
	s = (struct btrace_snapshot){ .has_config = 1, .mappings = &map,
				      .nmappings = 1, .code = &cd, .ncode = 1,
				      .buffers = &buf, .nbuffers = 1,
				      .meta = meta, .nmeta = conv ? 2 : 1 };
	s.config.trace_kind = kind;
	if (btrace_decode(&s, NULL, &r, &err)) {
		bt_test_fail(t, __FILE__, __LINE__, "btrace_decode: %s", err.msg);
		return NULL;
	}
	return r;
}

/* The thread's blocks (BTRACE_ITEM_BLOCK) in order, up to @n. */
static size_t blocks(const struct btrace_decode_result *r,
		     const struct btrace_block **out, size_t n)
{
	const struct btrace_thread *th = &r->threads[0];
	size_t k = 0;

	for (size_t i = 0; i < th->nblocks && k < n; i++)
		if (th->blocks[i].kind == BTRACE_ITEM_BLOCK)
			out[k++] = &th->blocks[i];
	return k;
}

static void test_packets_and_interpolation(struct bt_test *t)
{
	const struct btrace_block *b[8];
	struct btrace_decode_result *r;

	/* ns = 500 + tsc * 3 / 2 */
	r = decode(t, BTRACE_TRACE_PT, "zero=500 mult=3 shift=1", 1000, 3000);
	BT_REQUIRE(t, r && r->nthreads == 1);
	BT_CHECK(t, r->clock && !strcmp(r->clock, "CLOCK_MONOTONIC"));
	BT_REQUIRE(t, blocks(r, b, 8) >= 3);
	BT_EQ_U64(t, BASE, b[0]->ip);
	BT_EQ_INT(t, 4, b[0]->ninsn);
	BT_EQ_INT(t, 8, b[1]->ninsn);
	/* A: the first packet */
	BT_EQ_U64(t, 500 + 1000 * 3 / 2, b[0]->time_ns);
	BT_EQ_INT(t, BTRACE_TIME_PACKET, b[0]->time_flags);
	/* C ends at an event (the asynchronous disable): libipt read the
	 * second packet to report it, so the event's item has it, and B and
	 * C are interpolated over the 16 instructions from A to it:
	 * B = 1000 + 2000 * 4 / 16, C = 1000 + 2000 * 12 / 16 */
	BT_EQ_U64(t, 500 + 1500 * 3 / 2, b[1]->time_ns);
	BT_EQ_INT(t, BTRACE_TIME_INTERPOLATED, b[1]->time_flags);
	BT_EQ_U64(t, 500 + 2500 * 3 / 2, b[2]->time_ns);
	BT_EQ_INT(t, BTRACE_TIME_INTERPOLATED, b[2]->time_flags);
	/* the call entry: its first block's time, its last block's */
	BT_REQUIRE(t, r->threads[0].ncalls >= 1);
	BT_EQ_U64(t, b[0]->time_ns, r->threads[0].calls[0].time_ns);
	BT_EQ_INT(t, BTRACE_TIME_PACKET, r->threads[0].calls[0].time_flags);
	BT_CHECK(t, r->threads[0].calls[0].end_time_ns >= b[2]->time_ns);
	/* the item of the disable: the second packet */
	const struct btrace_thread *th = &r->threads[0];
	BT_REQUIRE(t, th->nblocks > 0);
	BT_EQ_U64(t, 500 + 3000 * 3 / 2, th->blocks[th->nblocks - 1].time_ns);
	BT_EQ_INT(t, BTRACE_TIME_PACKET, th->blocks[th->nblocks - 1].time_flags);
	btrace_decode_result_free(r);
}

/* perf's rule without overflow: tsc * mult would not fit 64 bits. */
static void test_conversion_large(struct bt_test *t)
{
	const struct btrace_block *b[8];
	struct btrace_decode_result *r;
	uint64_t t0 = 1ull << 52, t1 = (1ull << 52) + 4096;

	/* time_mult 2^31, time_shift 31: ns = zero + tsc */
	r = decode(t, BTRACE_TRACE_PT, "zero=7 mult=2147483648 shift=31", t0, t1);
	BT_REQUIRE(t, r && blocks(r, b, 8) >= 3);
	BT_EQ_U64(t, 7 + t0, b[0]->time_ns);
	BT_EQ_U64(t, 7 + t0 + 4096 * 4 / 16, b[1]->time_ns);
	BT_EQ_U64(t, 7 + t0 + 4096 * 12 / 16, b[2]->time_ns);
	btrace_decode_result_free(r);
	/* a typical kernel's: 2.5 GHz TSC, shift 10, mult 410 (0.4 ns) */
	r = decode(t, BTRACE_TRACE_PT, "zero=100 mult=410 shift=10", t0, t1);
	BT_REQUIRE(t, r && blocks(r, b, 8) >= 3);
	BT_EQ_U64(t, 100 + (t0 >> 10) * 410, b[0]->time_ns);
	btrace_decode_result_free(r);
}

static void test_no_time(struct bt_test *t)
{
	const struct btrace_block *b[8];
	struct btrace_decode_result *r;
	size_t n;

	/* no time.tsc: TSC packets are read, but nothing says what they mean */
	r = decode(t, BTRACE_TRACE_PT, NULL, 1000, 3000);
	BT_REQUIRE(t, r);
	BT_CHECK(t, r->clock == NULL);
	n = blocks(r, b, 8);
	BT_CHECK(t, n >= 3);
	for (size_t i = 0; i < n; i++) {
		BT_EQ_U64(t, 0, b[i]->time_ns);
		BT_EQ_INT(t, 0, b[i]->time_flags);
	}
	btrace_decode_result_free(r);
	/* a value out of range is no conversion either */
	r = decode(t, BTRACE_TRACE_PT, "zero=1 mult=0 shift=1", 1000, 3000);
	BT_REQUIRE(t, r);
	BT_CHECK(t, r->clock == NULL);
	btrace_decode_result_free(r);
}

BT_TESTS(test_packets_and_interpolation, test_conversion_large, test_no_time)
