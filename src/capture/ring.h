/* SPDX-License-Identifier: MIT */
/*
 * Ring arithmetic: the overwrite-mode AUX ring (where the valid bytes are
 * after a stop) and the data ring (records between data_tail and
 * data_head, records that wrap past the end copied into a scratch buffer).
 * Pure functions over memory, so the unit tests can drive them with a model
 * of the kernel's semantics.
 */
#ifndef BT_CAPTURE_RING_H
#define BT_CAPTURE_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Where the valid bytes of a stopped overwrite-mode AUX ring are. */
struct bt_aux_span {
	uint64_t ring_size;
	uint64_t head;      /* next write offset, in [0, ring_size) */
	bool wrapped;       /* bytes beyond head were written: the ring is full */
	uint64_t len;       /* valid bytes: ring_size if wrapped, else head */
};

/*
 * Locate the valid bytes of @ring (@size bytes, a power of two) given the
 * aux_head the kernel published at the last stop.  In overwrite mode the
 * kernel publishes the write offset within the buffer; a monotonic value is
 * reduced modulo @size.  The ring wrapped when any byte in [head, size) is
 * non-zero (AUX pages are zeroed once at allocation and never again).
 */
void bt_aux_locate(const uint8_t *ring, uint64_t size, uint64_t aux_head,
		   struct bt_aux_span *out);

/* Copy the valid bytes oldest first: [head, size) + [0, head) when wrapped,
 * else [0, head).  @dst holds span->len bytes. */
void bt_aux_linearize(const uint8_t *ring, const struct bt_aux_span *span,
		      uint8_t *dst);

/* A record read from a data ring. */
struct bt_rec {
	uint32_t type;
	uint16_t misc;
	uint16_t size;
	const uint8_t *data;  /* the whole record, header included */
};

/*
 * Iterate records in a data ring of @size bytes (power of two) between
 * @tail and @head (monotonic byte counters).  Calls @fn for every complete
 * record; a record wrapping past the end is copied into @scratch (64 KiB is
 * enough: records are at most 64 KiB).  Returns the new tail (after the last
 * complete record), or stops early when @fn returns non-zero.  A record with
 * size < 8 is corrupt: iteration stops and *corrupt is set.
 */
uint64_t bt_ring_iterate(const uint8_t *ring, uint64_t size, uint64_t tail,
			 uint64_t head, uint8_t *scratch,
			 int (*fn)(const struct bt_rec *rec, void *arg),
			 void *arg, bool *corrupt);

#endif /* BT_CAPTURE_RING_H */
