/* SPDX-License-Identifier: MIT */
/*
 * bt-snapedit: a snapshot changed below the public writer, every size and
 * checksum made right again (tests/fuzz/snapcodec.c), for the hostile
 * snapshot tests.
 *   bt-snapedit MODE IN OUT
 * MODE:
 *   acc-shuffle     the records of every access log in another order
 *                   (a fixed permutation: reversed pairs, then rotated)
 *   acc-mark-last   a fold mark appended to every access log, at the
 *                   instruction of its first record
 *   meta-overrun    the last field of the last metadata record claims 8
 *                   bytes more than the payload holds after its header
 *                   (less than the header's 16: only a reader that
 *                   forgets the header lets it through)
 *   code-loop       every code blob made of 64-byte loops (62 nops and a
 *                   jmp back to the first): wherever the trace starts,
 *                   the code runs in a circle of direct jumps that no
 *                   trace packet records
 *   pt-loop         the code unchanged, every PT buffer replaced by 52 KiB
 *                   of crafted trace: a PSB, 64-bit mode, a TIP.PGE into
 *                   the first `hlt; jmp .-1` of the code (abort's last
 *                   loop in libc) and a TNT the loop never reaches
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "snapcodec.h"

#define SEC_CODE 5
#define CODE_DATA 7
#define SEC_META 7
#define SEC_BUFFER 2
#define BUF_DATA 11
#define CODE_VADDR 4
#define PT_LOOP_SIZE (52u << 10)
#define SEC_ACCESSES 9
#define ACC_RECORDS 4
#define ACC_SIZE 24

static struct sc_field f[SC_MAX_FIELDS];

static int die(const char *msg)
{
	fprintf(stderr, "bt-snapedit: %s\n", msg);
	return 1;
}

/* The records field of access log @s, changed by @mode, into a new
 * payload. */
static int edit_log(struct sc_snap *s, size_t i, const char *mode)
{
	int whole;
	size_t nf = sc_fields(s->sec[i].p, s->sec[i].n, f, SC_MAX_FIELDS, &whole);
	uint8_t *rec = NULL, *out;

	for (size_t k = 0; k < nf; k++) {
		size_t n = (size_t)f[k].len / ACC_SIZE;

		if (f[k].tag != ACC_RECORDS || !n)
			continue;
		rec = malloc((n + 1) * ACC_SIZE);
		if (!rec)
			return -1;
		if (!strcmp(mode, "acc-shuffle")) {
			/* swap neighbours, then rotate by a third */
			uint8_t *t = malloc(n * ACC_SIZE);

			if (!t)
				return -1;
			memcpy(t, f[k].val, n * ACC_SIZE);
			for (size_t j = 0; j + 1 < n; j += 2) {
				memcpy(rec + j * ACC_SIZE, t + (j + 1) * ACC_SIZE, ACC_SIZE);
				memcpy(rec + (j + 1) * ACC_SIZE, t + j * ACC_SIZE, ACC_SIZE);
			}
			if (n % 2)
				memcpy(rec + (n - 1) * ACC_SIZE, t + (n - 1) * ACC_SIZE,
				       ACC_SIZE);
			memcpy(t, rec, n * ACC_SIZE);
			for (size_t j = 0; j < n; j++)
				memcpy(rec + j * ACC_SIZE,
				       t + (j + n / 3) % n * ACC_SIZE, ACC_SIZE);
			free(t);
			f[k].val = rec;
		} else {
			memcpy(rec, f[k].val, n * ACC_SIZE);
			memset(rec + n * ACC_SIZE, 0, ACC_SIZE);
			memcpy(rec + n * ACC_SIZE, rec, 8);       /* ip */
			sc_put32(rec + n * ACC_SIZE + 20, 2);     /* fold mark */
			f[k].val = rec;
			f[k].len += ACC_SIZE;
		}
	}
	if (!rec)
		return 0;
	out = malloc(sc_fields_size(f, nf));
	if (!out)
		return -1;
	sc_set(s, i, out, sc_put_fields(f, nf, out));
	free(rec);
	return 1;
}

/* The last field of the last record of metadata section @i runs 8 bytes
 * past the payload's end, less than its header's 16. */
static int overrun(struct sc_snap *s, size_t i)
{
	int whole;
	size_t nf = sc_fields(s->sec[i].p, s->sec[i].n, f, SC_MAX_FIELDS, &whole);
	uint8_t *p;
	size_t roff;

	if (!nf || !whole || f[nf - 1].len < 16)
		return 0;
	/* the metadata section is written back as is: the record is last,
	 * its value (the record's fields) ends the payload */
	p = malloc(s->sec[i].n);
	if (!p)
		return -1;
	memcpy(p, s->sec[i].p, s->sec[i].n);
	roff = (size_t)(f[nf - 1].val - s->sec[i].p);
	/* the record ends the payload (no padding after it): make it so */
	if (roff + (size_t)f[nf - 1].len != s->sec[i].n) {
		free(p);
		return 0;
	}
	/* the record's length claims 8 bytes more than there are */
	sc_put64(p + roff - 8, f[nf - 1].len + 8);
	sc_set(s, i, p, s->sec[i].n);
	return 1;
}

/* The data of code section @i: 64-byte loops. */
static int code_loop(struct sc_snap *s, size_t i)
{
	int whole;
	size_t nf = sc_fields(s->sec[i].p, s->sec[i].n, f, SC_MAX_FIELDS, &whole);
	uint8_t *p;
	int done = 0;

	p = malloc(s->sec[i].n ? s->sec[i].n : 1);
	if (!p)
		return -1;
	memcpy(p, s->sec[i].p, s->sec[i].n);
	for (size_t k = 0; k < nf; k++) {
		uint8_t *d = p + (f[k].val - s->sec[i].p);

		if (f[k].tag != CODE_DATA)
			continue;
		for (uint64_t o = 0; o < f[k].len; o++)
			d[o] = o % 64 == 62 ? 0xeb : o % 64 == 63 ? 0xc0 : 0x90;
		done = 1;
	}
	sc_set(s, i, p, s->sec[i].n);
	return done;
}

/* The address of the first `hlt; jmp .-1` in the code of @s, 0 none. */
static uint64_t find_loop(const struct sc_snap *s)
{
	static const uint8_t loop[] = { 0xf4, 0xeb, 0xfd };

	for (size_t i = 0; i < s->nsec; i++) {
		int whole;
		size_t nf;
		uint64_t vaddr = 0;
		const struct sc_field *data = NULL;

		if (s->sec[i].type != SEC_CODE)
			continue;
		nf = sc_fields(s->sec[i].p, s->sec[i].n, f, SC_MAX_FIELDS, &whole);
		for (size_t k = 0; k < nf; k++) {
			if (f[k].tag == CODE_VADDR && f[k].len == 8)
				vaddr = sc_le64(f[k].val);
			if (f[k].tag == CODE_DATA)
				data = &f[k];
		}
		for (uint64_t o = 0; data && o + sizeof(loop) <= data->len; o++)
			if (!memcmp(data->val + o, loop, sizeof(loop)))
				return vaddr + o;
	}
	return 0;
}

/* Buffer section @i's trace replaced: a PSB, PSBEND, MODE.Exec 64-bit,
 * TIP.PGE to @ip, TNT packets, PAD to PT_LOOP_SIZE. */
static int pt_loop(struct sc_snap *s, size_t i, uint64_t ip)
{
	int whole;
	size_t nf = sc_fields(s->sec[i].p, s->sec[i].n, f, SC_MAX_FIELDS, &whole);
	uint8_t *pt = calloc(1, PT_LOOP_SIZE), *out;
	size_t o = 0;
	int done = 0;

	if (!pt)
		return -1;
	for (int k = 0; k < 8; k++) {
		pt[o++] = 0x02;
		pt[o++] = 0x82;
	}
	pt[o++] = 0x02;          /* PSBEND */
	pt[o++] = 0x23;
	pt[o++] = 0x99;          /* MODE.Exec: 64-bit */
	pt[o++] = 0x01;
	pt[o++] = 0x71;          /* TIP.PGE, 6 IP bytes */
	for (int k = 0; k < 6; k++)
		pt[o++] = (uint8_t)(ip >> 8 * k);
	for (int k = 0; k < 64; k++)
		pt[o++] = 0x06;  /* TNT: one branch taken */
	for (size_t k = 0; k < nf; k++) {
		if (f[k].tag == BUF_DATA) {
			f[k].val = pt;
			f[k].len = PT_LOOP_SIZE;
			done = 1;
		}
	}
	out = malloc(sc_fields_size(f, nf));
	if (!out) {
		free(pt);
		return -1;
	}
	sc_set(s, i, out, sc_put_fields(f, nf, out));
	free(pt);
	return done;
}

int main(int argc, char **argv)
{
	static struct sc_snap s;
	uint8_t *in, *out;
	size_t size, n;
	long len;
	FILE *fp;
	int done = 0;

	if (argc != 4 || (strcmp(argv[1], "acc-shuffle") &&
			  strcmp(argv[1], "acc-mark-last") &&
			  strcmp(argv[1], "meta-overrun") &&
			  strcmp(argv[1], "code-loop") &&
			  strcmp(argv[1], "pt-loop"))) {
		fprintf(stderr, "usage: bt-snapedit acc-shuffle|acc-mark-last|"
			"meta-overrun|code-loop|pt-loop IN OUT\n");
		return 2;
	}
	fp = fopen(argv[2], "rb");
	if (!fp || fseek(fp, 0, SEEK_END) || (len = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET))
		return die("read the input failed");
	size = (size_t)len;
	in = malloc(size ? size : 1);
	if (!in || fread(in, 1, size, fp) != size)
		return die("read the input failed");
	fclose(fp);
	if (sc_parse(in, size, &s) < 0)
		return die("the input is no snapshot");
	uint64_t loop = !strcmp(argv[1], "pt-loop") ? find_loop(&s) : 0;

	if (!strcmp(argv[1], "pt-loop") && !loop)
		return die("no `hlt; jmp .-1` in the code");
	for (size_t i = 0; i < s.nsec; i++) {
		int r = 0;

		if (s.sec[i].type == SEC_BUFFER && loop)
			r = pt_loop(&s, i, loop);
		if (s.sec[i].type == SEC_CODE && !strcmp(argv[1], "code-loop"))
			r = code_loop(&s, i);
		if (s.sec[i].type == SEC_ACCESSES && !strncmp(argv[1], "acc-", 4))
			r = edit_log(&s, i, argv[1]);
		if (s.sec[i].type == SEC_META && !strcmp(argv[1], "meta-overrun"))
			r = overrun(&s, i);
		if (r < 0)
			return die("out of memory");
		done += r;
	}
	if (!done)
		return die("nothing to change (no access log, or no metadata "
			   "record ending its section)");
	n = sc_size(&s);
	out = malloc(n);
	if (!out || sc_write(&s, out, n) != n)
		return die("out of memory");
	fp = fopen(argv[3], "wb");
	if (!fp || fwrite(out, 1, n, fp) != n || fclose(fp))
		return die("write the output failed");
	sc_free(&s);
	free(in);
	free(out);
	return 0;
}
