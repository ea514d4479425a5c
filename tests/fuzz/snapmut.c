/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer custom mutator for the targets that take a whole snapshot
 * file (fuzz-snapshot.c): it parses the input into sections and fields
 * (snapcodec.c), changes what lies behind the checksums (a field's value,
 * an integer set to a boundary or to an address the snapshot names, the
 * records of a list or of an access log: shuffled, swapped, dropped,
 * doubled, turned into fold marks; whole sections dropped, doubled,
 * reordered; now and then a field length or a payload's raw bytes), then
 * writes the sections back raw with every size and CRC-32C right and an
 * end marker that counts them, so that the reader accepts the file and
 * the decoder, the value recovery, the report model and the renderers get
 * to see it.  An input that is no snapshot gets libFuzzer's own mutation.
 */
#include <stdlib.h>
#include <string.h>

#include "snapcodec.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);
size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed);

enum { SEC_BUFFER = 2, SEC_TASKS = 3, SEC_MAPPINGS = 4, SEC_CODE = 5,
       SEC_SIGNAL = 6, SEC_META = 7, SEC_ACCESSES = 9 };
#define ACC_SIZE 24
#define ACC_RECORDS 4       /* the accesses section's records field */
#define ACC_FOLD 2u

static uint64_t rs;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static size_t below(size_t n)
{
	return n ? (size_t)(rnd() % n) : 0;
}

static struct sc_snap snap;
static struct sc_field fld[SC_MAX_FIELDS], sub[SC_MAX_FIELDS];

/* An address the snapshot itself names (the fault's, a register's), to
 * make a mutated value point somewhere that matters. */
static uint64_t named_value(void)
{
	for (size_t i = 0; i < snap.nsec; i++) {
		struct sc_field f[16];
		size_t nf;
		int whole;

		if (snap.sec[i].type != SEC_SIGNAL)
			continue;
		nf = sc_fields(snap.sec[i].p, snap.sec[i].n, f, 16, &whole);
		for (size_t k = 0; k < nf; k++) {
			if (f[k].tag == 9 && f[k].len == 8 && rnd() & 1)
				return sc_le64(f[k].val);
			if (f[k].tag == 10 && f[k].len >= 8)
				return sc_le64(f[k].val + 8 * below(f[k].len / 8));
		}
	}
	return 0x400000 + below(1 << 20);
}

static uint64_t interesting(void)
{
	static const uint64_t v[] = {
		0, 1, 2, 3, 7, 8, 16, 24, 0x7f, 0x80, 0xff, 0x100, 0xfff,
		0x1000, 0x7fff, 0xffff, 0x10000, 0x7fffffff, 0x80000000,
		0xffffffff, 0x100000000ull, 0x7fffffffffffffffull,
		0x8000000000000000ull, ~0ull, ~0ull - 1, ~0ull - 7,
	};
	return rnd() % 3 ? v[below(sizeof(v) / sizeof(v[0]))] : named_value();
}

/* A new buffer holding fields @f serialised: the payload of section @i. */
static int set_fields(size_t i, const struct sc_field *f, size_t nf)
{
	size_t n = sc_fields_size(f, nf);
	uint8_t *p = malloc(n ? n : 1);

	if (!p)
		return -1;
	sc_set(&snap, i, p, sc_put_fields(f, nf, p));
	return 0;
}

/* Change the bytes of field @f (its value may grow or shrink); the new
 * value is malloc'd into *@keep. */
static int mutate_value(struct sc_field *f, uint8_t **keep, size_t max_total)
{
	size_t len = (size_t)f->len, cap = len + 64 + len / 8;
	uint8_t *p;

	if (len > max_total)
		return -1;
	if (cap > len + (64u << 10))
		cap = len + (64u << 10);
	if (!(p = malloc(cap)))
		return -1;
	if (len)
		memcpy(p, f->val, len);
	switch (rnd() % 4) {
	case 0:
		/* an integer: a boundary, or an address of the snapshot */
		if (len == 8 || !len || rnd() % 4 == 0) {
			sc_put64(p, interesting());
			len = 8;
			break;
		}
		/* fall through */
	default:
		len = LLVMFuzzerMutate(p, len, cap);
		break;
	}
	f->val = p;
	f->len = len;
	*keep = p;
	return 0;
}

/* The access log: its records shuffled, swapped, reversed, doubled,
 * dropped, made fold marks or given another record's instruction. */
static void mutate_records(uint8_t *p, size_t *len, size_t cap)
{
	size_t n = *len / ACC_SIZE, a, b;
	uint8_t t[ACC_SIZE];

	if (!n)
		return;
	a = below(n);
	b = below(n);
	switch (rnd() % 8) {
	case 0:   /* shuffle all */
		for (size_t i = n; i > 1; i--) {
			size_t j = below(i);

			memcpy(t, p + (i - 1) * ACC_SIZE, ACC_SIZE);
			memmove(p + (i - 1) * ACC_SIZE, p + j * ACC_SIZE, ACC_SIZE);
			memcpy(p + j * ACC_SIZE, t, ACC_SIZE);
		}
		break;
	case 1:   /* swap two */
		memcpy(t, p + a * ACC_SIZE, ACC_SIZE);
		memmove(p + a * ACC_SIZE, p + b * ACC_SIZE, ACC_SIZE);
		memcpy(p + b * ACC_SIZE, t, ACC_SIZE);
		break;
	case 2:   /* reverse a range */
		if (a > b) {
			size_t x = a;
			a = b;
			b = x;
		}
		for (; a < b; a++, b--) {
			memcpy(t, p + a * ACC_SIZE, ACC_SIZE);
			memmove(p + a * ACC_SIZE, p + b * ACC_SIZE, ACC_SIZE);
			memcpy(p + b * ACC_SIZE, t, ACC_SIZE);
		}
		break;
	case 3:   /* double one */
		if (*len + ACC_SIZE <= cap) {
			memmove(p + (a + 1) * ACC_SIZE, p + a * ACC_SIZE,
				(n - a) * ACC_SIZE);
			*len += ACC_SIZE;
		}
		break;
	case 4:   /* drop one */
		memmove(p + a * ACC_SIZE, p + (a + 1) * ACC_SIZE,
			(n - a - 1) * ACC_SIZE);
		*len -= ACC_SIZE;
		break;
	case 5:   /* a fold mark at the instruction of another record */
		memmove(p + a * ACC_SIZE, p + b * ACC_SIZE, 8);
		memset(p + a * ACC_SIZE + 8, 0, 12);
		sc_put32(p + a * ACC_SIZE + 20, ACC_FOLD);
		break;
	case 6:   /* the instruction of another record, or the fault's */
		sc_put64(p + a * ACC_SIZE, rnd() & 1 ? sc_le64(p + b * ACC_SIZE) :
			 named_value());
		break;
	default:  /* an address, size or flags */
		switch (rnd() % 3) {
		case 0: sc_put64(p + a * ACC_SIZE + 8, interesting()); break;
		case 1: sc_put32(p + a * ACC_SIZE + 16, (uint32_t)interesting()); break;
		default: sc_put32(p + a * ACC_SIZE + 20, (uint32_t)(rnd() % 4)); break;
		}
		break;
	}
}

/* The fields (for a list: the records) of section @i: one dropped,
 * doubled, moved, or all shuffled. */
static int mutate_list(size_t i)
{
	int whole;
	size_t nf = sc_fields(snap.sec[i].p, snap.sec[i].n, fld,
			      SC_MAX_FIELDS - 1, &whole), a, b;
	struct sc_field t;

	if (!nf)
		return -1;
	a = below(nf);
	b = below(nf);
	switch (rnd() % 4) {
	case 0:
		memmove(fld + a, fld + a + 1, (nf - a - 1) * sizeof(*fld));
		nf--;
		break;
	case 1:
		memmove(fld + a + 1, fld + a, (nf - a) * sizeof(*fld));
		nf++;
		break;
	case 2:
		t = fld[a];
		fld[a] = fld[b];
		fld[b] = t;
		break;
	default:
		for (size_t k = nf; k > 1; k--) {
			size_t j = below(k);

			t = fld[k - 1];
			fld[k - 1] = fld[j];
			fld[j] = t;
		}
		break;
	}
	return set_fields(i, fld, nf);
}

static int is_list(uint32_t type)
{
	return type == SEC_TASKS || type == SEC_MAPPINGS || type == SEC_META;
}

/* One field of section @i (in a list: of one record) changed. */
static int mutate_field(size_t i, size_t max_total)
{
	int whole, ret;
	size_t nf = sc_fields(snap.sec[i].p, snap.sec[i].n, fld, SC_MAX_FIELDS,
			      &whole), k;
	uint8_t *keep = NULL, *rec = NULL;

	if (!nf)
		return -1;
	k = below(nf);
	if (snap.sec[i].type == SEC_ACCESSES) {
		/* mostly the records, as records */
		for (size_t j = 0; j < nf; j++)
			if (fld[j].tag == ACC_RECORDS && rnd() % 4)
				k = j;
		if (fld[k].tag == ACC_RECORDS && rnd() % 4) {
			size_t len = (size_t)fld[k].len, cap = len + 4 * ACC_SIZE;

			if (!(keep = malloc(cap ? cap : 1)))
				return -1;
			memcpy(keep, fld[k].val, len);
			for (unsigned m = 1 + rnd() % 3; m--;)
				mutate_records(keep, &len, cap);
			fld[k].val = keep;
			fld[k].len = len;
			ret = set_fields(i, fld, nf);
			free(keep);
			return ret;
		}
	}
	if (is_list(snap.sec[i].type) && fld[k].tag == 1 && rnd() % 8) {
		size_t ns = sc_fields(fld[k].val, (size_t)fld[k].len, sub,
				      SC_MAX_FIELDS, &whole), q;

		if (!ns)
			return -1;
		q = below(ns);
		if (mutate_value(&sub[q], &keep, max_total) < 0)
			return -1;
		fld[k].len = sc_fields_size(sub, ns);
		if (!(rec = malloc(fld[k].len ? fld[k].len : 1))) {
			free(keep);
			return -1;
		}
		sc_put_fields(sub, ns, rec);
		fld[k].val = rec;
	} else if (mutate_value(&fld[k], &keep, max_total) < 0) {
		return -1;
	}
	ret = set_fields(i, fld, nf);
	free(keep);
	free(rec);
	return ret;
}

/* A field's length made wrong (the reader must say so, not trust it). */
static int bad_length(size_t i)
{
	int whole;
	size_t nf = sc_fields(snap.sec[i].p, snap.sec[i].n, fld, SC_MAX_FIELDS,
			      &whole), k, off = 0;
	uint8_t *p;
	size_t n;

	if (!nf || set_fields(i, fld, nf) < 0)
		return -1;
	k = below(nf);
	for (size_t j = 0; j < k; j++)
		off += 16 + ((size_t)(fld[j].len + 7) & ~(size_t)7);
	p = snap.sec[i].own;
	n = snap.sec[i].n;
	if (off + 16 > n)
		return -1;
	sc_put64(p + off + 8, sc_le64(p + off + 8) +
		 (uint64_t)(int64_t)((int)below(49) - 24));
	return 0;
}

/* Section @i's payload bytes mutated as bytes. */
static int raw_bytes(size_t i, size_t max_total)
{
	size_t n = snap.sec[i].n, cap = n + 256;
	uint8_t *p;

	if (n > max_total || !(p = malloc(cap)))
		return -1;
	memcpy(p, snap.sec[i].p, n);
	sc_set(&snap, i, p, LLVMFuzzerMutate(p, n, cap));
	return 0;
}

static int mutate_sections(void)
{
	size_t a = below(snap.nsec), b = below(snap.nsec);
	struct sc_section t;

	switch (rnd() % 3) {
	case 0:   /* drop one */
		free(snap.sec[a].own);
		memmove(snap.sec + a, snap.sec + a + 1,
			(snap.nsec - a - 1) * sizeof(*snap.sec));
		snap.nsec--;
		return 0;
	case 1:   /* double one (the copy borrows the original's bytes) */
		if (snap.nsec == SC_MAX_SECTIONS)
			return -1;
		memmove(snap.sec + a + 1, snap.sec + a,
			(snap.nsec - a) * sizeof(*snap.sec));
		snap.nsec++;
		if (snap.sec[a].own) {
			uint8_t *p = malloc(snap.sec[a].n ? snap.sec[a].n : 1);

			if (!p) {
				snap.sec[a].own = NULL;
				return -1;
			}
			memcpy(p, snap.sec[a].p, snap.sec[a].n);
			snap.sec[a].own = p;
			snap.sec[a].p = p;
		}
		return 0;
	default:  /* swap two */
		t = snap.sec[a];
		snap.sec[a] = snap.sec[b];
		snap.sec[b] = t;
		return 0;
	}
}

/* A section to change: the small ones (everything but code) mostly. */
static size_t pick_section(void)
{
	size_t i = below(snap.nsec);

	for (int tries = 0; tries < 4 && snap.sec[i].type == SEC_CODE; tries++)
		i = below(snap.nsec);
	return i;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size,
			       unsigned int seed)
{
	size_t out = 0;
	int ok = 0;

	rs = seed * 0x9e3779b97f4a7c15ull + 1;
	if (sc_parse(data, size, &snap) < 0 || !snap.nsec || rnd() % 64 == 0)
		return LLVMFuzzerMutate(data, size, max_size);
	for (unsigned m = 1 + rnd() % 2; m--;) {
		size_t i = pick_section(), r = rnd() % 32;

		if (r < 16)
			ok |= !mutate_field(i, max_size);
		else if (r < 22)
			ok |= !mutate_list(i);
		else if (r < 26)
			ok |= snap.nsec > 1 && !mutate_sections();
		else if (r < 28)
			ok |= !bad_length(i);
		else if (r < 30)
			ok |= !raw_bytes(i, max_size);
		else
			ok = 1;   /* only rewritten raw, checksums fixed */
		if (!snap.nsec)
			break;
	}
	if (ok && sc_size(&snap) <= max_size) {
		/* the sections may point into @data: write to the side */
		uint8_t *tmp = malloc(sc_size(&snap));

		if (tmp) {
			out = sc_write(&snap, tmp, sc_size(&snap));
			memcpy(data, tmp, out);
			free(tmp);
		}
	}
	sc_free(&snap);
	return out ? out : LLVMFuzzerMutate(data, size, max_size);
}
