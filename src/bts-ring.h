/* SPDX-License-Identifier: MIT */
/*
 * The BTS ring's never-written tail, for readers of snapshots.
 *
 * bts_buffer_setup_aux() (arch/x86/events/intel/bts.c) trims the AUX
 * buffer to whole 24-byte records, so the hardware wraps before the last
 * ring_size % 24 bytes of a power-of-two ring (8 or 16), which stay zero.
 * btrace now stores a wrapped BTS ring as [head, end) + [0, head) with
 * end = ring_size - ring_size % 24; snapshots from before stored
 * [head, ring_size) + [0, head), the zero tail included in the middle of
 * the records.  Readers leave it out.
 */
#ifndef BT_BTS_RING_H
#define BT_BTS_RING_H

#include <stdint.h>

#include <btrace/snapshot.h>

#define BT_BTS_RECORD 24u

/*
 * If @b is a wrapped BTS buffer stored whole (size == ring_size, ring_size
 * not a multiple of 24) whose never-written tail sits at
 * ring_size - pad - head and is all zero: return 1 with its offset in
 * b->data and its length.  Else 0.
 */
static inline int bt_bts_stored_tail(const struct btrace_buffer *b,
				     uint64_t *at, uint64_t *len)
{
	uint64_t pad = b->ring_size % BT_BTS_RECORD;

	if (b->kind != BTRACE_TRACE_BTS || !(b->flags & BTRACE_BUF_WRAPPED) ||
	    !pad || b->size != b->ring_size || !b->data ||
	    b->head % BT_BTS_RECORD || b->head > b->ring_size - pad)
		return 0;
	*at = b->ring_size - pad - b->head;
	*len = pad;
	for (uint64_t i = 0; i < pad; i++)
		if (b->data[*at + i])
			return 0;
	return 1;
}

#endif /* BT_BTS_RING_H */
