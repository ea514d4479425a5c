/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the sideband parsers of src/capture/sideband.c and
 * ring.c.  The input is a perf data ring: it is iterated with
 * bt_ring_iterate() from a tail taken from its first bytes, every record is
 * parsed with bt_sideband_parse() and applied to a sideband state; the
 * input is also read as an ELF file by bt_elf_build_id() and as an AUX ring
 * by bt_aux_locate()/bt_aux_linearize().
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aux-ring.h"
#include "elf-buildid.h"
#include "sideband.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t fz_sink;

static int on_record(const struct bt_rec *rec, void *arg)
{
	struct bt_sideband *sb = arg;
	struct bt_sb_event ev;

	if (bt_sideband_parse(rec, &ev) == 0) {
		if (ev.filename)
			fz_sink += strlen(ev.filename);
		if (ev.comm)
			fz_sink += strlen(ev.comm);
		/* No file lookups: keep the target hermetic. */
		if (ev.type == PERF_RECORD_MMAP2 && ev.filename &&
		    ev.filename[0] == '/')
			ev.build_id_size = ev.build_id_size ? ev.build_id_size : 1;
		bt_sideband_apply(sb, &ev);
	}
	return 0;
}

static void build_id(const uint8_t *data, size_t size)
{
	static int fd = -1;
	char path[64];
	uint8_t id[BTRACE_BUILD_ID_MAX];

	if (fd < 0)
		fd = memfd_create("fuzz-elf", MFD_CLOEXEC);
	if (fd < 0 || ftruncate(fd, 0) ||
	    pwrite(fd, data, size, 0) != (ssize_t)size)
		return;
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	fz_sink += (uint64_t)bt_elf_build_id(path, id, sizeof(id));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t scratch[65536];
	struct bt_sideband sb;
	struct bt_aux_span span;
	uint64_t ring_size = 1, tail, head;
	uint8_t *ring, *lin;
	bool corrupt = false;

	if (size < 4)
		return 0;
	/* The ring: the input padded to a power of two. */
	while (ring_size < size - 4)
		ring_size <<= 1;
	ring = calloc(1, ring_size);
	if (!ring)
		return 0;
	memcpy(ring, data + 4, size - 4);
	tail = (uint64_t)data[0] | (uint64_t)data[1] << 8;
	head = tail + (size - 4);
	if (head - tail >= data[2] % 8)
		head -= data[2] % 8;   /* the last record cut short */
	if (data[3] & 1)
		tail += ring_size * 3;    /* counters far past the first lap */
	if (data[3] & 1)
		head += ring_size * 3;

	bt_sideband_init(&sb, (pid_t)(data[3] >> 1));
	bt_ring_iterate(ring, ring_size, tail, head, scratch, on_record, &sb,
			&corrupt);
	fz_sink += sb.nmaps + sb.ntasks + sb.lost + sb.nnew;
	bt_sideband_fini(&sb);

	bt_aux_locate(ring, ring_size, head, &span);
	lin = malloc(span.len ? span.len : 1);
	if (lin && span.len <= ring_size) {
		bt_aux_linearize(ring, &span, lin);
		fz_sink += lin[0];
	}
	free(lin);
	free(ring);

	build_id(data, size);
	return 0;
}
