/* SPDX-License-Identifier: MIT */
#include "aux-ring.h"

#include <errno.h>
#include <string.h>

#include "util.h"

#define BTS_RECORD_SIZE 24

uint64_t bt_aux_hw_end(uint32_t kind, uint64_t ring_size)
{
	if (kind == BTRACE_TRACE_BTS)
		return ring_size - ring_size % BTS_RECORD_SIZE;
	return ring_size;
}

void bt_aux_locate_kind(uint32_t kind, const uint8_t *ring, uint64_t size,
			uint64_t aux_head, struct bt_aux_span *out)
{
	uint64_t end = bt_aux_hw_end(kind, size);
	uint64_t head = size ? aux_head & (size - 1) : 0;
	uint64_t i;

	memset(out, 0, sizeof(*out));
	out->ring_size = size;
	out->end = end;
	/* bts_update() publishes the DS index; an index at the absolute
	 * maximum means the next record goes to the base. */
	if (head >= end)
		head = 0;
	out->head = head;
	if (!end)
		return;
	/* Word-wise scan of [head, end) for anything written. */
	for (i = head; i < end && (i & 7); i++)
		if (ring[i])
			goto wrapped;
	for (; i + 8 <= end; i += 8) {
		uint64_t w;

		memcpy(&w, ring + i, 8);
		if (w)
			goto wrapped;
	}
	for (; i < end; i++)
		if (ring[i])
			goto wrapped;
	out->len = head;
	return;
wrapped:
	out->wrapped = true;
	out->len = end;
}

void bt_aux_locate(const uint8_t *ring, uint64_t size, uint64_t aux_head,
		   struct bt_aux_span *out)
{
	bt_aux_locate_kind(BTRACE_TRACE_PT, ring, size, aux_head, out);
}

uint64_t bt_aux_buffer(uint32_t kind, const uint8_t *ring, uint64_t size,
		       uint64_t aux_head, struct btrace_buffer *b)
{
	struct bt_aux_span span;

	bt_aux_locate_kind(kind, ring, size, aux_head, &span);
	b->kind = kind;
	b->ring_size = size;
	b->head = span.head;
	if (span.wrapped)
		b->flags |= BTRACE_BUF_WRAPPED;
	else
		b->flags &= ~BTRACE_BUF_WRAPPED;
	return span.len;
}

void bt_bts_samples_read(const uint8_t *data, uint64_t size,
			 uint64_t data_head, uint8_t *out,
			 struct bt_bts_samples *st)
{
	uint64_t limit = data_head > size ? data_head - size : 0;
	uint64_t pos = data_head, cap = size / BTS_RECORD_SIZE, n = 0;

	memset(st, 0, sizeof(*st));
	st->wrapped = data_head > size;
	if (!size || (size & (size - 1)))
		return;
	while (pos - limit >= BTS_RECORD_SIZE && n < cap) {
		uint8_t rec[BTS_RECORD_SIZE];
		uint64_t off, from, to;

		pos -= BTS_RECORD_SIZE;
		off = pos & (size - 1);
		if (off + BTS_RECORD_SIZE <= size) {
			memcpy(rec, data + off, BTS_RECORD_SIZE);
		} else {
			memcpy(rec, data + off, size - off);
			memcpy(rec + (size - off), data,
			       BTS_RECORD_SIZE - (size - off));
		}
		if (bt_le32(rec) != 9 /* PERF_RECORD_SAMPLE */ ||
		    bt_le16(rec + 6) != BTS_RECORD_SIZE) {
			st->stopped = true;
			break;
		}
		from = bt_le64(rec + 8);
		to = bt_le64(rec + 16);
		/* kernel_ip(): the kernel filters these already */
		if ((int64_t)from < 0 || (int64_t)to < 0) {
			st->kernel++;
			continue;
		}
		/* newest last: fill from the end of the room, moved down
		 * below */
		bt_put64(out + (cap - 1 - n) * BTS_RECORD_SIZE, from);
		bt_put64(out + (cap - 1 - n) * BTS_RECORD_SIZE + 8, to);
		bt_put64(out + (cap - 1 - n) * BTS_RECORD_SIZE + 16, 0);
		n++;
	}
	if (n < cap)
		memmove(out, out + (cap - n) * BTS_RECORD_SIZE,
			n * BTS_RECORD_SIZE);
	st->records = n;
}

int bt_aux_map_halving(uint64_t bytes, uint64_t min_bytes,
		       int (*try_map)(uint64_t len, void *arg), void *arg,
		       uint64_t *got)
{
	int r = -EINVAL;

	*got = 0;
	if (!min_bytes)
		min_bytes = 1;
	for (uint64_t len = bytes; len >= min_bytes && len; len /= 2) {
		r = try_map(len, arg);
		if (r == 0) {
			*got = len;
			return 0;
		}
		if (r != -ENOMEM)
			return r;
	}
	return r;
}

void bt_aux_linearize(const uint8_t *ring, const struct bt_aux_span *span,
		      uint8_t *dst)
{
	if (span->wrapped) {
		uint64_t first = span->end - span->head;

		memcpy(dst, ring + span->head, first);
		memcpy(dst + first, ring, span->head);
	} else {
		memcpy(dst, ring, span->len);
	}
}

uint64_t bt_ring_iterate(const uint8_t *ring, uint64_t size, uint64_t tail,
			 uint64_t head, uint8_t *scratch,
			 int (*fn)(const struct bt_rec *rec, void *arg),
			 void *arg, bool *corrupt)
{
	uint64_t mask = size - 1;

	if (corrupt)
		*corrupt = false;
	/* The kernel never lets head run more than size ahead of tail in
	 * normal mode; if it did, the oldest bytes are gone. */
	if (head - tail > size)
		tail = head - size;
	while (head - tail >= 8) {
		const uint8_t *p = ring + (tail & mask);
		uint8_t hdr[8];
		struct bt_rec rec;
		uint64_t off = tail & mask;

		if (off + 8 <= size) {
			memcpy(hdr, p, 8);
		} else {
			memcpy(hdr, p, size - off);
			memcpy(hdr + (size - off), ring, 8 - (size - off));
		}
		rec.type = bt_le32(hdr);
		rec.misc = bt_le16(hdr + 4);
		rec.size = bt_le16(hdr + 6);
		if (rec.size < 8) {
			if (corrupt)
				*corrupt = true;
			return head;
		}
		if (head - tail < rec.size)
			break;
		if (off + rec.size <= size) {
			rec.data = p;
		} else {
			uint64_t first = size - off;

			memcpy(scratch, p, first);
			memcpy(scratch + first, ring, rec.size - first);
			rec.data = scratch;
		}
		tail += rec.size;
		if (fn && fn(&rec, arg))
			break;
	}
	return tail;
}
