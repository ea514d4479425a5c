/* SPDX-License-Identifier: MIT */
/* Snapshot format: round trips of every section type, and damage of every
 * kind at every offset of a small real file. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <btrace/snapshot.h>

#include "bt-test.h"

static char tmpdir[] = "/tmp/bt-format-XXXXXX";

static void remove_tmpdir(void)
{
	char cmd[64];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

static const char *tmp_path(const char *name)
{
	static char buf[256];
	static int made;

	if (!made++) {
		if (!mkdtemp(tmpdir))
			abort();
		atexit(remove_tmpdir);
	}
	snprintf(buf, sizeof(buf), "%s/%s", tmpdir, name);
	return buf;
}

static uint8_t trace_bytes[3000];
static uint8_t code_bytes[777];

static const struct btrace_config sample_config = {
	.backend = BTRACE_BACKEND_PT,
	.trace_kind = BTRACE_TRACE_PT,
	.cpu_vendor = BTRACE_CPU_INTEL,
	.cpu_family = 6,
	.cpu_model = 0x8c,
	.cpu_stepping = 1,
	.cpuid_0x15_eax = 2,
	.cpuid_0x15_ebx = 188,
	.nom_freq = 28,
	.mtc_freq = 3,
	.pmu_type = 8,
	.pt_config = 0x300e601,
	.tsc_bit = 0x400,
	.mtc_bit = 0x200,
	.cyc_bit = 0x2,
	.noretcomp_bit = 0x800,
	.branch_bit = 0x2000,
	.psb_period = 3,
	.user_only = 1,
	.requested_size = 4 << 20,
	.pad = 64 << 10,
	.crash_mode = BTRACE_CRASH_PRECISE,
};

/* Write a file with every section type; returns 0 on success. */
static int write_sample(const char *path, unsigned wflags)
{
	struct btrace_writer *w;
	struct btrace_error err;
	struct btrace_buffer b = {
		.kind = BTRACE_TRACE_PT,
		.flags = BTRACE_BUF_WRAPPED,
		.tid = 4242,
		.cpu = -1,
		.requested_size = 4096,
		.pad = 1024,
		.ring_size = sizeof(trace_bytes),
		.head = 1000,
		.lost = 0,
	};
	struct btrace_task t = { 4242, 4242, 1, BTRACE_TASK_CRASHED,
				 (char *)"prog", (char *)"/usr/bin/prog" };
	struct btrace_task t2 = { 4242, 4243, 1, 0, (char *)"worker", NULL };
	struct btrace_mapping m = {
		.pid = 4242, .prot = 5, .flags = 2, .build_id_size = 20,
		.start = 0x555555554000, .end = 0x555555556000, .pgoff = 0x1000,
		.dev = 0x803, .ino = 1234, .path = (char *)"/usr/bin/prog",
	};
	struct btrace_code c = {
		.kind = BTRACE_CODE_FILE, .build_id_size = 20,
		.vaddr = 0x555555555000, .file_offset = 0x1000,
		.data = code_bytes, .size = sizeof(code_bytes),
		.path = (char *)"/usr/bin/prog",
	};
	struct btrace_memory mem = {
		.tid = 4242, .vaddr = 0x7ffffffde000 - 64, .data = code_bytes,
		.size = 64,
	};
	static const struct btrace_access acc[] = {
		{ 0x555555555120, 0x7ffffffde000 - 8, 8, BTRACE_ACCESS_STORE },
		{ 0x555555555123, 0xffffffffffff0000, 16, 0 },
		{ 0x555555555100, 0, 0, BTRACE_ACCESS_FOLD },
	};
	struct btrace_access_log al = {
		.tid = 4242, .flags = BTRACE_ACCESSES_COMPLETE, .entries = acc,
		.n = 3,
	};
	struct btrace_signal s = {
		.tid = 4242, .signo = 11, .code = 1, .err = 0, .addr = 0,
		.fault_source = BTRACE_FAULT_REGS, .fault_ip = 0x555555555123,
		.has_regs = 1, .exit_status = 139,
	};
	int ret;

	for (size_t i = 0; i < sizeof(trace_bytes); i++)
		trace_bytes[i] = (uint8_t)(i * 7 + (i >> 5));
	for (size_t i = 0; i < sizeof(code_bytes); i++)
		code_bytes[i] = (uint8_t)(0x90 + i % 5);
	for (int i = 0; i < 20; i++)
		m.build_id[i] = c.build_id[i] = (uint8_t)(0xa0 + i);
	for (int i = 0; i < BTRACE_NREGS; i++)
		s.regs[i] = 0x1111111111111111ull * (uint64_t)(i % 15 + 1);

	ret = btrace_writer_open(path, wflags, &w, &err);
	if (ret)
		return ret;
	if ((ret = btrace_writer_set_config(w, &sample_config, &err)) ||
	    (ret = btrace_writer_add_ring(w, &b, trace_bytes, &err)) ||
	    (ret = btrace_writer_add_task(w, &t, &err)) ||
	    (ret = btrace_writer_add_task(w, &t2, &err)) ||
	    (ret = btrace_writer_add_mapping(w, &m, &err)) ||
	    (ret = btrace_writer_add_code(w, &c, &err)) ||
	    (ret = btrace_writer_set_signal(w, &s, &err)) ||
	    (ret = btrace_writer_add_memory(w, &mem, &err)) ||
	    (ret = btrace_writer_add_accesses(w, &al, &err)) ||
	    (ret = btrace_writer_add_meta(w, "host", "testhost", &err)) ||
	    (ret = btrace_writer_add_meta(w, "kernel", "6.1.0", &err))) {
		btrace_writer_free(w);
		return ret;
	}
	return btrace_writer_commit(w, &err);
}

static void check_sample(struct bt_test *t, const struct btrace_snapshot *s)
{
	const struct btrace_buffer *b;

	BT_EQ_INT(t, BTRACE_FORMAT_MAJOR, s->format_major);
	BT_EQ_INT(t, 8, s->word_size);
	BT_EQ_INT(t, 1, s->complete);
	BT_EQ_INT(t, 0, s->nwarnings);
	BT_REQUIRE(t, s->has_config);
	BT_EQ_MEM(t, &sample_config, &s->config, sizeof(sample_config));

	BT_REQUIRE(t, s->nbuffers == 1);
	b = &s->buffers[0];
	BT_EQ_INT(t, 4242, b->tid);
	BT_EQ_INT(t, -1, b->cpu);
	BT_EQ_INT(t, BTRACE_BUF_WRAPPED, b->flags);
	BT_EQ_U64(t, 1000, b->head);
	BT_EQ_U64(t, sizeof(trace_bytes), b->size);
	/* Linearised: [head, end) then [0, head). */
	BT_EQ_MEM(t, trace_bytes + 1000, b->data, sizeof(trace_bytes) - 1000);
	BT_EQ_MEM(t, trace_bytes, b->data + sizeof(trace_bytes) - 1000, 1000);

	BT_REQUIRE(t, s->ntasks == 2);
	BT_EQ_STR(t, "prog", s->tasks[0].comm);
	BT_EQ_STR(t, "/usr/bin/prog", s->tasks[0].exe);
	BT_EQ_INT(t, BTRACE_TASK_CRASHED, s->tasks[0].flags);
	BT_EQ_INT(t, 4243, s->tasks[1].tid);
	BT_CHECK(t, s->tasks[1].exe == NULL);

	BT_REQUIRE(t, s->nmappings == 1);
	BT_EQ_U64(t, 0x555555554000, s->mappings[0].start);
	BT_EQ_U64(t, 0x555555556000, s->mappings[0].end);
	BT_EQ_U64(t, 0x1000, s->mappings[0].pgoff);
	BT_EQ_INT(t, 20, s->mappings[0].build_id_size);
	BT_EQ_INT(t, 0xa0, s->mappings[0].build_id[0]);
	BT_EQ_STR(t, "/usr/bin/prog", s->mappings[0].path);

	BT_REQUIRE(t, s->ncode == 1);
	BT_EQ_U64(t, sizeof(code_bytes), s->code[0].size);
	BT_EQ_MEM(t, code_bytes, s->code[0].data, sizeof(code_bytes));
	BT_EQ_U64(t, 0x1000, s->code[0].file_offset);

	BT_REQUIRE(t, s->signal != NULL);
	BT_EQ_INT(t, 11, s->signal->signo);
	BT_EQ_INT(t, BTRACE_FAULT_REGS, s->signal->fault_source);
	BT_EQ_U64(t, 0x555555555123, s->signal->fault_ip);
	BT_EQ_INT(t, 1, s->signal->has_regs);
	BT_EQ_U64(t, 0x2222222222222222ull, s->signal->regs[1]);
	BT_EQ_INT(t, 139, s->signal->exit_status);

	BT_REQUIRE(t, s->nmemory == 1);
	BT_EQ_INT(t, 4242, s->memory[0].tid);
	BT_EQ_U64(t, 0x7ffffffde000 - 64, s->memory[0].vaddr);
	BT_EQ_U64(t, 64, s->memory[0].size);
	BT_EQ_MEM(t, code_bytes, s->memory[0].data, 64);

	BT_REQUIRE(t, s->naccess_logs == 1);
	BT_EQ_INT(t, 4242, s->access_logs[0].tid);
	BT_EQ_INT(t, BTRACE_ACCESSES_COMPLETE, s->access_logs[0].flags);
	BT_REQUIRE(t, s->access_logs[0].n == 3);
	BT_EQ_U64(t, 0x555555555120, s->access_logs[0].entries[0].ip);
	BT_EQ_U64(t, 0x7ffffffde000 - 8, s->access_logs[0].entries[0].addr);
	BT_EQ_INT(t, 8, s->access_logs[0].entries[0].size);
	BT_EQ_INT(t, BTRACE_ACCESS_STORE, s->access_logs[0].entries[0].flags);
	BT_EQ_U64(t, 0xffffffffffff0000, s->access_logs[0].entries[1].addr);
	BT_EQ_INT(t, 16, s->access_logs[0].entries[1].size);
	BT_EQ_INT(t, 0, s->access_logs[0].entries[1].flags);
	BT_EQ_U64(t, 0x555555555100, s->access_logs[0].entries[2].ip);
	BT_EQ_INT(t, BTRACE_ACCESS_FOLD, s->access_logs[0].entries[2].flags);
	BT_EQ_INT(t, 0, s->access_logs[0].entries[2].size);

	BT_EQ_STR(t, "testhost", btrace_snapshot_meta(s, "host"));
	BT_EQ_STR(t, "6.1.0", btrace_snapshot_meta(s, "kernel"));
	BT_CHECK(t, btrace_snapshot_meta(s, "nothing") == NULL);
}

static void test_roundtrip_compressed(struct bt_test *t)
{
	const char *p = tmp_path("rt.btrace");
	struct btrace_snapshot *s;
	struct btrace_error err;
	struct stat st;

	BT_REQUIRE(t, write_sample(p, 0) == 0);
	BT_REQUIRE(t, stat(p, &st) == 0);
	BT_EQ_INT(t, 0600, st.st_mode & 0777);
	BT_REQUIRE(t, btrace_snapshot_read(p, 0, &s, &err) == 0);
	check_sample(t, s);
	/* Code is compressed, trace is stored raw (mapped without a copy). */
	for (size_t i = 0; i < s->nsections; i++) {
		if (s->sections[i].type == 5)
			BT_CHECK(t, s->sections[i].flags & BTRACE_SECTION_ZSTD);
		if (s->sections[i].type == 2)
			BT_CHECK(t, !(s->sections[i].flags & BTRACE_SECTION_ZSTD));
	}
	btrace_snapshot_free(s);
}

static void test_roundtrip_compressed_trace(struct bt_test *t)
{
	const char *p = tmp_path("rtc.btrace");
	struct btrace_snapshot *s;
	struct btrace_error err;
	int found = 0;

	BT_REQUIRE(t, write_sample(p, BTRACE_WRITE_COMPRESS_TRACE) == 0);
	BT_REQUIRE(t, btrace_snapshot_read(p, 0, &s, &err) == 0);
	check_sample(t, s);
	for (size_t i = 0; i < s->nsections; i++) {
		if (s->sections[i].type == 2) {
			BT_CHECK(t, s->sections[i].flags & BTRACE_SECTION_ZSTD);
			found++;
		}
	}
	BT_EQ_INT(t, 1, found);
	btrace_snapshot_free(s);
}

static void test_roundtrip_raw(struct bt_test *t)
{
	const char *p = tmp_path("raw.btrace");
	struct btrace_snapshot *s;
	struct btrace_error err;

	BT_REQUIRE(t, write_sample(p, BTRACE_WRITE_NO_COMPRESS) == 0);
	BT_REQUIRE(t, btrace_snapshot_read(p, 0, &s, &err) == 0);
	check_sample(t, s);
	for (size_t i = 0; i < s->nsections; i++)
		BT_EQ_INT(t, 0, s->sections[i].flags);
	btrace_snapshot_free(s);
}

static void test_unwrapped_ring(struct bt_test *t)
{
	const char *p = tmp_path("ring.btrace");
	uint8_t ring[64];
	struct btrace_buffer b = { .kind = BTRACE_TRACE_BTS, .tid = 1,
				   .cpu = -1, .ring_size = 64, .head = 24 };
	struct btrace_snapshot *s;
	struct btrace_writer *w;
	struct btrace_error err;

	for (int i = 0; i < 64; i++)
		ring[i] = (uint8_t)i;
	BT_REQUIRE(t, btrace_writer_open(p, 0, &w, &err) == 0);
	BT_REQUIRE(t, btrace_writer_add_ring(w, &b, ring, &err) == 0);
	BT_REQUIRE(t, btrace_writer_commit(w, &err) == 0);
	BT_REQUIRE(t, btrace_snapshot_read(p, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->nbuffers == 1);
	BT_EQ_U64(t, 24, s->buffers[0].size);
	BT_EQ_MEM(t, ring, s->buffers[0].data, 24);
	BT_CHECK(t, !s->has_config);
	BT_CHECK(t, s->signal == NULL);
	btrace_snapshot_free(s);

	/* A head outside the ring is refused. */
	b.head = 65;
	BT_REQUIRE(t, btrace_writer_open(p, 0, &w, &err) == 0);
	BT_EQ_INT(t, -EINVAL, btrace_writer_add_ring(w, &b, ring, &err));
	btrace_writer_free(w);
}

static void test_abandoned_writer_leaves_nothing(struct bt_test *t)
{
	const char *p = tmp_path("abandoned.btrace");
	struct btrace_writer *w;
	struct btrace_error err;
	char cmd[512];

	unlink(p);
	BT_REQUIRE(t, btrace_writer_open(p, 0, &w, &err) == 0);
	BT_REQUIRE(t, btrace_writer_add_meta(w, "k", "v", &err) == 0);
	btrace_writer_free(w);
	BT_CHECK(t, access(p, F_OK) != 0);
	/* No temporary file either. */
	snprintf(cmd, sizeof(cmd), "ls %s | grep -q abandoned", tmpdir);
	BT_CHECK(t, system(cmd) != 0);
}

static void test_unwritable_directory(struct bt_test *t)
{
	struct btrace_writer *w = NULL;
	struct btrace_error err;
	int ret;

	ret = btrace_writer_open("/nonexistent-dir/x.btrace", 0, &w, &err);
	BT_EQ_INT(t, -ENOENT, ret);
	BT_CONTAINS(t, err.msg, "/nonexistent-dir/x.btrace");
	BT_CONTAINS(t, err.msg, "create failed");
	BT_CHECK(t, w == NULL);
}

static void test_full_disk(struct bt_test *t)
{
	struct btrace_writer *w;
	struct btrace_error err;
	static uint8_t big[1 << 16];
	struct btrace_buffer b = { .kind = 1, .tid = 1, .cpu = -1,
				   .data = big, .size = sizeof(big) };
	int ret = 0;

	/* Put /dev/full (every write fails with ENOSPC) under the writer's
	 * descriptor, found through /proc/self/fd: its unnamed O_TMPFILE
	 * file ("DIR/#INODE (deleted)"), or a temporary name where the
	 * file system has no O_TMPFILE. */
	BT_REQUIRE(t, btrace_writer_open(tmp_path("full.btrace"),
					 BTRACE_WRITE_NO_COMPRESS, &w, &err) == 0);
	{
		int full = open("/dev/full", O_WRONLY | O_CLOEXEC);

		if (full < 0) {
			btrace_writer_free(w);
			BT_SKIP(t, "no /dev/full");
		}
		/* The writer's fd is the lowest free one opened last. */
		for (int fd = 3; fd < 64; fd++) {
			char link[64], target[512];
			ssize_t n;

			snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
			n = readlink(link, target, sizeof(target) - 1);
			if (n > 0) {
				target[n] = '\0';
				if (strstr(target, "full.btrace.tmp") ||
				    (!strncmp(target, tmpdir, strlen(tmpdir)) &&
				     !strncmp(target + strlen(tmpdir), "/#", 2) &&
				     strstr(target, " (deleted)"))) {
					dup2(full, fd);
					break;
				}
			}
		}
		close(full);
	}
	for (int i = 0; i < 4 && !ret; i++)
		ret = btrace_writer_add_buffer(w, &b, &err);
	BT_EQ_INT(t, -ENOSPC, ret);
	BT_CONTAINS(t, err.msg, "write failed");
	BT_CONTAINS(t, err.hint, "free space");
	ret = btrace_writer_commit(w, &err);
	BT_CHECK(t, ret < 0);
	BT_CHECK(t, access(tmp_path("full.btrace"), F_OK) != 0);
}

static uint8_t *load(const char *path, size_t *len)
{
	struct stat st;
	uint8_t *buf;
	int fd = open(path, O_RDONLY);

	if (fd < 0 || fstat(fd, &st) < 0)
		return NULL;
	buf = malloc((size_t)st.st_size);
	if (buf && read(fd, buf, (size_t)st.st_size) != st.st_size) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	*len = (size_t)st.st_size;
	return buf;
}

/* Every prefix of a valid file fails cleanly, naming truncation or damage. */
static void test_truncated_everywhere(struct bt_test *t)
{
	const char *p = tmp_path("trunc.btrace");
	struct btrace_snapshot *s;
	struct btrace_error err;
	size_t len, bad = 0;
	uint8_t *buf;

	BT_REQUIRE(t, write_sample(p, 0) == 0);
	buf = load(p, &len);
	BT_REQUIRE(t, buf != NULL);
	for (size_t n = 0; n < len; n++) {
		int ret = btrace_snapshot_read_mem(buf, n, 0, &s, &err);

		if (ret == 0) {
			btrace_snapshot_free(s);
			bad++;
			continue;
		}
		if (ret != -BTRACE_ERR_TRUNCATED && ret != -BTRACE_ERR_FORMAT)
			bad++;
		if (!strstr(err.msg, "(memory)"))
			bad++;
		/* Lenient reading of a prefix never fails past the header. */
		if (n >= 64) {
			ret = btrace_snapshot_read_mem(buf, n, BTRACE_READ_LENIENT,
						       &s, &err);
			if (ret == 0) {
				if (s->complete || !s->nwarnings)
					bad++;
				btrace_snapshot_free(s);
			} else {
				bad++;
			}
		}
	}
	BT_EQ_INT(t, 0, bad);
	free(buf);
}

/* Every single-bit flip is detected (strict) and never crashes. */
static void test_bitflip_everywhere(struct bt_test *t)
{
	const char *p = tmp_path("flip.btrace");
	struct btrace_snapshot *s;
	struct btrace_error err;
	size_t len, undetected = 0, lenient_fail = 0;
	uint8_t *buf;

	BT_REQUIRE(t, write_sample(p, 0) == 0);
	buf = load(p, &len);
	BT_REQUIRE(t, buf != NULL);
	for (size_t i = 0; i < len; i++) {
		for (int bit = 0; bit < 8; bit += 3) {
			int ret;

			buf[i] ^= (uint8_t)(1u << bit);
			ret = btrace_snapshot_read_mem(buf, len, 0, &s, &err);
			if (ret == 0) {
				undetected++;
				btrace_snapshot_free(s);
			}
			ret = btrace_snapshot_read_mem(buf, len,
						       BTRACE_READ_LENIENT,
						       &s, &err);
			if (ret == 0)
				btrace_snapshot_free(s);
			else if (i >= 64)
				lenient_fail++;
			buf[i] ^= (uint8_t)(1u << bit);
		}
	}
	BT_EQ_INT(t, 0, undetected);
	BT_EQ_INT(t, 0, lenient_fail);
	free(buf);
}

extern uint32_t bt_crc32c(uint32_t, const void *, size_t);

/* Recompute every checksum of @copy along the section layout of @orig, so a
 * modified length reaches the structure checks instead of the CRCs. */
static void fix_checksums(const uint8_t *orig, uint8_t *copy, size_t len)
{
	size_t off = 64;

	while (off + 40 <= len) {
		uint64_t stored, crc_len;
		uint32_t crc;

		memcpy(&stored, orig + off + 16, 8);
		crc_len = stored <= len - off - 40 ? stored : len - off - 40;
		crc = bt_crc32c(0, copy + off + 40, (size_t)crc_len);
		memcpy(copy + off + 12, &crc, 4);
		crc = bt_crc32c(0, copy + off, 36);
		memcpy(copy + off + 36, &crc, 4);
		off += 40 + ((stored + 7) & ~7ull);
	}
}

/* Lengths that lie: checksums fixed up so only the structure is wrong. */
static void test_lying_lengths(struct bt_test *t)
{
	const char *p = tmp_path("lie.btrace");
	struct btrace_snapshot *s;
	struct btrace_error err;
	size_t len, crashed = 0;
	uint8_t *buf;
	static const uint64_t lies[] = { 0, 1, 7, 8, 0xffffffffull,
					 0x7fffffffffffffffull,
					 0xffffffffffffffffull };

	BT_REQUIRE(t, write_sample(p, BTRACE_WRITE_NO_COMPRESS) == 0);
	buf = load(p, &len);
	BT_REQUIRE(t, buf != NULL);
	/* Overwrite every aligned u64 in turn with lying values, recompute
	 * all checksums so the structure is what is tested. */
	for (size_t off = 64; off + 8 <= len; off += 8) {
		for (size_t l = 0; l < sizeof(lies) / sizeof(lies[0]); l++) {
			uint8_t *copy = malloc(len);
			int ret;

			memcpy(copy, buf, len);
			for (int k = 0; k < 8; k++)
				copy[off + k] = (uint8_t)(lies[l] >> (8 * k));
			fix_checksums(buf, copy, len);
			ret = btrace_snapshot_read_mem(copy, len, 0, &s, &err);
			if (ret == 0)
				btrace_snapshot_free(s);
			else if (!err.msg[0])
				crashed++;
			ret = btrace_snapshot_read_mem(copy, len,
						       BTRACE_READ_LENIENT,
						       &s, &err);
			if (ret == 0)
				btrace_snapshot_free(s);
			free(copy);
		}
	}
	BT_EQ_INT(t, 0, crashed);
	free(buf);
}

static void test_not_a_snapshot(struct bt_test *t)
{
	struct btrace_snapshot *s;
	struct btrace_error err;
	int fd;

	BT_EQ_INT(t, -ENOENT, btrace_snapshot_read("/nonexistent.btrace", 0,
						   &s, &err));
	BT_CONTAINS(t, err.msg, "/nonexistent.btrace: open failed");
	BT_EQ_INT(t, -BTRACE_ERR_FORMAT,
		  btrace_snapshot_read("/etc/passwd", 0, &s, &err));
	BT_CONTAINS(t, err.msg, "not a btrace snapshot");
	BT_EQ_INT(t, -EINVAL, btrace_snapshot_read("/tmp", 0, &s, &err));
	BT_CONTAINS(t, err.msg, "not a regular file");
	fd = open(tmp_path("empty.btrace"), O_CREAT | O_WRONLY | O_TRUNC, 0600);
	close(fd);
	BT_EQ_INT(t, -BTRACE_ERR_FORMAT,
		  btrace_snapshot_read(tmp_path("empty.btrace"), 0, &s, &err));
	BT_CONTAINS(t, err.msg, "empty file");
}

static void test_future_version(struct bt_test *t)
{
	const char *p = tmp_path("ver.btrace");
	struct btrace_snapshot *s;
	struct btrace_error err;
	size_t len;
	uint8_t *buf;

	BT_REQUIRE(t, write_sample(p, 0) == 0);
	buf = load(p, &len);
	BT_REQUIRE(t, buf != NULL);
	/* A newer minor version reads fine. */
	buf[10] = 7;
	{
		uint32_t crc = bt_crc32c(0, buf, 60);

		memcpy(buf + 60, &crc, 4);
	}
	BT_EQ_INT(t, 0, btrace_snapshot_read_mem(buf, len, 0, &s, &err));
	if (s) {
		BT_EQ_INT(t, 7, s->format_minor);
		btrace_snapshot_free(s);
	}
	/* A newer major version is refused with a hint. */
	buf[8] = 2;
	{
		uint32_t crc = bt_crc32c(0, buf, 60);

		memcpy(buf + 60, &crc, 4);
	}
	BT_EQ_INT(t, -BTRACE_ERR_VERSION,
		  btrace_snapshot_read_mem(buf, len, 0, &s, &err));
	BT_CONTAINS(t, err.msg, "format version 2.7");
	BT_CHECK(t, err.hint[0] != '\0');
	free(buf);
}

static void test_crc32c_vectors(struct bt_test *t)
{
	uint8_t zeros[32] = { 0 }, ones[32];

	memset(ones, 0xff, sizeof(ones));
	/* RFC 3720 test vectors. */
	BT_EQ_U64(t, 0x8a9136aa, bt_crc32c(0, zeros, 32));
	BT_EQ_U64(t, 0x62a8ab43, bt_crc32c(0, ones, 32));
	BT_EQ_U64(t, 0xe3069283, bt_crc32c(0, "123456789", 9));
	/* Incremental equals one-shot. */
	BT_EQ_U64(t, bt_crc32c(0, "123456789", 9),
		  bt_crc32c(bt_crc32c(0, "1234", 4), "56789", 5));
}

/* Bit by bit, the definition: the reference for the fast paths. */
static uint32_t crc32c_bitwise(const uint8_t *p, size_t len)
{
	uint32_t c = 0xffffffffu;

	while (len--) {
		c ^= *p++;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
	}
	return ~c;
}

/* Long buffers (the interleaved streams of the hardware path join at
 * 3 x 4096-byte blocks), every alignment, lengths around the block edges,
 * and split computations. */
static void test_crc32c_long(struct bt_test *t)
{
	size_t cap = 5 * 12288 + 64;
	uint8_t *buf = malloc(cap);
	uint64_t x = 0x9e3779b97f4a7c15ull;
	size_t lens[] = { 0, 1, 7, 8, 4095, 12287, 12288, 12289, 12295,
			  24576, 24583, 3 * 12288 + 5, 5 * 12288 };
	int bad = 0, checked = 0;

	BT_CHECK(t, buf != NULL);
	if (!buf)
		return;
	for (size_t i = 0; i < cap; i++) {
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		buf[i] = (uint8_t)x;
	}
	for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++)
		for (size_t off = 0; off < 8; off += 3) {
			const uint8_t *p = buf + off;
			size_t n = lens[li];
			uint32_t want = crc32c_bitwise(p, n);
			uint32_t split = n / 3 + 1 < n ? n / 3 + 1 : n;
			if (bt_crc32c(0, p, n) != want ||
			    bt_crc32c(bt_crc32c(0, p, split), p + split, n - split) != want)
				bad++;
			checked++;
		}
	BT_EQ_INT(t, 0, bad);
	BT_EQ_INT(t, 39, checked);
	free(buf);
}

/* The lenient reader, after a damaged section header, resumes at the next
 * header whose checksum holds, not at the first "BSEC" it finds: a
 * lookalike planted in the damaged section's payload (magic only, or magic
 * with a wrong header checksum) is skipped. */
static void test_resync_skips_lookalike(struct bt_test *t)
{
	const char *p = tmp_path("resync.btrace");
	struct btrace_snapshot *s;
	struct btrace_error err;
	size_t len, next;
	uint64_t stored;
	uint8_t *buf;

	BT_REQUIRE(t, write_sample(p, BTRACE_WRITE_NO_COMPRESS) == 0);
	buf = load(p, &len);
	BT_REQUIRE(t, buf != NULL);
	memcpy(&stored, buf + 64 + 16, 8);
	next = 64 + 40 + (size_t)((stored + 7) & ~7ull);
	BT_REQUIRE(t, stored >= 96 && next + 40 <= len);
	/* lookalikes at payload offsets 0 and 48: "BSEC", a header checksum
	 * that does not match (the real one, off by one) */
	for (size_t at = 64 + 40; at <= 64 + 40 + 48; at += 48) {
		uint32_t crc;

		memcpy(buf + at, buf + next, 40);
		memcpy(&crc, buf + at + 36, 4);
		crc++;
		memcpy(buf + at + 36, &crc, 4);
	}
	buf[64 + 4] ^= 0x40;   /* section 0's type: its header checksum fails */
	BT_CHECK(t, btrace_snapshot_read_mem(buf, len, 0, &s, &err) ==
		 -BTRACE_ERR_FORMAT);
	BT_REQUIRE(t, btrace_snapshot_read_mem(buf, len, BTRACE_READ_LENIENT,
					       &s, &err) == 0);
	BT_EQ_INT(t, 1, s->nwarnings);
	BT_REQUIRE(t, s->nsections >= 2);
	BT_CHECK(t, s->sections[0].status != 0);
	BT_EQ_U64(t, 64, s->sections[0].offset);
	BT_EQ_U64(t, next, s->sections[1].offset);
	BT_EQ_INT(t, 0, s->sections[1].status);
	for (size_t i = 1; i < s->nsections; i++)
		BT_EQ_INT(t, 0, s->sections[i].status);
	BT_CHECK(t, s->complete);
	btrace_snapshot_free(s);
	free(buf);
}

/* An access record the format does not allow: the section is refused,
 * naming the record and why (strict), or skipped with a warning. */
static void test_bad_access_records(struct bt_test *t)
{
	static const struct { struct btrace_access a; const char *why; } bad[] = {
		{ { 0x1000, 0x2000, 8, 0x4 }, "accesses: record 1: unknown flags" },
		{ { 0x1000, 0x2000, 8, 0x3 }, "accesses: record 1: unknown flags" },
		{ { 0x1000, 0, 8, 0x2 }, "record 1: a fold mark with a size" },
		{ { 0x1000, 0x2000, 0, 0x2 }, "record 1: a fold mark with a size" },
		{ { 0, 0, 0, 0x2 }, "record 1: a fold mark with a size" },
		{ { 0x1000, 0x2000, 0, 0 }, "accesses: record 1: bad size" },
		{ { 0x1000, 0x2000, 8192, 0 }, "accesses: record 1: bad size" },
		{ { 0x1000, ~0ull - 3, 8, 0 }, "accesses: record 1: bad size" },
	};
	const char *p = tmp_path("acc.btrace");

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct btrace_access e[2] = { { 0x1000, 0x2000, 4, 0 }, bad[i].a };
		struct btrace_access_log l = { .tid = 7, .entries = e, .n = 2 };
		struct btrace_snapshot *s = NULL;
		struct btrace_writer *w;
		struct btrace_error err;

		BT_REQUIRE(t, btrace_writer_open(p, 0, &w, &err) == 0);
		BT_REQUIRE(t, btrace_writer_add_accesses(w, &l, &err) == 0);
		BT_REQUIRE(t, btrace_writer_commit(w, &err) == 0);
		BT_CHECK(t, btrace_snapshot_read(p, 0, &s, &err) ==
			 -BTRACE_ERR_FORMAT);
		BT_CHECK(t, strstr(err.msg, bad[i].why) != NULL);
		BT_REQUIRE(t, btrace_snapshot_read(p, BTRACE_READ_LENIENT, &s,
						   &err) == 0);
		BT_EQ_INT(t, 0, s->naccess_logs);
		BT_EQ_INT(t, 1, s->nwarnings);
		btrace_snapshot_free(s);
		unlink(p);
	}
}

BT_TESTS(test_roundtrip_compressed, test_roundtrip_compressed_trace,
	 test_roundtrip_raw, test_unwrapped_ring,
	 test_abandoned_writer_leaves_nothing, test_unwritable_directory,
	 test_full_disk, test_truncated_everywhere, test_bitflip_everywhere,
	 test_lying_lengths, test_not_a_snapshot, test_future_version,
	 test_crc32c_vectors, test_crc32c_long, test_resync_skips_lookalike,
	 test_bad_access_records)
