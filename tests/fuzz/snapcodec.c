/* SPDX-License-Identifier: MIT */
/* A snapshot file as sections and fields (snapcodec.h). */
#include <stdlib.h>
#include <string.h>

#include <zstd.h>

#include "snapcodec.h"

uint32_t bt_crc32c(uint32_t crc, const void *data, size_t len);

#define SC_MAGIC "\x89" "BTRC\r\n\x1a"
#define SC_SEC_MAGIC 0x43455342u
#define SC_SEC_END 0x7fffu
#define SC_MAX_RAW (64u << 20)   /* inflate no more per section */

uint64_t sc_le64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

void sc_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

void sc_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> 8 * i);
}

static size_t pad8(size_t n)
{
	return (n + 7) & ~(size_t)7;
}

void sc_set(struct sc_snap *s, size_t i, uint8_t *p, size_t n)
{
	free(s->sec[i].own);
	s->sec[i].own = p;
	s->sec[i].p = p;
	s->sec[i].n = n;
}

void sc_free(struct sc_snap *s)
{
	for (size_t i = 0; i < s->nsec; i++)
		free(s->sec[i].own);
	s->nsec = 0;
}

int sc_parse(const uint8_t *data, size_t size, struct sc_snap *s)
{
	size_t off = 64;

	s->nsec = 0;
	if (size < 64 || memcmp(data, SC_MAGIC, 8))
		return -1;
	memcpy(s->hdr, data, 64);
	while (size - off >= 40 && s->nsec < SC_MAX_SECTIONS) {
		const uint8_t *h = data + off;
		uint32_t type = le32(h + 4), flags = le32(h + 8);
		uint64_t stored = sc_le64(h + 16), raw = sc_le64(h + 24);
		struct sc_section *c = &s->sec[s->nsec];

		if (le32(h) != SC_SEC_MAGIC || stored > size - off - 40)
			break;
		if (type == SC_SEC_END)
			break;
		c->type = type;
		c->own = NULL;
		c->p = h + 40;
		c->n = (size_t)stored;
		if (flags & 1) {
			uint8_t *p;
			size_t got;

			if (raw > SC_MAX_RAW || !(p = malloc(raw ? raw : 1)))
				break;
			got = ZSTD_decompress(p, raw, h + 40, stored);
			if (ZSTD_isError(got) || got != raw) {
				free(p);
				break;
			}
			c->own = p;
			c->p = p;
			c->n = raw;
		}
		s->nsec++;
		off += 40 + pad8((size_t)stored);
		if (off > size)
			break;
	}
	return 0;
}

size_t sc_size(const struct sc_snap *s)
{
	size_t n = 64 + 40 + 16 + 8;

	for (size_t i = 0; i < s->nsec; i++)
		n += 40 + pad8(s->sec[i].n);
	return n;
}

static uint8_t *put_section(uint8_t *o, uint32_t type, const uint8_t *p,
			    size_t n)
{
	memset(o, 0, 40);
	sc_put32(o, SC_SEC_MAGIC);
	sc_put32(o + 4, type);
	sc_put32(o + 12, bt_crc32c(0, p, n));
	sc_put64(o + 16, n);
	sc_put64(o + 24, n);
	sc_put32(o + 36, bt_crc32c(0, o, 36));
	if (n)
		memcpy(o + 40, p, n);
	memset(o + 40 + n, 0, pad8(n) - n);
	return o + 40 + pad8(n);
}

size_t sc_write(const struct sc_snap *s, uint8_t *out, size_t max)
{
	size_t need = sc_size(s);
	uint8_t end[24] = { 0 }, *o = out;

	if (need > max)
		return 0;
	memcpy(o, s->hdr, 64);
	sc_put32(o + 60, bt_crc32c(0, o, 60));
	o += 64;
	for (size_t i = 0; i < s->nsec; i++)
		o = put_section(o, s->sec[i].type, s->sec[i].p, s->sec[i].n);
	sc_put32(end, 2);
	sc_put64(end + 8, 8);
	sc_put64(end + 16, s->nsec);
	o = put_section(o, SC_SEC_END, end, sizeof(end));
	return (size_t)(o - out);
}

size_t sc_fields(const uint8_t *p, size_t n, struct sc_field *f, size_t max,
		 int *whole)
{
	size_t pos = 0, k = 0;

	*whole = 1;
	while (pos < n) {
		uint64_t len;

		if (k == max || n - pos < 16) {
			*whole = 0;
			break;
		}
		len = sc_le64(p + pos + 8);
		if (len > n - pos - 16) {
			*whole = 0;
			break;
		}
		f[k].tag = le32(p + pos);
		f[k].val = p + pos + 16;
		f[k].len = len;
		k++;
		pos += 16 + (pad8((size_t)len) > n - pos - 16 ? (size_t)len :
			     pad8((size_t)len));
	}
	return k;
}

size_t sc_fields_size(const struct sc_field *f, size_t nf)
{
	size_t n = 0;

	for (size_t i = 0; i < nf; i++)
		n += 16 + pad8((size_t)f[i].len);
	return n;
}

size_t sc_put_fields(const struct sc_field *f, size_t nf, uint8_t *out)
{
	uint8_t *o = out;

	for (size_t i = 0; i < nf; i++) {
		size_t len = (size_t)f[i].len;

		sc_put32(o, f[i].tag);
		sc_put32(o + 4, 0);
		sc_put64(o + 8, len);
		if (len)
			memmove(o + 16, f[i].val, len);
		memset(o + 16 + len, 0, pad8(len) - len);
		o += 16 + pad8(len);
	}
	return (size_t)(o - out);
}
