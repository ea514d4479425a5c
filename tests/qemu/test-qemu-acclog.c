// SPDX-License-Identifier: MIT
/*
 * Reading a thread's access log from a ring file (bt_qemu_slot_accesses(),
 * ring-file.h's struct bt_ring_access) after the emulator died: ring files
 * written here as the plugin lays them out, then the log read back: oldest
 * first, a ring that wrapped, records lost to a loop fold (acc_floor), a
 * second-class slot's smaller ring, and every kind of damage (counts, a
 * record the plugin never writes, rings that do not fit in the file) left
 * out with a reason instead of read.  No QEMU needed.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bt-test.h"
#include "qemu-record.h"

#define ENTRIES 1024u   /* TB records per slot (the least the reader takes) */
#define ACC 8u          /* access records per first-class slot */
#define XACC 4u         /* per second-class slot */

static char path[] = "/tmp/bt-acclog-XXXXXX";

struct layout {
	uint64_t acc, xacc;          /* records per slot of each class */
	int64_t acc_offset_delta;    /* added to the true offset */
};

/* A ring file: header, map text, two first-class slots and one
 * second-class slot (all active, thread 100 + i), their access rings and
 * a TB table; the access rings get @fill's records. */
static uint8_t *file;
static size_t file_size;
static struct bt_ring_hdr *hdr;

static void build(const struct layout *l)
{
	uint64_t slot = bt_ring_slot_size(ENTRIES);
	uint64_t slot_off = 2 * 4096;
	uint64_t xslot_off = slot_off + 2 * slot;
	uint64_t acc_off = xslot_off + slot;
	uint64_t acc_xoff = acc_off + 2 * l->acc * sizeof(struct bt_ring_access);
	uint64_t tb_off = acc_xoff + l->xacc * sizeof(struct bt_ring_access);

	file_size = (size_t)((tb_off + 16 * sizeof(struct bt_tb_info) + 4095) &
			     ~4095ull);
	free(file);
	file = calloc(1, file_size);
	hdr = (struct bt_ring_hdr *)file;
	memcpy(hdr->magic, BT_RING_MAGIC, 8);
	hdr->version = BT_RING_VERSION;
	hdr->hdr_size = BT_RING_HDR_SIZE;
	hdr->pid = hdr->tb_pid = 4242;
	hdr->flags = BT_RING_F_READY;
	hdr->maps_offset = BT_RING_HDR_SIZE;
	hdr->maps_cap = 4096;
	hdr->nslots = 2;
	hdr->entries = ENTRIES;
	hdr->slot_offset = slot_off;
	hdr->slot_size = slot;
	hdr->nxslots = 1;
	hdr->xslots_used = 1;
	hdr->xentries = ENTRIES;
	hdr->xslot_offset = xslot_off;
	hdr->xslot_size = slot;
	hdr->tb_offset = tb_off;
	hdr->tb_max = 16;
	hdr->acc_entries = l->acc;
	hdr->acc_xentries = l->xacc;
	hdr->acc_offset = (uint64_t)((int64_t)acc_off + l->acc_offset_delta);
	hdr->acc_xoffset = acc_xoff;
	for (uint32_t i = 0; i < 3; i++) {
		struct bt_ring_slot *s = bt_ring_slot_at(file, hdr, i);

		s->tid = 100 + (int)i;
		s->state = BT_SLOT_ACTIVE;
		bt_ring_stage(s)[0] = BT_RING_SENT;
		for (int k = 0; k < BT_RING_LOOP; k++)
			s->guard[k] = BT_RING_SENT;
	}
}

static struct bt_ring_slot *slot_of(uint32_t i)
{
	return bt_ring_slot_at(file, hdr, i);
}

/* Record number @n of slot @i: at [n & (ring - 1)], as the plugin
 * writes it, instruction 0x401000 + n, address 0x7000 + 8 * n, a store
 * when n is odd, 2^(n % 4) bytes. */
static void put(uint32_t i, uint64_t n)
{
	struct bt_ring_access *ring = bt_ring_acc_at(file, hdr, i);
	uint64_t cap = bt_ring_acc_entries(hdr, i);

	ring[n & (cap - 1)].info = ((0x401000 + n) << BT_ACC_IP_SHIFT) |
				   (n % 4) | (n & 1 ? BT_ACC_STORE : 0);
	ring[n & (cap - 1)].addr = 0x7000 + 8 * n;
}

static void fill(uint32_t i, uint64_t from, uint64_t count)
{
	for (uint64_t n = from; n < count; n++)
		put(i, n);
	slot_of(i)->acc_count = count;
}

/* Write the file, open it as btrace does, read slot @i's log. */
static int read_log(uint32_t i, struct bt_qemu_accesses *a, char *why,
		    size_t len)
{
	struct bt_qemu_ring r;
	struct btrace_error err = { 0 };
	int fd = open(path, O_WRONLY | O_TRUNC | O_CLOEXEC);
	int rc;

	if (fd < 0 || write(fd, file, file_size) != (ssize_t)file_size) {
		if (fd >= 0)
			close(fd);
		return -EIO;
	}
	close(fd);
	if (bt_qemu_ring_open(path, &r, &err))
		return -EINVAL;
	why[0] = 0;
	rc = bt_qemu_slot_accesses(&r, bt_qemu_ring_slot(&r, i), a, why, len);
	bt_qemu_ring_close(&r);
	return rc;
}

/* The records of @a are @from .. @from + a->n - 1 as put() wrote them. */
static int records_are(const struct bt_qemu_accesses *a, uint64_t from)
{
	for (uint64_t k = 0; k < a->n; k++) {
		uint64_t n = from + k;
		const struct btrace_access *e = &a->e[k];

		if (e->ip != 0x401000 + n || e->addr != 0x7000 + 8 * n ||
		    e->size != 1u << (n % 4) ||
		    e->flags != (n & 1 ? BTRACE_ACCESS_STORE : 0))
			return 0;
	}
	return 1;
}

static const struct layout normal = { ACC, XACC, 0 };

static void test_oldest_first(struct bt_test *t)
{
	struct bt_qemu_accesses a;
	char why[256];

	build(&normal);
	fill(0, 0, 5);
	BT_REQUIRE(t, read_log(0, &a, why, sizeof(why)) == 0);
	BT_EQ_U64(t, 5, a.n);
	BT_CHECK(t, a.complete);
	BT_EQ_INT(t, 100, a.tid);
	BT_EQ_U64(t, ACC, a.cap);
	BT_CHECK(t, records_are(&a, 0));
	free(a.e);
}

static void test_wrapped(struct bt_test *t)
{
	struct bt_qemu_accesses a;
	char why[256];

	build(&normal);
	fill(1, 0, 21);   /* 21 written into 8: 13..20 kept */
	BT_REQUIRE(t, read_log(1, &a, why, sizeof(why)) == 0);
	BT_EQ_U64(t, ACC, a.n);
	BT_CHECK(t, !a.complete);
	BT_EQ_INT(t, 101, a.tid);
	BT_CHECK(t, records_are(&a, 13));
	free(a.e);
}

static void test_floor(struct bt_test *t)
{
	struct bt_qemu_accesses a;
	char why[256];

	/* A fold took the count back from 12 to 9 after the ring had
	 * wrapped: records below 12 - 8 = 4 are gone, 4..8 are kept. */
	build(&normal);
	fill(0, 0, 12);
	slot_of(0)->acc_floor = 4;
	slot_of(0)->acc_count = 9;
	BT_REQUIRE(t, read_log(0, &a, why, sizeof(why)) == 0);
	BT_EQ_U64(t, 5, a.n);
	BT_CHECK(t, !a.complete);
	BT_CHECK(t, records_are(&a, 4));
	free(a.e);
}

static void test_second_class(struct bt_test *t)
{
	struct bt_qemu_accesses a;
	char why[256];

	build(&normal);
	fill(2, 0, 6);   /* a ring of 4: 2..5 */
	BT_REQUIRE(t, read_log(2, &a, why, sizeof(why)) == 0);
	BT_EQ_U64(t, XACC, a.n);
	BT_EQ_U64(t, XACC, a.cap);
	BT_EQ_INT(t, 102, a.tid);
	BT_CHECK(t, records_are(&a, 2));
	free(a.e);
}

static void test_canonical_ip(struct bt_test *t)
{
	struct bt_qemu_accesses a;
	struct bt_ring_access *ring;
	char why[256];

	/* The vsyscall page: a canonical address above 2^47 comes back
	 * from its low 48 bits. */
	build(&normal);
	ring = bt_ring_acc_at(file, hdr, 0);
	ring[0].info = (0xffffffffff600000ull << BT_ACC_IP_SHIFT) | 3;
	ring[0].addr = 0x1000;
	slot_of(0)->acc_count = 1;
	BT_REQUIRE(t, read_log(0, &a, why, sizeof(why)) == 0);
	BT_REQUIRE(t, a.n == 1);
	BT_EQ_U64(t, 0xffffffffff600000ull, a.e[0].ip);
	BT_EQ_INT(t, 8, a.e[0].size);
	BT_EQ_INT(t, 0, a.e[0].flags);
	free(a.e);
}

static void test_no_log(struct bt_test *t)
{
	static const struct layout none = { 0, 0, 0 };
	struct bt_qemu_accesses a;
	char why[256];

	build(&none);
	BT_EQ_INT(t, 1, read_log(0, &a, why, sizeof(why)));
	BT_EQ_U64(t, 0, a.n);
}

/* Damage: the log is left out (-BTRACE_ERR_FORMAT) and @why names it. */
static void damaged(struct bt_test *t, uint32_t i, const char *reason)
{
	struct bt_qemu_accesses a;
	char why[256];

	BT_EQ_INT(t, -BTRACE_ERR_FORMAT, read_log(i, &a, why, sizeof(why)));
	BT_CHECK(t, a.e == NULL && a.n == 0);
	BT_CONTAINS(t, why, reason);
}

/* A fold mark (BT_ACC_FOLD: the loop block's address, nothing else)
 * becomes a BTRACE_ACCESS_FOLD record of size 0 at address 0; one with a
 * size, a store bit or an address is not one the plugin writes. */
static void test_fold_mark(struct bt_test *t)
{
	static const uint64_t bad[][2] = {
		{ BT_ACC_FOLD | 3, 0 },
		{ BT_ACC_FOLD | BT_ACC_STORE, 0 },
		{ BT_ACC_FOLD, 0x7000 },
	};
	struct bt_ring_access *ring;
	struct bt_qemu_accesses a;
	char why[256];

	build(&normal);
	fill(0, 0, 5);
	ring = bt_ring_acc_at(file, hdr, 0);
	ring[2].info = (0x401234ull << BT_ACC_IP_SHIFT) | BT_ACC_FOLD;
	ring[2].addr = 0;
	BT_REQUIRE(t, read_log(0, &a, why, sizeof(why)) == 0);
	BT_EQ_U64(t, 5, a.n);
	BT_EQ_U64(t, 0x401234, a.e[2].ip);
	BT_EQ_U64(t, 0, a.e[2].addr);
	BT_EQ_INT(t, 0, a.e[2].size);
	BT_EQ_INT(t, BTRACE_ACCESS_FOLD, a.e[2].flags);
	BT_EQ_U64(t, 0x401003, a.e[3].ip);   /* the others as written */
	BT_EQ_INT(t, BTRACE_ACCESS_STORE, a.e[3].flags);
	free(a.e);

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		build(&normal);
		fill(0, 0, 5);
		ring = bt_ring_acc_at(file, hdr, 0);
		ring[1].info = (0x401234ull << BT_ACC_IP_SHIFT) | bad[k][0];
		ring[1].addr = bad[k][1];
		damaged(t, 0, "record 1 of 5");
	}
}

static void test_damage(struct bt_test *t)
{
	static const struct layout past = { ACC, XACC, 1 << 20 };
	struct bt_ring_access *ring;

	build(&normal);
	fill(0, 0, 5);
	slot_of(0)->acc_floor = 6;   /* above the count */
	damaged(t, 0, "below its first record kept");

	build(&normal);
	fill(0, 0, 5);
	slot_of(0)->acc_count = 7;   /* records 5 and 6 never written */
	damaged(t, 0, "not one the plugin writes");

	build(&normal);
	fill(0, 0, 5);
	ring = bt_ring_acc_at(file, hdr, 0);
	ring[2].info |= 0x20;        /* a reserved bit */
	damaged(t, 0, "record 2 of 5");

	build(&normal);
	fill(0, 0, 5);
	ring = bt_ring_acc_at(file, hdr, 0);
	ring[3].info |= 7;           /* 128 bytes ... */
	ring[3].addr = ~0ull - 8;    /* ... past the address space */
	damaged(t, 0, "record 3 of 5");

	build(&normal);
	hdr->acc_entries = 6;        /* not a power of two */
	damaged(t, 0, "do not fit");
	build(&normal);
	hdr->acc_entries = 1ull << 23;   /* more than a section holds */
	damaged(t, 0, "do not fit");
	build(&normal);
	hdr->acc_xentries = 1ull << 40;  /* past the file's end */
	damaged(t, 0, "do not fit");
	build(&past);                /* rings past the file's end */
	damaged(t, 1, "do not fit");
}

static void test_setup(struct bt_test *t)
{
	int fd = mkstemp(path);

	BT_REQUIRE(t, fd >= 0);
	close(fd);
}

static void test_cleanup(struct bt_test *t)
{
	BT_CHECK(t, unlink(path) == 0);
	free(file);
	file = NULL;
}

BT_TESTS(test_setup, test_oldest_first, test_wrapped, test_floor,
	 test_second_class, test_canonical_ip, test_no_log, test_fold_mark,
	 test_damage, test_cleanup)
