/* SPDX-License-Identifier: MIT */
/*
 * AUX ring arithmetic against a model of the kernel's overwrite-mode
 * semantics, and the data-ring record iterator.
 *
 * The model (kernel/events/ring_buffer.c + pt.c in snapshot mode): pages are
 * zeroed once at allocation; the hardware writes at a position that wraps
 * modulo the ring size; aux_head is published only when the event stops
 * (sched-out, DISABLE, exit) and holds the write offset within the buffer,
 * not a monotonic count.
 */
#include <stdlib.h>
#include <string.h>

#include "bt-test.h"
#include "capture/ring.h"

struct aux_model {
	uint8_t *ring;
	uint64_t size;
	uint64_t pos;          /* bytes ever written (hardware-internal) */
	uint64_t aux_head;     /* what user space sees */
};

static void model_init(struct aux_model *m, uint64_t size)
{
	m->ring = calloc(1, size);
	m->size = size;
	m->pos = 0;
	m->aux_head = 0;
}

/* Byte n of the trace stream: never zero, so a wrap is visible. */
static uint8_t stream_byte(uint64_t n)
{
	return (uint8_t)(1 + (n * 7 + n / 251) % 255);
}

static void model_run(struct aux_model *m, uint64_t bytes)
{
	for (uint64_t i = 0; i < bytes; i++, m->pos++)
		m->ring[m->pos % m->size] = stream_byte(m->pos);
}

static void model_stop(struct aux_model *m)
{
	m->aux_head = m->pos % m->size;   /* pt_update_head(): offset */
}

/* Linearize what user space sees and compare with the stream's tail. */
static int check_tail(struct bt_test *t, struct aux_model *m)
{
	struct bt_aux_span span;
	uint64_t expect = m->pos < m->size ? m->pos : m->size;
	uint8_t *out;
	int ok = 1;

	bt_aux_locate(m->ring, m->size, m->aux_head, &span);
	BT_EQ_U64(t, expect, span.len);
	BT_EQ_INT(t, m->pos >= m->size, span.wrapped);
	out = malloc(span.len ? span.len : 1);
	bt_aux_linearize(m->ring, &span, out);
	for (uint64_t i = 0; i < span.len && i < expect; i++) {
		if (out[i] != stream_byte(m->pos - expect + i)) {
			ok = 0;
			break;
		}
	}
	BT_CHECK(t, ok);
	free(out);
	return ok;
}

static void test_overwrite_model(struct bt_test *t)
{
	static const uint64_t sizes[] = { 4096, 16384, 65536 };
	static const uint64_t runs[] = { 0, 1, 100, 4095, 4096, 4097, 16384,
					 20000, 65535, 65536, 65537, 300000 };

	for (size_t s = 0; s < 3; s++) {
		for (size_t r = 0; r < sizeof(runs) / sizeof(runs[0]); r++) {
			struct aux_model m;

			model_init(&m, sizes[s]);
			model_run(&m, runs[r]);
			model_stop(&m);
			if (!check_tail(t, &m))
				bt_test_diag("size %llu run %llu",
					     (unsigned long long)sizes[s],
					     (unsigned long long)runs[r]);
			free(m.ring);
		}
	}
}

/* Several stop/start cycles (sched-out, snapshot) before the crash. */
static void test_overwrite_multiple_stops(struct bt_test *t)
{
	struct aux_model m;

	model_init(&m, 8192);
	for (int i = 0; i < 9; i++) {
		model_run(&m, 1500 + 700 * (uint64_t)i);
		model_stop(&m);
		check_tail(t, &m);
	}
	free(m.ring);
}

/* While the event runs aux_head is stale: reading it without a stop gives
 * the wrong tail.  This is why a snapshot disables the event first. */
static void test_stale_head_without_stop(struct bt_test *t)
{
	struct bt_aux_span span;
	struct aux_model m;
	uint8_t *out;

	model_init(&m, 4096);
	model_run(&m, 1000);
	model_stop(&m);
	model_run(&m, 500);          /* still running: head not published */
	bt_aux_locate(m.ring, m.size, m.aux_head, &span);
	BT_EQ_U64(t, 1000, span.head);
	/* bytes beyond the stale head were written: looks wrapped */
	BT_CHECK(t, span.wrapped);
	out = malloc(span.len);
	bt_aux_linearize(m.ring, &span, out);
	/* the newest byte is not last */
	BT_CHECK(t, out[span.len - 1] != stream_byte(m.pos - 1));
	free(out);
	model_stop(&m);
	check_tail(t, &m);
	free(m.ring);
}

/* A monotonic aux_head (normal mode, or a kernel that publishes counts)
 * is reduced modulo the size. */
static void test_monotonic_head(struct bt_test *t)
{
	struct aux_model m;

	model_init(&m, 4096);
	model_run(&m, 10000);
	m.aux_head = m.pos;
	check_tail(t, &m);
	free(m.ring);
}

/* --- data ring --- */

struct collected {
	int n;
	uint32_t types[64];
	uint16_t sizes[64];
	int bad;
};

static int collect(const struct bt_rec *rec, void *arg)
{
	struct collected *c = arg;

	if (c->n < 64) {
		c->types[c->n] = rec->type;
		c->sizes[c->n] = rec->size;
	}
	/* payload byte pattern: every byte after the header = type */
	for (unsigned i = 8; i < rec->size; i++)
		if (rec->data[i] != (uint8_t)rec->type)
			c->bad++;
	c->n++;
	return 0;
}

static uint64_t put_rec(uint8_t *ring, uint64_t size, uint64_t head,
			uint32_t type, uint16_t len)
{
	uint8_t rec[512];

	memset(rec, (int)type, len);
	rec[0] = (uint8_t)type; rec[1] = rec[2] = rec[3] = 0;
	rec[4] = rec[5] = 0;
	rec[6] = (uint8_t)len; rec[7] = (uint8_t)(len >> 8);
	for (unsigned i = 0; i < len; i++)
		ring[(head + i) % size] = rec[i];
	return head + len;
}

static void test_data_ring_wrap(struct bt_test *t)
{
	uint8_t ring[256], scratch[65536];
	struct collected c = { 0 };
	uint64_t head = 0, tail = 0;
	bool corrupt;

	memset(ring, 0, sizeof(ring));
	/* fill, consume, and refill across the end of the ring */
	head = put_rec(ring, 256, head, 10, 100);
	head = put_rec(ring, 256, head, 3, 64);
	tail = bt_ring_iterate(ring, 256, tail, head, scratch, collect, &c,
			       &corrupt);
	BT_EQ_U64(t, 164, tail);
	BT_EQ_INT(t, 2, c.n);
	head = put_rec(ring, 256, head, 7, 120);   /* wraps at 256 */
	head = put_rec(ring, 256, head, 4, 40);
	/* a partial record: header says 80, only 16 bytes published */
	put_rec(ring, 256, head, 9, 80);
	tail = bt_ring_iterate(ring, 256, tail, head + 16, scratch, collect,
			       &c, &corrupt);
	BT_EQ_U64(t, head, tail);
	BT_EQ_INT(t, 4, c.n);
	BT_EQ_INT(t, 7, c.types[2]);
	BT_EQ_INT(t, 120, c.sizes[2]);
	BT_EQ_INT(t, 0, c.bad);
	BT_CHECK(t, !corrupt);
	/* a zero-size header is corruption, not an endless loop */
	memset(ring, 0, sizeof(ring));
	tail = bt_ring_iterate(ring, 256, 0, 64, scratch, collect, &c,
			       &corrupt);
	BT_CHECK(t, corrupt);
}

BT_TESTS(test_overwrite_model, test_overwrite_multiple_stops,
	 test_stale_head_without_stop, test_monotonic_head,
	 test_data_ring_wrap)
