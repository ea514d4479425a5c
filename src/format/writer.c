/* SPDX-License-Identifier: MIT */
/*
 * Streaming, atomic snapshot writer.  Sections are written as they come:
 * a placeholder header, the payload (zstd-compressed on the fly or raw), then
 * the header is rewritten with the sizes and checksums.  Everything goes to a
 * file with no name (O_TMPFILE) in the destination directory, which only
 * btrace_writer_commit() links under the final name, complete: a writer
 * killed half-way (SIGKILL, a power cut) leaves nothing behind.  Where the
 * file system has no O_TMPFILE, a temporary NAME.tmp.XXXXXX is renamed
 * instead.
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <zstd.h>

#include <btrace/snapshot.h>

#include "format.h"
#include "snapbuild.h"
#include "util.h"

#define ZSTD_LEVEL 3

struct bt_recbuf {
	uint8_t *data;
	size_t len, cap;
	size_t count;
};

struct btrace_writer {
	int fd;
	char *path;            /* final name */
	char *tmp;             /* temporary name; the final one when anon */
	int anon;              /* O_TMPFILE: no name until the commit */
	unsigned flags;
	uint64_t off;          /* current end of file */
	uint32_t nsections;
	int failed;

	/* The section being written. */
	uint64_t sec_off;
	uint32_t sec_type, sec_flags, sec_crc;
	uint64_t sec_stored, sec_raw;
	ZSTD_CCtx *zc;
	uint8_t *zbuf;
	size_t zbuf_size;

	/* Small records kept until commit. */
	struct bt_recbuf tasks, maps, meta;
	int has_signal;
};

static int wr_fail(struct btrace_writer *w, struct btrace_error *err,
		   int code, const char *op)
{
	w->failed = 1;
	bt_error(err, code, "%s: %s failed: %s", w->tmp, op,
		 btrace_strerror(code));
	if (code == -ENOSPC || code == -EDQUOT)
		bt_hint(err, "free space on the file system of %s, or write "
			"the snapshot elsewhere with -o", w->path);
	return code;
}

static int write_all(struct btrace_writer *w, const void *buf, size_t len,
		     struct btrace_error *err)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t r = write(w->fd, p, len);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return wr_fail(w, err, -errno, "write");
		}
		p += r;
		len -= (size_t)r;
		w->off += (uint64_t)r;
	}
	return 0;
}

static int pwrite_all(struct btrace_writer *w, const void *buf, size_t len,
		      uint64_t off, struct btrace_error *err)
{
	const uint8_t *p = buf;

	while (len) {
		ssize_t r = pwrite(w->fd, p, len, (off_t)off);

		if (r < 0) {
			if (errno == EINTR)
				continue;
			return wr_fail(w, err, -errno, "write");
		}
		p += r;
		len -= (size_t)r;
		off += (uint64_t)r;
	}
	return 0;
}

static void encode_section_header(uint8_t *h, uint32_t type, uint32_t flags,
				  uint32_t crc, uint64_t stored, uint64_t raw)
{
	memset(h, 0, BT_SECTION_HEADER_SIZE);
	bt_put32(h, BT_SECTION_MAGIC);
	bt_put32(h + 4, type);
	bt_put32(h + 8, flags);
	bt_put32(h + 12, crc);
	bt_put64(h + 16, stored);
	bt_put64(h + 24, raw);
	bt_put32(h + 36, bt_crc32c(0, h, 36));
}

static int sec_begin(struct btrace_writer *w, uint32_t type, int compress,
		     struct btrace_error *err)
{
	uint8_t h[BT_SECTION_HEADER_SIZE];

	if (w->failed)
		return bt_error(err, -EIO, "%s: write failed earlier", w->tmp);
	w->sec_off = w->off;
	w->sec_type = type;
	w->sec_flags = 0;
	w->sec_crc = 0;
	w->sec_stored = 0;
	w->sec_raw = 0;
	if (compress && !(w->flags & BTRACE_WRITE_NO_COMPRESS)) {
		if (!w->zc) {
			w->zc = ZSTD_createCCtx();
			w->zbuf_size = ZSTD_CStreamOutSize();
			w->zbuf = malloc(w->zbuf_size);
			if (!w->zc || !w->zbuf)
				return wr_fail(w, err, -ENOMEM, "compress");
		}
		ZSTD_CCtx_reset(w->zc, ZSTD_reset_session_only);
		ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel,
				       ZSTD_LEVEL);
		ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 0);
		w->sec_flags |= BT_SECF_ZSTD;
	}
	memset(h, 0, sizeof(h));
	return write_all(w, h, sizeof(h), err);
}

static int sec_emit(struct btrace_writer *w, const void *buf, size_t len,
		    struct btrace_error *err)
{
	int ret = write_all(w, buf, len, err);

	if (ret)
		return ret;
	w->sec_crc = bt_crc32c(w->sec_crc, buf, len);
	w->sec_stored += len;
	return 0;
}

static int sec_zstd(struct btrace_writer *w, const void *buf, size_t len,
		    ZSTD_EndDirective mode, struct btrace_error *err)
{
	ZSTD_inBuffer in = { buf, len, 0 };

	for (;;) {
		ZSTD_outBuffer out = { w->zbuf, w->zbuf_size, 0 };
		size_t rem = ZSTD_compressStream2(w->zc, &out, &in, mode);
		int ret;

		if (ZSTD_isError(rem)) {
			bt_error(err, -EIO, "%s: compress failed: %s", w->tmp,
				 ZSTD_getErrorName(rem));
			w->failed = 1;
			return -EIO;
		}
		ret = sec_emit(w, w->zbuf, out.pos, err);
		if (ret)
			return ret;
		if (mode == ZSTD_e_end ? rem == 0 : in.pos == in.size)
			return 0;
	}
}

static int sec_write(struct btrace_writer *w, const void *buf, size_t len,
		     struct btrace_error *err)
{
	w->sec_raw += len;
	if (w->sec_flags & BT_SECF_ZSTD)
		return sec_zstd(w, buf, len, ZSTD_e_continue, err);
	return sec_emit(w, buf, len, err);
}

static int sec_end(struct btrace_writer *w, struct btrace_error *err)
{
	static const uint8_t zeros[8];
	uint8_t h[BT_SECTION_HEADER_SIZE];
	int ret;

	if (w->sec_flags & BT_SECF_ZSTD) {
		ret = sec_zstd(w, NULL, 0, ZSTD_e_end, err);
		if (ret)
			return ret;
	}
	if (w->off % 8) {
		ret = write_all(w, zeros, 8 - w->off % 8, err);
		if (ret)
			return ret;
	}
	encode_section_header(h, w->sec_type, w->sec_flags, w->sec_crc,
			      w->sec_stored, w->sec_raw);
	ret = pwrite_all(w, h, sizeof(h), w->sec_off, err);
	if (!ret)
		w->nsections++;
	return ret;
}

/* --- fields (tag, reserved, u64 length, value padded to 8) --- */

static void field_header(uint8_t *h, uint32_t tag, uint64_t len)
{
	bt_put32(h, tag);
	bt_put32(h + 4, 0);
	bt_put64(h + 8, len);
}

static int sec_field(struct btrace_writer *w, uint32_t tag, const void *val,
		     uint64_t len, struct btrace_error *err)
{
	static const uint8_t zeros[8];
	uint8_t h[BT_FIELD_HEADER_SIZE];
	int ret;

	field_header(h, tag, len);
	ret = sec_write(w, h, sizeof(h), err);
	if (!ret && len)
		ret = sec_write(w, val, len, err);
	if (!ret && len % 8)
		ret = sec_write(w, zeros, 8 - len % 8, err);
	return ret;
}

static int sec_u64(struct btrace_writer *w, uint32_t tag, uint64_t v,
		   struct btrace_error *err)
{
	uint8_t b[8];

	bt_put64(b, v);
	return sec_field(w, tag, b, 8, err);
}

static int sec_str(struct btrace_writer *w, uint32_t tag, const char *s,
		   struct btrace_error *err)
{
	if (!s)
		return 0;
	return sec_field(w, tag, s, strlen(s), err);
}

/* Record buffers for list sections. */
static int rb_reserve(struct bt_recbuf *rb, size_t n)
{
	if (rb->len + n <= rb->cap)
		return 0;
	size_t cap = rb->cap ? rb->cap : 1024;
	while (cap < rb->len + n)
		cap *= 2;
	uint8_t *p = realloc(rb->data, cap);
	if (!p)
		return -ENOMEM;
	rb->data = p;
	rb->cap = cap;
	return 0;
}

static int rb_field(struct bt_recbuf *rb, uint32_t tag, const void *val,
		    uint64_t len)
{
	size_t padded = (size_t)((len + 7) & ~7ull);

	if (rb_reserve(rb, BT_FIELD_HEADER_SIZE + padded))
		return -ENOMEM;
	field_header(rb->data + rb->len, tag, len);
	rb->len += BT_FIELD_HEADER_SIZE;
	if (len)
		memcpy(rb->data + rb->len, val, (size_t)len);
	memset(rb->data + rb->len + len, 0, padded - (size_t)len);
	rb->len += padded;
	return 0;
}

static int rb_u64(struct bt_recbuf *rb, uint32_t tag, uint64_t v)
{
	uint8_t b[8];

	bt_put64(b, v);
	return rb_field(rb, tag, b, 8);
}

static int rb_str(struct bt_recbuf *rb, uint32_t tag, const char *s)
{
	return s ? rb_field(rb, tag, s, strlen(s)) : 0;
}

/* Start a record: returns the offset of its header, patched by rb_close. */
static int rb_open(struct bt_recbuf *rb, size_t *at)
{
	if (rb_reserve(rb, BT_FIELD_HEADER_SIZE))
		return -ENOMEM;
	*at = rb->len;
	rb->len += BT_FIELD_HEADER_SIZE;
	return 0;
}

static void rb_close(struct bt_recbuf *rb, size_t at)
{
	field_header(rb->data + at, BT_F_RECORD,
		     rb->len - at - BT_FIELD_HEADER_SIZE);
	rb->count++;
}

/* An unnamed file (O_TMPFILE, mode 0600) in @path's directory, or -1
 * (the file system or kernel has none: the caller uses a temporary
 * name). */
static int open_anon(const char *path)
{
#ifdef O_TMPFILE
	char *copy = strdup(path);
	int fd;

	if (!copy)
		return -1;
	fd = open(dirname(copy), O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
	free(copy);
	return fd;
#else
	(void)path;
	return -1;
#endif
}

/* Give unnamed file @fd the name @path, never over a file there
 * (-EEXIST).  Returns 0 or -errno. */
static int link_noreplace(int fd, const char *path)
{
	char proc[64];

	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, path, AT_SYMLINK_FOLLOW) == 0)
		return 0;
	if (errno == ENOENT && linkat(fd, "", AT_FDCWD, path,
				      AT_EMPTY_PATH) == 0)
		return 0;   /* no /proc (AT_EMPTY_PATH needs privilege) */
	return -errno;
}

/* Give unnamed file @fd the name @path over a file there (as rename()
 * does): linked under a random temporary name next to it, then renamed.
 * Returns 0 or -errno. */
static int link_over(int fd, const char *path)
{
	char *tmp;
	size_t n = strlen(path) + 32;
	int ret = link_noreplace(fd, path);

	if (ret != -EEXIST)
		return ret;
	tmp = malloc(n);
	if (!tmp)
		return -ENOMEM;
	for (int i = 0; i < 100; i++) {
		int tfd;

		/* a fresh random name each time: mkostemp() makes one, and
		 * the empty file it creates is removed again */
		snprintf(tmp, n, "%s.tmp.XXXXXX", path);
		tfd = mkostemp(tmp, O_CLOEXEC);
		if (tfd < 0) {
			ret = -errno;
			break;
		}
		close(tfd);
		unlink(tmp);
		ret = link_noreplace(fd, tmp);
		if (ret == 0) {
			ret = rename(tmp, path) < 0 ? -errno : 0;
			if (ret)
				unlink(tmp);
			break;
		}
		if (ret != -EEXIST)
			break;
	}
	free(tmp);
	return ret;
}

/* --- public API --- */

int btrace_writer_open(const char *path, unsigned flags,
		       struct btrace_writer **out, struct btrace_error *err)
{
	uint8_t h[BT_FILE_HEADER_SIZE];
	struct btrace_writer *w;
	size_t n;
	int ret;

	if (!path || !*path || !out)
		return bt_error(err, -EINVAL, "snapshot writer: open failed: "
				"no file name given");
	w = calloc(1, sizeof(*w));
	if (!w)
		return bt_error(err, -ENOMEM, "%s: open failed: out of memory",
				path);
	w->fd = -1;
	w->flags = flags;
	n = strlen(path);
	w->path = strdup(path);
	w->tmp = malloc(n + 16);
	if (!w->path || !w->tmp) {
		btrace_writer_free(w);
		return bt_error(err, -ENOMEM, "%s: open failed: out of memory",
				path);
	}
	w->fd = open_anon(path);
	if (w->fd >= 0) {
		w->anon = 1;
		snprintf(w->tmp, n + 16, "%s", path);
	} else {
		snprintf(w->tmp, n + 16, "%s.tmp.XXXXXX", path);
		w->fd = mkostemp(w->tmp, O_CLOEXEC);
	}
	if (w->fd < 0) {
		ret = -errno;
		bt_error(err, ret, "%s: create failed: %s", w->tmp,
			 strerror(-ret));
		if (ret == -EACCES || ret == -EROFS)
			bt_hint(err, "write the snapshot to a writable "
				"directory with -o");
		w->tmp[0] = '\0';
		btrace_writer_free(w);
		return ret;
	}
	if (fchmod(w->fd, 0600) < 0) {
		ret = wr_fail(w, err, -errno, "chmod");
		btrace_writer_free(w);
		return ret;
	}

	memset(h, 0, sizeof(h));
	memcpy(h, BT_FILE_MAGIC, 8);
	bt_put16(h + 8, BTRACE_FORMAT_MAJOR);
	bt_put16(h + 10, BTRACE_FORMAT_MINOR);
	bt_put32(h + 12, BT_ENDIAN_MARKER);
	h[16] = 8;  /* word size of the traced program: x86-64 only */
	h[17] = 8;  /* pointer size */
	bt_put16(h + 18, BT_FILE_HEADER_SIZE);
	bt_put32(h + 20, 0);
	bt_put64(h + 24, (uint64_t)time(NULL));
	bt_put32(h + 60, bt_crc32c(0, h, 60));
	ret = write_all(w, h, sizeof(h), err);
	if (ret) {
		btrace_writer_free(w);
		return ret;
	}
	*out = w;
	return 0;
}

int btrace_writer_set_config(struct btrace_writer *w,
			     const struct btrace_config *c,
			     struct btrace_error *err)
{
	const struct { uint32_t tag; uint64_t v; } f[] = {
		{ BT_CF_BACKEND, c->backend },
		{ BT_CF_TRACE_KIND, c->trace_kind },
		{ BT_CF_CPU_VENDOR, c->cpu_vendor },
		{ BT_CF_CPU_FAMILY, c->cpu_family },
		{ BT_CF_CPU_MODEL, c->cpu_model },
		{ BT_CF_CPU_STEPPING, c->cpu_stepping },
		{ BT_CF_CPUID15_EAX, c->cpuid_0x15_eax },
		{ BT_CF_CPUID15_EBX, c->cpuid_0x15_ebx },
		{ BT_CF_NOM_FREQ, c->nom_freq },
		{ BT_CF_MTC_FREQ, c->mtc_freq },
		{ BT_CF_PMU_TYPE, c->pmu_type },
		{ BT_CF_PT_CONFIG, c->pt_config },
		{ BT_CF_TSC_BIT, c->tsc_bit },
		{ BT_CF_MTC_BIT, c->mtc_bit },
		{ BT_CF_CYC_BIT, c->cyc_bit },
		{ BT_CF_NORETCOMP_BIT, c->noretcomp_bit },
		{ BT_CF_BRANCH_BIT, c->branch_bit },
		{ BT_CF_PSB_PERIOD, c->psb_period },
		{ BT_CF_USER_ONLY, c->user_only },
		{ BT_CF_REQUESTED_SIZE, c->requested_size },
		{ BT_CF_PAD, c->pad },
		{ BT_CF_CRASH_MODE, c->crash_mode },
	};
	int ret;

	ret = sec_begin(w, BT_SEC_CONFIG, 0, err);
	for (size_t i = 0; !ret && i < BT_ARRAY_SIZE(f); i++)
		ret = sec_u64(w, f[i].tag, f[i].v, err);
	return ret ? ret : sec_end(w, err);
}

static int write_buffer(struct btrace_writer *w, const struct btrace_buffer *b,
			const uint8_t *p1, uint64_t n1, const uint8_t *p2,
			uint64_t n2, struct btrace_error *err)
{
	static const uint8_t zeros[8];
	const struct { uint32_t tag; uint64_t v; } f[] = {
		{ BT_BF_KIND, b->kind },
		{ BT_BF_FLAGS, b->flags },
		{ BT_BF_TID, (uint64_t)(int64_t)b->tid },
		{ BT_BF_CPU, (uint64_t)(int64_t)b->cpu },
		{ BT_BF_REQUESTED, b->requested_size },
		{ BT_BF_PAD, b->pad },
		{ BT_BF_RING_SIZE, b->ring_size },
		{ BT_BF_HEAD, b->head },
		{ BT_BF_LOST, b->lost },
	};
	uint8_t h[BT_FIELD_HEADER_SIZE];
	uint64_t len = n1 + n2;
	int ret;

	ret = sec_begin(w, BT_SEC_BUFFER,
			!!(w->flags & BTRACE_WRITE_COMPRESS_TRACE), err);
	for (size_t i = 0; !ret && i < BT_ARRAY_SIZE(f); i++)
		ret = sec_u64(w, f[i].tag, f[i].v, err);
	if (ret)
		return ret;
	field_header(h, BT_BF_DATA, len);
	ret = sec_write(w, h, sizeof(h), err);
	if (!ret && n1)
		ret = sec_write(w, p1, n1, err);
	if (!ret && n2)
		ret = sec_write(w, p2, n2, err);
	if (!ret && len % 8)
		ret = sec_write(w, zeros, 8 - len % 8, err);
	return ret ? ret : sec_end(w, err);
}

int btrace_writer_add_buffer(struct btrace_writer *w,
			     const struct btrace_buffer *b,
			     struct btrace_error *err)
{
	if (!w || !b || (b->size && !b->data))
		return bt_error(err, -EINVAL, "snapshot writer: add buffer "
				"failed: invalid argument");
	return write_buffer(w, b, b->data, b->size, NULL, 0, err);
}

int btrace_writer_add_ring(struct btrace_writer *w,
			   const struct btrace_buffer *b, const void *ring,
			   struct btrace_error *err)
{
	const uint8_t *r = ring;
	uint64_t end;

	if (!w || !b || !ring || b->head > b->ring_size)
		return bt_error(err, -EINVAL, "snapshot writer: add ring "
				"failed: head 0x%llx outside the ring",
				b ? (unsigned long long)b->head : 0ull);
	/* BTS writes whole 24-byte records: the last ring_size % 24 bytes
	 * of the ring are never written (bts_buffer_setup_aux() in
	 * arch/x86/events/intel/bts.c) and are not stored. */
	end = b->kind == BTRACE_TRACE_BTS ? b->ring_size - b->ring_size % 24
					   : b->ring_size;
	if (b->head > end)
		return bt_error(err, -EINVAL, "snapshot writer: add ring "
				"failed: head 0x%llx beyond the last whole BTS record",
				(unsigned long long)b->head);
	if (b->flags & BTRACE_BUF_WRAPPED)
		return write_buffer(w, b, r + b->head, end - b->head,
				    r, b->head, err);
	return write_buffer(w, b, r, b->head, NULL, 0, err);
}

int btrace_writer_add_task(struct btrace_writer *w,
			   const struct btrace_task *t,
			   struct btrace_error *err)
{
	struct bt_recbuf *rb = &w->tasks;
	size_t at;

	if (rb_open(rb, &at) ||
	    rb_u64(rb, BT_TF_PID, (uint64_t)(int64_t)t->pid) ||
	    rb_u64(rb, BT_TF_TID, (uint64_t)(int64_t)t->tid) ||
	    rb_u64(rb, BT_TF_PPID, (uint64_t)(int64_t)t->ppid) ||
	    rb_u64(rb, BT_TF_FLAGS, t->flags) ||
	    rb_str(rb, BT_TF_COMM, t->comm) || rb_str(rb, BT_TF_EXE, t->exe))
		return wr_fail(w, err, -ENOMEM, "add task");
	rb_close(rb, at);
	return 0;
}

int btrace_writer_add_mapping(struct btrace_writer *w,
			      const struct btrace_mapping *m,
			      struct btrace_error *err)
{
	struct bt_recbuf *rb = &w->maps;
	size_t at;

	if (m->build_id_size > BTRACE_BUILD_ID_MAX)
		return bt_error(err, -EINVAL, "mapping %s: add failed: build "
				"ID of %u bytes", m->path ? m->path : "?",
				m->build_id_size);
	if (rb_open(rb, &at) ||
	    rb_u64(rb, BT_MF_PID, (uint64_t)(int64_t)m->pid) ||
	    rb_u64(rb, BT_MF_START, m->start) ||
	    rb_u64(rb, BT_MF_END, m->end) ||
	    rb_u64(rb, BT_MF_PGOFF, m->pgoff) ||
	    rb_u64(rb, BT_MF_PROT, m->prot) ||
	    rb_u64(rb, BT_MF_FLAGS, m->flags) ||
	    rb_u64(rb, BT_MF_DEV, m->dev) || rb_u64(rb, BT_MF_INO, m->ino) ||
	    (m->build_id_size &&
	     rb_field(rb, BT_MF_BUILD_ID, m->build_id, m->build_id_size)) ||
	    rb_str(rb, BT_MF_PATH, m->path))
		return wr_fail(w, err, -ENOMEM, "add mapping");
	rb_close(rb, at);
	return 0;
}

int btrace_writer_add_code(struct btrace_writer *w,
			   const struct btrace_code *c,
			   struct btrace_error *err)
{
	int ret;

	if (!w || !c || (c->size && !c->data) ||
	    c->build_id_size > BTRACE_BUILD_ID_MAX)
		return bt_error(err, -EINVAL, "snapshot writer: add code "
				"failed: invalid argument");
	ret = sec_begin(w, BT_SEC_CODE, 1, err);
	if (!ret)
		ret = sec_u64(w, BT_XF_KIND, c->kind, err);
	if (!ret && c->build_id_size)
		ret = sec_field(w, BT_XF_BUILD_ID, c->build_id,
				c->build_id_size, err);
	if (!ret)
		ret = sec_u64(w, BT_XF_VADDR, c->vaddr, err);
	if (!ret)
		ret = sec_u64(w, BT_XF_FILE_OFFSET, c->file_offset, err);
	if (!ret)
		ret = sec_str(w, BT_XF_PATH, c->path, err);
	if (!ret)
		ret = sec_field(w, BT_XF_DATA, c->data, c->size, err);
	return ret ? ret : sec_end(w, err);
}

int btrace_writer_add_memory(struct btrace_writer *w,
			     const struct btrace_memory *m,
			     struct btrace_error *err)
{
	int ret;

	if (!w || !m || (m->size && !m->data) || m->vaddr + m->size < m->vaddr)
		return bt_error(err, -EINVAL, "snapshot writer: add memory "
				"failed: invalid argument");
	ret = sec_begin(w, BT_SEC_MEMORY, 1, err);
	if (!ret)
		ret = sec_u64(w, BT_YF_TID, (uint64_t)(int64_t)m->tid, err);
	if (!ret)
		ret = sec_u64(w, BT_YF_VADDR, m->vaddr, err);
	if (!ret)
		ret = sec_field(w, BT_YF_DATA, m->data, m->size, err);
	return ret ? ret : sec_end(w, err);
}

int btrace_writer_add_accesses(struct btrace_writer *w,
			       const struct btrace_access_log *log,
			       struct btrace_error *err)
{
	uint8_t *rec;
	int ret;

	if (!w || !log || (log->n && !log->entries) || log->n > BT_MAX_ACCESSES)
		return bt_error(err, -EINVAL, "snapshot writer: add accesses "
				"failed: %s", log && log->n > BT_MAX_ACCESSES ?
				"more records than a section holds" :
				"invalid argument");
	rec = malloc(log->n ? log->n * BT_ACCESS_SIZE : 1);
	if (!rec)
		return bt_error(err, -ENOMEM, "snapshot writer: add accesses "
				"failed: out of memory");
	for (uint64_t i = 0; i < log->n; i++) {
		const struct btrace_access *a = &log->entries[i];
		uint8_t *p = rec + i * BT_ACCESS_SIZE;
		bt_put64(p, a->ip);
		bt_put64(p + 8, a->addr);
		bt_put32(p + 16, a->size);
		bt_put32(p + 20, a->flags);
	}
	ret = sec_begin(w, BT_SEC_ACCESSES, 1, err);
	if (!ret)
		ret = sec_u64(w, BT_AF_TID, (uint64_t)(int64_t)log->tid, err);
	if (!ret)
		ret = sec_u64(w, BT_AF_FLAGS, log->flags, err);
	if (!ret)
		ret = sec_field(w, BT_AF_RECORDS, rec, log->n * BT_ACCESS_SIZE, err);
	free(rec);
	return ret ? ret : sec_end(w, err);
}

int btrace_writer_set_signal(struct btrace_writer *w,
			     const struct btrace_signal *s,
			     struct btrace_error *err)
{
	const struct { uint32_t tag; uint64_t v; } f[] = {
		{ BT_SF_TID, (uint64_t)(int64_t)s->tid },
		{ BT_SF_SIGNO, (uint64_t)(int64_t)s->signo },
		{ BT_SF_CODE, (uint64_t)(int64_t)s->code },
		{ BT_SF_ERRNO, (uint64_t)(int64_t)s->err },
		{ BT_SF_ADDR, s->addr },
		{ BT_SF_SENDER_PID, (uint64_t)(int64_t)s->sender_pid },
		{ BT_SF_FAULT_SOURCE, s->fault_source },
		{ BT_SF_FAULT_IP, s->fault_ip },
		{ BT_SF_EXIT_STATUS, (uint64_t)(int64_t)s->exit_status },
	};
	uint8_t regs[BTRACE_NREGS * 8];
	int ret;

	if (w->has_signal)
		return bt_error(err, -EINVAL, "snapshot writer: set signal "
				"failed: a signal was already written");
	ret = sec_begin(w, BT_SEC_SIGNAL, 0, err);
	for (size_t i = 0; !ret && i < BT_ARRAY_SIZE(f); i++)
		ret = sec_u64(w, f[i].tag, f[i].v, err);
	if (!ret && s->has_regs) {
		for (int i = 0; i < BTRACE_NREGS; i++)
			bt_put64(regs + 8 * i, s->regs[i]);
		ret = sec_field(w, BT_SF_REGS, regs, sizeof(regs), err);
	}
	if (!ret)
		w->has_signal = 1;
	return ret ? ret : sec_end(w, err);
}

int btrace_writer_add_meta(struct btrace_writer *w, const char *key,
			   const char *value, struct btrace_error *err)
{
	struct bt_recbuf *rb = &w->meta;
	size_t at;

	if (!key || !value)
		return bt_error(err, -EINVAL, "snapshot writer: add metadata "
				"failed: NULL key or value");
	if (rb_open(rb, &at) || rb_str(rb, BT_KF_KEY, key) ||
	    rb_str(rb, BT_KF_VALUE, value))
		return wr_fail(w, err, -ENOMEM, "add metadata");
	rb_close(rb, at);
	return 0;
}

static int flush_list(struct btrace_writer *w, uint32_t type,
		      struct bt_recbuf *rb, struct btrace_error *err)
{
	int ret;

	if (!rb->count)
		return 0;
	ret = sec_begin(w, type, 1, err);
	if (!ret)
		ret = sec_write(w, rb->data, rb->len, err);
	return ret ? ret : sec_end(w, err);
}

static int fsync_dir(const char *path)
{
	char *copy = strdup(path);
	int fd, ret = 0;

	if (!copy)
		return -ENOMEM;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	free(copy);
	if (fd < 0)
		return -errno;
	if (fsync(fd) < 0 && errno != EINVAL)
		ret = -errno;
	close(fd);
	return ret;
}

/* Whether the file at @path was changed at or after @since (written by
 * another crash of this recording, or by another recording). */
static int changed_since(const char *path, const struct timespec *since)
{
	struct stat st;

	if (lstat(path, &st))
		return 0;
	return st.st_ctim.tv_sec > since->tv_sec ||
	       (st.st_ctim.tv_sec == since->tv_sec &&
		st.st_ctim.tv_nsec >= since->tv_nsec);
}

/* rename(@from, @to) that never replaces @to (EEXIST): renameat2's
 * RENAME_NOREPLACE, or link and unlink where the file system has none. */
static int rename_noreplace(const char *from, const char *to)
{
	if (!renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE))
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -errno;
	if (link(from, to))
		return -errno;
	unlink(from);
	return 0;
}

/* The finished file to the name @to: over a file there (@over) or never
 * (-EEXIST); the unnamed file is linked, the temporary one renamed.
 * Returns 0 or -errno. */
static int place_at(struct btrace_writer *w, const char *to, int over)
{
	if (w->anon)
		return over ? link_over(w->fd, to) : link_noreplace(w->fd, to);
	if (!over)
		return rename_noreplace(w->tmp, to);
	return rename(w->tmp, to) ? -errno : 0;
}

/*
 * The finished file to its name.  Without @since, over whatever is there.
 * With @since, a file there changed before @since (a former run's) is
 * replaced, and one changed since is kept: the snapshot then takes the
 * first free name of NAME.1.EXT, NAME.2.EXT, ... (w->path changes to it).
 */
static int put_in_place(struct btrace_writer *w, const struct timespec *since,
			struct btrace_error *err)
{
	const char *base, *dot;
	char *alt = NULL;
	size_t n = strlen(w->path) + 24, pre;
	int ret;

	if (!since) {
		ret = place_at(w, w->path, 1);
		goto out;
	}
	if (!changed_since(w->path, since)) {
		struct stat st;

		/* none there: not over one that appears meanwhile either */
		ret = place_at(w, w->path, lstat(w->path, &st) == 0);
		if (ret != -EEXIST)
			goto out;
	}
	alt = malloc(n);
	if (!alt)
		return bt_error(err, -ENOMEM, "%s: rename failed: out of "
				"memory", w->tmp);
	base = strrchr(w->path, '/');
	base = base ? base + 1 : w->path;
	dot = strrchr(base, '.');
	pre = dot && dot != base ? (size_t)(dot - w->path) : strlen(w->path);
	ret = -EEXIST;
	for (unsigned i = 1; i < 1000 && ret == -EEXIST; i++) {
		snprintf(alt, n, "%.*s.%u%s", (int)pre, w->path, i,
			 w->path + pre);
		ret = place_at(w, alt, 0);
	}
	if (!ret) {
		free(w->path);
		w->path = alt;
		alt = NULL;
	}
out:
	free(alt);
	if (ret)
		bt_error(err, ret, "%s: %s failed: %s", w->path,
			 w->anon ? "link" : "rename", strerror(-ret));
	return ret;
}

static int commit(struct btrace_writer *w, const struct timespec *since,
		  char *final, size_t len, struct btrace_error *err)
{
	int ret;

	if (!w)
		return bt_error(err, -EINVAL, "snapshot writer: commit "
				"failed: no writer");
	ret = flush_list(w, BT_SEC_TASKS, &w->tasks, err);
	if (!ret)
		ret = flush_list(w, BT_SEC_MAPPINGS, &w->maps, err);
	if (!ret)
		ret = flush_list(w, BT_SEC_META, &w->meta, err);
	if (!ret)
		ret = sec_begin(w, BT_SEC_END, 0, err);
	if (!ret)
		ret = sec_u64(w, BT_EF_SECTIONS, w->nsections, err);
	if (!ret)
		ret = sec_end(w, err);
	if (!ret && fsync(w->fd) < 0)
		ret = wr_fail(w, err, -errno, "fsync");
	/* the unnamed file is linked while open, the temporary one renamed
	 * once closed */
	if (!ret && !w->anon) {
		int e = close(w->fd) < 0 ? -errno : 0;

		w->fd = -1;
		if (e)
			ret = wr_fail(w, err, e, "close");
	}
	if (!ret)
		ret = put_in_place(w, since, err);
	if (!ret) {
		w->tmp[0] = '\0';  /* nothing left to remove */
		fsync_dir(w->path);
		if (final)
			snprintf(final, len, "%s", w->path);
	}
	if (!ret && w->anon) {
		ret = close(w->fd) < 0 ? -errno : 0;
		w->fd = -1;
		if (ret)
			bt_error(err, ret, "%s: close failed: %s", w->path,
				 strerror(-ret));
	}
	btrace_writer_free(w);
	return ret;
}

int btrace_writer_commit(struct btrace_writer *w, struct btrace_error *err)
{
	return commit(w, NULL, NULL, 0, err);
}

int bt_writer_commit_keep(struct btrace_writer *w,
			  const struct timespec *since, char *final,
			  size_t len, struct btrace_error *err)
{
	return commit(w, since, final, len, err);
}

void btrace_writer_free(struct btrace_writer *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	if (w->tmp && w->tmp[0] && !w->anon)
		unlink(w->tmp);
	ZSTD_freeCCtx(w->zc);
	free(w->zbuf);
	free(w->tasks.data);
	free(w->maps.data);
	free(w->meta.data);
	free(w->path);
	free(w->tmp);
	free(w);
}
