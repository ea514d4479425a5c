/* SPDX-License-Identifier: MIT */
/* The little ELF reading libbtrace needs outside the decoder: build IDs. */
#ifndef BT_ELF_BUILDID_H
#define BT_ELF_BUILDID_H

#include <stddef.h>
#include <stdint.h>

/*
 * Find the GNU build ID in a block of ELF notes (the contents of a PT_NOTE
 * segment or SHT_NOTE section).  Copies at most @max bytes to @out.
 * Returns the build ID size, 0 when the block has none.
 */
int bt_elf_note_build_id(const uint8_t *notes, size_t len, uint8_t *out,
			 size_t max);

/*
 * Read the build ID of the ELF64 file at @path from its PT_NOTE segments.
 * Returns its size (> 0), -ENOENT when the file has none, -ENOEXEC when it
 * is not an ELF64 file, or -errno when it cannot be read.
 */
int bt_elf_build_id(const char *path, uint8_t *out, size_t max);

#endif /* BT_ELF_BUILDID_H */
