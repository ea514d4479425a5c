// SPDX-License-Identifier: MIT
/*
 * A perf build-id cache next to the exported perf.data, in perf's layout
 * (tools/perf/util/build-id.c, as perf 6.1's `perf buildid-cache -a`
 * writes it):
 *
 *	DIR/<path>/<build id>/elf                       the file
 *	DIR/.build-id/<xx>/<rest> -> ../../<path>/<build id>
 *
 * "<path>" is the mapped file's absolute path without its leading '/', or
 * "[vdso]".  perf is pointed at it with `perf --buildid-dir DIR ...`.
 * Files are written sparse (blocks of zeros are holes) and atomically.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-buildid.h"
#include "export-internal.h"
#include "util.h"

struct bt_cache {
	char dir[PATH_MAX];
	char **made;            /* what this export created, in order */
	size_t nmade, cap;
};

/* snprintf that reports truncation as -ENAMETOOLONG. */
static int pathf(char *buf, size_t len, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
static int pathf(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, len, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

/* Remember @path as created by this export (removed by bt_cache_abort). */
static void made(struct bt_cache *c, const char *path)
{
	char *d;

	if (!c || bt_grow((void **)&c->made, &c->cap, c->nmade + 1,
			  sizeof(*c->made)))
		return;
	d = strdup(path);
	if (d)
		c->made[c->nmade++] = d;
}

/* A directory of ours that no one else may write: not a link, owned by our
 * effective uid, not group/other writable. */
static int own_dir(const char *path)
{
	struct stat st;

	if (lstat(path, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode))
		return S_ISLNK(st.st_mode) ? -ELOOP : -ENOTDIR;
	if (st.st_uid != geteuid() || (st.st_mode & 022))
		return -EPERM;
	return 0;
}

/*
 * mkdir -p @path (0700: the cache holds the program's code, the owner's
 * alone).  Every component that ends after offset @strict
 * must be a directory of ours (own_dir): a link or a directory another
 * user planted there is refused, never followed.  Directories created are
 * recorded in @c.
 */
static int mkdir_p(struct bt_cache *c, char *path, size_t strict)
{
	size_t len = strlen(path);

	for (size_t i = 1; i <= len; i++) {
		char save = path[i];
		int rc = 0;

		if (save != '/' && save != 0)
			continue;
		if (path[i - 1] == '/')
			continue;
		path[i] = 0;
		if (mkdir(path, 0700) == 0)
			made(c, path);
		else if (errno != EEXIST)
			rc = -errno;
		if (!rc && i > strict)
			rc = own_dir(path);
		path[i] = save;
		if (rc)
			return rc;
	}
	return 0;
}

int bt_cache_open(const char *dir, struct bt_cache **out,
		  struct btrace_error *err)
{
	struct bt_cache *c;
	char tmp[PATH_MAX];
	int rc;

	*out = NULL;
	if (strlen(dir) + 1 > sizeof(tmp))
		return bt_error(err, -ENAMETOOLONG,
				"%s: create build-id cache failed: path too long", dir);
	c = calloc(1, sizeof(*c));
	if (!c)
		return bt_error(err, -ENOMEM, "%s: create build-id cache failed: %s",
				dir, btrace_strerror(-ENOMEM));
	rc = pathf(tmp, sizeof(tmp), "%s", dir);
	if (!rc) {
		/* The cache directory (and its parent, "<out>.symfs", in the
		 * default layout "<out>.symfs/.debug") must be ours: in a
		 * shared directory another user may have planted them. */
		char *last = strrchr(tmp, '/');
		size_t strict = last && last != tmp ? (size_t)(last - tmp) : 0;

		if (last && !strcmp(last, "/.debug")) {
			char *up;

			*last = 0;
			up = strrchr(tmp, '/');
			strict = up && up != tmp ? (size_t)(up - tmp) : 0;
			*last = '/';
		}
		rc = mkdir_p(c, tmp, strict);
	}
	if (rc) {
		bt_cache_abort(c);
		bt_error(err, rc, "%s: create build-id cache failed: %s", dir,
			 rc == -EPERM || rc == -ELOOP || rc == -ENOTDIR ?
			 "a link, or a directory another user owns or may write, is in the way" :
			 btrace_strerror(rc));
		return rc == -EPERM || rc == -ELOOP || rc == -ENOTDIR ?
		       bt_hint(err, "remove it, or export to a directory of your own") : rc;
	}
	if (!realpath(dir, c->dir))
		pathf(c->dir, sizeof(c->dir), "%s", dir);
	*out = c;
	return 0;
}

void bt_cache_close(struct bt_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->nmade; i++)
		free(c->made[i]);
	free(c->made);
	free(c);
}

void bt_cache_abort(struct bt_cache *c)
{
	if (!c)
		return;
	/* in reverse: files and links before their directories */
	for (size_t i = c->nmade; i-- > 0;)
		if (unlink(c->made[i]) && errno == EISDIR)
			rmdir(c->made[i]);
	bt_cache_close(c);
}

const char *bt_cache_dir(const struct bt_cache *c)
{
	return c->dir;
}

static int all_zero(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (p[i])
			return 0;
	return 1;
}

/* Does [@off, @off + @n) meet one of the pieces before @i? */
static int overlaps(const struct bt_piece *pc, size_t i, uint64_t off,
		    uint64_t n)
{
	for (size_t j = 0; j < i; j++)
		if (off < pc[j].off + pc[j].size && pc[j].off < off + n)
			return 1;
	return 0;
}

/* Write the pieces of a @size-byte file to @path through a temporary file:
 * holes between the pieces and for blocks of zeros in them. */
static int write_pieces(struct bt_cache *c, const char *path,
			const struct bt_piece *pc, size_t npc, uint64_t size,
			mode_t mode)
{
	char tmp[PATH_MAX + 16];
	int fd, rc = 0;

	/* an unpredictable name, created O_EXCL: nothing planted is followed */
	fd = bt_tmp_create(path, tmp, sizeof(tmp), mode);
	if (fd < 0)
		return fd;
	for (size_t i = 0; i < npc && !rc; i++) {
		const uint8_t *data = pc[i].data;
		uint64_t off = 0, n = pc[i].size;

		while (off < n && !rc) {
			size_t blk = n - off < 4096 ? (size_t)(n - off) : 4096;

			if (!all_zero(data + off, blk)) {
				rc = bt_write_full(fd, data + off, blk,
						   (int64_t)(pc[i].off + off));
			} else if (overlaps(pc, i, pc[i].off + off, blk)) {
				/* zeros over what an earlier piece wrote */
				static const uint8_t z[4096];

				rc = bt_write_full(fd, z, blk,
						   (int64_t)(pc[i].off + off));
			}
			off += blk;
		}
	}
	if (!rc && ftruncate(fd, (off_t)size))
		rc = -errno;
	if (close(fd) && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path))
		rc = -errno;
	if (rc)
		unlink(tmp);
	else
		made(c, path);
	return rc;
}

/* Write @data to @path through a temporary file, leaving holes for zeros. */
static int write_sparse(struct bt_cache *c, const char *path,
			const uint8_t *data, uint64_t n, mode_t mode)
{
	struct bt_piece pc = { 0, n, data };

	return write_pieces(c, path, &pc, 1, n, mode);
}

static int read_whole(const char *path, uint8_t **out, uint64_t *n)
{
	struct stat st;
	uint8_t *buf;
	uint64_t got = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), rc = 0;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		return -EINVAL;
	}
	buf = malloc(st.st_size ? (size_t)st.st_size : 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	while (got < (uint64_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			rc = r < 0 ? -errno : -EIO;
			break;
		}
		got += (uint64_t)r;
	}
	close(fd);
	if (rc) {
		free(buf);
		return rc;
	}
	*out = buf;
	*n = got;
	return 0;
}

static void hex(char *s, const uint8_t *b, uint32_t n)
{
	static const char digits[] = "0123456789abcdef";

	for (uint32_t i = 0; i < n; i++) {
		s[2 * i] = digits[b[i] >> 4];
		s[2 * i + 1] = digits[b[i] & 15];
	}
	s[2 * n] = 0;
}

int bt_cache_add(struct bt_cache *c, const struct btrace_snapshot *snap,
		 const char *path, const uint8_t *bid, uint32_t bid_size,
		 int use_disk, int *rebuilt, struct btrace_error *err)
{
	char sbid[2 * BTRACE_BUILD_ID_MAX + 1], dir[PATH_MAX], file[PATH_MAX + 8];
	const char *rel = path;
	struct bt_elf_image im = { 0 };
	uint8_t *data = NULL;
	uint64_t n = 0;
	int rc;

	*rebuilt = 0;
	if (!bid_size || bid_size > BTRACE_BUILD_ID_MAX)
		return 1;
	while (*rel == '/')
		rel++;
	if (!*rel || strstr(rel, ".."))
		return bt_error(err, -EINVAL,
				"%s: add to build-id cache failed: not a usable path",
				path);
	hex(sbid, bid, bid_size);
	if (use_disk && path[0] == '/') {
		uint8_t disk[BTRACE_BUILD_ID_MAX];
		int k = bt_elf_build_id(path, disk, sizeof(disk));

		if (k == (int)bid_size && !memcmp(disk, bid, bid_size) &&
		    read_whole(path, &data, &n))
			data = NULL;
	}
	if (!data) {
		rc = bt_export_build_elf(snap, bid, bid_size, &im);
		if (rc == 1)
			return 1;
		if (rc < 0)
			return bt_error(err, rc,
					"%s (build ID %s): rebuild ELF failed: %s",
					path, sbid, btrace_strerror(rc));
		*rebuilt = 1;
	}
	if (pathf(dir, sizeof(dir), "%s/%s/%s", c->dir, rel, sbid) ||
	    pathf(file, sizeof(file), "%s/elf", dir)) {
		free(data);
		bt_export_elf_free(&im);
		return bt_error(err, -ENAMETOOLONG,
				"%s: add to build-id cache failed: path too long",
				path);
	}
	rc = mkdir_p(c, dir, strlen(c->dir));
	if (!rc && data)
		rc = write_sparse(c, file, data, n, 0600);
	else if (!rc)
		rc = write_pieces(c, file, im.pieces, im.npieces, im.size, 0600);
	free(data);
	bt_export_elf_free(&im);
	if (rc)
		return bt_error(err, rc,
				"%s: write build-id cache file failed: %s", dir,
				btrace_strerror(rc));

	return bt_cache_link(c, sbid, rel, err);
}

int bt_cache_link(struct bt_cache *c, const char *sbid, const char *rel,
		  struct btrace_error *err)
{
	char link[PATH_MAX], target[PATH_MAX];
	int rc;

	rc = pathf(link, sizeof(link), "%s/.build-id/%.2s", c->dir, sbid);
	if (!rc)
		rc = mkdir_p(c, link, strlen(c->dir));
	if (!rc)
		rc = pathf(link, sizeof(link), "%s/.build-id/%.2s/%s", c->dir,
			   sbid, sbid + 2);
	if (!rc)
		rc = pathf(target, sizeof(target), "../../%s/%s", rel, sbid);
	if (!rc) {
		if (unlink(link) && errno != ENOENT)
			rc = -errno;
		else if (symlink(target, link))
			rc = -errno;
		else
			made(c, link);
	}
	if (rc)
		return bt_error(err, rc,
				"%s: create build-id link failed: %s", link,
				btrace_strerror(rc));
	return 0;
}

int bt_cache_add_raw(struct bt_cache *c, const char *name, const uint8_t *data,
		     uint64_t n, char *abs, size_t len, struct btrace_error *err)
{
	char dir[PATH_MAX];
	char *slash;
	int rc;

	if (pathf(abs, len, "%s/%s", c->dir, name) ||
	    pathf(dir, sizeof(dir), "%s", abs))
		return bt_error(err, -ENAMETOOLONG,
				"%s: write code file failed: path too long", name);
	slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	rc = mkdir_p(c, dir, strlen(c->dir));
	if (!rc)
		rc = write_sparse(c, abs, data, n, 0600);
	if (rc)
		return bt_error(err, rc, "%s: write code file failed: %s", abs,
				btrace_strerror(rc));
	return 0;
}
