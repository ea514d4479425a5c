/* SPDX-License-Identifier: MIT */
/*
 * A snapshot file as a list of sections and fields (docs/format.md), for
 * the tools that change a snapshot below the public writer: the fuzz
 * targets' custom mutator (snapmut.c) and the crafted files of the tests.
 * Parsing inflates zstd payloads; writing stores every payload raw with
 * its checksums, the header's checksum and an end marker that counts the
 * sections, so that what it writes passes the reader's checks.
 */
#ifndef BT_SNAPCODEC_H
#define BT_SNAPCODEC_H

#include <stddef.h>
#include <stdint.h>

#define SC_MAX_SECTIONS 512
#define SC_MAX_FIELDS 4096

struct sc_section {
	uint32_t type;
	const uint8_t *p;          /* the raw payload */
	size_t n;
	uint8_t *own;              /* p when allocated here, else NULL */
};

struct sc_snap {
	uint8_t hdr[64];
	size_t nsec;
	struct sc_section sec[SC_MAX_SECTIONS];
};

struct sc_field {
	uint32_t tag;
	const uint8_t *val;
	uint64_t len;
};

/* Parse @data: 0 and @s filled (the sections before the end marker or the
 * first damage; the payloads point into @data or into memory freed by
 * sc_free()), -1 when it is no snapshot (bad header). */
int sc_parse(const uint8_t *data, size_t size, struct sc_snap *s);
void sc_free(struct sc_snap *s);
/* Give section @i the payload @p (@n bytes), allocated with malloc and now
 * owned by @s. */
void sc_set(struct sc_snap *s, size_t i, uint8_t *p, size_t n);
/* The bytes sc_write() writes for @s. */
size_t sc_size(const struct sc_snap *s);
/* Write @s into @out (room @max): its size, or 0 when it does not fit. */
size_t sc_write(const struct sc_snap *s, uint8_t *out, size_t max);

/* The fields of payload @p (@n bytes): how many went into @f (at most
 * @max); parsing stops at the first damage (*@whole 0 then). */
size_t sc_fields(const uint8_t *p, size_t n, struct sc_field *f, size_t max,
		 int *whole);
/* Bytes sc_put_fields() writes for @f. */
size_t sc_fields_size(const struct sc_field *f, size_t nf);
/* Serialise @f into @out (room from sc_fields_size()). */
size_t sc_put_fields(const struct sc_field *f, size_t nf, uint8_t *out);

uint64_t sc_le64(const uint8_t *p);
void sc_put64(uint8_t *p, uint64_t v);
void sc_put32(uint8_t *p, uint32_t v);

#endif /* BT_SNAPCODEC_H */
