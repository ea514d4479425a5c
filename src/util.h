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
 * Write all @len bytes of @buf to @fd, at @off (pwrite) or, when @off is
 * negative, at the file position; a short write is followed by the rest, so
 * a full disk fails with the next write's ENOSPC, never with whatever errno
 * held before.  Returns 0 or -errno.
 */
int bt_write_full(int fd, const void *buf, size_t len, int64_t off);

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
 * A message of the library ("btrace record: ..."): given to the log
 * callback of the running operation (bt_log_set()), one message per call,
 * unwrapped; nothing happens when there is none.  A message whose text has
 * "warning:" after its tag is a BTRACE_LOG_WARN, the others BTRACE_LOG_INFO.
 */
void bt_msg(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * The log callback bt_msg() calls in this thread, set by each public entry
 * point from its options for the time of the call: bt_log_set() returns
 * the previous one, which bt_log_restore() puts back.
 */
struct bt_log {
	btrace_log_fn fn;
	void *ctx;
};
struct bt_log bt_log_set(btrace_log_fn fn, void *ctx);
void bt_log_restore(struct bt_log prev);

/*
 * The options policy of btrace.h, for every `*_opts` entry point: check
 * the caller's struct @user (its first member the size_t sz) against the
 * library's @known bytes, and copy it into @out (@known bytes, zeroed past
 * the caller's sz, out's sz then set to @known).  @what names the struct
 * in the message ("record options").  Returns 0, or -EINVAL with @err
 * filled: NULL, an sz below sizeof(size_t), or unknown non-zero bytes past
 * @known (a caller built against a newer btrace that set a field this
 * library does not have).
 */
int bt_opts_copy(void *out, size_t known, const void *user, const char *what,
		 struct btrace_error *err);
/*
 * The same policy for a result struct the caller allocated: *@n gets the
 * bytes to write into @user (its sz, at most @known).  Returns 0, or
 * -EINVAL with @err filled for NULL or an sz below sizeof(size_t).
 */
int bt_result_size(const void *user, size_t known, const char *what,
		   size_t *n, struct btrace_error *err);

/*
 * Open @path read-only if it is a regular file, else fail with EINVAL
 * without blocking or reading: a FIFO (whose open would wait for a
 * writer), a device such as /dev/zero or a socket that another user put at
 * a path btrace reads (a module's recorded path, a mapped file) is never
 * read.  Returns the descriptor (O_CLOEXEC) or -1 with errno set.
 */
int bt_open_regular(const char *path);

/* A snapshot's TSC conversion, metadata time.tsc "zero=Z mult=M shift=S"
 * (docs/format.md, "Time"): 0, or -1 when @v is NULL or not that with
 * 0 < M < 2^32 and S < 64. */
int bt_time_tsc_parse(const char *v, uint64_t *zero, uint32_t *mult,
		      uint16_t *shift);

#endif /* BT_UTIL_H */
