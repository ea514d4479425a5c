/* SPDX-License-Identifier: MIT */
/*
 * Ring arithmetic: the overwrite-mode AUX ring (where the valid bytes are
 * after a stop) and the data ring (records between data_tail and
 * data_head, records that wrap past the end copied into a scratch buffer).
 * Pure functions over memory, so the unit tests can drive them with a model
 * of the kernel's semantics.
 */
#ifndef BT_CAPTURE_AUX_RING_H
#define BT_CAPTURE_AUX_RING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <btrace/snapshot.h>

/* Where the valid bytes of a stopped overwrite-mode AUX ring are. */
struct bt_aux_span {
	uint64_t ring_size;
	uint64_t end;       /* bytes the hardware writes before it wraps:
			     * ring_size for PT, ring_size trimmed to whole
			     * 24-byte records for BTS */
	uint64_t head;      /* next write offset, in [0, end) */
	bool wrapped;       /* bytes beyond head were written: the ring is full */
	uint64_t len;       /* valid bytes: end if wrapped, else head */
};

/*
 * The bytes of an AUX ring of @ring_size bytes that the hardware of trace
 * kind @kind (enum btrace_trace_kind) writes.  PT (ToPA or single range)
 * fills the whole buffer.  BTS writes whole 24-byte records: in overwrite
 * mode bts_buffer_setup_aux() (arch/x86/events/intel/bts.c) trims the one
 * physical chunk to size - size % BTS_RECORD_SIZE and bts_config_buffer()
 * puts the absolute maximum there, so the hardware wraps to the base before
 * the last ring_size % 24 bytes (8 or 16 in a power-of-two ring), which
 * stay as rb_alloc_aux() zeroed them.
 */
uint64_t bt_aux_hw_end(uint32_t kind, uint64_t ring_size);

/* bt_aux_locate() for trace kind @kind: [0, bt_aux_hw_end()) is the ring. */
void bt_aux_locate_kind(uint32_t kind, const uint8_t *ring, uint64_t size,
			uint64_t aux_head, struct bt_aux_span *out);

/*
 * Locate the valid bytes of @ring (@size bytes, a power of two) given the
 * aux_head the kernel published at the last stop, for a PT ring (the whole
 * buffer is written).  In overwrite mode the kernel publishes the write
 * offset within the buffer; a monotonic value is reduced modulo @size.  The
 * ring wrapped when any byte in [head, end) is non-zero (AUX pages are
 * zeroed once at allocation and never again).  A head at @end (a BTS index
 * published at the trimmed end, before the next record wraps it) is 0.
 */
void bt_aux_locate(const uint8_t *ring, uint64_t size, uint64_t aux_head,
		   struct bt_aux_span *out);

/*
 * The snapshot buffer of a stopped overwrite-mode ring: sets @b's kind,
 * ring_size, head and BTRACE_BUF_WRAPPED (other fields untouched) so that
 * btrace_writer_add_ring() stores the valid bytes.  Returns their count.
 */
uint64_t bt_aux_buffer(uint32_t kind, const uint8_t *ring, uint64_t size,
		       uint64_t aux_head, struct btrace_buffer *b);

/* Copy the valid bytes oldest first: [head, end) + [0, head) when wrapped,
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

/*
 * Map an AUX ring of @bytes, halving on ENOMEM the way gdb's
 * linux_enable_pt() does: rb_alloc_aux() (kernel/events/ring_buffer.c)
 * fails with ENOMEM when a PMU with PERF_PMU_CAP_AUX_NO_SG (BTS, PT without
 * topa_multiple_entries) in overwrite mode does not get one block of order
 * ilog2(pages) (never above MAX_PAGE_ORDER: 4 MiB), which on a busy host
 * is common.  @try_map maps @len bytes and returns 0 or -errno.  Other
 * errors end the retry at once.  Stops below @min_bytes (at least one
 * page).  Returns 0 with *@got the size obtained, or the last -errno.
 */
int bt_aux_map_halving(uint64_t bytes, uint64_t min_bytes,
		       int (*try_map)(uint64_t len, void *arg), void *arg,
		       uint64_t *got);

/*
 * The legacy BTS path (gdb's linux_enable_bts()): the event
 * PERF_TYPE_HARDWARE / PERF_COUNT_HW_BRANCH_INSTRUCTIONS with
 * sample_period 1 and sample_type IP|ADDR, its data ring mapped read-only
 * (overwrite).  intel_pmu_drain_bts_buffer() (arch/x86/events/intel/ds.c)
 * writes each DS record as PERF_RECORD_SAMPLE {header, ip = from,
 * addr = to}, 24 bytes, and leaves out records with a kernel address.
 * data_head is monotonic and the ring size a power of two, not a multiple
 * of 24: the oldest sample may be cut, so the walk goes back from
 * data_head (as gdb's perf_event_read_bts() does) and stops at the first
 * record that is not a 24-byte sample.
 */
struct bt_bts_samples {
	uint64_t records;         /* BTS records written to out */
	uint64_t kernel;          /* samples with a kernel address: left out */
	bool stopped;             /* a record that is not a 24-byte sample
				   * ended the walk: older ones are unread */
	bool wrapped;             /* older samples were overwritten */
};

/* Convert the samples of @data (@size bytes, a power of two) up to
 * @data_head into 24-byte BTS records {from, to, flags 0} in @out (room
 * for size / 24 records), oldest first. */
void bt_bts_samples_read(const uint8_t *data, uint64_t size,
			 uint64_t data_head, uint8_t *out,
			 struct bt_bts_samples *st);

#endif /* BT_CAPTURE_AUX_RING_H */
