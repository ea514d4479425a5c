// SPDX-License-Identifier: MIT
/*
 * Software Intel PT encoder: executed branches in, the packet stream a
 * user-only Intel PT trace would hold out.  Packets are produced by libipt's
 * encoder one at a time into a scratch buffer and appended to our own output
 * (a growing buffer, or a ring that keeps the newest bytes like a hardware
 * AUX ring in overwrite mode).
 *
 * The packet rules (docs/qemu-backend.md; the Intel SDM's Intel PT
 * chapter) are what libipt's decoders need to rebuild the exact path:
 *  - trace start: PSB PSBEND MODE.Exec TIP.PGE(ip);
 *  - periodic PSB+ while tracing: PSB MODE.Exec FUP(next ip) PSBEND, with
 *    last-IP and the return-compression stack reset;
 *  - TNT bits are flushed before every TIP/FUP/TIP.PGD/OVF/PSB;
 *  - returns are compressed against a mirror of libipt's 64-entry stack;
 *  - far transfers: TIP.PGD(suppressed) MODE.Exec TIP.PGE(to);
 *  - asynchronous transfers: FUP(from) TIP.PGD(suppressed) MODE.Exec
 *    TIP.PGE(to);
 *  - end: FUP(ip) TIP.PGD(suppressed);
 *  - time: TSC(value) where the caller says, after the TNT bits of the
 *    branches before it (flushed), so a decoder sees the time change
 *    between the two branches; once a time was given, every PSB+ carries
 *    TSC(the latest) after the PSB, as hardware's does (perf needs one
 *    there, docs/export.md).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include "encode.h"

#define BT_PT_RETSTACK 64
#define BT_PT_DEFAULT_PSB 4096

struct bt_pt_enc {
	struct bt_pt_enc_opts opts;
	struct pt_encoder *enc;
	uint8_t scratch[64];

	/* Output: a ring when opts.ring_size, else a growing buffer. */
	uint8_t *buf;
	uint64_t cap;
	uint64_t len;          /* bytes in buf (growing) */
	uint64_t head;         /* next write offset (ring) */
	int wrapped;
	uint8_t *lin;          /* linearised ring for bt_pt_enc_data() */
	uint64_t total;        /* bytes ever written */
	uint64_t last_psb;     /* @total at the last PSB */

	/* Packet state mirrored from the decoder. */
	int started;           /* a PSB has been written */
	int enabled;           /* tracing is on (between PGE and PGD) */
	int have_last_ip;
	uint64_t last_ip;
	uint64_t tnt_bits;
	unsigned int tnt_n;
	int have_tsc;          /* a time was given (bt_pt_enc_tsc) */
	uint64_t last_tsc;     /* ... the latest */
	uint64_t retstack[BT_PT_RETSTACK];
	unsigned int rs_top;   /* index of the next push */
	unsigned int rs_n;     /* valid entries, <= BT_PT_RETSTACK */
};

static int bt_pt_append(struct bt_pt_enc *e, const uint8_t *p, uint64_t n)
{
	e->total += n;
	if (e->opts.ring_size) {
		uint64_t size = e->opts.ring_size;

		while (n) {
			uint64_t chunk = size - e->head;

			if (chunk > n)
				chunk = n;
			memcpy(e->buf + e->head, p, chunk);
			p += chunk;
			n -= chunk;
			e->head += chunk;
			if (e->head == size) {
				e->head = 0;
				e->wrapped = 1;
			}
		}
		return 0;
	}
	if (e->len + n > e->cap) {
		uint64_t ncap = e->cap ? e->cap : 4096;
		uint8_t *nb;

		while (ncap < e->len + n)
			ncap *= 2;
		nb = realloc(e->buf, ncap);
		if (!nb)
			return -ENOMEM;
		e->buf = nb;
		e->cap = ncap;
	}
	memcpy(e->buf + e->len, p, n);
	e->len += n;
	return 0;
}

static int bt_pt_put(struct bt_pt_enc *e, struct pt_packet *pkt)
{
	int n;

	if (pt_enc_sync_set(e->enc, 0) < 0)
		return -EIO;
	n = pt_enc_next(e->enc, pkt);
	if (n < 0)
		return -EINVAL;
	return bt_pt_append(e, e->scratch, (uint64_t)n);
}

static int bt_pt_simple(struct bt_pt_enc *e, enum pt_packet_type type)
{
	struct pt_packet pkt;

	memset(&pkt, 0, sizeof(pkt));
	pkt.type = type;
	return bt_pt_put(e, &pkt);
}

static int bt_pt_mode(struct bt_pt_enc *e)
{
	struct pt_packet pkt;

	memset(&pkt, 0, sizeof(pkt));
	pkt.type = ppt_mode;
	pkt.payload.mode.leaf = pt_mol_exec;
	pkt.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
	return bt_pt_put(e, &pkt);
}

static int bt_canonical48(uint64_t ip)
{
	uint64_t top = ip >> 47;

	return top == 0 || top == (UINT64_MAX >> 47);
}

/* A packet with an IP payload, compressed against last-IP. */
static int bt_pt_ip(struct bt_pt_enc *e, enum pt_packet_type type,
		    uint64_t ip, int suppressed)
{
	struct pt_packet pkt;
	enum pt_ip_compression ipc;

	memset(&pkt, 0, sizeof(pkt));
	pkt.type = type;
	if (suppressed) {
		ipc = pt_ipc_suppressed;
	} else if (e->have_last_ip && (ip >> 16) == (e->last_ip >> 16)) {
		ipc = pt_ipc_update_16;
	} else if (e->have_last_ip && (ip >> 32) == (e->last_ip >> 32)) {
		ipc = pt_ipc_update_32;
	} else if (bt_canonical48(ip)) {
		ipc = pt_ipc_sext_48;
	} else {
		ipc = pt_ipc_full;
	}
	pkt.payload.ip.ipc = ipc;
	pkt.payload.ip.ip = suppressed ? 0 : ip;
	if (!suppressed) {
		e->last_ip = ip;
		e->have_last_ip = 1;
	}
	return bt_pt_put(e, &pkt);
}

static int bt_pt_flush_tnt(struct bt_pt_enc *e)
{
	struct pt_packet pkt;
	int rc;

	if (!e->tnt_n)
		return 0;
	memset(&pkt, 0, sizeof(pkt));
	pkt.type = e->opts.tnt64 ? ppt_tnt_64 : ppt_tnt_8;
	pkt.payload.tnt.bit_size = (uint8_t)e->tnt_n;
	pkt.payload.tnt.payload = e->tnt_bits;
	rc = bt_pt_put(e, &pkt);
	e->tnt_bits = 0;
	e->tnt_n = 0;
	return rc;
}

static int bt_pt_tnt(struct bt_pt_enc *e, int taken)
{
	unsigned int max = e->opts.tnt64 ? 47 : 6;

	e->tnt_bits = (e->tnt_bits << 1) | (taken ? 1u : 0u);
	e->tnt_n++;
	if (e->tnt_n >= max)
		return bt_pt_flush_tnt(e);
	return 0;
}

static void bt_pt_rs_reset(struct bt_pt_enc *e)
{
	e->rs_top = 0;
	e->rs_n = 0;
}

static void bt_pt_rs_push(struct bt_pt_enc *e, uint64_t ip)
{
	e->retstack[e->rs_top] = ip;
	e->rs_top = (e->rs_top + 1) % BT_PT_RETSTACK;
	if (e->rs_n < BT_PT_RETSTACK)
		e->rs_n++;
}

/* Pop if the top is @ip; returns 1 when the return can be compressed. */
static int bt_pt_rs_pop_if(struct bt_pt_enc *e, uint64_t ip)
{
	unsigned int top;

	if (!e->rs_n)
		return 0;
	top = (e->rs_top + BT_PT_RETSTACK - 1) % BT_PT_RETSTACK;
	if (e->retstack[top] != ip)
		return 0;
	e->rs_top = top;
	e->rs_n--;
	return 1;
}

static int bt_pt_tsc_packet(struct bt_pt_enc *e, uint64_t tsc)
{
	struct pt_packet pkt;

	memset(&pkt, 0, sizeof(pkt));
	pkt.type = ppt_tsc;
	pkt.payload.tsc.tsc = tsc & ((1ull << 56) - 1);
	return bt_pt_put(e, &pkt);
}

/* PSB+; with tracing on it carries MODE.Exec and FUP(@ip); once a time
 * was given, TSC(the latest), as hardware puts the time in every PSB+
 * (here a lower bound: the time at the last bt_pt_enc_tsc()). */
static int bt_pt_psb(struct bt_pt_enc *e, uint64_t ip)
{
	int rc;

	rc = bt_pt_flush_tnt(e);
	if (rc)
		return rc;
	e->last_psb = e->total;
	e->have_last_ip = 0;
	bt_pt_rs_reset(e);
	e->started = 1;
	rc = bt_pt_simple(e, ppt_psb);
	if (!rc && e->have_tsc)
		rc = bt_pt_tsc_packet(e, e->last_tsc);
	if (!rc && e->enabled) {
		rc = bt_pt_mode(e);
		if (!rc)
			rc = bt_pt_ip(e, ppt_fup, ip, 0);
	}
	if (!rc)
		rc = bt_pt_simple(e, ppt_psbend);
	return rc;
}

static int bt_pt_psb_due(const struct bt_pt_enc *e)
{
	uint32_t period = e->opts.psb_period ? e->opts.psb_period :
			  BT_PT_DEFAULT_PSB;

	return !e->started || e->total - e->last_psb >= period;
}

/* Tracing (re)starts at @ip: MODE.Exec TIP.PGE(ip), after a PSB if due. */
static int bt_pt_enable(struct bt_pt_enc *e, uint64_t ip)
{
	int rc = 0;

	if (bt_pt_psb_due(e))
		rc = bt_pt_psb(e, ip);
	if (!rc)
		rc = bt_pt_mode(e);
	if (!rc)
		rc = bt_pt_ip(e, ppt_tip_pge, ip, 0);
	if (!rc)
		e->enabled = 1;
	return rc;
}

static int bt_pt_disable(struct bt_pt_enc *e)
{
	int rc = bt_pt_flush_tnt(e);

	if (!rc)
		rc = bt_pt_ip(e, ppt_tip_pgd, 0, 1);
	e->enabled = 0;
	return rc;
}

int bt_pt_enc_new(const struct bt_pt_enc_opts *opts, struct bt_pt_enc **out)
{
	struct pt_config cfg;
	struct bt_pt_enc *e;

	*out = NULL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	if (opts)
		e->opts = *opts;
	pt_config_init(&cfg);
	cfg.begin = e->scratch;
	cfg.end = e->scratch + sizeof(e->scratch);
	e->enc = pt_alloc_encoder(&cfg);
	if (!e->enc) {
		free(e);
		return -ENOMEM;
	}
	if (e->opts.ring_size) {
		e->buf = malloc(e->opts.ring_size);
		if (!e->buf) {
			bt_pt_enc_free(e);
			return -ENOMEM;
		}
		e->cap = e->opts.ring_size;
	}
	*out = e;
	return 0;
}

void bt_pt_enc_free(struct bt_pt_enc *enc)
{
	if (!enc)
		return;
	pt_free_encoder(enc->enc);
	free(enc->buf);
	free(enc->lin);
	free(enc);
}

int bt_pt_enc_begin(struct bt_pt_enc *enc, uint64_t ip)
{
	int rc;

	if (enc->enabled) {
		/* A gap: execution continues elsewhere without a branch. */
		rc = bt_pt_disable(enc);
		if (rc)
			return rc;
	}
	return bt_pt_enable(enc, ip);
}

int bt_pt_enc_branch(struct bt_pt_enc *enc, const struct bt_branch *br)
{
	uint64_t next = br->from + br->len;
	int rc = 0;

	if (!enc->enabled)
		return -EINVAL;

	switch (br->kind) {
	case BT_BR_NONE:
	case BT_BR_JMP:
		break;
	case BT_BR_COND:
		rc = bt_pt_tnt(enc, br->taken);
		break;
	case BT_BR_CALL:
		/* libipt does not push for a call to the next instruction. */
		if (br->to != next)
			bt_pt_rs_push(enc, next);
		break;
	case BT_BR_CALL_IND:
		bt_pt_rs_push(enc, next);
		/* fall through */
	case BT_BR_JMP_IND:
		rc = bt_pt_flush_tnt(enc);
		if (!rc)
			rc = bt_pt_ip(enc, ppt_tip, br->to, 0);
		break;
	case BT_BR_RET:
		if (enc->opts.retcomp && bt_pt_rs_pop_if(enc, br->to)) {
			rc = bt_pt_tnt(enc, 1);
		} else {
			rc = bt_pt_flush_tnt(enc);
			if (!rc)
				rc = bt_pt_ip(enc, ppt_tip, br->to, 0);
		}
		break;
	case BT_BR_FAR:
		rc = bt_pt_disable(enc);
		if (!rc)
			rc = bt_pt_enable(enc, br->to);
		return rc;
	case BT_BR_ASYNC:
		rc = bt_pt_flush_tnt(enc);
		if (!rc)
			rc = bt_pt_ip(enc, ppt_fup, br->from, 0);
		if (!rc)
			rc = bt_pt_disable(enc);
		if (!rc)
			rc = bt_pt_enable(enc, br->to);
		return rc;
	default:
		return -EINVAL;
	}
	if (!rc && bt_pt_psb_due(enc))
		rc = bt_pt_psb(enc, br->to);
	return rc;
}

int bt_pt_enc_tsc(struct bt_pt_enc *enc, uint64_t tsc)
{
	int rc;

	enc->have_tsc = 1;
	enc->last_tsc = tsc;
	if (!enc->started)
		return 0;   /* the first PSB+ will carry it */
	rc = bt_pt_flush_tnt(enc);
	if (rc)
		return rc;
	return bt_pt_tsc_packet(enc, tsc);
}

int bt_pt_enc_overflow(struct bt_pt_enc *enc, uint64_t ip)
{
	int rc = bt_pt_flush_tnt(enc);

	if (rc)
		return rc;
	if (!enc->started) {
		rc = bt_pt_psb(enc, ip);
		if (rc)
			return rc;
	}
	rc = bt_pt_simple(enc, ppt_ovf);
	if (rc)
		return rc;
	/* Start afresh: the decoder may have lost its context. */
	enc->have_last_ip = 0;
	bt_pt_rs_reset(enc);
	if (enc->enabled)
		return bt_pt_ip(enc, ppt_fup, ip, 0);
	return bt_pt_enable(enc, ip);
}

int bt_pt_enc_end(struct bt_pt_enc *enc, uint64_t ip)
{
	int rc;

	if (!enc->enabled)
		return 0;
	rc = bt_pt_flush_tnt(enc);
	if (!rc)
		rc = bt_pt_ip(enc, ppt_fup, ip, 0);
	if (!rc)
		rc = bt_pt_disable(enc);
	return rc;
}

const uint8_t *bt_pt_enc_data(struct bt_pt_enc *enc, uint64_t *size,
			      int *wrapped)
{
	uint64_t rs = enc->opts.ring_size;

	if (wrapped)
		*wrapped = enc->wrapped;
	if (!rs) {
		*size = enc->len;
		return enc->buf;
	}
	if (!enc->wrapped) {
		*size = enc->head;
		return enc->buf;
	}
	if (!enc->lin) {
		enc->lin = malloc(rs);
		if (!enc->lin) {
			*size = 0;
			return NULL;
		}
	}
	memcpy(enc->lin, enc->buf + enc->head, rs - enc->head);
	memcpy(enc->lin + (rs - enc->head), enc->buf, enc->head);
	*size = rs;
	return enc->lin;
}
