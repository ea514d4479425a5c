/* SPDX-License-Identifier: MIT */
/*
 * Export a snapshot for other tools.  btrace_export_perf_data() writes a
 * perf.data file (file mode, little endian, "PERFILE2") that perf's own
 * Intel PT and Intel BTS decoders read: `perf script --itrace=...`,
 * `perf report --itrace=...`, `perf inject --itrace=...`.  See
 * docs/export.md for the records written and for what perf needs.
 *
 * The code embedded in the snapshot is written next to the output as a
 * perf build-id cache (perf's own layout) in OUT.symfs/.debug.  perf uses
 * it in two ways:
 *
 *	perf script --symfs OUT.symfs -i OUT --itrace=i0nse
 *		only the snapshot's code (perf takes SYMFS/.debug as its
 *		build-id cache and looks for no file outside SYMFS);
 *	perf --buildid-dir OUT.symfs/.debug script -i OUT --itrace=i0nse
 *		the files on this machine when their build ID matches (with
 *		their symbols), the cache for the others.
 */
#ifndef BTRACE_EXPORT_H
#define BTRACE_EXPORT_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/btrace.h>
#include <btrace/snapshot.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Export flags. */
#define BTRACE_EXPORT_NO_CACHE  0x1u  /* do not write the build-id cache */
#define BTRACE_EXPORT_USE_DISK  0x2u  /* put the file on disk in the cache
				       * (whole, with its symbols) when its
				       * build ID matches, instead of an ELF
				       * rebuilt from the embedded code */
#define BTRACE_EXPORT_FORCE     0x4u  /* replace an existing output file */

struct btrace_export_opts {
	size_t sz;                 /* sizeof(struct btrace_export_opts); the
				    * size policy of btrace.h */
	uint32_t flags;            /* BTRACE_EXPORT_* */
	int32_t tid;               /* only this thread's buffers; 0: all */
	const char *buildid_dir;   /* the cache; NULL: "<out>.symfs/.debug" */
	uint64_t max_chunk;        /* bytes per AUXTRACE record; 0: 1 MiB */
	size_t :0;
};

#define BTRACE_EXPORT_MAX_NOTES 16

struct btrace_export_result {
	size_t sz;                 /* sizeof(struct btrace_export_result): the
				    * size policy of btrace.h, only this many
				    * bytes are written */
	char buildid_dir[4096];    /* the cache written ("" with NO_CACHE) */
	char symfs_dir[4096];      /* its parent when the cache is named
				    * ".debug" (for perf --symfs), else "" */
	uint32_t nbuffers;         /* trace buffers exported */
	uint32_t nskipped;         /* buffers left out (no PSB, empty, ...) */
	uint64_t nchunks;          /* AUXTRACE records written */
	uint64_t trace_bytes;      /* trace bytes written (without padding) */
	uint64_t dropped_bytes;    /* bytes before the first PSB, not written */
	uint32_t nmmaps;           /* MMAP2 records */
	uint32_t nbinaries;        /* files written to the cache */
	uint32_t nrebuilt;         /* ... of them rebuilt from embedded code */
	uint32_t trace_kind;       /* enum btrace_trace_kind written */
	uint32_t nnotes;
	/* Things perf will not see as they were (missing code, anonymous
	 * code given a file name, long build IDs, ...), one sentence each. */
	char notes[BTRACE_EXPORT_MAX_NOTES][256];
};

/**
 * @brief Write @snap as a perf.data file at @out (atomically: a temporary
 * file renamed into place) and, unless BTRACE_EXPORT_NO_CACHE, the
 * embedded code as a perf build-id cache.
 *
 * Fails with -BTRACE_ERR_UNSUPPORTED for what perf cannot represent (no
 * trace config, an unknown trace kind, no exportable buffer), -EEXIST when
 * @out exists and BTRACE_EXPORT_FORCE is not set.
 *
 * @return 0 on success, a negative error code otherwise; @res (may be
 * NULL) says what was written.
 */
BTRACE_API int btrace_export_perf_data(const struct btrace_snapshot *snap,
				       const char *out,
				       const struct btrace_export_opts *opts,
				       struct btrace_export_result *res,
				       struct btrace_error *err);

/**
 * @brief Write @len bytes of @data to the file @out (a renderer's output:
 * btrace export --timeline, btrace view): through a private temporary file
 * (mode 0600) beside it, renamed into place once complete; a failed write
 * leaves nothing.  @flags: BTRACE_EXPORT_FORCE replaces an existing file.
 * @return 0, or a negative error code with @err filled (-EEXIST: @out
 * exists).
 */
BTRACE_API int btrace_export_file(const char *out, const void *data,
				  size_t len, uint32_t flags,
				  struct btrace_error *err);

#ifdef __cplusplus
}
#endif

#endif /* BTRACE_EXPORT_H */
