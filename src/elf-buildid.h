/* SPDX-License-Identifier: MIT */
/* Build IDs of ELF files: the one reader for libbtrace and the decoder. */
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
 * Read the build ID of the ELF file at @path (ELF64 or ELF32, little
 * endian) from its PT_NOTE segments, or when they have none from its
 * SHT_NOTE sections (a separate debug file).  The one reader for both
 * libraries: the decoder's bt_image_file_build_id() wraps it.  Returns
 * its size (> 0, at most @max), -ENOENT when the file has none, -ENOEXEC
 * when it is not such an ELF file, or -errno when it cannot be read.
 */
int bt_elf_build_id(const char *path, uint8_t *out, size_t max);

#endif /* BT_ELF_BUILDID_H */
