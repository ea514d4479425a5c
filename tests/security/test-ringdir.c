// SPDX-License-Identifier: MIT
/*
 * The ring directory's file-system side (src/qemu/ringdir.c), without
 * QEMU: a directory swapped for a link or for another directory is not
 * emptied, a link inside is removed and not followed, and TMPDIR's check
 * (docs/security.md, "The QEMU backend's rings").
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bt-test.h"
#include "ringdir.h"

static char base[] = "/tmp/bt-test-ringdir-XXXXXX";

static void put(const char *dir, const char *name)
{
	char p[1024];
	FILE *f;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	f = fopen(p, "w");
	if (f) {
		fputs("precious\n", f);
		fclose(f);
	}
}

static int has(const char *dir, const char *name)
{
	char p[1024];
	struct stat st;

	snprintf(p, sizeof(p), "%s/%s", dir, name);
	return !lstat(p, &st);
}

static int setup(void)
{
	static int done;

	if (!done && mkdtemp(base))
		done = 1;
	return done;
}

/* A ring directory D with two files; D's inode. */
static int make_ring(const char *name, char *d, size_t len, struct stat *st)
{
	snprintf(d, len, "%s/%s", base, name);
	if (mkdir(d, 0700))
		return -1;
	put(d, "sock");
	put(d, "core.1");
	return lstat(d, st);
}

static void test_swapped_for_link(struct bt_test *t)
{
	char d[256], moved[300], victim[256];
	struct stat st;

	BT_REQUIRE(t, setup());
	BT_REQUIRE(t, make_ring("btrace-qemu-link01", d, sizeof(d), &st) == 0);
	snprintf(victim, sizeof(victim), "%s/victim", base);
	BT_REQUIRE(t, mkdir(victim, 0700) == 0);
	put(victim, "precious");
	snprintf(moved, sizeof(moved), "%s.moved", d);
	BT_REQUIRE(t, rename(d, moved) == 0);
	BT_REQUIRE(t, symlink(victim, d) == 0);
	BT_CHECK(t, bt_ringdir_remove(d, st.st_dev, st.st_ino) < 0);
	BT_CHECK(t, has(victim, "precious"));
	BT_CHECK(t, has(moved, "sock") && has(moved, "core.1"));
}

static void test_swapped_for_dir(struct bt_test *t)
{
	char d[256], moved[300];
	struct stat st;

	BT_REQUIRE(t, setup());
	BT_REQUIRE(t, make_ring("btrace-qemu-dir001", d, sizeof(d), &st) == 0);
	snprintf(moved, sizeof(moved), "%s.moved", d);
	BT_REQUIRE(t, rename(d, moved) == 0);
	BT_REQUIRE(t, mkdir(d, 0700) == 0);
	put(d, "precious");
	BT_EQ_INT(t, -ESTALE, bt_ringdir_remove(d, st.st_dev, st.st_ino));
	BT_CHECK(t, has(d, "precious"));
}

static void test_link_inside_not_followed(struct bt_test *t)
{
	char d[256], victim[256], ln[300];
	struct stat st;

	BT_REQUIRE(t, setup());
	BT_REQUIRE(t, make_ring("btrace-qemu-in0001", d, sizeof(d), &st) == 0);
	snprintf(victim, sizeof(victim), "%s/victim2", base);
	BT_REQUIRE(t, mkdir(victim, 0700) == 0);
	put(victim, "precious");
	snprintf(ln, sizeof(ln), "%s/ring.7", d);
	BT_REQUIRE(t, symlink(victim, ln) == 0);
	snprintf(ln, sizeof(ln), "%s/ring.8", d);
	BT_REQUIRE(t, symlink("precious", ln) == 0);
	BT_EQ_INT(t, 0, bt_ringdir_remove(d, st.st_dev, st.st_ino));
	BT_CHECK(t, access(d, F_OK) != 0);
	BT_CHECK(t, has(victim, "precious"));
	BT_EQ_INT(t, -ENOENT, bt_ringdir_remove(d, st.st_dev, st.st_ino));
}

static void test_parent_check(struct bt_test *t)
{
	struct btrace_error err = { 0 };
	char d[256], ln[300];

	BT_REQUIRE(t, setup());
	BT_EQ_INT(t, 0, bt_ringdir_parent_check("/tmp", &err));
	BT_EQ_INT(t, 0, bt_ringdir_parent_check(base, &err));
	snprintf(d, sizeof(d), "%s/open", base);
	BT_REQUIRE(t, mkdir(d, 0700) == 0 && chmod(d, 0777) == 0);
	BT_CHECK(t, bt_ringdir_parent_check(d, &err) < 0);
	BT_CHECK(t, strstr(err.msg, "writable by other users and not sticky"));
	BT_REQUIRE(t, chmod(d, 01777) == 0);
	BT_EQ_INT(t, 0, bt_ringdir_parent_check(d, &err));
	snprintf(ln, sizeof(ln), "%s/ln", base);
	BT_REQUIRE(t, symlink(d, ln) == 0);
	BT_CHECK(t, bt_ringdir_parent_check(ln, &err) < 0);
	BT_CHECK(t, strstr(err.msg, "symbolic link"));
	BT_CHECK(t, bt_ringdir_parent_check("relative", &err) < 0);
	if (geteuid() == 0) {
		snprintf(d, sizeof(d), "%s/others", base);
		BT_REQUIRE(t, mkdir(d, 0755) == 0 && chown(d, 65534, 65534) == 0);
		BT_CHECK(t, bt_ringdir_parent_check(d, &err) < 0);
		BT_CHECK(t, strstr(err.msg, "belongs to another user"));
	}
}

static void test_cleanup(struct bt_test *t)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", base);
	BT_CHECK(t, system(cmd) == 0);
}

BT_TESTS(test_swapped_for_link, test_swapped_for_dir,
	 test_link_inside_not_followed, test_parent_check, test_cleanup)
