/* SPDX-License-Identifier: MIT */
/*
 * Instruction listing over a synthetic code image: EVEX instructions that
 * capstone 4 cannot disassemble (vptestnmb, as in glibc's *_evex string
 * functions) must keep their size (from libipt) and be listed as "(bad)"
 * with their bytes, never as missing code.  The trace is a hand-made Intel
 * PT stream (libipt's encoder): enable at the first instruction, then an
 * asynchronous disable at the ud2, so no AVX-512 CPU is needed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>

#include "bt-test.h"

#define BASE 0x10000ull

/* objdump -D -b binary -mi386:x86-64 */
static const uint8_t code[] = {
	0x62, 0xb2, 0x66, 0x20, 0x26, 0xc0,             /* vptestnmb k0, ymm19, ymm16 */
	0x62, 0xe1, 0xfe, 0x28, 0x6f, 0x47, 0x01,       /* vmovdqu64 ymm16, [rdi+0x20] */
	0x62, 0xb2, 0x66, 0x20, 0x26, 0x44, 0x24, 0x01, /* vptestnmb k0, ymm19, [rsp+r12+0x20] */
	0x62, 0xf2, 0x7d, 0x20, 0x26, 0xc1,             /* vptestmb k0, ymm16, ymm1 */
	0x90,                                           /* nop */
	0x0f, 0x0b,                                     /* ud2: interrupted here */
};
static const uint32_t sizes[] = { 6, 7, 8, 6, 1 };

static int put(struct pt_encoder *e, struct pt_packet *p)
{
	return pt_enc_next(e, p) < 0 ? -1 : 0;
}

/* PSB PSBEND MODE.Exec TIP.PGE(BASE) FUP(ud2) TIP.PGD: returns the size. */
static int make_trace(uint8_t *buf, size_t len)
{
	struct pt_config cfg;
	struct pt_packet p;
	struct pt_encoder *e;
	uint64_t off = 0;
	int bad = 0;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + len;
	e = pt_alloc_encoder(&cfg);
	if (!e)
		return -1;
	memset(&p, 0, sizeof(p));
	p.type = ppt_psb;
	bad |= put(e, &p);
	p.type = ppt_psbend;
	bad |= put(e, &p);
	p.type = ppt_mode;
	p.payload.mode.leaf = pt_mol_exec;
	p.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	bad |= put(e, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tip_pge;
	p.payload.ip.ipc = pt_ipc_sext_48;
	p.payload.ip.ip = BASE;
	bad |= put(e, &p);
	p.type = ppt_fup;
	p.payload.ip.ip = BASE + sizeof(code) - 2;
	bad |= put(e, &p);
	memset(&p, 0, sizeof(p));
	p.type = ppt_tip_pgd;
	p.payload.ip.ipc = pt_ipc_suppressed;
	bad |= put(e, &p);
	if (!bad && pt_enc_get_offset(e, &off) < 0)
		bad = 1;
	pt_free_encoder(e);
	return bad ? -1 : (int)off;
}

static void test_evex_listing(struct bt_test *t)
{
	uint8_t trace[128];
	int n = make_trace(trace, sizeof(trace));
	struct btrace_mapping map = { 0 };
	struct btrace_code cd = { 0 };
	struct btrace_buffer buf = { 0 };
	struct btrace_snapshot s;
	struct btrace_decode_result *r = NULL;
	struct btrace_error err;
	struct btrace_insn in[8];

	BT_REQUIRE(t, n > 0);
	memset(&s, 0, sizeof(s));
	map.prot = 5;   /* r-x */
	map.start = BASE;
	map.end = BASE + 0x1000;
	map.path = (char *)"//anon";
	cd.kind = BTRACE_CODE_ANON;
	cd.vaddr = BASE;
	cd.data = code;
	cd.size = sizeof(code);
	buf.kind = BTRACE_TRACE_PT;
	buf.tid = 1;
	buf.cpu = -1;
	buf.data = trace;
	buf.size = (uint64_t)n;
	s.mappings = &map;
	s.nmappings = 1;
	s.code = &cd;
	s.ncode = 1;
	s.buffers = &buf;
	s.nbuffers = 1;

	BT_REQUIRE(t, btrace_decode(&s, NULL, &r, &err) == 0);
	BT_REQUIRE(t, r->nthreads == 1);
	const struct btrace_thread *th = &r->threads[0];
	const struct btrace_block *blk = NULL;
	for (size_t i = 0; i < th->nblocks; i++)
		if (th->blocks[i].kind == BTRACE_ITEM_BLOCK && !blk)
			blk = &th->blocks[i];
	BT_REQUIRE(t, blk != NULL);
	/* libipt decoded all five instructions up to the interrupted ud2 */
	BT_EQ_INT(t, 5, th->ninsn);
	BT_EQ_U64(t, BASE, blk->ip);
	BT_EQ_U64(t, BASE + sizeof(code) - 3, blk->end_ip);
	BT_EQ_INT(t, 0, th->ngaps);

	/* the listing keeps every instruction, with libipt's sizes */
	int k = btrace_decode_block_insns(r, blk, in, 8);
	BT_EQ_INT(t, 5, k);
	uint64_t ip = BASE;
	for (int i = 0; i < k && i < 5; i++) {
		BT_EQ_U64(t, ip, in[i].ip);
		BT_EQ_INT(t, sizes[i], in[i].size);
		BT_EQ_MEM(t, code + (ip - BASE), in[i].bytes, in[i].size);
		ip += sizes[i];
	}
	if (k == 5) {
		BT_CONTAINS(t, in[0].text, "(bad)");
		BT_CONTAINS(t, in[0].text, "62 b2 66 20 26 c0");
		BT_CONTAINS(t, in[1].text, "vmovdqu64");
		BT_CONTAINS(t, in[2].text, "62 b2 66 20 26 44 24 01");
		BT_CONTAINS(t, in[4].text, "nop");
	}
	/* an EVEX instruction as the last of a block: sized, not a branch */
	struct btrace_block one = *blk;
	one.end_ip = BASE + 6;
	one.ninsn = 2;
	BT_EQ_INT(t, 2, btrace_decode_block_insns(r, &one, in, 8));
	btrace_decode_result_free(r);
}

/* An executable mapping with no code in the snapshot and no file (nothing
 * to fill it from), in a snapshot without ELF modules (no PLT): the trace
 * still decodes in the mapping with code, and the one without is named
 * only when asked for (ALL_NOTES).  Under UBSan (halt_on_error) this also
 * covers the empty arrays of the image and PLT tables. */
static void test_mapping_without_code(struct bt_test *t)
{
	uint8_t trace[128];
	int n = make_trace(trace, sizeof(trace));
	struct btrace_mapping maps[2] = { { 0 }, { 0 } };
	struct btrace_code cd = { 0 };
	struct btrace_buffer buf = { 0 };
	struct btrace_snapshot s;
	struct btrace_decode_opts o = { .sz = sizeof(o),
					.flags = BTRACE_DECODE_ALL_NOTES };
	struct btrace_decode_result *r = NULL;
	struct btrace_error err;

	BT_REQUIRE(t, n > 0);
	memset(&s, 0, sizeof(s));
	maps[0].prot = 5;
	maps[0].start = BASE;
	maps[0].end = BASE + 0x1000;
	maps[0].path = (char *)"//anon";
	maps[1].prot = 5;
	maps[1].start = BASE + 0x100000;
	maps[1].end = BASE + 0x101000;
	maps[1].path = (char *)"//anon";
	cd.kind = BTRACE_CODE_ANON;
	cd.vaddr = BASE;
	cd.data = code;
	cd.size = sizeof(code);
	buf.kind = BTRACE_TRACE_PT;
	buf.tid = 1;
	buf.cpu = -1;
	buf.data = trace;
	buf.size = (uint64_t)n;
	s.mappings = maps;
	s.nmappings = 2;
	s.code = &cd;
	s.ncode = 1;
	s.buffers = &buf;
	s.nbuffers = 1;

	BT_REQUIRE(t, btrace_decode(&s, &o, &r, &err) == 0);
	BT_REQUIRE(t, r->nthreads == 1);
	BT_EQ_INT(t, 5, r->threads[0].ninsn);
	BT_EQ_INT(t, 0, r->threads[0].ngaps);
	int noted = 0;
	for (size_t i = 0; i < r->nimage_notes; i++)
		noted |= strstr(r->image_notes[i], "0x110000") != NULL;
	BT_CHECK(t, noted);
	btrace_decode_result_free(r);
}

BT_TESTS(test_evex_listing, test_mapping_without_code)
