/* SPDX-License-Identifier: MIT */
/*
 * Snapshot reader.  Nothing in the file is trusted: every length, offset and
 * count is checked against what is really there before it is used, and damage
 * is reported with the section and the byte offset where it was found.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <zstd.h>
#include <zstd_errors.h>

#include <btrace/snapshot.h>

#include "format.h"
#include "util.h"

/* No section may claim to hold more than this once decompressed. */
#define BT_MAX_RAW_SIZE (16ull << 30)

/*
 * What a compressed section may inflate to (docs/format.md, "Limits"): at
 * most its type's limit, and all sections of a file together at most
 * BT_INFLATE_FLOOR + BT_INFLATE_RATIO times the file's size.  A small file
 * that claims gigabytes is a decompression bomb, not a snapshot.
 */
#define BT_INFLATE_FLOOR (256ull << 20)
#define BT_INFLATE_RATIO 1024ull

/* Code sections: the bytes must end within the first 4 GiB of the file
 * they were copied from, and within the address space. */
#define BT_MAX_CODE_END (4ull << 30)

static uint64_t type_limit(uint32_t type)
{
	switch (type) {
	case BT_SEC_CONFIG:
	case BT_SEC_SIGNAL:
	case BT_SEC_END:
		return 1u << 20;
	case BT_SEC_TASKS:
	case BT_SEC_MAPPINGS:
	case BT_SEC_META:
		return 64u << 20;
	case BT_SEC_CODE:
	case BT_SEC_MEMORY:
		return BT_MAX_CODE_END;
	case BT_SEC_ACCESSES:
		return (uint64_t)BT_MAX_ACCESSES * BT_ACCESS_SIZE + (1u << 20);
	default:
		return BT_MAX_RAW_SIZE;   /* trace buffers */
	}
}

struct snap_priv {
	struct btrace_snapshot pub;    /* first: the public pointer */
	void *map;
	size_t map_size;
	int owns_map;                  /* map is ours to munmap */
	void **blocks;                 /* allocations owned by the snapshot */
	size_t nblocks, cblocks;
	size_t cbuf, ctask, cmap, ccode, cmeta, csec, cwarn, cmem, cacc;
};

struct rd {
	struct snap_priv *sp;
	const uint8_t *base;
	uint64_t size;
	unsigned flags;
	const char *name;
	struct btrace_error *err;
	/* The section being parsed, for messages. */
	uint32_t sec_index;
	uint32_t sec_type;
	uint64_t sec_off;
	uint64_t payload_off;          /* file offset of the payload */
	int compressed;
	uint64_t inflated;             /* bytes decompressed so far */
	ZSTD_DCtx *zd;                 /* one decoder for every section */
};

static const char *const sec_names[] = {
	[BT_SEC_CONFIG] = "config",
	[BT_SEC_BUFFER] = "buffer",
	[BT_SEC_TASKS] = "tasks",
	[BT_SEC_MAPPINGS] = "mappings",
	[BT_SEC_CODE] = "code",
	[BT_SEC_SIGNAL] = "signal",
	[BT_SEC_META] = "metadata",
	[BT_SEC_MEMORY] = "memory",
	[BT_SEC_ACCESSES] = "accesses",
};

const char *btrace_section_name(uint32_t type)
{
	if (type == BT_SEC_END)
		return "end";
	if (type < BT_ARRAY_SIZE(sec_names))
		return sec_names[type];
	return NULL;
}

static void *own(struct rd *r, void *p)
{
	struct snap_priv *sp = r->sp;

	if (!p)
		return NULL;
	if (bt_grow((void **)&sp->blocks, &sp->cblocks, sp->nblocks,
		    sizeof(void *))) {
		free(p);
		return NULL;
	}
	sp->blocks[sp->nblocks++] = p;
	return p;
}

/* Append @elem (@size bytes) to the growable array *@arr of *@n elements. */
static int append(void **arr, size_t *cap, size_t *n, const void *elem,
		  size_t size)
{
	if (bt_grow(arr, cap, *n, size))
		return -ENOMEM;
	memcpy((uint8_t *)*arr + *n * size, elem, size);
	(*n)++;
	return 0;
}

static int warn(struct rd *r, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int warn(struct rd *r, const char *fmt, ...)
{
	struct snap_priv *sp = r->sp;
	char *msg;
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&msg, fmt, ap);
	va_end(ap);
	if (n < 0 || !own(r, msg))
		return -ENOMEM;
	return append((void **)&sp->pub.warnings, &sp->cwarn, &sp->pub.nwarnings,
		      &msg, sizeof(char *));
}

/* Describe where we are: "FILE: section N (type) at byte offset X". */
static int sec_error(struct rd *r, int code, uint64_t rel, const char *what)
{
	const char *sname = btrace_section_name(r->sec_type);
	char where[128];

	if (r->compressed)
		snprintf(where, sizeof(where), "byte %llu of its decompressed "
			 "payload (section at file offset %llu)",
			 (unsigned long long)rel,
			 (unsigned long long)r->sec_off);
	else
		snprintf(where, sizeof(where), "file offset %llu",
			 (unsigned long long)(r->payload_off + rel));
	return bt_error(r->err, code, "%s: read failed: section %u (%s) "
			"damaged at %s: %s", r->name, r->sec_index,
			sname ? sname : "unknown", where, what);
}

/* --- fields --- */

struct fit {
	const uint8_t *p;
	uint64_t len;
	uint64_t pos;
	uint64_t base;     /* offset of p within the section payload */
};

struct field {
	uint32_t tag;
	const uint8_t *val;
	uint64_t len;
	uint64_t off;      /* payload-relative offset of the field header */
};

/* 1: a field, 0: end, <0: damage (error filled). */
static int fit_next(struct rd *r, struct fit *it, struct field *f)
{
	uint64_t rem = it->len - it->pos;
	uint64_t len, padded;
	const uint8_t *h;

	if (rem == 0)
		return 0;
	f->off = it->base + it->pos;
	if (rem < BT_FIELD_HEADER_SIZE)
		return sec_error(r, -BTRACE_ERR_FORMAT, f->off,
				 "field header cut short");
	h = it->p + it->pos;
	len = bt_le64(h + 8);
	if (len > rem - BT_FIELD_HEADER_SIZE)
		return sec_error(r, -BTRACE_ERR_FORMAT, f->off,
				 "field length runs past the section");
	padded = (len + 7) & ~7ull;
	if (padded > rem - BT_FIELD_HEADER_SIZE)
		padded = len;  /* tolerate a missing final pad */
	f->tag = bt_le32(h);
	f->val = h + BT_FIELD_HEADER_SIZE;
	f->len = len;
	it->pos += BT_FIELD_HEADER_SIZE + padded;
	return 1;
}

static int get_u64(struct rd *r, const struct field *f, uint64_t *v)
{
	switch (f->len) {
	case 1: *v = f->val[0]; return 0;
	case 2: *v = bt_le16(f->val); return 0;
	case 4: *v = bt_le32(f->val); return 0;
	case 8: *v = bt_le64(f->val); return 0;
	}
	return sec_error(r, -BTRACE_ERR_FORMAT, f->off,
			 "integer field of invalid length");
}

static int get_str(struct rd *r, const struct field *f, char **out)
{
	size_t n = strnlen((const char *)f->val, (size_t)f->len);
	char *s = own(r, malloc(n + 1));

	if (!s)
		return -ENOMEM;
	memcpy(s, f->val, n);
	s[n] = '\0';
	*out = s;
	return 0;
}

static int get_build_id(struct rd *r, const struct field *f, uint8_t *dst,
			uint32_t *size)
{
	if (f->len > BTRACE_BUILD_ID_MAX)
		return sec_error(r, -BTRACE_ERR_FORMAT, f->off,
				 "build ID longer than 64 bytes");
	memcpy(dst, f->val, (size_t)f->len);
	*size = (uint32_t)f->len;
	return 0;
}

#define U64_INTO(dst)                                                        \
	do {                                                                 \
		uint64_t v_;                                                 \
		ret = get_u64(r, &f, &v_);                                   \
		(dst) = (__typeof__(dst))v_;                                 \
	} while (0)

/* --- sections --- */

static int parse_config(struct rd *r, struct fit *it)
{
	struct btrace_config *c = &r->sp->pub.config;
	struct field f;
	int ret;

	memset(c, 0, sizeof(*c));
	while ((ret = fit_next(r, it, &f)) > 0) {
		switch (f.tag) {
		case BT_CF_BACKEND: U64_INTO(c->backend); break;
		case BT_CF_TRACE_KIND: U64_INTO(c->trace_kind); break;
		case BT_CF_CPU_VENDOR: U64_INTO(c->cpu_vendor); break;
		case BT_CF_CPU_FAMILY: U64_INTO(c->cpu_family); break;
		case BT_CF_CPU_MODEL: U64_INTO(c->cpu_model); break;
		case BT_CF_CPU_STEPPING: U64_INTO(c->cpu_stepping); break;
		case BT_CF_CPUID15_EAX: U64_INTO(c->cpuid_0x15_eax); break;
		case BT_CF_CPUID15_EBX: U64_INTO(c->cpuid_0x15_ebx); break;
		case BT_CF_NOM_FREQ: U64_INTO(c->nom_freq); break;
		case BT_CF_MTC_FREQ: U64_INTO(c->mtc_freq); break;
		case BT_CF_PMU_TYPE: U64_INTO(c->pmu_type); break;
		case BT_CF_PT_CONFIG: U64_INTO(c->pt_config); break;
		case BT_CF_TSC_BIT: U64_INTO(c->tsc_bit); break;
		case BT_CF_MTC_BIT: U64_INTO(c->mtc_bit); break;
		case BT_CF_CYC_BIT: U64_INTO(c->cyc_bit); break;
		case BT_CF_NORETCOMP_BIT: U64_INTO(c->noretcomp_bit); break;
		case BT_CF_BRANCH_BIT: U64_INTO(c->branch_bit); break;
		case BT_CF_PSB_PERIOD: U64_INTO(c->psb_period); break;
		case BT_CF_USER_ONLY: U64_INTO(c->user_only); break;
		case BT_CF_REQUESTED_SIZE: U64_INTO(c->requested_size); break;
		case BT_CF_PAD: U64_INTO(c->pad); break;
		case BT_CF_CRASH_MODE: U64_INTO(c->crash_mode); break;
		default: ret = 0; break;  /* unknown field: skipped */
		}
		if (ret < 0)
			return ret;
	}
	if (ret == 0)
		r->sp->pub.has_config = 1;
	return ret;
}

static int parse_buffer(struct rd *r, struct fit *it)
{
	struct snap_priv *sp = r->sp;
	struct btrace_buffer b = { .tid = -1, .cpu = -1 };
	int have_data = 0, ret;
	struct field f;

	while ((ret = fit_next(r, it, &f)) > 0) {
		switch (f.tag) {
		case BT_BF_KIND: U64_INTO(b.kind); break;
		case BT_BF_FLAGS: U64_INTO(b.flags); break;
		case BT_BF_TID: U64_INTO(b.tid); break;
		case BT_BF_CPU: U64_INTO(b.cpu); break;
		case BT_BF_REQUESTED: U64_INTO(b.requested_size); break;
		case BT_BF_PAD: U64_INTO(b.pad); break;
		case BT_BF_RING_SIZE: U64_INTO(b.ring_size); break;
		case BT_BF_HEAD: U64_INTO(b.head); break;
		case BT_BF_LOST: U64_INTO(b.lost); break;
		case BT_BF_DATA:
			b.data = f.val;
			b.size = f.len;
			have_data = 1;
			ret = 0;
			break;
		default: ret = 0; break;
		}
		if (ret < 0)
			return ret;
	}
	if (ret < 0)
		return ret;
	if (!have_data)
		return sec_error(r, -BTRACE_ERR_FORMAT, 0,
				 "buffer without trace data");
	return append((void **)&sp->pub.buffers, &sp->cbuf, &sp->pub.nbuffers,
		      &b, sizeof(b));
}

static int parse_task(struct rd *r, struct fit *it)
{
	struct snap_priv *sp = r->sp;
	struct btrace_task t = { 0 };
	struct field f;
	int ret;

	while ((ret = fit_next(r, it, &f)) > 0) {
		switch (f.tag) {
		case BT_TF_PID: U64_INTO(t.pid); break;
		case BT_TF_TID: U64_INTO(t.tid); break;
		case BT_TF_PPID: U64_INTO(t.ppid); break;
		case BT_TF_FLAGS: U64_INTO(t.flags); break;
		case BT_TF_COMM: ret = get_str(r, &f, &t.comm); break;
		case BT_TF_EXE: ret = get_str(r, &f, &t.exe); break;
		default: ret = 0; break;
		}
		if (ret < 0)
			return ret;
	}
	if (ret < 0)
		return ret;
	return append((void **)&sp->pub.tasks, &sp->ctask, &sp->pub.ntasks,
		      &t, sizeof(t));
}

static int parse_mapping(struct rd *r, struct fit *it)
{
	struct snap_priv *sp = r->sp;
	struct btrace_mapping m = { 0 };
	struct field f;
	int ret;

	while ((ret = fit_next(r, it, &f)) > 0) {
		switch (f.tag) {
		case BT_MF_PID: U64_INTO(m.pid); break;
		case BT_MF_START: U64_INTO(m.start); break;
		case BT_MF_END: U64_INTO(m.end); break;
		case BT_MF_PGOFF: U64_INTO(m.pgoff); break;
		case BT_MF_PROT: U64_INTO(m.prot); break;
		case BT_MF_FLAGS: U64_INTO(m.flags); break;
		case BT_MF_DEV: U64_INTO(m.dev); break;
		case BT_MF_INO: U64_INTO(m.ino); break;
		case BT_MF_BUILD_ID:
			ret = get_build_id(r, &f, m.build_id, &m.build_id_size);
			break;
		case BT_MF_PATH: ret = get_str(r, &f, &m.path); break;
		default: ret = 0; break;
		}
		if (ret < 0)
			return ret;
	}
	if (ret < 0)
		return ret;
	if (m.end < m.start)
		return sec_error(r, -BTRACE_ERR_FORMAT, it->base,
				 "mapping ends before it starts");
	return append((void **)&sp->pub.mappings, &sp->cmap, &sp->pub.nmappings,
		      &m, sizeof(m));
}

static int parse_meta(struct rd *r, struct fit *it)
{
	struct snap_priv *sp = r->sp;
	struct btrace_meta m = { 0 };
	struct field f;
	int ret;

	while ((ret = fit_next(r, it, &f)) > 0) {
		if (f.tag == BT_KF_KEY)
			ret = get_str(r, &f, &m.key);
		else if (f.tag == BT_KF_VALUE)
			ret = get_str(r, &f, &m.value);
		else
			ret = 0;
		if (ret < 0)
			return ret;
	}
	if (ret < 0)
		return ret;
	if (!m.key || !m.value)
		return 0;  /* incomplete pair: nothing to keep */
	return append((void **)&sp->pub.meta, &sp->cmeta, &sp->pub.nmeta,
		      &m, sizeof(m));
}

/* A list section: one BT_F_RECORD field per element. */
static int parse_list(struct rd *r, struct fit *it,
		      int (*fn)(struct rd *, struct fit *))
{
	struct field f;
	int ret;

	while ((ret = fit_next(r, it, &f)) > 0) {
		struct fit sub = { f.val, f.len, 0,
				   f.off + BT_FIELD_HEADER_SIZE };

		if (f.tag != BT_F_RECORD)
			continue;
		ret = fn(r, &sub);
		if (ret < 0)
			return ret;
	}
	return ret;
}

/* A data field: its bytes (in the file or the inflated section). */
static int get_data(const struct field *f, const uint8_t **data,
		    uint64_t *size, int *have)
{
	*data = f->val;
	*size = f->len;
	*have = 1;
	return 0;
}

/* The bytes of a code or memory section: present, and not past the end
 * of the address space. */
static int blob_check(struct rd *r, int have_data, uint64_t vaddr,
		      uint64_t size)
{
	const char *sname = btrace_section_name(r->sec_type);
	char msg[96];

	if (!have_data) {
		snprintf(msg, sizeof(msg), "%s section without bytes", sname);
		return sec_error(r, -BTRACE_ERR_FORMAT, 0, msg);
	}
	if (vaddr + size < vaddr) {
		snprintf(msg, sizeof(msg), "%s bytes run past the end of the "
			 "address space", sname);
		return sec_error(r, -BTRACE_ERR_FORMAT, 0, msg);
	}
	return 0;
}

static int parse_code(struct rd *r, struct fit *it)
{
	struct snap_priv *sp = r->sp;
	struct btrace_code c = { 0 };
	int have_data = 0, ret;
	struct field f;

	while ((ret = fit_next(r, it, &f)) > 0) {
		switch (f.tag) {
		case BT_XF_KIND: U64_INTO(c.kind); break;
		case BT_XF_BUILD_ID:
			ret = get_build_id(r, &f, c.build_id, &c.build_id_size);
			break;
		case BT_XF_VADDR: U64_INTO(c.vaddr); break;
		case BT_XF_FILE_OFFSET: U64_INTO(c.file_offset); break;
		case BT_XF_PATH: ret = get_str(r, &f, &c.path); break;
		case BT_XF_DATA:
			ret = get_data(&f, &c.data, &c.size, &have_data);
			break;
		default: ret = 0; break;
		}
		if (ret < 0)
			return ret;
	}
	if (ret < 0 || (ret = blob_check(r, have_data, c.vaddr, c.size)) < 0)
		return ret;
	if (c.kind == BTRACE_CODE_FILE &&
	    (c.file_offset > BT_MAX_CODE_END ||
	     c.size > BT_MAX_CODE_END - c.file_offset))
		return sec_error(r, -BTRACE_ERR_FORMAT, 0,
				 "code file offset and size end past 4 GiB");
	return append((void **)&sp->pub.code, &sp->ccode, &sp->pub.ncode,
		      &c, sizeof(c));
}

static int parse_memory(struct rd *r, struct fit *it)
{
	struct snap_priv *sp = r->sp;
	struct btrace_memory m = { 0 };
	int have_data = 0, ret;
	struct field f;

	while ((ret = fit_next(r, it, &f)) > 0) {
		switch (f.tag) {
		case BT_YF_TID: U64_INTO(m.tid); break;
		case BT_YF_VADDR: U64_INTO(m.vaddr); break;
		case BT_YF_DATA:
			ret = get_data(&f, &m.data, &m.size, &have_data);
			break;
		default: ret = 0; break;
		}
		if (ret < 0)
			return ret;
	}
	if (ret < 0 || (ret = blob_check(r, have_data, m.vaddr, m.size)) < 0)
		return ret;
	return append((void **)&sp->pub.memory, &sp->cmem, &sp->pub.nmemory,
		      &m, sizeof(m));
}

/* A thread's access log: whole records, at most BT_MAX_ACCESSES, each of
 * 1 to 4096 bytes within the address space, with no flag not defined, or
 * a fold mark (an instruction address alone). */
static int parse_accesses(struct rd *r, struct fit *it)
{
	struct snap_priv *sp = r->sp;
	struct btrace_access_log l = { 0 };
	struct btrace_access *e;
	const uint8_t *rec = NULL;
	uint64_t len = 0;
	int have = 0, ret;
	struct field f;

	while ((ret = fit_next(r, it, &f)) > 0) {
		switch (f.tag) {
		case BT_AF_TID: U64_INTO(l.tid); break;
		case BT_AF_FLAGS: U64_INTO(l.flags); break;
		case BT_AF_RECORDS: ret = get_data(&f, &rec, &len, &have); break;
		default: ret = 0; break;
		}
		if (ret < 0)
			return ret;
	}
	if (ret < 0)
		return ret;
	if (!have)
		return sec_error(r, -BTRACE_ERR_FORMAT, 0,
				 "accesses section without records");
	if (len % BT_ACCESS_SIZE || len / BT_ACCESS_SIZE > BT_MAX_ACCESSES)
		return sec_error(r, -BTRACE_ERR_FORMAT, 0, len % BT_ACCESS_SIZE ?
				 "accesses: records field is not whole records" :
				 "accesses: more records than a section holds");
	l.n = len / BT_ACCESS_SIZE;
	e = own(r, malloc(l.n ? l.n * sizeof(*e) : 1));
	if (!e)
		return -ENOMEM;
	for (uint64_t i = 0; i < l.n; i++) {
		const uint8_t *p = rec + i * BT_ACCESS_SIZE;
		char msg[96];

		e[i].ip = bt_le64(p);
		e[i].addr = bt_le64(p + 8);
		e[i].size = bt_le32(p + 16);
		e[i].flags = bt_le32(p + 20);
		if (e[i].flags == BTRACE_ACCESS_FOLD) {
			/* a fold mark: an address of code, nothing else */
			if (e[i].size || e[i].addr || !e[i].ip) {
				snprintf(msg, sizeof(msg), "accesses: record "
					 "%llu: a fold mark with a size, an "
					 "address or no instruction",
					 (unsigned long long)i);
				return sec_error(r, -BTRACE_ERR_FORMAT, 0, msg);
			}
			continue;
		}
		if (!e[i].size || e[i].size > 4096 ||
		    e[i].addr + e[i].size < e[i].addr ||
		    (e[i].flags & ~BTRACE_ACCESS_STORE)) {
			snprintf(msg, sizeof(msg), "accesses: record %llu: %s",
				 (unsigned long long)i,
				 e[i].flags & ~BTRACE_ACCESS_STORE ?
				 "unknown flags" : "bad size");
			return sec_error(r, -BTRACE_ERR_FORMAT, 0, msg);
		}
	}
	l.entries = e;
	return append((void **)&sp->pub.access_logs, &sp->cacc,
		      &sp->pub.naccess_logs, &l, sizeof(l));
}

static int parse_signal(struct rd *r, struct fit *it)
{
	struct btrace_signal *s;
	struct field f;
	int ret;

	if (r->sp->pub.signal)
		return sec_error(r, -BTRACE_ERR_FORMAT, 0,
				 "a second signal section");
	s = own(r, calloc(1, sizeof(*s)));
	if (!s)
		return -ENOMEM;
	s->exit_status = -1;
	while ((ret = fit_next(r, it, &f)) > 0) {
		switch (f.tag) {
		case BT_SF_TID: U64_INTO(s->tid); break;
		case BT_SF_SIGNO: U64_INTO(s->signo); break;
		case BT_SF_CODE: U64_INTO(s->code); break;
		case BT_SF_ERRNO: U64_INTO(s->err); break;
		case BT_SF_ADDR: U64_INTO(s->addr); break;
		case BT_SF_SENDER_PID: U64_INTO(s->sender_pid); break;
		case BT_SF_FAULT_SOURCE: U64_INTO(s->fault_source); break;
		case BT_SF_FAULT_IP: U64_INTO(s->fault_ip); break;
		case BT_SF_EXIT_STATUS: U64_INTO(s->exit_status); break;
		case BT_SF_REGS:
			ret = 0;
			if (f.len != BTRACE_NREGS * 8) {
				ret = sec_error(r, -BTRACE_ERR_FORMAT, f.off,
						"register block of wrong size");
				break;
			}
			for (int i = 0; i < BTRACE_NREGS; i++)
				s->regs[i] = bt_le64(f.val + 8 * i);
			s->has_regs = 1;
			break;
		default: ret = 0; break;
		}
		if (ret < 0)
			return ret;
	}
	if (ret == 0)
		r->sp->pub.signal = s;
	return ret;
}

static int parse_end(struct rd *r, struct fit *it, uint32_t seen)
{
	struct field f;
	int ret;

	while ((ret = fit_next(r, it, &f)) > 0) {
		uint64_t n;

		if (f.tag != BT_EF_SECTIONS)
			continue;
		ret = get_u64(r, &f, &n);
		if (ret < 0)
			return ret;
		if (n != seen)
			return sec_error(r, -BTRACE_ERR_FORMAT, f.off,
					 "the end marker counts a different "
					 "number of sections than the file has");
	}
	return ret;
}

/* Inflate a section that fits the first allocation (raw <= cap): in one
 * call, straight into @dst, without the streaming window buffers (2 MiB
 * for a frame written by the streaming writer, allocated and freed per
 * section otherwise). */
static int decompress_once(struct rd *r, const uint8_t *src, uint64_t n,
			   uint8_t *dst, size_t cap, size_t *got)
{
	size_t k = ZSTD_decompressDCtx(r->zd, dst, cap, src, (size_t)n);

	if (ZSTD_isError(k)) {
		if (ZSTD_getErrorCode(k) == ZSTD_error_dstSize_tooSmall)
			return sec_error(r, -BTRACE_ERR_FORMAT, 0, "payload "
					 "decompresses to more than declared");
		return sec_error(r, -BTRACE_ERR_FORMAT, 0,
				 ZSTD_getErrorName(k));
	}
	*got = k;
	return 0;
}

/* Inflate a bigger section, growing the output with what really comes
 * out, never trusting the declared size for the allocation. */
static int decompress_stream(struct rd *r, const uint8_t *src, uint64_t n,
			     uint64_t raw, uint8_t **dstp, size_t cap,
			     size_t *got)
{
	ZSTD_inBuffer in = { src, (size_t)n, 0 };
	ZSTD_outBuffer o = { *dstp, cap, 0 };
	int ret = 0;

	for (;;) {
		size_t rem = ZSTD_decompressStream(r->zd, &o, &in);

		if (ZSTD_isError(rem)) {
			ret = sec_error(r, -BTRACE_ERR_FORMAT, 0,
					ZSTD_getErrorName(rem));
			break;
		}
		if (o.pos > raw) {
			ret = sec_error(r, -BTRACE_ERR_FORMAT, 0, "payload "
					"decompresses to more than declared");
			break;
		}
		if (rem == 0 && in.pos == in.size)
			break;
		if (o.pos == o.size) {
			size_t ncap;
			uint8_t *nd;

			if (o.size >= raw) {
				/* Full, yet zstd has more: too much data. */
				ret = sec_error(r, -BTRACE_ERR_FORMAT, 0,
						"payload decompresses to more "
						"than declared");
				break;
			}
			ncap = o.size * 2 > raw ? (size_t)raw : o.size * 2;
			nd = realloc(*dstp, ncap);
			if (!nd) {
				ret = -ENOMEM;
				break;
			}
			*dstp = nd;
			o.dst = nd;
			o.size = ncap;
		} else if (in.pos == in.size) {
			ret = sec_error(r, -BTRACE_ERR_FORMAT, 0,
					"compressed payload is incomplete");
			break;
		}
	}
	*got = o.pos;
	return ret;
}

static int decompress(struct rd *r, const uint8_t *src, uint64_t n,
		      uint64_t raw, const uint8_t **out)
{
	uint8_t *dst = NULL;
	size_t cap, got = 0;
	int ret;

	unsigned long long fcs = ZSTD_getFrameContentSize(src, (size_t)n);
	uint64_t budget = BT_INFLATE_FLOOR + BT_INFLATE_RATIO * r->size;
	char msg[200];

	if (raw > BT_MAX_RAW_SIZE)
		return sec_error(r, -BTRACE_ERR_FORMAT, 0,
				 "decompressed size over 16 GiB");
	if (raw > type_limit(r->sec_type)) {
		snprintf(msg, sizeof(msg), "declares %llu bytes once decompressed, over the %llu a section of this type may hold",
			 (unsigned long long)raw,
			 (unsigned long long)type_limit(r->sec_type));
		return sec_error(r, -BTRACE_ERR_FORMAT, 0, msg);
	}
	if (raw > budget - (r->inflated < budget ? r->inflated : budget)) {
		snprintf(msg, sizeof(msg), "declares %llu bytes once decompressed: with the sections before it, over %llu for a %llu-byte file (a decompression bomb?)",
			 (unsigned long long)raw, (unsigned long long)budget,
			 (unsigned long long)r->size);
		return sec_error(r, -BTRACE_ERR_FORMAT, 0, msg);
	}
	if (fcs != ZSTD_CONTENTSIZE_UNKNOWN && fcs != ZSTD_CONTENTSIZE_ERROR &&
	    fcs > raw)
		return sec_error(r, -BTRACE_ERR_FORMAT, 0, "payload "
				 "decompresses to more than declared");
	if (n == 0)
		return sec_error(r, -BTRACE_ERR_FORMAT, 0,
				 "compressed payload is empty");
	r->inflated += raw;
	if (!r->zd) {
		r->zd = ZSTD_createDCtx();
		if (!r->zd)
			return -ENOMEM;
	} else {
		ZSTD_DCtx_reset(r->zd, ZSTD_reset_session_only);
	}
	/* The first allocation is at most 1 MiB, whatever is declared. */
	cap = raw < (1u << 20) ? (size_t)raw : (1u << 20);
	dst = malloc(cap ? cap : 1);
	if (!dst)
		return -ENOMEM;
	if (cap == raw)
		ret = decompress_once(r, src, n, dst, cap, &got);
	else
		ret = decompress_stream(r, src, n, raw, &dst, cap, &got);
	if (!ret && got != raw)
		ret = sec_error(r, -BTRACE_ERR_FORMAT, 0, "payload "
				"decompresses to less than declared");
	if (ret) {
		free(dst);
		return ret;
	}
	if (!own(r, dst))
		return -ENOMEM;
	*out = dst;
	return 0;
}

static int add_section_info(struct rd *r, const struct btrace_section_info *si)
{
	struct snap_priv *sp = r->sp;

	return append((void **)&sp->pub.sections, &sp->csec, &sp->pub.nsections,
		      si, sizeof(*si));
}

/* Find the next plausible section header at or after @from (lenient). */
static uint64_t resync(struct rd *r, uint64_t from)
{
	for (uint64_t o = (from + 7) & ~7ull;
	     o + BT_SECTION_HEADER_SIZE <= r->size; o += 8) {
		const uint8_t *h = r->base + o;

		if (bt_le32(h) == BT_SECTION_MAGIC &&
		    bt_le32(h + 36) == bt_crc32c(0, h, 36))
			return o;
	}
	return r->size;
}

static int parse_payload(struct rd *r, uint32_t type, const uint8_t *p,
			 uint64_t len, uint32_t seen)
{
	struct fit it = { p, len, 0, 0 };

	switch (type) {
	case BT_SEC_CONFIG: return parse_config(r, &it);
	case BT_SEC_BUFFER: return parse_buffer(r, &it);
	case BT_SEC_TASKS: return parse_list(r, &it, parse_task);
	case BT_SEC_MAPPINGS: return parse_list(r, &it, parse_mapping);
	case BT_SEC_CODE: return parse_code(r, &it);
	case BT_SEC_MEMORY: return parse_memory(r, &it);
	case BT_SEC_ACCESSES: return parse_accesses(r, &it);
	case BT_SEC_SIGNAL: return parse_signal(r, &it);
	case BT_SEC_META: return parse_list(r, &it, parse_meta);
	case BT_SEC_END: return parse_end(r, &it, seen);
	}
	return 0;
}

/* A damaged section: fail (strict) or note it and go on (lenient). */
static int damaged(struct rd *r, struct btrace_section_info *si, int code)
{
	si->status = (uint32_t)-code;
	if (!(r->flags & BTRACE_READ_LENIENT))
		return code;
	add_section_info(r, si);
	return warn(r, "%s", r->err ? r->err->msg : btrace_strerror(code));
}

/* What parse_sections() does after a section: read the next one, stop and
 * return (nothing after it can be trusted), or stop at the end marker. */
enum sec_next { SEC_GO_ON, SEC_RETURN, SEC_LAST };

/* The file ends inside the header of section @index. */
static int truncated_header(struct rd *r, uint32_t index)
{
	bt_error(r->err, -BTRACE_ERR_TRUNCATED, "%s: read "
		 "failed: file ends at byte %llu inside the "
		 "header of section %u", r->name,
		 (unsigned long long)r->size, index);
	return (r->flags & BTRACE_READ_LENIENT) ?
	       warn(r, "%s", r->err ? r->err->msg :
		    "truncated") : -BTRACE_ERR_TRUNCATED;
}

static const char *sec_name_or_unknown(uint32_t type)
{
	return btrace_section_name(type) ? btrace_section_name(type) :
					   "unknown";
}

/* The alignment padding between @end and @next is not in the checksum: it
 * must be zero, so that no byte of the file can change unnoticed. */
static int check_padding(struct rd *r, struct btrace_section_info *si,
			 uint64_t end, uint64_t next, uint32_t index)
{
	for (uint64_t o = end; o < next; o++) {
		if (r->base[o]) {
			bt_error(r->err, -BTRACE_ERR_FORMAT, "%s: read "
				 "failed: section %u: padding at file "
				 "offset %llu is not zero", r->name,
				 index, (unsigned long long)o);
			return damaged(r, si, -BTRACE_ERR_FORMAT);
		}
	}
	return 0;
}

/* Decompress (when stored so) and parse the payload of a known section;
 * a damaged one fails (strict) or is noted (lenient). */
static int load_payload(struct rd *r, struct btrace_section_info *si,
			uint32_t flags, const uint8_t *payload, uint64_t stored,
			uint64_t raw, uint32_t index)
{
	int ret;

	if (flags & BT_SECF_ZSTD) {
		ret = decompress(r, payload, stored, raw, &payload);
	} else if (raw != stored) {
		ret = sec_error(r, -BTRACE_ERR_FORMAT, 0, "raw and "
				"stored sizes differ without "
				"compression");
	} else {
		ret = 0;
	}
	if (!ret)
		ret = parse_payload(r, si->type, payload, raw, index);
	if (ret == -ENOMEM)
		return bt_error(r->err, ret, "%s: read failed: out of "
				"memory", r->name);
	if (ret)
		return damaged(r, si, ret);
	return add_section_info(r, si);
}

/*
 * Read section @index at file offset @off: its header, size, padding,
 * checksum, then its payload.  Sets *@next to the offset after it, and
 * *@what when the reading stops here.
 */
static int read_section(struct rd *r, uint64_t off, uint32_t index,
			uint64_t *next, enum sec_next *what)
{
	struct btrace_section_info si = { 0 };
	const uint8_t *h = r->base + off, *payload;
	uint64_t stored, raw;
	uint32_t flags;
	int ret;

	r->sec_index = index;
	r->sec_type = 0;
	r->sec_off = off;
	r->payload_off = off + BT_SECTION_HEADER_SIZE;
	r->compressed = 0;
	si.offset = off;

	if (r->size - off < BT_SECTION_HEADER_SIZE) {
		*what = SEC_RETURN;
		return truncated_header(r, index);
	}
	if (bt_le32(h) != BT_SECTION_MAGIC ||
	    bt_le32(h + 36) != bt_crc32c(0, h, 36)) {
		bt_error(r->err, -BTRACE_ERR_FORMAT, "%s: read failed: "
			 "section %u header at file offset %llu is "
			 "damaged (bad magic or header checksum)",
			 r->name, index, (unsigned long long)off);
		*next = resync(r, off + 8);
		return damaged(r, &si, -BTRACE_ERR_FORMAT);
	}
	si.type = r->sec_type = bt_le32(h + 4);
	flags = bt_le32(h + 8);
	stored = bt_le64(h + 16);
	raw = bt_le64(h + 24);
	si.flags = (flags & BT_SECF_ZSTD) ? BTRACE_SECTION_ZSTD : 0;
	si.stored_size = stored;
	si.raw_size = raw;
	r->compressed = !!(flags & BT_SECF_ZSTD);

	if (stored > r->size - r->payload_off) {
		bt_error(r->err, -BTRACE_ERR_TRUNCATED, "%s: read "
			 "failed: section %u (%s) at file offset %llu "
			 "needs %llu bytes but the file ends after "
			 "%llu", r->name, index, sec_name_or_unknown(si.type),
			 (unsigned long long)off,
			 (unsigned long long)stored,
			 (unsigned long long)(r->size - r->payload_off));
		*what = SEC_RETURN;  /* nothing after this can be trusted */
		return damaged(r, &si, -BTRACE_ERR_TRUNCATED);
	}
	*next = r->payload_off + ((stored + 7) & ~7ull);
	if (*next > r->size)
		*next = r->size;
	payload = r->base + r->payload_off;

	ret = check_padding(r, &si, r->payload_off + stored, *next, index);
	if (ret || si.status)
		return ret;
	if (bt_crc32c(0, payload, (size_t)stored) != bt_le32(h + 12)) {
		bt_error(r->err, -BTRACE_ERR_CHECKSUM, "%s: read failed: "
			 "section %u (%s) at file offset %llu: payload "
			 "checksum mismatch", r->name, index,
			 sec_name_or_unknown(si.type), (unsigned long long)off);
		return damaged(r, &si, -BTRACE_ERR_CHECKSUM);
	}
	if (!btrace_section_name(si.type)) {
		add_section_info(r, &si);
		return warn(r, "section %u at file offset %llu has "
			    "unknown type %u: skipped", index,
			    (unsigned long long)off, si.type);
	}
	ret = load_payload(r, &si, flags, payload, stored, raw, index);
	if (ret)
		return ret;
	if (si.type == BT_SEC_END && !si.status) {
		r->sp->pub.complete = 1;
		*what = SEC_LAST;
		if (*next < r->size)
			return warn(r, "%llu bytes after the end marker "
				    "ignored", (unsigned long long)
				    (r->size - *next));
	}
	return 0;
}

static int parse_sections(struct rd *r)
{
	struct btrace_snapshot *s = &r->sp->pub;
	uint64_t off = BT_FILE_HEADER_SIZE;
	uint32_t index = 0;
	int ret;

	while (off < r->size) {
		enum sec_next what = SEC_GO_ON;

		ret = read_section(r, off, index, &off, &what);
		index++;
		if (ret || what == SEC_RETURN)
			return ret;
		if (what == SEC_LAST)
			break;
	}
	if (!s->complete) {
		bt_error(r->err, -BTRACE_ERR_TRUNCATED, "%s: read failed: no "
			 "end marker after %u sections: the file is truncated "
			 "(was the recording interrupted?)", r->name, index);
		if (!(r->flags & BTRACE_READ_LENIENT))
			return -BTRACE_ERR_TRUNCATED;
		return warn(r, "%s", r->err ? r->err->msg : "truncated");
	}
	return 0;
}

static int parse_header(struct rd *r)
{
	const uint8_t *h = r->base;
	struct btrace_snapshot *s = &r->sp->pub;

	if (r->size < BT_FILE_HEADER_SIZE || memcmp(h, BT_FILE_MAGIC, 8)) {
		bt_error(r->err, -BTRACE_ERR_FORMAT, "%s: read failed: not a "
			 "btrace snapshot (no btrace file header)", r->name);
		return -BTRACE_ERR_FORMAT;
	}
	if (bt_le32(h + 60) != bt_crc32c(0, h, 60)) {
		bt_error(r->err, -BTRACE_ERR_CHECKSUM, "%s: read failed: file "
			 "header (bytes 0-63) is damaged: checksum mismatch",
			 r->name);
		return -BTRACE_ERR_CHECKSUM;
	}
	if (bt_le32(h + 12) != BT_ENDIAN_MARKER) {
		bt_error(r->err, -BTRACE_ERR_FORMAT, "%s: read failed: "
			 "unexpected byte order marker 0x%08x", r->name,
			 bt_le32(h + 12));
		return -BTRACE_ERR_FORMAT;
	}
	s->format_major = bt_le16(h + 8);
	s->format_minor = bt_le16(h + 10);
	s->word_size = h[16];
	s->pointer_size = h[17];
	if (s->format_major != BTRACE_FORMAT_MAJOR) {
		bt_error(r->err, -BTRACE_ERR_VERSION, "%s: read failed: format "
			 "version %u.%u, this btrace reads version %u.x",
			 r->name, s->format_major, s->format_minor,
			 BTRACE_FORMAT_MAJOR);
		bt_hint(r->err, "use a btrace release that supports format "
			"%u", s->format_major);
		return -BTRACE_ERR_VERSION;
	}
	if (bt_le16(h + 18) != BT_FILE_HEADER_SIZE) {
		bt_error(r->err, -BTRACE_ERR_FORMAT, "%s: read failed: header "
			 "size %u, expected %u", r->name, bt_le16(h + 18),
			 BT_FILE_HEADER_SIZE);
		return -BTRACE_ERR_FORMAT;
	}
	return 0;
}

static int read_common(struct snap_priv *sp, const char *name, unsigned flags,
		       struct btrace_snapshot **out, struct btrace_error *err)
{
	struct btrace_error local;
	struct rd r = {
		.sp = sp,
		.base = sp->map,
		.size = sp->map_size,
		.flags = flags,
		.name = name,
		.err = err,
	};
	int ret;

	if (!err)
		r.err = err = &local;
	sp->pub.file_size = sp->map_size;
	ret = parse_header(&r);
	if (!ret)
		ret = parse_sections(&r);
	ZSTD_freeDCtx(r.zd);
	if (ret) {
		if (ret == -ENOMEM)
			bt_error(err, ret, "%s: read failed: out of memory",
				 name);
		btrace_snapshot_free(&sp->pub);
		return ret;
	}
	bt_error_clear(err);
	*out = &sp->pub;
	return 0;
}

int btrace_snapshot_read_mem(const void *data, size_t size, unsigned flags,
			     struct btrace_snapshot **out,
			     struct btrace_error *err)
{
	struct snap_priv *sp;

	if (!data || !out)
		return bt_error(err, -EINVAL, "snapshot: read failed: invalid "
				"argument");
	sp = calloc(1, sizeof(*sp));
	if (!sp)
		return bt_error(err, -ENOMEM, "snapshot: read failed: out of "
				"memory");
	sp->map = (void *)data;
	sp->map_size = size;
	*out = NULL;
	return read_common(sp, "(memory)", flags, out, err);
}

int btrace_snapshot_read(const char *path, unsigned flags,
			 struct btrace_snapshot **out,
			 struct btrace_error *err)
{
	struct snap_priv *sp;
	struct stat st;
	void *map;
	int fd, ret;

	if (!path || !out)
		return bt_error(err, -EINVAL, "snapshot: read failed: invalid "
				"argument");
	*out = NULL;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		return bt_error(err, ret, "%s: open failed: %s", path,
				strerror(-ret));
	}
	if (fstat(fd, &st) < 0) {
		ret = -errno;
		close(fd);
		return bt_error(err, ret, "%s: stat failed: %s", path,
				strerror(-ret));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return bt_error(err, -EINVAL, "%s: read failed: not a regular "
				"file", path);
	}
	if (st.st_size < BT_FILE_HEADER_SIZE) {
		close(fd);
		return bt_error(err, -BTRACE_ERR_FORMAT, "%s: read failed: %s "
				"(%lld bytes, shorter than a btrace header)",
				path, st.st_size ? "not a btrace snapshot" :
				"empty file", (long long)st.st_size);
	}
	map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE | MAP_POPULATE, fd, 0);
	ret = -errno;
	close(fd);
	if (map == MAP_FAILED)
		return bt_error(err, ret, "%s: mmap failed: %s", path,
				strerror(-ret));
	sp = calloc(1, sizeof(*sp));
	if (!sp) {
		munmap(map, (size_t)st.st_size);
		return bt_error(err, -ENOMEM, "%s: read failed: out of memory",
				path);
	}
	sp->map = map;
	sp->map_size = (size_t)st.st_size;
	sp->owns_map = 1;
	return read_common(sp, path, flags, out, err);
}

void btrace_snapshot_free(struct btrace_snapshot *snap)
{
	struct snap_priv *sp = (struct snap_priv *)snap;

	if (!sp)
		return;
	for (size_t i = 0; i < sp->nblocks; i++)
		free(sp->blocks[i]);
	free(sp->blocks);
	free(sp->pub.buffers);
	free(sp->pub.tasks);
	free(sp->pub.mappings);
	free(sp->pub.code);
	free(sp->pub.memory);
	free(sp->pub.access_logs);
	free(sp->pub.meta);
	free(sp->pub.sections);
	free(sp->pub.warnings);
	if (sp->owns_map)
		munmap(sp->map, sp->map_size);
	free(sp);
}

const char *btrace_snapshot_meta(const struct btrace_snapshot *snap,
				 const char *key)
{
	if (!snap || !key)
		return NULL;
	for (size_t i = snap->nmeta; i-- > 0;)
		if (!strcmp(snap->meta[i].key, key))
			return snap->meta[i].value;
	return NULL;
}
