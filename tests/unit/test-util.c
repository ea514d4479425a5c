/* SPDX-License-Identifier: MIT */
/* Internal helpers of libbtrace. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-buildid.h"
#include "util.h"
#include "bt-test.h"

static void test_grow_to_any_index(struct bt_test *t)
{
	int *a = NULL;
	size_t cap = 0;

	/* One call makes room for a far index, not just one doubling. */
	BT_EQ_INT(t, 0, bt_grow((void **)&a, &cap, 1000, sizeof(*a)));
	BT_CHECK(t, cap > 1000);
	a[1000] = 7;  /* ASan checks this store */
	BT_EQ_INT(t, 7, a[1000]);
	/* Already big enough: unchanged. */
	{
		size_t before = cap;

		BT_EQ_INT(t, 0, bt_grow((void **)&a, &cap, 10, sizeof(*a)));
		BT_EQ_U64(t, before, cap);
	}
	/* Overflowing sizes are refused, not wrapped. */
	BT_EQ_INT(t, -ENOMEM, bt_grow((void **)&a, &cap, SIZE_MAX / 2,
				      sizeof(*a)));
	free(a);
}

static void test_error_record(struct bt_test *t)
{
	struct btrace_error err;

	BT_EQ_INT(t, -EIO, bt_error(&err, -EIO, "%s: %s failed: %s", "obj",
				    "op", "why"));
	BT_EQ_STR(t, "obj: op failed: why", err.msg);
	BT_EQ_STR(t, "", err.hint);
	BT_EQ_INT(t, -EIO, bt_hint(&err, "do %d things", 2));
	BT_EQ_STR(t, "do 2 things", err.hint);
	BT_EQ_INT(t, -5, bt_error(NULL, -5, "ignored"));
	bt_error_clear(&err);
	BT_EQ_INT(t, 0, err.code);
}

static void test_strerror(struct bt_test *t)
{
	BT_EQ_STR(t, "file is truncated", btrace_strerror(-BTRACE_ERR_TRUNCATED));
	BT_EQ_STR(t, "No such file or directory", btrace_strerror(-ENOENT));
}

/*
 * The one build-ID reader (src/elf-buildid.c, the decoder's too): this
 * test's own executable by its PT_NOTE segment; the same file with its
 * program headers removed (e_phnum = 0, like a file read only by
 * sections) by its SHT_NOTE section, with the same ID; a non-ELF file is
 * -ENOEXEC.
 */
static void test_build_id(struct bt_test *t)
{
	uint8_t id[64], id2[64];
	char path[] = "/tmp/bt-test-buildid.XXXXXX";
	char *data = NULL;
	size_t len = 0;
	int n, n2, fd;

	n = bt_elf_build_id("/proc/self/exe", id, sizeof(id));
	if (n == -ENOENT)
		BT_SKIP(t, "this test was linked without a build ID");
	BT_REQUIRE(t, n > 0);
	BT_REQUIRE(t, bt_read_file("/proc/self/exe", &data, &len,
				    256u << 20) == 0 && len > 64);
	data[56] = data[57] = 0;   /* e_phnum of an ELF64 header */
	fd = mkstemp(path);
	BT_REQUIRE(t, fd >= 0);
	BT_CHECK(t, write(fd, data, len) == (ssize_t)len);
	close(fd);
	n2 = bt_elf_build_id(path, id2, sizeof(id2));
	BT_EQ_INT(t, n, n2);
	if (n2 == n)
		BT_EQ_MEM(t, id, id2, (size_t)n);
	BT_EQ_INT(t, 4, bt_elf_build_id(path, id2, 4));   /* at most max */
	fd = open(path, O_WRONLY | O_TRUNC);
	BT_CHECK(t, fd >= 0 && write(fd, "not ELF, just text....", 22) == 22);
	close(fd);
	BT_EQ_INT(t, -ENOEXEC, bt_elf_build_id(path, id2, sizeof(id2)));
	unlink(path);
	free(data);
}

/* time.tsc (docs/format.md, "Time"): perf's three numbers, nothing else. */
static void test_time_tsc_parse(struct bt_test *t)
{
	uint64_t zero = 1;
	uint32_t mult = 1;
	uint16_t shift = 1;

	BT_EQ_INT(t, 0, bt_time_tsc_parse("zero=0 mult=1 shift=0", &zero,
					  &mult, &shift));
	BT_EQ_U64(t, 0, zero);
	BT_EQ_INT(t, 1, mult);
	BT_EQ_INT(t, 0, shift);
	BT_EQ_INT(t, 0, bt_time_tsc_parse("zero=18446744073709551615 "
					  "mult=4294967295 shift=63", &zero,
					  &mult, &shift));
	BT_EQ_U64(t, UINT64_MAX, zero);
	BT_EQ_U64(t, UINT32_MAX, mult);
	BT_EQ_INT(t, 63, shift);
	BT_EQ_INT(t, -1, bt_time_tsc_parse(NULL, &zero, &mult, &shift));
	BT_EQ_INT(t, -1, bt_time_tsc_parse("", &zero, &mult, &shift));
	BT_EQ_INT(t, -1, bt_time_tsc_parse("zero=0 mult=0 shift=0", &zero,
					   &mult, &shift));
	BT_EQ_INT(t, -1, bt_time_tsc_parse("zero=0 mult=4294967296 shift=0",
					   &zero, &mult, &shift));
	BT_EQ_INT(t, -1, bt_time_tsc_parse("zero=0 mult=1 shift=64", &zero,
					   &mult, &shift));
	BT_EQ_INT(t, -1, bt_time_tsc_parse("zero=0 mult=1 shift=0 x", &zero,
					   &mult, &shift));
	BT_EQ_INT(t, -1, bt_time_tsc_parse("mult=1 zero=0 shift=0", &zero,
					   &mult, &shift));
	/* a refused value leaves the outputs as they were */
	BT_EQ_U64(t, UINT64_MAX, zero);
}

/*
 * bt_write_full() after a short write: the real reason of the next write,
 * never a stale errno (a full disk said "File exists").  A file size limit
 * makes the kernel cut a write at the limit, then refuse the next with
 * EFBIG (generic_write_check_limits(), mm/filemap.c; SIGXFSZ ignored), as a
 * full disk cuts one and refuses the next with ENOSPC.
 */
static void test_write_full_short(struct bt_test *t)
{
	char path[] = "/tmp/bt-test-short.XXXXXX";
	static char buf[8192];
	struct rlimit old, lim;
	struct stat st;
	void (*xfsz)(int);
	int fd;

	BT_REQUIRE(t, getrlimit(RLIMIT_FSIZE, &old) == 0);
	fd = mkstemp(path);
	BT_REQUIRE(t, fd >= 0);
	memset(buf, 'x', sizeof(buf));
	xfsz = signal(SIGXFSZ, SIG_IGN);
	lim = old;
	lim.rlim_cur = 5000;
	BT_REQUIRE(t, setrlimit(RLIMIT_FSIZE, &lim) == 0);
	errno = EEXIST;
	BT_EQ_INT(t, -EFBIG, bt_write_full(fd, buf, sizeof(buf), -1));
	errno = EEXIST;
	BT_EQ_INT(t, -EFBIG, bt_write_full(fd, buf, sizeof(buf), 100));
	BT_EQ_INT(t, 0, bt_write_full(fd, buf, 10, 0));   /* within it */
	setrlimit(RLIMIT_FSIZE, &old);
	signal(SIGXFSZ, xfsz);
	/* the short part was written and kept */
	BT_CHECK(t, fstat(fd, &st) == 0 && st.st_size == 5000);
	close(fd);
	unlink(path);
}

BT_TESTS(test_grow_to_any_index, test_error_record, test_strerror,
	 test_build_id, test_time_tsc_parse, test_write_full_short)
