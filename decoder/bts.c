/* SPDX-License-Identifier: MIT */
/*
 * BTS decoding: 24-byte {from, to, flags} records of taken branches.  The
 * straight-line code between one record's @to and the next one's @from is
 * walked through the image to count its instructions.  Kernel addresses
 * are filtered in software: a user->kernel record ends a user block (a
 * syscall, or a fault/interrupt when the instruction is not a far branch),
 * a kernel->user record says where user code resumed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "bts-ring.h"
#include "decode-internal.h"
#include "util.h"

#define BTS_REC 24
#define WALK_MAX 65536

struct bts_state {
	struct bt_ctx *c;
	struct bt_thread_build *b;
	uint64_t prev_to;         /* start of the current block, 0 unknown */
};

static int add_item(struct bts_state *st, uint32_t kind, uint64_t ip,
		    uint64_t end_ip, uint32_t ninsn, uint64_t off)
{
	struct btrace_block it = { 0 };

	it.kind = kind;
	it.ip = ip;
	it.end_ip = end_ip;
	it.ninsn = ninsn;
	it.offset = off;
	return bt_thread_add_block(st->c, st->b, &it);
}

/* The block from st->prev_to up to @last (inclusive, @incl) or up to the
 * instruction before @last (!@incl). */
static int add_span(struct bts_state *st, uint64_t last, int incl, uint64_t off)
{
	struct bt_ctx *c = st->c;
	uint64_t ip = st->prev_to, n = 0, prev = 0;

	if (!ip) {
		/* first record: only the branch itself is known */
		return incl ? add_item(st, BTRACE_ITEM_BLOCK, last, last, 1, off) : 0;
	}
	while (n < WALK_MAX) {
		if (ip == last)
			break;
		const struct bt_insn_info *ii = bt_insn_classify(c, ip);
		if (!ii->size) {
			int r = bt_thread_add_gap(c, st->b, BTRACE_GAP_NOIMAGE,
						  -BTRACE_ERR_NOMAP, off, ip, 0,
						  bt_image_why_missing(c, ip));
			if (r < 0 || !incl)
				return r;
			return add_item(st, BTRACE_ITEM_BLOCK, last, last, 1, off);
		}
		prev = ip;
		n++;
		ip += ii->size;
		if (ip > last)
			break;
	}
	if (ip != last) {
		int r = bt_thread_add_gap(c, st->b, BTRACE_GAP_DECODE,
					  -BTRACE_ERR_BAD_PACKET, off, st->prev_to, 0,
					  bt_ctx_printf(c, "BTS record at offset %llu: no straight-line path from 0x%llx to 0x%llx",
							(unsigned long long)off,
							(unsigned long long)st->prev_to,
							(unsigned long long)last));
		if (r < 0 || !incl)
			return r;
		return add_item(st, BTRACE_ITEM_BLOCK, last, last, 1, off);
	}
	if (incl)
		return add_item(st, BTRACE_ITEM_BLOCK, st->prev_to, last,
				(uint32_t)n + 1, off);
	if (!n)
		return 0;
	return add_item(st, BTRACE_ITEM_BLOCK, st->prev_to, prev, (uint32_t)n, off);
}

/* @resumed_at_from: the next record that returns to user space returns
 * to @from itself. */
static int record(struct bts_state *st, uint64_t from, uint64_t to, uint64_t off,
		  int resumed_at_from)
{
	struct bt_thread_build *b = st->b;
	int fk = bt_is_kernel(from), tk = bt_is_kernel(to);
	int ret = 0;

	if (fk && tk)
		return 0;
	if (!fk && tk) {
		const struct bt_insn_info *ii = bt_insn_classify(st->c, from);
		/* A system call returns after itself; a return to the
		 * instruction itself means an interrupt (a preemption) came
		 * before it: the record's source is the instruction about to
		 * run, which was not executed.  (A system call restarted
		 * after a signal also returns to itself; BTS cannot tell it
		 * from that, and it is shown as not executed once.) */
		if (ii->cls == BTRACE_INSN_FAR && !resumed_at_from) {
			ret = add_span(st, from, 1, off);
			if (ret >= 0) {
				struct btrace_block it = { 0 };
				it.kind = BTRACE_ITEM_FAR;
				it.ip = from;
				it.offset = off;
				int64_t r = bt_thread_hold(st->c, b, &it);
				ret = r < 0 ? (int)r : 0;
			}
			b->ended_async = 0;
		} else {
			ret = add_span(st, from, 0, off);
			if (ret >= 0)
				ret = add_item(st, BTRACE_ITEM_ASYNC, from, 0, 0, off);
			b->last_async_ip = from;
			b->last_async_block = (int64_t)b->nitems - 1;
			b->last_async_kernel = 0;
			b->ended_async = 1;
		}
		st->prev_to = 0;
		return ret;
	}
	if (fk && !tk) {
		int kind = b->have_held ? (int)b->held.kind : -1;
		if (kind == BTRACE_ITEM_FAR)
			ret = bt_thread_complete(st->c, b, to);
		else
			ret = add_item(st, BTRACE_ITEM_ENABLED, to, 0, 0, off);
		st->prev_to = to;
		b->ended_async = 0;
		return ret;
	}
	ret = add_span(st, from, 1, off);
	st->prev_to = to;
	b->ended_async = 0;
	return ret;
}

static int bts_decode_range(struct bt_ctx *c, const struct btrace_buffer *buf,
			    struct bt_thread_build *b, uint64_t first)
{
	struct bts_state st = { c, b, 0 };
	int ret = 0;

	for (uint64_t off = first; off + BTS_REC <= buf->size && ret >= 0;
	     off += BTS_REC) {
		uint64_t from = bt_le64(buf->data + off);
		uint64_t to = bt_le64(buf->data + off + 8);
		int back = 0;

		if (!from && !to)
			continue;
		if (!bt_is_kernel(from) && bt_is_kernel(to)) {
			/* where the thread came back to user space next */
			for (uint64_t n = off + BTS_REC; n + BTS_REC <= buf->size;
			     n += BTS_REC) {
				uint64_t nf = bt_le64(buf->data + n);
				uint64_t nt = bt_le64(buf->data + n + 8);

				if ((!nf && !nt) || (bt_is_kernel(nf) && bt_is_kernel(nt)))
					continue;
				back = bt_is_kernel(nf) && nt == from;
				break;
			}
		}
		ret = record(&st, from, to, off, back);
	}
	if (ret < 0)
		return ret;
	/* The code after the last branch: known up to the fault only when
	 * the registers say where it is. */
	const struct btrace_signal *sig = c->snap->signal;
	if (st.prev_to && sig && sig->code > 0 && sig->fault_ip &&
	    (sig->fault_source == BTRACE_FAULT_REGS ||
	     sig->fault_source == BTRACE_FAULT_CORE) &&
	    (!sig->tid || sig->tid == buf->tid))
		ret = add_span(&st, sig->fault_ip, 0, buf->size);
	if (ret >= 0)
		ret = bt_thread_flush(c, b);
	return ret;
}

static int bts_decode(struct bt_ctx *c, const struct btrace_buffer *buf,
		      struct bt_thread_build *b);

int bt_bts_decode(struct bt_ctx *c, const struct btrace_buffer *buf,
		  struct bt_thread_build *b)
{
	struct btrace_buffer whole;
	uint64_t at, len;
	uint8_t *data;
	int ret;

	/* A wrapped ring stored by an older btrace with the never-written
	 * tail inside: the records on both sides of it are contiguous. */
	if (!bt_bts_stored_tail(buf, &at, &len))
		return bts_decode(c, buf, b);
	data = malloc(buf->size - len);
	if (!data)
		return -ENOMEM;
	memcpy(data, buf->data, at);
	memcpy(data + at, buf->data + at + len, buf->size - at - len);
	whole = *buf;
	whole.data = data;
	whole.size = buf->size - len;
	ret = bts_decode(c, &whole, b);
	free(data);
	return ret;
}

static int bts_decode(struct bt_ctx *c, const struct btrace_buffer *buf,
		      struct bt_thread_build *b)
{
	uint64_t first = buf->size % BTS_REC;
	uint64_t nrec = buf->size / BTS_REC;
	int ret;

	b->t->unusable_bytes = first;
	if (first) {
		ret = bt_thread_add_gap(c, b, BTRACE_GAP_UNUSABLE, 0, 0, 0, first,
					bt_ctx_printf(c, "%llu bytes before the first whole BTS record are unusable (ring wrapped mid-record)",
						      (unsigned long long)first));
		if (ret < 0)
			return ret;
	}
	if (c->opts.last && !(c->opts.flags & BTRACE_DECODE_FULL)) {
		/* tail only: records are fixed-size, start near the end */
		uint64_t want = c->opts.last * (c->opts.unit == BTRACE_UNIT_INSNS ? 1 : 4) + 64;
		if (want < nrec) {
			uint64_t start = first + (nrec - want) * BTS_REC;
			b->t->truncated = 1;
			b->t->decoded_bytes = buf->size - start;
			return bts_decode_range(c, buf, b, start);
		}
	}
	b->t->decoded_bytes = buf->size - first;
	return bts_decode_range(c, buf, b, first);
}
