// SPDX-License-Identifier: MIT
/*
 * Software BTS encoder: one 24-byte {from, to, flags} record per taken
 * branch, as Intel BTS writes them (little endian, flags bit 4 =
 * predicted).  With a ring, only whole records are kept: the ring holds
 * floor(ring_size / 24) records and the newest overwrite the oldest.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "util.h"

#define BT_BTS_REC 24u
#define BT_BTS_PREDICTED 0x10u

struct bt_bts_enc {
	uint64_t nrec;     /* ring capacity in records, 0: unbounded */
	uint8_t *buf;
	uint64_t cap;      /* bytes allocated (unbounded mode) */
	uint64_t len;      /* bytes used (unbounded mode) */
	uint64_t head;     /* next record slot (ring mode) */
	int wrapped;
	uint8_t *lin;
};

int bt_bts_enc_new(uint64_t ring_size, struct bt_bts_enc **out)
{
	struct bt_bts_enc *e;

	*out = NULL;
	if (ring_size && ring_size < BT_BTS_REC)
		return -EINVAL;
	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->nrec = ring_size / BT_BTS_REC;
	if (e->nrec) {
		e->buf = malloc(e->nrec * BT_BTS_REC);
		if (!e->buf) {
			free(e);
			return -ENOMEM;
		}
	}
	*out = e;
	return 0;
}

void bt_bts_enc_free(struct bt_bts_enc *enc)
{
	if (!enc)
		return;
	free(enc->buf);
	free(enc->lin);
	free(enc);
}

int bt_bts_enc_branch(struct bt_bts_enc *enc, const struct bt_branch *br)
{
	uint8_t *rec;

	switch (br->kind) {
	case BT_BR_NONE:
		return 0;
	case BT_BR_COND:
		if (!br->taken)
			return 0;
		break;
	case BT_BR_JMP:
	case BT_BR_CALL:
	case BT_BR_JMP_IND:
	case BT_BR_CALL_IND:
	case BT_BR_RET:
	case BT_BR_FAR:
	case BT_BR_ASYNC:
		break;
	default:
		return -EINVAL;
	}

	if (enc->nrec) {
		rec = enc->buf + enc->head * BT_BTS_REC;
		if (++enc->head == enc->nrec) {
			enc->head = 0;
			enc->wrapped = 1;
		}
	} else {
		if (enc->len + BT_BTS_REC > enc->cap) {
			uint64_t ncap = enc->cap ? enc->cap * 2 : 64 * BT_BTS_REC;
			uint8_t *nb = realloc(enc->buf, ncap);

			if (!nb)
				return -ENOMEM;
			enc->buf = nb;
			enc->cap = ncap;
		}
		rec = enc->buf + enc->len;
		enc->len += BT_BTS_REC;
	}
	bt_put64(rec, br->from);
	bt_put64(rec + 8, br->to);
	bt_put64(rec + 16, BT_BTS_PREDICTED);
	return 0;
}

const uint8_t *bt_bts_enc_data(struct bt_bts_enc *enc, uint64_t *size,
			       int *wrapped)
{
	uint64_t bytes = enc->nrec * BT_BTS_REC;
	uint64_t h = enc->head * BT_BTS_REC;

	if (wrapped)
		*wrapped = enc->wrapped;
	if (!enc->nrec) {
		*size = enc->len;
		return enc->buf;
	}
	if (!enc->wrapped) {
		*size = h;
		return enc->buf;
	}
	if (!enc->lin) {
		enc->lin = malloc(bytes);
		if (!enc->lin) {
			*size = 0;
			return NULL;
		}
	}
	memcpy(enc->lin, enc->buf + h, bytes - h);
	memcpy(enc->lin + (bytes - h), enc->buf, h);
	*size = bytes;
	return enc->lin;
}
