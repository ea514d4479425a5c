/* SPDX-License-Identifier: MIT */
/* perf.data export: internal interfaces between the files of src/export. */
#ifndef BT_EXPORT_INTERNAL_H
#define BT_EXPORT_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/export.h>

/*
 * Where an Intel PT buffer may be cut.  @first_psb is the offset of the
 * first PSB (the bytes before it are dropped), @cuts the chunk ends, in
 * increasing order, each at a packet boundary, the last one @size; every
 * chunk is at most @max_chunk bytes unless a single packet run between two
 * known boundaries is longer (after a bad packet the next boundary known is
 * the next PSB).  Returns -BTRACE_ERR_NOSYNC when there is no PSB.
 */
struct bt_pt_cuts {
	uint64_t first_psb;
	uint64_t *cuts;
	size_t ncuts;
	uint64_t bad_packets;      /* decode errors skipped to the next PSB */
};
int bt_export_pt_cuts(const uint8_t *data, uint64_t size, uint64_t max_chunk,
		      struct bt_pt_cuts *out);
void bt_export_pt_cuts_free(struct bt_pt_cuts *c);

/* The build-id cache (perf's layout under @dir):
 *	dir/.build-id/xx/<rest> -> ../../<path>/<build id>   (a symlink)
 *	dir/<path>/<build id>/elf                             (the file)
 */
struct bt_cache;
int bt_cache_open(const char *dir, struct bt_cache **out,
		  struct btrace_error *err);
void bt_cache_close(struct bt_cache *c);
/* Remove what this export created (files, links, directories), then close. */
void bt_cache_abort(struct bt_cache *c);
const char *bt_cache_dir(const struct bt_cache *c);
/* Put a file for @path/@bid in the cache: the on-disk file when @use_disk
 * and its build ID matches, else an ELF rebuilt from the snapshot's
 * embedded code.  *@rebuilt says which; returns 0, 1 when there was
 * nothing to write (no embedded code and no usable file), or < 0. */
int bt_cache_add(struct bt_cache *c, const struct btrace_snapshot *snap,
		 const char *path, const uint8_t *bid, uint32_t bid_size,
		 int use_disk, int *rebuilt, struct btrace_error *err);
/* Create dir/.build-id/<xx>/<rest> -> ../../<rel>/<sbid>. */
int bt_cache_link(struct bt_cache *c, const char *sbid, const char *rel,
		  struct btrace_error *err);
/* Write @n bytes as a plain file "<dir>/<name>"; its absolute path goes to
 * @abs (size @len). */
int bt_cache_add_raw(struct bt_cache *c, const char *name, const uint8_t *data,
		     uint64_t n, char *abs, size_t len, struct btrace_error *err);

/* A file described by the pieces that are not holes: @size bytes, each
 * piece's bytes at its offset (later pieces over earlier ones), zeros
 * elsewhere.  @own: what bt_export_elf_free() frees. */
struct bt_piece {
	uint64_t off, size;
	const uint8_t *data;
};
struct bt_elf_image {
	struct bt_piece *pieces;
	size_t npieces;
	uint64_t size;
	uint8_t *own;
};

/* A minimal ELF64 file holding @snap's code of build ID @bid at its file
 * offsets, a PT_LOAD/section per segment and the build-ID note, as pieces:
 * the holes between the segments (up to 4 GiB of them, from the offsets a
 * snapshot declares) are never allocated.  Returns 0, 1 when the snapshot
 * has no code of that build ID, or < 0. */
int bt_export_build_elf(const struct btrace_snapshot *snap, const uint8_t *bid,
			uint32_t bid_size, struct bt_elf_image *out);
void bt_export_elf_free(struct bt_elf_image *im);

/* Build ID of an ELF file on disk; returns its size, 0 when none, < 0. */

#endif /* BT_EXPORT_INTERNAL_H */
