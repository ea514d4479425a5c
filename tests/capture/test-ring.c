/* SPDX-License-Identifier: MIT */
/*
 * Ring arithmetic: an aux_head the kernel never publishes in overwrite mode
 * (a monotonic count), and the data-ring record iterator.  The overwrite
 * AUX ring itself is tested against the AUX ring simulator, which follows
 * the kernel's rules as written, in test-aux-sim.c (it replaced the hand
 * model that was here and wrapped BTS at the power-of-two size).
 */
#include <stdlib.h>
#include <string.h>

#include "aux-sim.h"
#include "bt-test.h"
#include "capture/aux-ring.h"

/* A monotonic aux_head (normal mode, or a kernel that publishes counts)
 * is reduced modulo the size: the same span as the offset. */
static void test_monotonic_head(struct bt_test *t)
{
	struct aux_sim_host h;
	struct aux_sim s;
	struct bt_aux_span a, b;
	uint8_t c;

	aux_sim_host_default(&h);
	aux_sim_init(&s, AUX_SIM_PT, &h);
	BT_REQUIRE(t, aux_sim_mmap_data(&s, 2 * 4096, true) == 0);
	aux_sim_set_aux_area(&s, 2 * 4096, 4096);
	BT_REQUIRE(t, aux_sim_mmap_aux(&s, 4096, 2 * 4096, false) == 0);
	aux_sim_start(&s);
	for (uint64_t i = 0; i < 10000; i++) {
		c = (uint8_t)(1 + i % 200);
		aux_sim_write(&s, &c, 1);
	}
	aux_sim_stop(&s);
	bt_aux_locate(s.aux, 4096, aux_sim_aux_head(&s), &a);
	bt_aux_locate(s.aux, 4096, aux_sim_aux_head(&s) + 2 * 4096, &b);
	BT_EQ_U64(t, 10000 % 4096, a.head);
	BT_EQ_U64(t, a.head, b.head);
	BT_EQ_INT(t, a.wrapped, b.wrapped);
	BT_EQ_U64(t, 4096, b.len);
	aux_sim_fini(&s);
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

BT_TESTS(test_monotonic_head, test_data_ring_wrap)
