/* SPDX-License-Identifier: MIT */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int bt_error(struct btrace_error *err, int code, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return code;
	err->code = code;
	err->hint[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(err->msg, sizeof(err->msg), fmt, ap);
	va_end(ap);
	return code;
}

int bt_hint(struct btrace_error *err, const char *fmt, ...)
{
	va_list ap;

	if (!err)
		return 0;
	va_start(ap, fmt);
	vsnprintf(err->hint, sizeof(err->hint), fmt, ap);
	va_end(ap);
	return err->code;
}

void bt_error_clear(struct btrace_error *err)
{
	if (err) {
		err->code = 0;
		err->msg[0] = '\0';
		err->hint[0] = '\0';
	}
}

int bt_grow(void **arr, size_t *cap, size_t n, size_t size)
{
	size_t ncap;
	void *p;

	if (n < *cap)
		return 0;
	ncap = *cap ? *cap : 8;
	while (ncap <= n) {
		if (ncap > SIZE_MAX / 2)
			return -ENOMEM;
		ncap *= 2;
	}
	if (ncap > SIZE_MAX / size)
		return -ENOMEM;
	p = realloc(*arr, ncap * size);
	if (!p)
		return -ENOMEM;
	*arr = p;
	*cap = ncap;
	return 0;
}

int bt_read_file(const char *path, char **out, size_t *len, size_t max)
{
	size_t cap = 4096, n = 0;
	char *buf;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(cap + 1);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb;

			if (cap >= max) {
				free(buf);
				close(fd);
				return -EFBIG;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb) {
				free(buf);
				close(fd);
				return -ENOMEM;
			}
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0) {
			int e = errno;

			if (e == EINTR)
				continue;
			free(buf);
			close(fd);
			return -e;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*out = buf;
	if (len)
		*len = n;
	return 0;
}

const char *bt_fmt_size(char *buf, size_t len, uint64_t bytes)
{
	static const char *units[] = { "B", "KiB", "MiB", "GiB", "TiB" };
	double v = (double)bytes;
	unsigned u = 0;

	while (v >= 1024 && u + 1 < BT_ARRAY_SIZE(units)) {
		v /= 1024;
		u++;
	}
	if (u == 0)
		snprintf(buf, len, "%llu B", (unsigned long long)bytes);
	else
		snprintf(buf, len, "%.1f %s", v, units[u]);
	return buf;
}

int bt_write_full(int fd, const void *buf, size_t len, int64_t off)
{
	const char *p = buf;

	while (len) {
		ssize_t w = off < 0 ? write(fd, p, len) :
				      pwrite(fd, p, len, (off_t)off);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -errno;
		if (w == 0)
			return -EIO;   /* no progress and no reason given */
		p += w;
		len -= (size_t)w;
		if (off >= 0)
			off += w;
	}
	return 0;
}

int bt_tmp_create(const char *path, char *tmp, size_t len, unsigned mode)
{
	int n = snprintf(tmp, len, "%s.XXXXXX", path), fd;

	if (n < 0 || (size_t)n >= len)
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);   /* O_EXCL, 0600, random name */
	if (fd < 0)
		return -errno;
	if ((mode & 07777) != 0600 && fchmod(fd, (mode_t)(mode & 0777)) < 0) {
		int e = -errno;

		close(fd);
		unlink(tmp);
		return e;
	}
	return fd;
}

int bt_tmp_commit(int fd, const char *tmp, const char *path, int rc)
{
	if (!rc && fsync(fd) < 0)
		rc = -errno;
	if (close(fd) < 0 && !rc)
		rc = -errno;
	if (!rc && rename(tmp, path) < 0)
		rc = -errno;
	if (rc)
		unlink(tmp);
	return rc;
}

void bt_strip_controls(char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s == 0x7f)
			*s = '?';
}

/* Per thread: a recording forks, never starts threads that talk. */
static __thread struct bt_log cur_log;

struct bt_log bt_log_set(btrace_log_fn fn, void *ctx)
{
	struct bt_log prev = cur_log;

	cur_log.fn = fn;
	cur_log.ctx = ctx;
	return prev;
}

void bt_log_restore(struct bt_log prev)
{
	cur_log = prev;
}

void bt_msg(const char *fmt, ...)
{
	char buf[4096];
	const char *tag;
	va_list ap;

	if (!cur_log.fn)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	tag = strstr(buf, ": ");
	cur_log.fn(tag && !strncmp(tag + 2, "warning:", 8) ? BTRACE_LOG_WARN :
		   BTRACE_LOG_INFO, buf, cur_log.ctx);
}

/* The sz a caller's struct starts with (@kind: "result", "options"). */
static int user_sz(const void *user, const char *what, const char *kind,
		   size_t *sz, struct btrace_error *err)
{
	if (!user)
		return bt_error(err, -EINVAL, "%s: check failed: no %s given",
				what, kind);
	memcpy(sz, user, sizeof(*sz));
	if (*sz < sizeof(size_t))
		return bt_error(err, -EINVAL, "%s: check failed: sz is %zu, "
				"below sizeof(size_t)", what, *sz);
	return 0;
}

int bt_result_size(const void *user, size_t known, const char *what,
		   size_t *n, struct btrace_error *err)
{
	size_t sz = 0;
	int r = user_sz(user, what, "result", &sz, err);

	if (r < 0)
		return r;
	*n = sz < known ? sz : known;
	return 0;
}

int bt_opts_copy(void *out, size_t known, const void *user, const char *what,
		 struct btrace_error *err)
{
	const uint8_t *p = user;
	size_t sz = 0;
	int r = user_sz(user, what, "options", &sz, err);

	if (r < 0)
		return r;
	for (size_t i = known; i < sz; i++)
		if (p[i]) {
			bt_error(err, -EINVAL, "%s: check failed: unknown "
				 "options set (sz %zu, byte %zu is not zero; "
				 "this library knows %zu bytes)", what, sz, i,
				 known);
			return bt_hint(err, "build against this btrace's "
				       "headers, or leave the newer options "
				       "zero");
		}
	memset(out, 0, known);
	memcpy(out, user, sz < known ? sz : known);
	memcpy(out, &known, sizeof(known));
	return 0;
}

int bt_open_regular(const char *path)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), e;

	if (fd < 0)
		return -1;
	e = fstat(fd, &st) ? errno : !S_ISREG(st.st_mode) ? EINVAL : 0;
	if (e) {
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

int bt_time_tsc_parse(const char *v, uint64_t *zero, uint32_t *mult,
		      uint16_t *shift)
{
	unsigned long long z, m;
	unsigned int sh;
	int end = 0;

	if (!v || sscanf(v, "zero=%llu mult=%llu shift=%u%n", &z, &m, &sh,
			 &end) != 3 || v[end] || !m || m > UINT32_MAX ||
	    sh > 63)
		return -1;
	*zero = z;
	*mult = (uint32_t)m;
	*shift = (uint16_t)sh;
	return 0;
}
