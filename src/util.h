/* SPDX-License-Identifier: MIT */
/* Internal helpers shared by every module of libbtrace. */
#ifndef BT_UTIL_H
#define BT_UTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <btrace/btrace.h>

#define BT_ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/*
 * Fill @err (may be NULL) and return @code (negative).  The message is
 * "<object>: <operation> failed: <reason>" by convention; callers format it.
 */
int bt_error(struct btrace_error *err, int code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Set the hint of an error already filled in; returns err->code. */
int bt_hint(struct btrace_error *err, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
void bt_error_clear(struct btrace_error *err);

/* Growable array *arr of elements of @size bytes and capacity *cap: make
 * room for the element at index @n (capacity > @n), doubling as needed. */
int bt_grow(void **arr, size_t *cap, size_t n, size_t size);

/* Smallest power of two >= @n (1 for 0); 0 on overflow. */
static inline uint64_t bt_pow2_roundup(uint64_t n)
{
	uint64_t p = 1;

	while (p < n) {
		if (p > UINT64_MAX / 2)
			return 0;
		p <<= 1;
	}
	return p;
}

/* Little-endian access. */
static inline uint16_t bt_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (p[1] << 8));
}
static inline uint32_t bt_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) |
	       ((uint32_t)p[3] << 24);
}
static inline uint64_t bt_le64(const uint8_t *p)
{
	return (uint64_t)bt_le32(p) | ((uint64_t)bt_le32(p + 4) << 32);
}
static inline void bt_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}
static inline void bt_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}
static inline void bt_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* Read a whole small file (procfs/sysfs); NUL-terminated, *len excludes it. */
int bt_read_file(const char *path, char **out, size_t *len, size_t max);

/* Human-readable size ("4.0 MiB") into @buf. */
const char *bt_fmt_size(char *buf, size_t len, uint64_t bytes);

/*
 * A new file for @path, under an unpredictable name in the same directory
 * (@path.XXXXXX, created O_EXCL with @mode; never through a link).  Returns
 * the descriptor and the name in @tmp, or -errno.
 */
int bt_tmp_create(const char *path, char *tmp, size_t len, unsigned mode);

/*
 * Finish a file of bt_tmp_create(): when @rc is 0, fsync, close and rename
 * it onto @path (a link at @path is replaced, never followed); else (or on
 * failure) close and remove it.  Returns 0 or -errno (@rc when non-zero).
 */
int bt_tmp_commit(int fd, const char *tmp, const char *path, int rc);

/* Replace control characters (C0, DEL) of @s in place by '?' (for text a
 * peer sent that ends up in a message). */
void bt_strip_controls(char *s);
/*
 * A message of btrace's on stderr ("btrace record: ..."), wrapped at word
 * boundaries to fit 80 columns; continuation lines are indented by two
 * spaces.  A word longer than a line (a path) is kept whole.
 */
void bt_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * Open @path read-only if it is a regular file, else fail with EINVAL
 * without blocking or reading: a FIFO (whose open would wait for a
 * writer), a device such as /dev/zero or a socket that another user put at
 * a path btrace reads (a module's recorded path, a mapped file) is never
 * read.  Returns the descriptor (O_CLOEXEC) or -1 with errno set.
 */
int bt_open_regular(const char *path);

#endif /* BT_UTIL_H */
