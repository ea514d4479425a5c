// SPDX-License-Identifier: MIT
/*
 * perf.data writer structure (suite 'unit', no perf needed): export an
 * in-memory snapshot whose Intel PT buffer comes from the software encoder
 * (a wrapped ring, so it starts mid-packet), read the file back and check
 * what perf 6.1 needs: header and attr sizes, sample_id_all, attr type ==
 * priv[PMU_TYPE], ids, 17 priv entries, COMM/MMAP2 with the build ID,
 * AUXTRACE records with the buffer's tid, each starting at a packet
 * boundary, the feature table and the AUXTRACE index.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <intel-pt.h>

#include <btrace/export.h>

#include "bt-test.h"
#include "encode.h"
#include "util.h"

#define TID 4242
#define BASE 0x401000ull

static uint8_t code[64] = {
	0x31, 0xc0,                   /* 0: xor eax,eax */
	0x83, 0xc0, 0x01,             /* 2: add eax,1 */
	0x83, 0xf8, 0x7f,             /* 5: cmp eax,127 */
	0x75, 0xf8,                   /* 8: jne 2 */
	0xeb, 0xf4,                   /* a: jmp 0 */
};

static uint8_t *make_trace(uint64_t ring, uint64_t *size, int *wrapped)
{
	struct bt_pt_enc_opts o = { .retcomp = 1, .psb_period = 256,
				    .ring_size = ring };
	struct bt_pt_enc *e;
	const uint8_t *d;
	uint8_t *copy;

	if (bt_pt_enc_new(&o, &e) || bt_pt_enc_begin(e, BASE))
		return NULL;
	for (int r = 0; r < 400; r++) {
		for (int i = 1; i <= 127; i++) {
			struct bt_branch b = { .from = BASE + 8, .len = 2,
					       .kind = BT_BR_COND };

			b.taken = i != 127;
			b.to = b.taken ? BASE + 2 : BASE + 10;
			bt_pt_enc_branch(e, &b);
		}
		struct bt_branch j = { .from = BASE + 10, .to = BASE, .len = 2,
				       .kind = BT_BR_JMP };
		bt_pt_enc_branch(e, &j);
	}
	bt_pt_enc_end(e, BASE);
	d = bt_pt_enc_data(e, size, wrapped);
	copy = malloc(*size);
	if (copy)
		memcpy(copy, d, *size);
	bt_pt_enc_free(e);
	return copy;
}

struct fixture {
	struct btrace_snapshot s;
	struct btrace_buffer buf;
	struct btrace_task task;
	struct btrace_mapping map;
	struct btrace_code code;
	uint8_t *trace;
	char dir[64], out[128];
};

static int setup(struct fixture *f, uint64_t ring)
{
	int wrapped = 0;

	memset(f, 0, sizeof(*f));
	snprintf(f->dir, sizeof(f->dir), "/tmp/bt-export-unit.XXXXXX");
	if (!mkdtemp(f->dir))
		return -1;
	snprintf(f->out, sizeof(f->out), "%s/perf.data", f->dir);
	f->trace = make_trace(ring, &f->buf.size, &wrapped);
	if (!f->trace)
		return -1;
	f->buf.kind = BTRACE_TRACE_PT;
	f->buf.flags = wrapped ? BTRACE_BUF_WRAPPED : 0;
	f->buf.tid = TID;
	f->buf.cpu = -1;
	f->buf.data = f->trace;
	f->task.pid = f->task.tid = TID;
	f->task.comm = (char *)"prog";
	f->map.pid = TID;
	f->map.prot = 5;
	f->map.flags = 2;
	f->map.start = BASE;
	f->map.end = BASE + 0x1000;
	f->map.pgoff = 0x1000;
	f->map.build_id_size = 20;
	for (int i = 0; i < 20; i++)
		f->map.build_id[i] = (uint8_t)(0xa0 + i);
	f->map.path = (char *)"/nonexistent/prog";
	f->code.kind = BTRACE_CODE_FILE;
	f->code.build_id_size = 20;
	memcpy(f->code.build_id, f->map.build_id, 20);
	f->code.vaddr = BASE;
	f->code.file_offset = 0x1000;
	f->code.data = code;
	f->code.size = sizeof(code);
	f->code.path = f->map.path;
	f->s.word_size = 8;
	f->s.has_config = 1;
	f->s.config.trace_kind = BTRACE_TRACE_PT;
	f->s.config.pmu_type = 9;
	f->s.config.pt_config = 0x2001;
	f->s.buffers = &f->buf;
	f->s.nbuffers = 1;
	f->s.tasks = &f->task;
	f->s.ntasks = 1;
	f->s.mappings = &f->map;
	f->s.nmappings = 1;
	f->s.code = &f->code;
	f->s.ncode = 1;
	return 0;
}

static void teardown(struct fixture *f)
{
	char cmd[256];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", f->dir);
	if (system(cmd))
		fprintf(stderr, "# could not remove %s\n", f->dir);
	free(f->trace);
}

static uint8_t *slurp(const char *path, size_t *n)
{
	FILE *fp = fopen(path, "rb");
	uint8_t *b = NULL;
	long len;

	if (!fp)
		return NULL;
	fseek(fp, 0, SEEK_END);
	len = ftell(fp);
	fseek(fp, 0, SEEK_SET);
	b = malloc((size_t)len + 1);
	if (b && fread(b, 1, (size_t)len, fp) != (size_t)len) {
		free(b);
		b = NULL;
	}
	fclose(fp);
	*n = (size_t)len;
	return b;
}

/* Decode every packet of @p..@p+n; 0 if all decode (a chunk starts and ends
 * at packet boundaries). */
static int packets_ok(const uint8_t *p, uint64_t n)
{
	struct pt_config cfg;
	struct pt_packet_decoder *d;
	struct pt_packet pkt;
	int rc;

	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.begin = (uint8_t *)p;
	cfg.end = (uint8_t *)p + n;
	d = pt_pkt_alloc_decoder(&cfg);
	if (!d)
		return -1;
	rc = pt_pkt_sync_set(d, 0);
	while (rc >= 0)
		rc = pt_pkt_next(d, &pkt, sizeof(pkt));
	pt_pkt_free_decoder(d);
	return rc == -pte_eos ? 0 : rc;
}

static void test_structure(struct bt_test *t)
{
	struct fixture f;
	struct btrace_export_opts o = { .sz = sizeof(o), .max_chunk = 200 };
	struct btrace_export_result r = { .sz = sizeof(r) };
	struct btrace_error err;
	uint8_t *b;
	size_t n, pos, end;
	uint64_t data_off, data_size, feat_off, bitmap;
	int ncomm = 0, nmmap = 0, naux = 0, ninfo = 0;
	uint64_t aux_offsets[4096];
	uint64_t expect_off = 0;
	int chunks_ok = 1;

	BT_REQUIRE(t, setup(&f, 2048) == 0);
	BT_CHECK(t, f.buf.flags & BTRACE_BUF_WRAPPED);
	BT_EQ_INT(t, 0, btrace_export_perf_data(&f.s, f.out, &o, &r, &err));
	BT_EQ_INT(t, 1, r.nbuffers);
	BT_CHECK(t, r.nchunks > 5);
	BT_CHECK(t, r.dropped_bytes > 0);    /* wrapped: cut to the first PSB */
	BT_EQ_INT(t, 1, r.nbinaries);
	BT_EQ_INT(t, 1, r.nrebuilt);
	b = slurp(f.out, &n);
	BT_REQUIRE(t, b != NULL && n > 256);

	BT_EQ_MEM(t, "PERFILE2", b, 8);
	BT_EQ_U64(t, 104, bt_le64(b + 8));
	BT_EQ_U64(t, 128 + 16, bt_le64(b + 16));        /* attr_size */
	data_off = bt_le64(b + 40);
	data_size = bt_le64(b + 48);
	BT_REQUIRE(t, data_off + data_size <= n);
	/* attr */
	{
		const uint8_t *a = b + bt_le64(b + 24);

		BT_EQ_INT(t, 9, bt_le32(a));            /* type */
		BT_EQ_INT(t, 128, bt_le32(a + 4));      /* size <= 128 */
		BT_EQ_U64(t, 0x2001, bt_le64(a + 8));
		BT_CHECK(t, bt_le64(a + 40) & (1ull << 18));   /* sample_id_all */
		BT_EQ_U64(t, 8, bt_le64(a + 128 + 8));  /* one id */
	}
	for (pos = data_off, end = data_off + data_size; pos + 8 <= end;) {
		uint32_t type = bt_le32(b + pos);
		uint16_t misc = bt_le16(b + pos + 4), size = bt_le16(b + pos + 6);

		BT_REQUIRE(t, size >= 8 && pos + size <= end);
		if (type == 70) {
			ninfo++;
			BT_EQ_INT(t, 1, bt_le32(b + pos + 8));   /* INTEL_PT */
			BT_EQ_INT(t, 16 + 17 * 8, size);
			BT_EQ_U64(t, 9, bt_le64(b + pos + 16));  /* PMU_TYPE */
			BT_EQ_U64(t, 0x800, bt_le64(b + pos + 16 + 6 * 8));
		} else if (type == 3) {
			ncomm++;
			BT_EQ_INT(t, TID, bt_le32(b + pos + 12));
			BT_EQ_STR(t, "prog", (const char *)b + pos + 16);
		} else if (type == 10) {
			nmmap++;
			BT_CHECK(t, misc & (1u << 14));          /* build ID */
			BT_EQ_INT(t, 20, b[pos + 40]);
			BT_EQ_MEM(t, f.map.build_id, b + pos + 44, 20);
			BT_EQ_U64(t, 0x1000, bt_le64(b + pos + 32));
			BT_EQ_STR(t, "/nonexistent/prog", (const char *)b + pos + 72);
		} else if (type == 71) {
			uint64_t sz = bt_le64(b + pos + 8);

			BT_EQ_INT(t, 48, size);
			BT_EQ_INT(t, TID, bt_le32(b + pos + 36));
			BT_EQ_U64(t, 0xffffffffull, bt_le32(b + pos + 40));
			BT_EQ_U64(t, expect_off, bt_le64(b + pos + 16));
			BT_EQ_U64(t, 0, sz % 8);
			expect_off += sz;
			if (naux < 4096)
				aux_offsets[naux] = pos;
			if (packets_ok(b + pos + 48, sz))
				chunks_ok = 0;
			if (naux == 0)
				BT_CHECK(t, b[pos + 48] == 0x02 && b[pos + 49] == 0x82);
			naux++;
			pos += sz;
		}
		pos += size;
	}
	BT_EQ_INT(t, 1, ninfo);
	BT_EQ_INT(t, 1, ncomm);
	BT_EQ_INT(t, 1, nmmap);
	BT_EQ_INT(t, (int)r.nchunks, naux);
	BT_CHECK(t, chunks_ok);

	/* features: BUILD_ID(2) ARCH(6) EVENT_DESC(12) AUXTRACE(18) */
	bitmap = bt_le64(b + 72);
	BT_EQ_U64(t, (1ull << 2) | (1ull << 6) | (1ull << 12) | (1ull << 18), bitmap);
	feat_off = data_off + data_size;
	{
		uint64_t aux = bt_le64(b + feat_off + 3 * 16);
		uint64_t nidx = bt_le64(b + aux);
		int idx_ok = nidx == (uint64_t)naux;

		for (uint64_t i = 0; idx_ok && i < nidx && i < 4096; i++)
			idx_ok = bt_le64(b + aux + 8 + 16 * i) == aux_offsets[i] &&
				 bt_le64(b + aux + 16 + 16 * i) == 48;
		BT_CHECK(t, idx_ok);
		uint64_t ev = bt_le64(b + feat_off + 2 * 16);
		BT_EQ_INT(t, 1, bt_le32(b + ev));
		BT_EQ_STR(t, "intel_pt//u", (const char *)b + ev + 8 + 128 + 4 + 4);
	}
	free(b);

	/* the cache: perf's layout, an ELF with the code at its offset */
	{
		char p[512];
		struct stat st;

		snprintf(p, sizeof(p), "%s/perf.data.symfs/.debug/.build-id/a0/a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3/elf",
			 f.dir);
		BT_CHECK(t, stat(p, &st) == 0 && st.st_size > 0x1000);
		b = slurp(p, &n);
		BT_REQUIRE(t, b != NULL && n >= 0x1000 + sizeof(code));
		BT_EQ_MEM(t, "\177ELF", b, 4);
		BT_EQ_MEM(t, code, b + 0x1000, sizeof(code));
		free(b);
	}
	teardown(&f);
}

static void test_errors(struct bt_test *t)
{
	struct fixture f;
	struct btrace_export_opts o = { .sz = sizeof(o) };
	struct btrace_export_result r = { .sz = sizeof(r) };
	struct btrace_error err;
	static const uint8_t junk[64] = { 1, 2, 3 };

	BT_REQUIRE(t, setup(&f, 0) == 0);
	BT_EQ_INT(t, 0, btrace_export_perf_data(&f.s, f.out, &o, &r, &err));
	BT_EQ_INT(t, 0, r.dropped_bytes);    /* not wrapped: starts at a PSB */
	/* an existing output is not replaced without FORCE */
	BT_EQ_INT(t, -EEXIST, btrace_export_perf_data(&f.s, f.out, &o, &r, &err));
	BT_CONTAINS(t, err.msg, "exists");
	o.flags = BTRACE_EXPORT_FORCE | BTRACE_EXPORT_NO_CACHE;
	BT_EQ_INT(t, 0, btrace_export_perf_data(&f.s, f.out, &o, &r, &err));
	BT_EQ_STR(t, "", r.buildid_dir);
	/* no PSB: nothing perf could decode */
	f.buf.data = junk;
	f.buf.size = sizeof(junk);
	BT_EQ_INT(t, -BTRACE_ERR_UNSUPPORTED,
		  btrace_export_perf_data(&f.s, f.out, &o, &r, &err));
	BT_CONTAINS(t, err.msg, "no trace buffer perf could decode");
	BT_CONTAINS(t, err.hint, "no PSB");
	/* unknown trace kind */
	f.buf.kind = 7;
	BT_EQ_INT(t, -BTRACE_ERR_UNSUPPORTED,
		  btrace_export_perf_data(&f.s, f.out, &o, &r, &err));
	BT_CONTAINS(t, err.msg, "unknown trace kind");
	teardown(&f);
}

/* Chunks cut at packet boundaries that are not 8-byte aligned are padded
 * to 8; each AUXTRACE record's offset is the sum of the padded sizes before
 * it (the position of its data in the AUX area perf rebuilds). */
static void test_chunk_offsets(struct bt_test *t)
{
	static const uint64_t chunks[] = { 197, 203, 211, 333 };
	int padded_inside = 0;

	for (size_t c = 0; c < sizeof(chunks) / sizeof(chunks[0]); c++) {
		struct fixture f;
		struct btrace_export_opts o = {
			.sz = sizeof(o), .max_chunk = chunks[c],
			.flags = BTRACE_EXPORT_NO_CACHE,
		};
		struct btrace_export_result r = { .sz = sizeof(r) };
		struct btrace_error err;
		uint64_t expect_off = 0, naux = 0, bad_off = 0, bad_pkt = 0;
		size_t n, pos, end;
		uint8_t *b;

		BT_REQUIRE(t, setup(&f, 0) == 0);
		BT_EQ_INT(t, 0, btrace_export_perf_data(&f.s, f.out, &o, &r, &err));
		b = slurp(f.out, &n);
		BT_REQUIRE(t, b != NULL && n > 256);
		pos = bt_le64(b + 40);
		end = pos + bt_le64(b + 48);
		BT_REQUIRE(t, end <= n);
		while (pos + 8 <= end) {
			uint32_t type = bt_le32(b + pos);
			uint16_t size = bt_le16(b + pos + 6);

			BT_REQUIRE(t, size >= 8 && pos + size <= end);
			if (type == 71) {
				uint64_t sz = bt_le64(b + pos + 8);

				BT_REQUIRE(t, pos + size + sz <= end);
				if (bt_le64(b + pos + 16) != expect_off)
					bad_off++;
				if (packets_ok(b + pos + 48, sz))
					bad_pkt++;
				expect_off += sz;
				naux++;
				pos += sz;
			}
			pos += size;
		}
		BT_EQ_U64(t, r.nchunks, naux);
		BT_CHECK(t, naux >= 3);
		BT_EQ_U64(t, 0, bad_off);
		BT_EQ_U64(t, 0, bad_pkt);
		/* padding beyond the last chunk's: an unaligned cut inside */
		if (expect_off >= r.trace_bytes + 8)
			padded_inside = 1;
		free(b);
		teardown(&f);
	}
	/* else the offsets above could not tell padded from unpadded sizes */
	BT_CHECK(t, padded_inside);
}

BT_TESTS(test_structure, test_errors, test_chunk_offsets)
