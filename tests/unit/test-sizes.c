/* SPDX-License-Identifier: MIT */
/*
 * The size policy of btrace.h (libbpf's OPTS_VALID) in the decode library
 * and the export: btrace_decode_opts and btrace_decode_sink (an older
 * caller's smaller sz accepted, a newer one's larger sz only with a zero
 * tail, an sz below sizeof(size_t) refused, each message naming the
 * struct), and btrace_export_result (only the caller's sz bytes written).
 * BT_SAMPLE: a snapshot that decodes.
 */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <btrace/decode.h>
#include <btrace/export.h>
#include <btrace/snapshot.h>

#include "bt-test.h"

#define snap_path getenv("BT_SAMPLE")

static int count_item(void *arg, const struct btrace_thread *t,
		      const struct btrace_block *b, uint64_t index)
{
	(void)t, (void)b, (void)index;
	++*(int *)arg;
	return 0;
}

static void test_decode_opts(struct bt_test *t)
{
	struct btrace_snapshot *snap = NULL;
	struct btrace_decode_result *r = NULL;
	struct btrace_error err;
	struct {
		struct btrace_decode_opts o;
		uint64_t newer;
	} big;

	BT_REQUIRE(t, snap_path != NULL);
	BT_REQUIRE(t, btrace_snapshot_read(snap_path, BTRACE_READ_LENIENT,
					   &snap, &err) == 0);

	/* an older caller: options up to unit/flags only */
	memset(&big, 0, sizeof(big));
	big.o.sz = offsetof(struct btrace_decode_opts, tid);
	big.o.debug_dir = (const char *)1;   /* past its sz: not read */
	BT_EQ_INT(t, 0, btrace_decode(snap, &big.o, &r, &err));
	btrace_decode_result_free(r);
	r = NULL;

	/* a newer caller: a larger sz with a zero tail is fine ... */
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	BT_EQ_INT(t, 0, btrace_decode(snap, &big.o, &r, &err));
	btrace_decode_result_free(r);
	r = NULL;
	/* ... a set option this library does not know is refused */
	big.newer = 1;
	BT_EQ_INT(t, -EINVAL, btrace_decode(snap, &big.o, &r, &err));
	BT_CONTAINS(t, err.msg, "decode options: check failed: unknown options set");
	BT_CHECK(t, r == NULL);

	/* sz 0 (below sizeof(size_t)) is refused, like every *_opts */
	memset(&big, 0, sizeof(big));
	BT_EQ_INT(t, -EINVAL, btrace_decode(snap, &big.o, &r, &err));
	BT_CONTAINS(t, err.msg, "decode options: check failed: sz is 0");

	/* the sink: an older one without end/call accepted, a newer one's
	 * set tail refused */
	{
		struct {
			struct btrace_decode_sink s;
			uint64_t newer;
		} sk;
		int items = 0;

		memset(&sk, 0, sizeof(sk));
		sk.s.sz = offsetof(struct btrace_decode_sink, call);
		sk.s.arg = &items;
		sk.s.item = count_item;
		sk.s.call = (void *)1;   /* past its sz: never called */
		memset(&big, 0, sizeof(big));
		big.o.sz = sizeof(big.o);
		big.o.sink = &sk.s;
		BT_EQ_INT(t, 0, btrace_decode(snap, &big.o, &r, &err));
		if (r && r->nthreads)
			BT_EQ_INT(t, 0, btrace_decode_thread(r, 0, &sk.s, &err));
		sk.s.sz = sizeof(sk);
		sk.s.call = NULL;
		sk.newer = 7;
		if (r && r->nthreads) {
			BT_EQ_INT(t, -EINVAL, btrace_decode_thread(r, 0, &sk.s, &err));
			BT_CONTAINS(t, err.msg, "decode sink: check failed: unknown options set");
		}
		btrace_decode_result_free(r);
		r = NULL;
		BT_EQ_INT(t, -EINVAL, btrace_decode(snap, &big.o, &r, &err));
		BT_CONTAINS(t, err.msg, "decode sink: check failed: unknown options set");
	}
	btrace_snapshot_free(snap);
}

static void test_export_result(struct bt_test *t)
{
	struct btrace_snapshot *snap = NULL;
	struct btrace_export_opts o = { .sz = sizeof(o),
					.flags = BTRACE_EXPORT_NO_CACHE };
	struct btrace_error err;
	struct {
		struct btrace_export_result r;
		char after[8];
	} older;
	size_t n = offsetof(struct btrace_export_result, symfs_dir);
	char out[] = "/tmp/bt-test-sizes.XXXXXX";
	int fd, rc;

	BT_REQUIRE(t, btrace_snapshot_read(snap_path, BTRACE_READ_LENIENT,
					   &snap, &err) == 0);
	fd = mkstemp(out);
	BT_REQUIRE(t, fd >= 0);
	close(fd);
	unlink(out);

	/* an older caller's result: only its sz bytes are written, whether
	 * the export succeeds or not (the sample may not be exportable) */
	memset(&older, 0x5a, sizeof(older));
	older.r.sz = n;
	rc = btrace_export_perf_data(snap, out, &o, &older.r, &err);
	BT_CHECK(t, rc == 0 || rc == -BTRACE_ERR_UNSUPPORTED);
	BT_EQ_U64(t, n, older.r.sz);
	BT_EQ_INT(t, 0x5a, (unsigned char)older.r.symfs_dir[0]);
	BT_EQ_INT(t, 0x5a, (unsigned char)older.after[0]);
	if (rc == 0)
		BT_CHECK(t, older.r.buildid_dir[0] == 0);   /* NO_CACHE */
	unlink(out);

	/* a larger sz: the whole struct written, nothing past it */
	memset(&older, 0x5a, sizeof(older));
	older.r.sz = sizeof(older);
	rc = btrace_export_perf_data(snap, out, &o, &older.r, &err);
	BT_CHECK(t, rc == 0 || rc == -BTRACE_ERR_UNSUPPORTED);
	BT_EQ_U64(t, sizeof(older), older.r.sz);
	BT_EQ_INT(t, 0, (unsigned char)older.r.symfs_dir[0]);
	BT_EQ_INT(t, 0x5a, (unsigned char)older.after[0]);
	unlink(out);

	/* sz 0 is refused before anything is done */
	older.r.sz = 0;
	BT_EQ_INT(t, -EINVAL, btrace_export_perf_data(snap, out, &o, &older.r,
						      &err));
	BT_CONTAINS(t, err.msg, "export result: check failed: sz is 0");
	BT_CHECK(t, access(out, F_OK) != 0);
	btrace_snapshot_free(snap);
}

BT_TESTS(test_decode_opts, test_export_result)
