/* SPDX-License-Identifier: MIT */
/*
 * The record side of libbtrace's API: the backend table is the one list
 * of backends, the library says nothing without a log callback, and every
 * `*_opts` struct follows one size policy (btrace.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <btrace/record.h>

#include "backend.h"
#include "util.h"
#include "bt-test.h"

static void test_backend_table(struct bt_test *t)
{
	const struct btrace_backend_desc *d;
	size_t n = 0, last_resorts = 0;

	for (size_t i = 0; (d = btrace_backend_at(i)); i++, n++) {
		/* each name and id round-trips, to the same descriptor */
		BT_CHECK(t, d->id != BTRACE_BACKEND_UNKNOWN);
		BT_CHECK(t, d->name && d->name[0] && d->label && d->label[0]);
		BT_CHECK(t, btrace_backend_by_id(d->id) == d);
		BT_CHECK(t, btrace_backend_by_name(d->name) == d);
		BT_CHECK(t, bt_backend_get(d->id) == bt_backend_at(i));
		BT_CHECK(t, bt_backend_at(i)->record != NULL);
		/* probed ones can be probed; one unprobed `auto` fallback */
		if (d->flags & BTRACE_BACKEND_F_PROBED)
			BT_CHECK(t, bt_backend_at(i)->probe != NULL);
		else if (d->flags & BTRACE_BACKEND_F_AUTO)
			last_resorts++;
		/* a backend that cannot attach says why when asked to */
		if (!(d->flags & BTRACE_BACKEND_F_HARDWARE))
			BT_CHECK(t, bt_backend_at(i)->attach_refused != NULL);
	}
	BT_EQ_U64(t, 3, n);
	BT_EQ_U64(t, 1, last_resorts);
	BT_EQ_STR(t, "pt", btrace_backend_by_id(BTRACE_BACKEND_PT)->name);
	BT_EQ_STR(t, "bts", btrace_backend_by_id(BTRACE_BACKEND_BTS)->name);
	BT_EQ_STR(t, "qemu", btrace_backend_by_id(BTRACE_BACKEND_QEMU)->name);
	BT_CHECK(t, btrace_backend_at(n) == NULL);
	BT_CHECK(t, btrace_backend_by_id(BTRACE_BACKEND_UNKNOWN) == NULL);
	BT_CHECK(t, btrace_backend_by_id(99) == NULL);
	BT_CHECK(t, btrace_backend_by_name("auto") == NULL);
	BT_CHECK(t, btrace_backend_by_name("PT") == NULL);
	BT_CHECK(t, btrace_backend_by_name(NULL) == NULL);
}

/* Messages a callback received, one per line. */
struct heard {
	char text[8192];
	int n, warnings;
};

static void listen(int level, const char *msg, void *ctx)
{
	struct heard *h = ctx;
	size_t len = strlen(h->text);

	h->n++;
	h->warnings += level == BTRACE_LOG_WARN;
	snprintf(h->text + len, sizeof(h->text) - len, "%s\n", msg);
}

/* Run @fn with stderr going to a file; returns what it wrote. */
static long stderr_bytes_of(void (*fn)(void *), void *arg)
{
	char path[] = "/tmp/bt-test-record-XXXXXX";
	int fd = mkstemp(path), saved;
	long n;

	if (fd < 0)
		return -1;
	unlink(path);
	fflush(stderr);
	saved = dup(2);
	dup2(fd, 2);
	fn(arg);
	fflush(stderr);
	dup2(saved, 2);
	close(saved);
	n = lseek(fd, 0, SEEK_END);
	close(fd);
	return n;
}

struct rec_call {
	struct btrace_record_opts o;
	struct btrace_record_result res;
	struct btrace_error err;
	int rc;
};

static void run_record(void *arg)
{
	struct rec_call *c = arg;

	c->rc = btrace_record(&c->o, &c->res, &c->err);
}

static void test_record_silent_without_callback(struct bt_test *t)
{
	static char *argv[] = { "/nonexistent/bt-test-program", NULL };
	struct rec_call c = { .o = { .sz = sizeof(c.o), .argv = argv },
			      .res = { .sz = sizeof(c.res) } };
	struct heard h = { .n = 0 };

	/* auto: the probes have things to say (which backend, or why not) */
	BT_EQ_U64(t, 0, (uint64_t)stderr_bytes_of(run_record, &c));
	BT_CHECK(t, c.rc < 0);
	BT_CONTAINS(t, c.err.msg, "bt-test-program");

	/* with a callback: the same run says them there, not on stderr */
	memset(&c, 0, sizeof(c));
	c.o.sz = sizeof(c.o);
	c.res.sz = sizeof(c.res);
	c.o.argv = argv;
	c.o.log = listen;
	c.o.log_ctx = &h;
	BT_EQ_U64(t, 0, (uint64_t)stderr_bytes_of(run_record, &c));
	BT_CHECK(t, c.rc < 0);
	BT_CHECK(t, h.n >= 1);
	BT_CHECK(t, !strncmp(h.text, "btrace record: ", 15));
	BT_CONTAINS(t, h.text, "btrace record: using ");
	bt_test_diag("heard: %s", h.text);

	/* quiet: the callback hears nothing from `auto` */
	memset(&h, 0, sizeof(h));
	c.o.flags = BTRACE_RECORD_QUIET;
	run_record(&c);
	BT_EQ_INT(t, 0, h.n);
}

static void say_things(void *arg)
{
	(void)arg;
	bt_msg("btrace record: %s", "a message");
	bt_msg("btrace: warning: %s", "a warning");
}

static void test_msg_routing(struct bt_test *t)
{
	struct heard h = { .n = 0 };
	struct bt_log prev;

	BT_EQ_U64(t, 0, (uint64_t)stderr_bytes_of(say_things, NULL));
	prev = bt_log_set(listen, &h);
	BT_EQ_U64(t, 0, (uint64_t)stderr_bytes_of(say_things, NULL));
	bt_log_restore(prev);
	BT_EQ_INT(t, 2, h.n);
	BT_EQ_INT(t, 1, h.warnings);
	BT_EQ_STR(t, "btrace record: a message\nbtrace: warning: a warning\n",
		  h.text);
	/* restored: silent again */
	say_things(NULL);
	BT_EQ_INT(t, 2, h.n);
}

struct opts_v1 {        /* an older caller's struct: two fields */
	size_t sz;
	uint32_t a, b;
};
struct opts_v2 {        /* this library's */
	size_t sz;
	uint32_t a, b;
	uint64_t c;
};
struct opts_v3 {        /* a newer caller's */
	size_t sz;
	uint32_t a, b;
	uint64_t c, d;
};

static void test_opts_policy(struct bt_test *t)
{
	struct opts_v1 v1 = { .sz = sizeof(v1), .a = 1, .b = 2 };
	struct opts_v3 v3 = { .sz = sizeof(v3), .a = 1, .b = 2, .c = 3 };
	struct opts_v2 out;
	struct btrace_error err = { 0 };
	size_t tiny = 4;

	/* smaller: accepted, the fields it lacks read as zero */
	memset(&out, 0xff, sizeof(out));
	BT_EQ_INT(t, 0, bt_opts_copy(&out, sizeof(out), &v1, "test options", &err));
	BT_EQ_U64(t, sizeof(out), out.sz);
	BT_EQ_U64(t, 2, out.b);
	BT_EQ_U64(t, 0, out.c);
	/* larger with a zero tail: accepted */
	BT_EQ_INT(t, 0, bt_opts_copy(&out, sizeof(out), &v3, "test options", &err));
	BT_EQ_U64(t, 3, out.c);
	/* larger with a field set that this library does not know: refused */
	v3.d = 7;
	BT_EQ_INT(t, -EINVAL, bt_opts_copy(&out, sizeof(out), &v3, "test options", &err));
	BT_CONTAINS(t, err.msg, "test options: check failed: unknown options set");
	BT_CHECK(t, err.hint[0] != 0);
	/* no struct, or an sz that cannot be one */
	BT_EQ_INT(t, -EINVAL, bt_opts_copy(&out, sizeof(out), NULL, "test options", &err));
	BT_EQ_INT(t, -EINVAL, bt_opts_copy(&out, sizeof(out), &tiny, "test options", &err));
	BT_CONTAINS(t, err.msg, "sz is 4");
}

static void test_record_opts_policy(struct bt_test *t)
{
	static char *argv[] = { "/nonexistent/bt-test-program", NULL };
	struct {
		struct btrace_record_opts o;
		uint64_t newer;
	} big;
	struct btrace_record_opts small;
	struct btrace_record_result res = { .sz = sizeof(res) };
	struct btrace_error err = { 0 };

	/* a newer caller that set an option this library lacks */
	memset(&big, 0, sizeof(big));
	big.o.sz = sizeof(big);
	big.o.argv = argv;
	big.o.flags = BTRACE_RECORD_QUIET;
	big.newer = 1;
	BT_EQ_INT(t, -EINVAL, btrace_record(&big.o, &res, &err));
	BT_CONTAINS(t, err.msg, "record options: check failed: unknown options set");
	BT_EQ_INT(t, -1, res.exit_status);
	/* the same with the tail zero goes on to the program */
	big.newer = 0;
	BT_CHECK(t, btrace_record(&big.o, &res, &err) < 0);
	BT_CONTAINS(t, err.msg, "bt-test-program");
	/* an older caller, without log/log_ctx: accepted */
	memset(&small, 0, sizeof(small));
	small.sz = offsetof(struct btrace_record_opts, log);
	small.argv = argv;
	small.flags = BTRACE_RECORD_QUIET;
	BT_CHECK(t, btrace_record(&small, &res, &err) < 0);
	BT_CONTAINS(t, err.msg, "bt-test-program");
	BT_EQ_INT(t, -EINVAL, btrace_record(NULL, &res, &err));
	/* an access log larger than a snapshot section holds: refused
	 * before anything runs; the most is accepted */
	memset(&small, 0, sizeof(small));
	small.sz = sizeof(small);
	small.argv = argv;
	small.flags = BTRACE_RECORD_QUIET;
	small.accesses = BTRACE_ACCESSES_MAX + 1;
	BT_EQ_INT(t, -EINVAL, btrace_record(&small, &res, &err));
	BT_CONTAINS(t, err.msg, "access log of 4194305 records per thread");
	small.accesses = BTRACE_ACCESSES_MAX;
	BT_CHECK(t, btrace_record(&small, &res, &err) < 0);
	BT_CONTAINS(t, err.msg, "bt-test-program");
	small.sz = offsetof(struct btrace_record_opts, log);
	small.accesses = 0;

	/* results: an older caller's shorter struct gets only its bytes */
	{
		struct {
			struct btrace_record_result r;
			char after[8];
		} older;
		size_t n = offsetof(struct btrace_record_result, snapshot_path);

		memset(&older, 0x5a, sizeof(older));
		older.r.sz = n;
		BT_CHECK(t, btrace_record(&small, &older.r, &err) < 0);
		BT_EQ_U64(t, n, older.r.sz);
		BT_EQ_INT(t, -1, older.r.exit_status);
		BT_EQ_INT(t, 0, older.r.snapshots);
		BT_EQ_INT(t, 0x5a, (unsigned char)older.r.snapshot_path[0]);
		BT_EQ_INT(t, 0x5a, (unsigned char)older.after[0]);
		older.r.sz = 0;
		BT_EQ_INT(t, -EINVAL, btrace_record(&small, &older.r, &err));
		BT_CONTAINS(t, err.msg, "record result: check failed");
	}
}

BT_TESTS(test_backend_table, test_record_silent_without_callback,
	 test_msg_routing, test_opts_policy, test_record_opts_policy)
