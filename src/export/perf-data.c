// SPDX-License-Identifier: MIT
/*
 * perf.data writer (file mode, "PERFILE2", little endian) for perf's Intel
 * PT and Intel BTS decoders.  Layout:
 *
 *	header (104) | attr ids | attr | data | feature table | features
 *
 * One attr, the trace event (type = the PMU type also written in the
 * AUXTRACE_INFO, sample_id_all, sample_type IP|TID|IDENTIFIER, and TIME
 * when the trace has time (metadata time.tsc), one id).
 * Data: AUXTRACE_INFO, COMM per task, MMAP2 per executable mapping (with
 * its build ID), then the trace as AUXTRACE records, each cut at a packet
 * boundary.  Features: BUILD_ID, ARCH, CPUID (Intel CPUs), EVENT_DESC and
 * AUXTRACE (the index of the AUXTRACE records).  docs/export.md explains
 * each choice and how it was checked against perf.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <btrace/export.h>

#include "bts-ring.h"
#include "export-internal.h"
#include "util.h"

/* perf ABI values (include/uapi/linux/perf_event.h, tools/perf/util/). */
#define PERF_MAGIC 0x32454c4946524550ull   /* "PERFILE2" */
#define HDR_SIZE 104
#define ATTR_SIZE 128                      /* PERF_ATTR_SIZE_VER7; 6.1 reads <= 128 */
#define REC_MMAP2 10
#define REC_COMM 3
#define REC_BUILD_ID 67
#define REC_AUXTRACE_INFO 70
#define REC_AUXTRACE 71
#define MISC_USER 2
#define MISC_MMAP_BUILD_ID (1u << 14)
#define MISC_BUILD_ID_SIZE (1u << 15)
#define ST_IP (1ull << 0)
#define ST_TID (1ull << 1)
#define ST_TIME (1ull << 2)
#define ST_IDENTIFIER (1ull << 16)
#define AUXTRACE_INTEL_PT 1
#define AUXTRACE_INTEL_BTS 2
#define FEAT_BUILD_ID 2
#define FEAT_ARCH 6
#define FEAT_CPUID 9
#define FEAT_EVENT_DESC 12
#define FEAT_AUXTRACE 18
#define PERF_BUILD_ID_SIZE 20
#define NAME_ALIGN 64
#define SAMPLE_ID 1ull                      /* the one id of the attr */
#define PT_PRIV 17
#define BTS_PRIV 6
#define DEFAULT_PMU_TYPE 8
#define DEFAULT_CHUNK (1ull << 20)
#define BTS_REC 24
#define VDSO_NAME "/btrace/vdso.so"   /* the name perf sees for [vdso] */

struct pw {
	FILE *f;
	uint64_t pos;
	int failed;
	uint64_t *index;          /* file offsets of the AUXTRACE records */
	size_t nindex, capindex;
	uint32_t pmu_type;
	uint64_t config;
	const char *evname;
	struct btrace_export_result *res;
	/* The snapshot's TSC conversion (metadata time.tsc): perf decodes in
	 * time order and converts the TSC packets as btrace does. */
	int timed;
	uint64_t time_zero;
	uint32_t time_mult;
	uint16_t time_shift;
};

static void put(struct pw *w, const void *p, size_t n)
{
	if (w->failed || !n)
		return;
	if (fwrite(p, 1, n, w->f) != n)
		w->failed = errno ? errno : EIO;
	w->pos += n;
}

static void put_zeros(struct pw *w, size_t n)
{
	static const uint8_t z[64];

	while (n) {
		size_t k = n < sizeof(z) ? n : sizeof(z);

		put(w, z, k);
		n -= k;
	}
}

static void put_u64(struct pw *w, uint64_t v)
{
	uint8_t b[8];

	bt_put64(b, v);
	put(w, b, 8);
}

static void put_u32(struct pw *w, uint32_t v)
{
	uint8_t b[4];

	bt_put32(b, v);
	put(w, b, 4);
}

static void put_hdr(struct pw *w, uint32_t type, uint16_t misc, uint16_t size)
{
	put_u32(w, type);
	uint8_t b[4];

	bt_put16(b, misc);
	bt_put16(b + 2, size);
	put(w, b, 4);
}

/* perf_header_string: u32 len (NAME_ALIGN-padded, with the NUL), bytes. */
static void put_string(struct pw *w, const char *s)
{
	size_t n = strlen(s) + 1, len = (n + NAME_ALIGN - 1) & ~(size_t)(NAME_ALIGN - 1);

	put_u32(w, (uint32_t)len);
	put(w, s, n);
	put_zeros(w, len - n);
}

/* sample_id trailer for sample_type IP|TID|IDENTIFIER: pid, tid, id;
 * with time (IP|TID|TIME|IDENTIFIER) the time goes after the tid: 0, so
 * the tasks and mappings come before any trace. */
static void put_trailer(struct pw *w, int32_t pid, int32_t tid)
{
	put_u32(w, (uint32_t)pid);
	put_u32(w, (uint32_t)tid);
	if (w->timed)
		put_u64(w, 0);
	put_u64(w, SAMPLE_ID);
}

static uint16_t trailer_size(const struct pw *w)
{
	return w->timed ? 24 : 16;
}

static void note(struct btrace_export_result *res, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static void note(struct btrace_export_result *res, const char *fmt, ...)
{
	va_list ap;

	if (res->nnotes >= BTRACE_EXPORT_MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(res->notes[res->nnotes++], sizeof(res->notes[0]), fmt, ap);
	va_end(ap);
}

static void put_attr(struct pw *w, int bts)
{
	uint8_t a[ATTR_SIZE];
	uint64_t flags = 0;

	memset(a, 0, sizeof(a));
	bt_put32(a + 0, w->pmu_type);
	bt_put32(a + 4, ATTR_SIZE);
	bt_put64(a + 8, w->config);
	bt_put64(a + 16, 1);                         /* sample_period */
	bt_put64(a + 24, ST_IP | ST_TID | ST_IDENTIFIER |
		 (w->timed ? ST_TIME : 0));
	flags |= 1ull << 0;                          /* disabled */
	flags |= 1ull << 5;                          /* exclude_kernel */
	flags |= 1ull << 6;                          /* exclude_hv */
	flags |= 1ull << 12;                         /* enable_on_exec */
	flags |= 1ull << 18;                         /* sample_id_all */
	(void)bts;
	bt_put64(a + 40, flags);
	put(w, a, sizeof(a));
}

static void put_auxtrace_info(struct pw *w, const struct btrace_snapshot *s,
			      int bts, int per_cpu)
{
	const struct btrace_config *c = &s->config;
	uint64_t priv[PT_PRIV];
	unsigned int n = bts ? BTS_PRIV : PT_PRIV;

	memset(priv, 0, sizeof(priv));
	priv[0] = w->pmu_type;           /* PMU_TYPE: must equal attr.type */
	priv[1] = 31;                    /* TIME_SHIFT */
	priv[2] = 1ull << 31;            /* TIME_MULT */
	priv[3] = 0;                     /* TIME_ZERO */
	priv[4] = 0;                     /* CAP_USER_TIME_ZERO: timeless */
	if (w->timed) {
		/* perf's TSC conversion = the snapshot's (time.tsc) */
		priv[1] = w->time_shift;
		priv[2] = w->time_mult;
		priv[3] = w->time_zero;
		priv[4] = 1;
	}
	if (bts) {
		priv[5] = 0;             /* SNAPSHOT_MODE */
	} else {
		priv[5] = c->tsc_bit ? c->tsc_bit : 0x400;
		priv[6] = c->noretcomp_bit ? c->noretcomp_bit : 0x800;
		priv[7] = 0;             /* HAVE_SCHED_SWITCH */
		priv[8] = 0;             /* SNAPSHOT_MODE: one stream per buffer */
		priv[9] = (uint64_t)per_cpu; /* PER_CPU_MMAPS */
		priv[10] = c->mtc_bit ? c->mtc_bit : 0x200;
		priv[11] = 0x3c000;      /* MTC_FREQ_BITS: config bits 14-17 */
		priv[12] = c->cpuid_0x15_ebx;    /* TSC_CTC_N */
		priv[13] = c->cpuid_0x15_eax;    /* TSC_CTC_D */
		priv[14] = c->cyc_bit ? c->cyc_bit : 0x2;
		priv[15] = c->nom_freq;  /* MAX_NONTURBO_RATIO */
		priv[16] = 0;            /* FILTER_STR_LEN */
	}
	put_hdr(w, REC_AUXTRACE_INFO, 0, (uint16_t)(16 + 8 * n));
	put_u32(w, bts ? AUXTRACE_INTEL_BTS : AUXTRACE_INTEL_PT);
	put_u32(w, 0);
	for (unsigned int i = 0; i < n; i++)
		put_u64(w, priv[i]);
}

static void put_comm(struct pw *w, int32_t pid, int32_t tid, const char *comm)
{
	char name[16];
	size_t n, padded;

	snprintf(name, sizeof(name), "%s", comm && *comm ? comm : "?");
	n = strlen(name) + 1;
	padded = (n + 7) & ~(size_t)7;
	put_hdr(w, REC_COMM, 0, (uint16_t)(8 + 8 + padded + trailer_size(w)));
	put_u32(w, (uint32_t)pid);
	put_u32(w, (uint32_t)tid);
	put(w, name, n);
	put_zeros(w, padded - n);
	put_trailer(w, pid, tid);
}

static void put_mmap2(struct pw *w, const struct btrace_mapping *m, int32_t pid,
		      const char *path, int with_bid)
{
	size_t n = strlen(path) + 1, padded = (n + 7) & ~(size_t)7;
	uint16_t misc = MISC_USER;
	uint8_t u[24];

	memset(u, 0, sizeof(u));
	if (with_bid) {
		misc |= MISC_MMAP_BUILD_ID;
		u[0] = (uint8_t)m->build_id_size;
		memcpy(u + 4, m->build_id, m->build_id_size);
	} else {
		bt_put32(u, (uint32_t)(m->dev >> 8 & 0xfff) |
			 (uint32_t)(m->dev >> 32 & ~0xfffu));   /* major */
		bt_put32(u + 4, (uint32_t)(m->dev & 0xff) |
			 (uint32_t)(m->dev >> 12 & ~0xffu));    /* minor */
		bt_put64(u + 8, m->ino);
	}
	put_hdr(w, REC_MMAP2, misc, (uint16_t)(8 + 8 + 24 + 24 + 8 + padded +
						trailer_size(w)));
	put_u32(w, (uint32_t)pid);
	put_u32(w, (uint32_t)pid);
	put_u64(w, m->start);
	put_u64(w, m->end - m->start);
	put_u64(w, m->pgoff);
	put(w, u, sizeof(u));
	put_u32(w, m->prot);
	put_u32(w, m->flags ? m->flags : 2 /* MAP_PRIVATE */);
	put(w, path, n);
	put_zeros(w, padded - n);
	put_trailer(w, pid, pid);
	w->res->nmmaps++;
}

/* One AUXTRACE record: the 48-byte header, then @n bytes padded to 8. */
static int put_auxtrace(struct pw *w, const uint8_t *p, uint64_t n,
			uint64_t *offset, uint32_t idx, int32_t tid, int32_t cpu,
			int bts)
{
	/* BTS: perf 6.1's intel_bts_process_buffer() loops "while sz > 24",
	 * so it never reads the last record of a buffer: end each one with
	 * an all-zero record, which it skips anyway. */
	uint64_t padded = bts ? n + BTS_REC : (n + 7) & ~7ull;

	if (bt_grow((void **)&w->index, &w->capindex, w->nindex + 1,
		    sizeof(*w->index)))
		return -ENOMEM;
	w->index[w->nindex++] = w->pos;
	put_hdr(w, REC_AUXTRACE, 0, 48);
	put_u64(w, padded);
	put_u64(w, *offset);
	/* reference: perf's intel_bts queues a buffer by it and processes
	 * every queue whose reference is <= the time of the event being
	 * delivered (0 without PERF_SAMPLE_TIME): with 0 it decodes before
	 * the first COMM reaches the machine and finds no thread.  1 defers
	 * it to the final flush.  Intel PT timeless ignores it; Intel PT with
	 * time crashed (SIGSEGV in perf 6.1) with 0 and decodes with 1, which
	 * is also the top byte (0) its decoder gives the 7-byte TSC packets. */
	put_u64(w, bts || w->timed ? 1 : 0);
	put_u32(w, idx);
	put_u32(w, (uint32_t)tid);
	put_u32(w, (uint32_t)cpu);      /* -1: per-thread */
	put_u32(w, 0);
	put(w, p, (size_t)n);
	put_zeros(w, (size_t)(padded - n));   /* PT: PAD packets */
	*offset += padded;
	w->res->nchunks++;
	w->res->trace_bytes += n;
	return 0;
}

static const struct btrace_task *find_task(const struct btrace_snapshot *s,
					   int32_t tid)
{
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].tid == tid)
			return &s->tasks[i];
	return NULL;
}

static int32_t main_pid(const struct btrace_snapshot *s)
{
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].pid > 0)
			return s->tasks[i].pid;
	for (size_t i = 0; i < s->nmappings; i++)
		if (s->mappings[i].pid > 0)
			return s->mappings[i].pid;
	for (size_t i = 0; i < s->nbuffers; i++)
		if (s->buffers[i].tid > 0)
			return s->buffers[i].tid;
	return 1;
}

/* The thread a buffer's trace belongs to, -1 if perf cannot know. */
static int32_t buffer_tid(const struct btrace_snapshot *s,
			  const struct btrace_buffer *b)
{
	if (b->tid > 0)
		return b->tid;
	if (s->ntasks == 1)
		return s->tasks[0].tid;
	return -1;
}

static int put_pt_buffer(struct pw *w, const struct btrace_buffer *b,
			 size_t bi, uint32_t idx, int32_t tid, uint64_t max_chunk,
			 struct btrace_error *err)
{
	struct bt_pt_cuts cuts;
	uint64_t start, offset = 0;
	int rc;

	rc = bt_export_pt_cuts(b->data, b->size, max_chunk, &cuts);
	if (rc == -BTRACE_ERR_NOSYNC) {
		note(w->res, "buffer %zu (tid %d): no PSB in %llu bytes: left out",
		     bi, (int)b->tid, (unsigned long long)b->size);
		w->res->nskipped++;
		w->res->dropped_bytes += b->size;
		return 0;
	}
	if (rc < 0)
		return bt_error(err, rc, "buffer %zu: find packet boundaries failed: %s",
				bi, btrace_strerror(rc));
	if (cuts.first_psb) {
		note(w->res, "buffer %zu (tid %d): %llu bytes before the first PSB dropped%s",
		     bi, (int)b->tid, (unsigned long long)cuts.first_psb,
		     (b->flags & BTRACE_BUF_WRAPPED) ? " (the ring wrapped)" : "");
		w->res->dropped_bytes += cuts.first_psb;
	}
	if (cuts.bad_packets)
		note(w->res, "buffer %zu (tid %d): %llu undecodable packet runs kept as they are; perf resyncs at the next PSB",
		     bi, (int)b->tid, (unsigned long long)cuts.bad_packets);
	start = cuts.first_psb;
	for (size_t i = 0; i < cuts.ncuts && !rc; i++) {
		rc = put_auxtrace(w, b->data + start, cuts.cuts[i] - start,
				  &offset, idx, tid, b->cpu, 0);
		start = cuts.cuts[i];
	}
	bt_export_pt_cuts_free(&cuts);
	if (rc)
		return bt_error(err, rc, "buffer %zu: write failed: %s", bi,
				btrace_strerror(rc));
	w->res->nbuffers++;
	return 0;
}

/* BTS: whole 24-byte records, all-zero (padding) records left out. */
static int put_bts_buffer(struct pw *w, const struct btrace_buffer *b,
			  size_t bi, uint32_t idx, int32_t tid, uint64_t max_chunk,
			  struct btrace_error *err)
{
	uint64_t nrec = b->size / BTS_REC, offset = 0, chunk_recs;
	uint64_t tail_at = 0, tail_len = 0;
	uint8_t *out;
	size_t n = 0;
	int rc = 0;

	/* A wrapped ring stored by an older btrace: the never-written tail
	 * of the ring lies between the records (bts-ring.h). */
	if (bt_bts_stored_tail(b, &tail_at, &tail_len))
		nrec = (b->size - tail_len) / BTS_REC;
	else if (b->size % BTS_REC)
		note(w->res, "buffer %zu (tid %d): %llu trailing bytes are not a whole BTS record: left out",
		     bi, (int)b->tid, (unsigned long long)(b->size % BTS_REC));
	if (!nrec) {
		w->res->nskipped++;
		return 0;
	}
	chunk_recs = max_chunk / BTS_REC ? max_chunk / BTS_REC : 1;
	out = malloc((size_t)(chunk_recs * BTS_REC));
	if (!out)
		return bt_error(err, -ENOMEM, "buffer %zu: export failed: %s", bi,
				btrace_strerror(-ENOMEM));
	for (uint64_t r = 0; r < nrec && !rc; r++) {
		uint64_t at = r * BTS_REC;
		const uint8_t *p = b->data + (tail_len && at >= tail_at ?
					      at + tail_len : at);

		if (!bt_le64(p) && !bt_le64(p + 8)) {
			w->res->dropped_bytes += BTS_REC;
			continue;
		}
		memcpy(out + n, p, BTS_REC);
		n += BTS_REC;
		if (n == chunk_recs * BTS_REC) {
			rc = put_auxtrace(w, out, n, &offset, idx, tid, b->cpu, 1);
			n = 0;
		}
	}
	if (!rc && n)
		rc = put_auxtrace(w, out, n, &offset, idx, tid, b->cpu, 1);
	free(out);
	if (rc)
		return bt_error(err, rc, "buffer %zu: write failed: %s", bi,
				btrace_strerror(rc));
	w->res->nbuffers++;
	return 0;
}

/* [vsyscall] and other kernel-half mappings: user-only traces never
 * enter them, perf has no user map there. */
static int is_kernel(const struct btrace_mapping *m)
{
	return m->start >= 0x800000000000ull;
}

static int is_vdso(const char *p)
{
	return p && !strcmp(p, "[vdso]");
}

static int has_code_at(const struct btrace_snapshot *s, uint32_t kind,
		       uint64_t start, uint64_t end, const struct btrace_code **c)
{
	for (size_t i = 0; i < s->ncode; i++)
		if (s->code[i].kind == kind && s->code[i].vaddr >= start &&
		    s->code[i].vaddr < end) {
			*c = &s->code[i];
			return 1;
		}
	return 0;
}

/* Same file as an earlier mapping (by build ID, else by path)? */
static int seen_before(const struct btrace_snapshot *s, size_t mi)
{
	const struct btrace_mapping *m = &s->mappings[mi];

	for (size_t i = 0; i < mi; i++) {
		const struct btrace_mapping *o = &s->mappings[i];

		if (!(o->prot & 4))
			continue;
		if (m->build_id_size && o->build_id_size == m->build_id_size &&
		    !memcmp(o->build_id, m->build_id, m->build_id_size))
			return 1;
	}
	return 0;
}

struct mmap_plan {
	char path[PATH_MAX];
	int with_bid;
};

/* Decide what perf sees for mapping @mi and fill the cache for it. */
static int plan_mapping(struct pw *w, const struct btrace_snapshot *s,
			size_t mi, struct bt_cache *cache, unsigned flags,
			struct mmap_plan *p, struct btrace_error *err)
{
	const struct btrace_mapping *m = &s->mappings[mi];
	const char *path = m->path && *m->path ? m->path : "//anon";
	const struct btrace_code *c;
	int rc, rebuilt = 0;

	snprintf(p->path, sizeof(p->path), "%s", path);
	p->with_bid = m->build_id_size > 0 && m->build_id_size <= PERF_BUILD_ID_SIZE;
	if (m->build_id_size > PERF_BUILD_ID_SIZE)
		note(w->res, "%s: build ID of %u bytes is longer than perf's %d: written without it",
		     path, m->build_id_size, PERF_BUILD_ID_SIZE);
	if (!cache)
		return 0;

	if (is_vdso(path) && m->build_id_size &&
	    has_code_at(s, BTRACE_CODE_VDSO, m->start, m->end, &c)) {
		/* The vDSO image is an ELF file: cache it as it is, under a
		 * file name.  perf 6.1 does not decode in a map named
		 * "[vdso]" from the cache with --symfs ("Failed to get
		 * instruction"); a regular file name with the build ID
		 * works both with --symfs and with --buildid-dir. */
		char name[PATH_MAX], sbid[2 * BTRACE_BUILD_ID_MAX + 1], abs[PATH_MAX];

		for (uint32_t i = 0; i < m->build_id_size; i++)
			sprintf(sbid + 2 * i, "%02x", m->build_id[i]);
		snprintf(name, sizeof(name), "%s/%s/elf", &VDSO_NAME[1], sbid);
		rc = bt_cache_add_raw(cache, name, c->data, c->size, abs,
				      sizeof(abs), err);
		if (!rc)
			rc = bt_cache_link(cache, sbid, &VDSO_NAME[1], err);
		if (rc)
			return rc;
		snprintf(p->path, sizeof(p->path), "%s", VDSO_NAME);
		w->res->nbinaries++;
		return 0;
	}
	if (is_vdso(path) || !m->path || m->path[0] != '/') {
		/* vDSO without build ID, anonymous (JIT) code: perf reads
		 * code only from files, so give it one with the bytes. */
		uint32_t kind = is_vdso(path) ? BTRACE_CODE_VDSO : BTRACE_CODE_ANON;
		char name[64], abs[PATH_MAX];
		uint64_t size = m->end - m->start;
		uint8_t *buf;

		if (!has_code_at(s, kind, m->start, m->end, &c)) {
			note(w->res, "%s at 0x%llx: no embedded code; perf cannot decode there",
			     path, (unsigned long long)m->start);
			return 0;
		}
		if (size > (1ull << 30))
			return 0;
		buf = calloc(1, (size_t)size);
		if (!buf)
			return bt_error(err, -ENOMEM, "%s: export failed: %s", path,
					btrace_strerror(-ENOMEM));
		for (size_t i = 0; i < s->ncode; i++) {
			const struct btrace_code *k = &s->code[i];

			if (k->kind != kind || k->vaddr < m->start || k->vaddr >= m->end)
				continue;
			memcpy(buf + (k->vaddr - m->start), k->data,
			       k->size < m->end - k->vaddr ? k->size : m->end - k->vaddr);
		}
		snprintf(name, sizeof(name), "code/%d-%llx.bin", (int)m->pid,
			 (unsigned long long)m->start);
		rc = bt_cache_add_raw(cache, name, buf, size, abs, sizeof(abs), err);
		free(buf);
		if (rc)
			return rc;
		note(w->res, "%s at 0x%llx: code written to %s, the name perf sees",
		     path, (unsigned long long)m->start, abs);
		snprintf(p->path, sizeof(p->path), "%s", abs);
		p->with_bid = 0;
		/* pgoff 0: the file holds the mapping from its start */
		w->res->nbinaries++;
		return 1;
	}
	if (!m->build_id_size) {
		note(w->res, "%s: no build ID recorded: perf reads the file on disk, if any",
		     path);
		return 0;
	}
	if (seen_before(s, mi))
		return 0;
	rc = bt_cache_add(cache, s, path, m->build_id, m->build_id_size,
			  !!(flags & BTRACE_EXPORT_USE_DISK), &rebuilt, err);
	if (rc < 0)
		return rc;
	if (rc == 1) {
		note(w->res, "%s: no embedded code%s: perf reads the file on disk, if any",
		     path, (flags & BTRACE_EXPORT_USE_DISK) ?
		     " and no file with its build ID" : "");
		return 0;
	}
	w->res->nbinaries++;
	w->res->nrebuilt += (uint32_t)rebuilt;
	return 0;
}

static void put_build_ids(struct pw *w, const struct btrace_snapshot *s)
{
	for (size_t i = 0; i < s->nmappings; i++) {
		const struct btrace_mapping *m = &s->mappings[i];
		const char *path = m->path ? m->path : "";
		size_t n, len;

		if (is_vdso(path))
			path = VDSO_NAME;

		if (!(m->prot & 4) || !m->build_id_size ||
		    m->build_id_size > PERF_BUILD_ID_SIZE || seen_before(s, i) ||
		    (path[0] != '/' && !is_vdso(path)))
			continue;
		n = strlen(path) + 1;
		len = (n + NAME_ALIGN - 1) & ~(size_t)(NAME_ALIGN - 1);
		put_hdr(w, REC_BUILD_ID, MISC_USER | MISC_BUILD_ID_SIZE,
			(uint16_t)(8 + 4 + 24 + len));
		put_u32(w, (uint32_t)-1);               /* HOST_KERNEL_ID */
		put(w, m->build_id, m->build_id_size);
		put_zeros(w, PERF_BUILD_ID_SIZE - m->build_id_size);
		put(w, (uint8_t[4]){ (uint8_t)m->build_id_size, 0, 0, 0 }, 4);
		put(w, path, n);
		put_zeros(w, len - n);
	}
}

static void put_event_desc(struct pw *w, int bts)
{
	put_u32(w, 1);
	put_u32(w, ATTR_SIZE);
	put_attr(w, bts);
	put_u32(w, 1);
	put_string(w, w->evname);
	put_u64(w, SAMPLE_ID);
}

static int fail_io(struct pw *w, const char *tmp, struct btrace_error *err)
{
	int e = w->failed ? w->failed : EIO;

	return bt_error(err, -e, "%s: write perf.data failed: %s", tmp,
			btrace_strerror(-e));
}

/* What perf can represent: one trace kind (*@bts), x86-64; whether a
 * buffer is per CPU (*@per_cpu). */
static int check_snapshot(const struct btrace_snapshot *snap, const char *out,
			  int *bts, int *per_cpu, struct btrace_error *err)
{
	*bts = snap->has_config ? snap->config.trace_kind == BTRACE_TRACE_BTS :
	       snap->nbuffers && snap->buffers[0].kind == BTRACE_TRACE_BTS;
	for (size_t i = 0; i < snap->nbuffers; i++) {
		uint32_t k = snap->buffers[i].kind;

		if (k != BTRACE_TRACE_PT && k != BTRACE_TRACE_BTS)
			return bt_error(err, -BTRACE_ERR_UNSUPPORTED,
					"%s: perf.data export failed: buffer %zu has unknown trace kind %u",
					out, i, k);
		if ((k == BTRACE_TRACE_BTS) != *bts) {
			bt_error(err, -BTRACE_ERR_UNSUPPORTED,
				 "%s: perf.data export failed: the snapshot mixes Intel PT and BTS buffers",
				 out);
			return bt_hint(err, "perf.data holds one kind of AUX trace; export with --tid to pick one thread");
		}
		if (snap->buffers[i].cpu >= 0)
			*per_cpu = 1;
	}
	if (snap->word_size && snap->word_size != 8)
		return bt_error(err, -BTRACE_ERR_UNSUPPORTED,
				"%s: perf.data export failed: %u-bit programs are not supported (only x86-64)",
				out, snap->word_size * 8);
	return 0;
}

/* The build-ID cache (OUT.symfs/.debug unless told), named in @res. */
static int open_cache(const char *out, const struct btrace_export_opts *opts,
		      struct btrace_export_result *res, struct bt_cache **cache,
		      struct btrace_error *err)
{
	const char *dir = opts->buildid_dir;
	char dirbuf[PATH_MAX];
	size_t dl;
	int rc;

	if (!dir) {
		snprintf(dirbuf, sizeof(dirbuf), "%s.symfs/.debug", out);
		dir = dirbuf;
	}
	rc = bt_cache_open(dir, cache, err);
	if (rc)
		return rc;
	snprintf(res->buildid_dir, sizeof(res->buildid_dir), "%s",
		 bt_cache_dir(*cache));
	dl = strlen(res->buildid_dir);
	if (dl > 7 && !strcmp(res->buildid_dir + dl - 7, "/.debug"))
		snprintf(res->symfs_dir, sizeof(res->symfs_dir), "%.*s",
			 (int)(dl - 7), res->buildid_dir);
	return 0;
}

/* A plan (name, build ID) for every executable user mapping, in *@out. */
static int plan_mappings(struct pw *w, const struct btrace_snapshot *snap,
			 const char *out, struct bt_cache *cache, uint32_t flags,
			 struct mmap_plan **planp, struct btrace_error *err)
{
	struct mmap_plan *plan;
	int rc;

	plan = calloc(snap->nmappings ? snap->nmappings : 1, sizeof(*plan));
	*planp = plan;
	if (!plan)
		return bt_error(err, -ENOMEM, "%s: export failed: %s", out,
				btrace_strerror(-ENOMEM));
	for (size_t i = 0; i < snap->nmappings; i++) {
		if (!(snap->mappings[i].prot & 4) || is_kernel(&snap->mappings[i]))
			continue;
		rc = plan_mapping(w, snap, i, cache, flags, &plan[i], err);
		if (rc < 0)
			return rc;
		if (rc == 1)
			plan[i].with_bid = -1;     /* pgoff 0 in our own file */
	}
	return 0;
}

/* The temporary file @tmp (OUT.tmpXXXXXX, mode 0600) as w->f. */
static int create_tmp(struct pw *w, const char *out, char *tmp, size_t len,
		      struct btrace_error *err)
{
	int fd;

	snprintf(tmp, len, "%s.tmpXXXXXX", out);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return bt_error(err, -errno, "%s: create perf.data failed: %s", tmp,
				btrace_strerror(-errno));
	fchmod(fd, 0600);
	w->f = fdopen(fd, "wb");
	if (!w->f) {
		close(fd);
		unlink(tmp);
		return bt_error(err, -ENOMEM, "%s: create perf.data failed: %s", tmp,
				btrace_strerror(-ENOMEM));
	}
	return 0;
}

/* AUXTRACE_INFO, then COMM (thread group leaders first, then the other
 * threads, then threads known only from a buffer) and MMAP2 records. */
static void put_tasks_and_maps(struct pw *w, const struct btrace_snapshot *snap,
			       const struct mmap_plan *plan, int32_t pid,
			       int bts, int per_cpu)
{
	put_auxtrace_info(w, snap, bts, per_cpu);
	for (int pass = 0; pass < 2; pass++)
		for (size_t i = 0; i < snap->ntasks; i++) {
			const struct btrace_task *t = &snap->tasks[i];

			if ((t->pid == t->tid) == (pass == 0))
				put_comm(w, t->pid, t->tid, t->comm);
		}
	for (size_t i = 0; i < snap->nbuffers; i++) {
		int32_t tid = buffer_tid(snap, &snap->buffers[i]);

		if (tid > 0 && !find_task(snap, tid))
			put_comm(w, pid, tid, NULL);
	}
	for (size_t i = 0; i < snap->nmappings; i++) {
		const struct btrace_mapping *m = &snap->mappings[i];

		if (!(m->prot & 4) || is_kernel(m))
			continue;
		if (plan[i].with_bid < 0) {
			struct btrace_mapping m0 = *m;

			m0.pgoff = 0;
			put_mmap2(w, &m0, m->pid > 0 ? m->pid : pid, plan[i].path, 0);
		} else {
			put_mmap2(w, m, m->pid > 0 ? m->pid : pid, plan[i].path,
				  plan[i].with_bid);
		}
	}
}

/* The trace buffers (of thread opts->tid only when set) as AUXTRACE
 * records; fails when none could be written. */
static int put_buffers(struct pw *w, const struct btrace_snapshot *snap,
		       const char *out, const struct btrace_export_opts *opts,
		       int bts, struct btrace_error *err)
{
	struct btrace_export_result *res = w->res;
	uint64_t max_chunk = opts->max_chunk ? opts->max_chunk : DEFAULT_CHUNK;
	uint32_t idx = 0;
	int rc = 0;

	for (size_t i = 0; i < snap->nbuffers && !rc; i++) {
		const struct btrace_buffer *b = &snap->buffers[i];
		int32_t tid = buffer_tid(snap, b);

		if (opts->tid && b->tid != opts->tid)
			continue;
		if (!b->size) {
			res->nskipped++;
			continue;
		}
		if (tid < 0) {
			note(res, "buffer %zu: per-cpu trace of several threads; perf needs context-switch records btrace does not have: left out",
			     i);
			res->nskipped++;
			continue;
		}
		if (bts)
			rc = put_bts_buffer(w, b, i, idx++, tid, max_chunk, err);
		else
			rc = put_pt_buffer(w, b, i, idx++, tid, max_chunk, err);
	}
	if (rc)
		return rc;
	if (!res->nbuffers) {
		rc = bt_error(err, -BTRACE_ERR_UNSUPPORTED,
			      "%s: perf.data export failed: no trace buffer perf could decode%s",
			      out, opts->tid ? " for this thread" : "");
		if (res->nnotes)
			bt_hint(err, "%s", res->notes[res->nnotes - 1]);
	}
	return rc;
}

static const uint64_t feats[] = { FEAT_BUILD_ID, FEAT_ARCH, FEAT_CPUID,
				  FEAT_EVENT_DESC, FEAT_AUXTRACE };

/* One feature section (none: 0). */
static int put_feature(struct pw *w, const struct btrace_snapshot *snap,
		       uint64_t feat, int bts, int intel)
{
	switch (feat) {
	case FEAT_BUILD_ID:
		put_build_ids(w, snap);
		break;
	case FEAT_ARCH:
		put_string(w, "x86_64");
		break;
	case FEAT_CPUID: {
		char cpuid[64];

		if (!intel)
			return 0;
		snprintf(cpuid, sizeof(cpuid), "GenuineIntel,%u,%u,%u",
			 snap->config.cpu_family, snap->config.cpu_model,
			 snap->config.cpu_stepping);
		put_string(w, cpuid);
		break;
	}
	case FEAT_EVENT_DESC:
		put_event_desc(w, bts);
		break;
	case FEAT_AUXTRACE:
		put_u64(w, w->nindex);
		for (size_t j = 0; j < w->nindex; j++) {
			put_u64(w, w->index[j]);
			put_u64(w, 48);
		}
		break;
	}
	return 1;
}

/*
 * The features after the data: the section table, then each feature (CPUID
 * on Intel CPUs only), then the table filled in.  Their bits in @bitmap.
 */
static void put_features(struct pw *w, const struct btrace_snapshot *snap,
			 int bts, uint64_t bitmap[4])
{
	int intel = snap->config.cpu_vendor == BTRACE_CPU_INTEL;
	uint64_t sec[BT_ARRAY_SIZE(feats)][2], feat_off = w->pos;
	size_t nfeat = 0, k = 0;

	for (size_t i = 0; i < BT_ARRAY_SIZE(feats); i++)
		if (feats[i] != FEAT_CPUID || intel)
			nfeat++;
	put_zeros(w, nfeat * 16);
	for (size_t i = 0; i < BT_ARRAY_SIZE(feats); i++) {
		uint64_t start = w->pos;

		if (!put_feature(w, snap, feats[i], bts, intel))
			continue;
		bitmap[feats[i] / 64] |= 1ull << (feats[i] % 64);
		sec[k][0] = start;
		sec[k][1] = w->pos - start;
		k++;
	}
	if (w->failed)
		return;
	if (fseek(w->f, (long)feat_off, SEEK_SET)) {
		w->failed = errno;
		return;
	}
	w->pos = feat_off;
	for (size_t i = 0; i < k; i++) {
		put_u64(w, sec[i][0]);
		put_u64(w, sec[i][1]);
	}
}

/* The file header, rewritten now that the data and features are known;
 * then the file synced and closed. */
static void put_header(struct pw *w, uint64_t data_off, uint64_t data_size,
		       const uint64_t bitmap[4])
{
	if (fseek(w->f, 0, SEEK_SET)) {
		w->failed = errno;
		return;
	}
	w->pos = 0;
	put_u64(w, PERF_MAGIC);
	put_u64(w, HDR_SIZE);
	put_u64(w, ATTR_SIZE + 16);
	put_u64(w, HDR_SIZE + 8);        /* attrs */
	put_u64(w, ATTR_SIZE + 16);
	put_u64(w, data_off);            /* data */
	put_u64(w, data_size);
	put_u64(w, 0);                   /* event_types */
	put_u64(w, 0);
	for (int i = 0; i < 4; i++)
		put_u64(w, bitmap[i]);
	if (w->failed)
		return;
	if (fflush(w->f) || fsync(fileno(w->f))) {
		w->failed = errno;
		return;
	}
	if (fclose(w->f)) {
		w->f = NULL;
		w->failed = errno;
		return;
	}
	w->f = NULL;
}

static int export_perf_data(const struct btrace_snapshot *snap,
			    const char *out,
			    const struct btrace_export_opts *opts_in,
			    struct btrace_export_result *res,
			    struct btrace_error *err)
{
	struct btrace_export_opts opts = { .sz = sizeof(opts) };
	struct pw w = { 0 };
	struct bt_cache *cache = NULL;
	struct mmap_plan *plan = NULL;
	char tmp[PATH_MAX + 32];
	uint64_t data_off, data_size;
	uint64_t bitmap[4] = { 0 };
	int bts, per_cpu = 0, rc;
	int32_t pid;
	struct stat st;

	memset(res, 0, sizeof(*res));
	bt_error_clear(err);
	if (opts_in && (rc = bt_opts_copy(&opts, sizeof(opts), opts_in,
					  "export options", err)) < 0)
		return rc;
	if (!snap || !out || !*out)
		return bt_error(err, -EINVAL, "perf.data export failed: no snapshot or no output name");
	rc = check_snapshot(snap, out, &bts, &per_cpu, err);
	if (rc)
		return rc;
	if (!snap->has_config)
		note(res, "snapshot has no trace config: perf gets default Intel PT config bits");
	if (snap->config.cpu_vendor != BTRACE_CPU_INTEL)
		note(res, "trace not from an Intel CPU: no HEADER_CPUID, perf applies no errata");

	w.res = res;
	res->trace_kind = bts ? BTRACE_TRACE_BTS : BTRACE_TRACE_PT;
	w.evname = bts ? "intel_bts//u" : "intel_pt//u";
	w.pmu_type = snap->config.pmu_type >= 6 ? snap->config.pmu_type :
		     DEFAULT_PMU_TYPE;
	w.config = snap->config.pt_config;
	if (!bts && !w.config)
		w.config = 0x2001;                     /* pt, branch_en */
	/* time: perf converts the TSC packets as the decoder does */
	if (!bts && snap->config.tsc_bit && (w.config & snap->config.tsc_bit) &&
	    !bt_time_tsc_parse(btrace_snapshot_meta(snap, "time.tsc"),
			       &w.time_zero, &w.time_mult, &w.time_shift))
		w.timed = 1;
	pid = main_pid(snap);

	if (!(opts.flags & BTRACE_EXPORT_FORCE) && !lstat(out, &st)) {
		bt_error(err, -EEXIST, "%s: write perf.data failed: the file exists",
			 out);
		return bt_hint(err, "remove it, or use --force to replace it");
	}
	if (!(opts.flags & BTRACE_EXPORT_NO_CACHE) &&
	    (rc = open_cache(out, &opts, res, &cache, err)))
		return rc;
	rc = plan_mappings(&w, snap, out, cache, opts.flags, &plan, err);
	if (rc)
		goto out_free;
	rc = create_tmp(&w, out, tmp, sizeof(tmp), err);
	if (rc)
		goto out_free;

	/* header (rewritten at the end), ids, attr */
	put_zeros(&w, HDR_SIZE);
	put_u64(&w, SAMPLE_ID);
	put_attr(&w, bts);
	put_u64(&w, HDR_SIZE);          /* ids: {offset, size} */
	put_u64(&w, 8);
	data_off = w.pos;
	put_tasks_and_maps(&w, snap, plan, pid, bts, per_cpu);
	rc = put_buffers(&w, snap, out, &opts, bts, err);
	if (rc)
		goto out_close;
	data_size = w.pos - data_off;
	put_features(&w, snap, bts, bitmap);
	if (!w.failed)
		put_header(&w, data_off, data_size, bitmap);
	if (w.failed)
		goto out_io;
	if (rename(tmp, out)) {
		rc = bt_error(err, -errno, "%s: rename to %s failed: %s", tmp, out,
			      btrace_strerror(-errno));
		unlink(tmp);
		goto out_free;
	}
	rc = 0;
	goto out_free;

out_io:
	rc = fail_io(&w, tmp, err);
out_close:
	if (w.f)
		fclose(w.f);
	unlink(tmp);
out_free:
	free(w.index);
	free(plan);
	/* a failed export leaves nothing behind */
	if (rc)
		bt_cache_abort(cache);
	else
		bt_cache_close(cache);
	return rc;
}

int btrace_export_perf_data(const struct btrace_snapshot *snap,
			    const char *out,
			    const struct btrace_export_opts *opts,
			    struct btrace_export_result *res,
			    struct btrace_error *err)
{
	struct btrace_export_result r;
	size_t n = 0;
	int rc;

	/* the size policy of btrace.h: only the caller's sz bytes are
	 * written */
	if (res && (rc = bt_result_size(res, sizeof(r), "export result", &n,
					err)) < 0)
		return rc;
	rc = export_perf_data(snap, out, opts, &r, err);
	if (res) {
		r.sz = res->sz;
		memcpy(res, &r, n);
	}
	return rc;
}
