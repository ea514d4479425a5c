/* SPDX-License-Identifier: MIT */
/* Internal helpers of libbtrace. */
#include <errno.h>
#include <stdlib.h>

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

BT_TESTS(test_grow_to_any_index, test_error_record, test_strerror)
