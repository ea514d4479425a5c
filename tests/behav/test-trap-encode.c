// SPDX-License-Identifier: MIT
/*
 * Traps and libipt: what the QEMU backend's rebuilt branches must be for
 * int3, int1, into and ud2 so that libipt's decoder follows them.
 *
 * libipt 2.0.5 classifies int3 (0xcc), int1 (0xf1), into (0xce) and int n
 * (0xcd) as far calls: at such an instruction the decoder asks for a
 * TIP/TIP.PGD.  int3 and int1 complete before the exception (a trap), so
 * the backend rebuilds them as BT_BR_FAR (TIP.PGD, then TIP.PGE where
 * execution resumes: the next instruction or a SIGTRAP handler), exactly as
 * int n.  ud2 and into (invalid in 64-bit mode: #UD) fault without
 * completing: BT_BR_ASYNC from the instruction (FUP, TIP.PGD), and a death
 * there ends the trace with FUP(insn) TIP.PGD.  The old rebuild of a death
 * on int3 (no branch, then FUP after it) is checked to fail, which is what
 * made such programs decode to nothing.
 */
#include <stdio.h>
#include <string.h>

#include <intel-pt.h>

#include "bt-test.h"
#include "encode.h"

#define BASE 0x400000ull
#define HANDLER (BASE + 0x20)

static uint8_t img[64];

static int read_img(uint8_t *buf, size_t size, const struct pt_asid *asid,
		    uint64_t ip, void *ctx)
{
	size_t n;

	(void)asid;
	(void)ctx;
	if (ip < BASE || ip >= BASE + sizeof(img))
		return -pte_nomap;
	n = BASE + sizeof(img) - ip;
	if (n > size)
		n = size;
	memcpy(buf, img + (ip - BASE), n);
	return (int)n;
}

struct result {
	uint64_t ips[32];
	int nips;
	enum pt_insn_class cls_at_trap;
	uint64_t async_at;   /* the last async_disabled event's IP */
	int nasync;
	int error;           /* the first error other than end of trace */
};

static void decode(const uint8_t *buf, uint64_t size, uint64_t trap,
		   struct result *res)
{
	struct pt_config cfg;
	struct pt_insn_decoder *d;
	int st;

	memset(res, 0, sizeof(*res));
	res->cls_at_trap = ptic_error;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + size;
	d = pt_insn_alloc_decoder(&cfg);
	if (!d) {
		res->error = -1;
		return;
	}
	pt_image_set_callback(pt_insn_get_image(d), read_img, NULL);
	st = pt_insn_sync_forward(d);
	for (;;) {
		struct pt_insn in;

		while (st >= 0 && (st & pts_event_pending)) {
			struct pt_event ev;

			st = pt_insn_event(d, &ev, sizeof(ev));
			if (st >= 0 && ev.type == ptev_async_disabled) {
				res->async_at = ev.variant.async_disabled.at;
				res->nasync++;
			}
		}
		if (st < 0 || (st & pts_eos))
			break;
		memset(&in, 0, sizeof(in));
		st = pt_insn_next(d, &in, sizeof(in));
		if (in.iclass != ptic_error && res->nips < 32) {
			res->ips[res->nips++] = in.ip;
			if (in.ip == trap)
				res->cls_at_trap = in.iclass;
		}
		if (st < 0)
			break;
	}
	if (st < 0 && st != -pte_eos)
		res->error = st;
	pt_insn_free_decoder(d);
}

/* nop x4, the trap at BASE+4 (@len bytes), nops; a "handler" of nops at
 * HANDLER. */
static void build(const uint8_t *trap, size_t len)
{
	memset(img, 0x90, sizeof(img));
	memcpy(img + 4, trap, len);
}

enum how { DIE_OLD, DIE_FAR, HANDLER_FAR, DIE_FAULT, HANDLER_ASYNC };

static void encode_decode(struct bt_test *t, enum how how, uint8_t len,
			  struct result *res)
{
	struct bt_pt_enc_opts o = { .retcomp = 1 };
	struct bt_pt_enc *e = NULL;
	struct bt_branch b;
	const uint8_t *data;
	uint64_t trap = BASE + 4, next = trap + len, size;

	BT_EQ_INT(t, 0, bt_pt_enc_new(&o, &e));
	if (!e)
		return;
	BT_EQ_INT(t, 0, bt_pt_enc_begin(e, BASE));
	memset(&b, 0, sizeof(b));
	b.from = trap;
	b.len = len;
	switch (how) {
	case DIE_OLD:      /* the rebuild before: "no branch", end after it */
		b.kind = BT_BR_NONE;
		b.to = next;
		BT_EQ_INT(t, 0, bt_pt_enc_branch(e, &b));
		BT_EQ_INT(t, 0, bt_pt_enc_end(e, next));
		break;
	case DIE_FAR:      /* died of the trap: rip after it */
		b.kind = BT_BR_FAR;
		b.to = next;
		BT_EQ_INT(t, 0, bt_pt_enc_branch(e, &b));
		BT_EQ_INT(t, 0, bt_pt_enc_end(e, next));
		break;
	case HANDLER_FAR:  /* a SIGTRAP handler ran, then died in it */
		b.kind = BT_BR_FAR;
		b.to = HANDLER;
		BT_EQ_INT(t, 0, bt_pt_enc_branch(e, &b));
		BT_EQ_INT(t, 0, bt_pt_enc_end(e, HANDLER + 2));
		break;
	case DIE_FAULT:    /* died at a faulting instruction: rip at it */
		BT_EQ_INT(t, 0, bt_pt_enc_end(e, trap));
		break;
	case HANDLER_ASYNC:
		b.kind = BT_BR_ASYNC;
		b.len = 0;
		b.to = HANDLER;
		BT_EQ_INT(t, 0, bt_pt_enc_branch(e, &b));
		BT_EQ_INT(t, 0, bt_pt_enc_end(e, HANDLER + 2));
		break;
	}
	data = bt_pt_enc_data(e, &size, NULL);
	BT_CHECK(t, data && size > 0);
	if (data)
		decode(data, size, trap, res);
	bt_pt_enc_free(e);
}

static const uint64_t path_to_trap[] = { BASE, BASE + 1, BASE + 2, BASE + 3 };

static void check_far_trap(struct bt_test *t, const uint8_t *op, uint8_t len)
{
	struct result r;

	build(op, len);
	/* Died of the trap: the trap executed, the trace ends after it. */
	encode_decode(t, DIE_FAR, len, &r);
	BT_EQ_INT(t, 0, r.error);
	BT_EQ_INT(t, 5, r.nips);
	BT_EQ_MEM(t, path_to_trap, r.ips, sizeof(path_to_trap));
	BT_EQ_U64(t, BASE + 4, r.ips[4]);
	BT_EQ_INT(t, ptic_far_call, r.cls_at_trap);
	BT_EQ_U64(t, BASE + 4 + len, r.async_at);
	/* A handler ran after the trap. */
	encode_decode(t, HANDLER_FAR, len, &r);
	BT_EQ_INT(t, 0, r.error);
	BT_EQ_INT(t, 7, r.nips);
	BT_EQ_U64(t, BASE + 4, r.ips[4]);
	BT_EQ_U64(t, HANDLER, r.ips[5]);
	BT_EQ_U64(t, HANDLER + 1, r.ips[6]);
	BT_EQ_U64(t, HANDLER + 2, r.async_at);
	/* The old rebuild did not reach the end of the trace. */
	encode_decode(t, DIE_OLD, len, &r);
	BT_CHECK(t, r.error != 0 || r.async_at != BASE + 4 + len);
}

static void test_int3(struct bt_test *t)
{
	static const uint8_t op[] = { 0xcc };

	check_far_trap(t, op, 1);
}

static void test_int1(struct bt_test *t)
{
	static const uint8_t op[] = { 0xf1 };

	check_far_trap(t, op, 1);
}

static void test_int_n(struct bt_test *t)
{
	static const uint8_t op[] = { 0xcd, 0x80 };

	check_far_trap(t, op, 2);
}

/* ud2 and into (#UD in 64-bit mode) do not complete. */
static void check_fault(struct bt_test *t, const uint8_t *op, uint8_t len)
{
	struct result r;

	build(op, len);
	encode_decode(t, DIE_FAULT, len, &r);
	BT_EQ_INT(t, 0, r.error);
	BT_EQ_INT(t, 4, r.nips);
	BT_EQ_MEM(t, path_to_trap, r.ips, sizeof(path_to_trap));
	BT_EQ_U64(t, BASE + 4, r.async_at);
	encode_decode(t, HANDLER_ASYNC, len, &r);
	BT_EQ_INT(t, 0, r.error);
	BT_EQ_INT(t, 6, r.nips);
	BT_EQ_U64(t, HANDLER, r.ips[4]);
	BT_EQ_INT(t, 2, r.nasync);
	BT_EQ_U64(t, HANDLER + 2, r.async_at);
}

static void test_ud2(struct bt_test *t)
{
	static const uint8_t op[] = { 0x0f, 0x0b };

	check_fault(t, op, 2);
}

static void test_into(struct bt_test *t)
{
	static const uint8_t op[] = { 0xce };

	check_fault(t, op, 1);
}

BT_TESTS(test_int3, test_int1, test_int_n, test_ud2, test_into)
