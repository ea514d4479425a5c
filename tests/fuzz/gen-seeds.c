/* SPDX-License-Identifier: MIT */
/*
 * Write the seed corpora of the decoder fuzz targets: the fixed image's
 * path (fuzz-image.h) encoded as Intel PT (several encoder options) and as
 * BTS, each prefixed with the two option bytes of fuzz-decode.c.
 *   fuzz-gen-seeds PT_DIR BTS_DIR
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encode.h"
#include "fuzz-image.h"

struct walker {
	struct bt_pt_enc *pt;
	struct bt_bts_enc *bts;
	uint64_t ovf_at;         /* branch number that becomes an overflow */
	uint64_t n;
};

static int br(struct walker *w, uint8_t kind, uint64_t from, uint8_t len,
	      uint64_t to, int taken)
{
	struct bt_branch b = { .from = FZ_BASE + from, .to = FZ_BASE + to,
			       .kind = kind, .taken = (uint8_t)taken,
			       .len = len };

	if (w->pt && w->ovf_at && ++w->n == w->ovf_at)
		return bt_pt_enc_overflow(w->pt, b.to);
	return w->pt ? bt_pt_enc_branch(w->pt, &b) : bt_bts_enc_branch(w->bts, &b);
}

/* The program's path from _start to the fault, the loop run @loops times. */
static int walk(struct walker *w, int loops)
{
	int rc = 0;

	if (w->pt)
		rc = bt_pt_enc_begin(w->pt, FZ_BASE + FZ_START);
	for (int ecx = loops; ecx > 0 && !rc; ecx--) {
		int even = !(ecx & 1);

		rc = br(w, BT_BR_CALL, FZ_LOOP, 5, FZ_F, 0);
		if (!rc)
			rc = br(w, BT_BR_COND, FZ_JZ, 2, even ? FZ_F_RET : FZ_NOP, even);
		if (!rc)
			rc = br(w, BT_BR_RET, FZ_F_RET, 1, FZ_CALL_RET, 0);
		if (!rc)
			rc = br(w, BT_BR_COND, FZ_JNZ, 2,
				ecx > 1 ? FZ_LOOP : FZ_AFTER_LOOP, ecx > 1);
	}
	if (!rc)
		rc = br(w, BT_BR_JMP_IND, FZ_JMP_RAX, 2, FZ_TGT, 0);
	if (!rc)
		rc = br(w, BT_BR_CALL_IND, FZ_CALL_RDX, 2, FZ_G, 0);
	if (!rc)
		rc = br(w, BT_BR_RET, FZ_G_RET, 1, FZ_SYSCALL, 0);
	if (!rc)
		rc = br(w, BT_BR_FAR, FZ_SYSCALL, 2, FZ_AFTER_SYS, 0);
	if (!rc)
		rc = br(w, BT_BR_RET, FZ_AFTER_SYS, 1, FZ_FAULT, 0);
	if (!rc && w->pt)
		rc = bt_pt_enc_end(w->pt, FZ_BASE + FZ_FAULT);
	return rc;
}

static int put(const char *dir, const char *name, uint8_t variant,
	       uint8_t opts, const uint8_t *data, uint64_t size)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "wb");
	if (!f) {
		perror(path);
		return -1;
	}
	fputc(variant, f);
	fputc(opts, f);
	fwrite(data, 1, size, f);
	if (fclose(f)) {
		perror(path);
		return -1;
	}
	return 0;
}

struct pt_seed {
	const char *name;
	struct bt_pt_enc_opts o;
	int loops;
	uint64_t ovf_at;
	uint8_t variant, opts;
};

int main(int argc, char **argv)
{
	static const struct pt_seed pts[] = {
		{ "plain", { 0, 0, 0, 0 }, 10, 0, 0x41, 0x00 },
		{ "retcomp-tail", { 1, 0, 0, 0 }, 10, 0, 0x41, 0x05 },
		{ "tnt64-calls", { 0, 1, 0, 0 }, 40, 0, 0x40, 0x09 },
		{ "psb64-ring", { 0, 0, 64, 256 }, 200, 0, 0x45, 0x0e },
		{ "overflow-full", { 0, 0, 128, 0 }, 30, 20, 0x43, 0x10 },
	};
	uint64_t size;
	int wrapped, rc = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: fuzz-gen-seeds PT_DIR BTS_DIR\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof(pts) / sizeof(pts[0]); i++) {
		struct walker w = { .ovf_at = pts[i].ovf_at };
		const uint8_t *d;

		if (bt_pt_enc_new(&pts[i].o, &w.pt) || walk(&w, pts[i].loops)) {
			fprintf(stderr, "fuzz-gen-seeds: PT seed %s failed\n",
				pts[i].name);
			return 1;
		}
		d = bt_pt_enc_data(w.pt, &size, &wrapped);
		rc |= put(argv[1], pts[i].name, pts[i].variant, pts[i].opts, d, size);
		bt_pt_enc_free(w.pt);
	}
	for (int ring = 0; ring < 2; ring++) {
		struct walker w = { 0 };
		const uint8_t *d;

		if (bt_bts_enc_new(ring ? 24 * 16 : 0, &w.bts) || walk(&w, ring ? 50 : 10)) {
			fprintf(stderr, "fuzz-gen-seeds: BTS seed failed\n");
			return 1;
		}
		d = bt_bts_enc_data(w.bts, &size, &wrapped);
		rc |= put(argv[2], ring ? "ring" : "plain", ring ? 0x45 : 0x40,
			  ring ? 0x05 : 0x00, d, size);
		bt_bts_enc_free(w.bts);
	}
	return rc ? 1 : 0;
}
