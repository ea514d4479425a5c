// SPDX-License-Identifier: MIT
/*
 * The private ring directory's file-system side (ringdir.h): TMPDIR's
 * check, a removal that follows nothing, and the sweep of stale
 * directories.  Everything here works from directory descriptors: a name
 * is looked up once, checked with fstat, and then only reached through
 * the descriptor.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "ringdir.h"
#include "util.h"

int bt_ringdir_parent_check(const char *dir, struct btrace_error *err)
{
	char p[PATH_MAX];
	size_t n = strlen(dir);
	uid_t me = geteuid();

	if (dir[0] != '/' || n >= sizeof(p))
		return bt_error(err, -EINVAL, "%s: use as TMPDIR failed: not an "
				"absolute path", dir);
	/* "/", then every prefix up to a '/', then the whole path. */
	for (size_t e = 0; e <= n; e++) {
		struct stat st;
		const char *why = NULL;

		if (e && e < n && dir[e] != '/')
			continue;
		memcpy(p, dir, e ? e : 1);
		p[e ? e : 1] = 0;
		if (lstat(p, &st))
			return bt_error(err, -errno, "%s: use as TMPDIR failed: "
					"%s: %s", dir, p, strerror(errno));
		if (S_ISLNK(st.st_mode))
			why = "is a symbolic link (changed while checked)";
		else if (!S_ISDIR(st.st_mode))
			why = "is not a directory";
		else if (st.st_uid != 0 && st.st_uid != me)
			why = "belongs to another user";
		else if ((st.st_mode & 022) && !(st.st_mode & S_ISVTX))
			why = "is writable by other users and not sticky";
		if (why) {
			bt_error(err, -EPERM, "%s: use as TMPDIR failed: %s (uid "
				 "%u, mode %04o) %s, so another user could "
				 "replace btrace's ring directory there", dir, p,
				 (unsigned)st.st_uid,
				 (unsigned)(st.st_mode & 07777), why);
			return bt_hint(err, "set TMPDIR to a directory only you "
				       "(or root) can change, such as /tmp");
		}
	}
	return 0;
}

/* Unlink every entry of directory @dfd (no entry is followed; a
 * subdirectory, which btrace never makes, stays). */
static void bt_ringdir_clear(int dfd)
{
	int fd = dup(dfd);
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
	struct dirent *de;

	if (!d) {
		if (fd >= 0)
			close(fd);
		return;
	}
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			unlinkat(dfd, de->d_name, 0);
	closedir(d);
}

/* Open entry @name of @pfd as a directory, never through a link, if it
 * is @dev/@ino (0/0: any).  Returns the descriptor or -errno. */
static int bt_ringdir_open(int pfd, const char *name, dev_t dev, ino_t ino)
{
	struct stat st;
	int dfd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
			 O_CLOEXEC);

	if (dfd < 0)
		return -errno;
	if (fstat(dfd, &st) || ((dev || ino) &&
				(st.st_dev != dev || st.st_ino != ino))) {
		close(dfd);
		return -ESTALE;
	}
	return dfd;
}

/* Remove the (now empty) entry @name of @pfd if it is still @dfd's. */
static int bt_ringdir_rmdir(int pfd, const char *name, int dfd)
{
	struct stat a, b;

	if (fstat(dfd, &a) || fstatat(pfd, name, &b, AT_SYMLINK_NOFOLLOW))
		return -errno;
	if (a.st_dev != b.st_dev || a.st_ino != b.st_ino)
		return -ESTALE;
	return unlinkat(pfd, name, AT_REMOVEDIR) ? -errno : 0;
}

int bt_ringdir_remove(const char *dir, dev_t dev, ino_t ino)
{
	char parent[PATH_MAX];
	const char *slash = strrchr(dir, '/'), *base;
	int pfd, dfd, rc;

	if (!slash || (size_t)(slash - dir) >= sizeof(parent))
		return -EINVAL;
	memcpy(parent, dir, (size_t)(slash - dir));
	parent[slash - dir] = 0;
	base = slash + 1;
	pfd = open(parent[0] ? parent : "/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return -errno;
	dfd = bt_ringdir_open(pfd, base, dev, ino);
	if (dfd < 0) {
		close(pfd);
		return dfd;
	}
	bt_ringdir_clear(dfd);
	rc = bt_ringdir_rmdir(pfd, base, dfd);
	close(dfd);
	close(pfd);
	return rc;
}

/* Whether ring directory @dfd's socket is ours and bound by no process
 * any more (its btrace is gone). */
static int bt_ringdir_dead(int dfd)
{
	struct sockaddr_un a;
	struct stat st;
	int s, rc;

	if (fstatat(dfd, "sock", &st, AT_SYMLINK_NOFOLLOW) ||
	    !S_ISSOCK(st.st_mode) || st.st_uid != geteuid())
		return 0;
	s = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return 0;
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/sock", dfd);
	rc = connect(s, (struct sockaddr *)&a, sizeof(a)) < 0 &&
	     errno == ECONNREFUSED;
	close(s);
	return rc;
}

int bt_ringdir_sweep(const char *parent)
{
	size_t plen = strlen(BT_RINGDIR_PREFIX);
	int pfd = open(parent, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
	DIR *d;
	struct dirent *de;
	int removed = 0;

	if (pfd < 0)
		return 0;
	fd = dup(pfd);
	d = fd >= 0 ? fdopendir(fd) : NULL;
	if (!d) {
		if (fd >= 0)
			close(fd);
		close(pfd);
		return 0;
	}
	while ((de = readdir(d))) {
		struct stat st;
		int dfd;

		if (strncmp(de->d_name, BT_RINGDIR_PREFIX, plen) ||
		    strlen(de->d_name) != plen + 6 ||
		    fstatat(pfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
		    (st.st_mode & 07777) != 0700)
			continue;
		dfd = bt_ringdir_open(pfd, de->d_name, st.st_dev, st.st_ino);
		if (dfd < 0)
			continue;
		if (bt_ringdir_dead(dfd)) {
			bt_ringdir_clear(dfd);
			if (!bt_ringdir_rmdir(pfd, de->d_name, dfd))
				removed++;
		}
		close(dfd);
	}
	closedir(d);
	close(pfd);
	return removed;
}
