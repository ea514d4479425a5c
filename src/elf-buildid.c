/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "elf-buildid.h"
#include "util.h"

int bt_elf_note_build_id(const uint8_t *notes, size_t len, uint8_t *out,
			 size_t max)
{
	size_t off = 0;

	while (len - off >= 12 && off <= len) {
		uint32_t nsz = bt_le32(notes + off);
		uint32_t dsz = bt_le32(notes + off + 4);
		uint32_t type = bt_le32(notes + off + 8);
		size_t name_off = off + 12;
		size_t desc_off, next;

		if (nsz > len || dsz > len)
			return 0;
		desc_off = name_off + ((nsz + 3u) & ~(size_t)3);
		if (desc_off > len || dsz > len - desc_off)
			return 0;
		if (type == NT_GNU_BUILD_ID && nsz == 4 &&
		    !memcmp(notes + name_off, "GNU", 4) && dsz > 0) {
			size_t n = dsz < max ? dsz : max;

			memcpy(out, notes + desc_off, n);
			return (int)n;
		}
		next = desc_off + ((dsz + 3u) & ~(size_t)3);
		if (next <= off)
			return 0;
		off = next;
	}
	return 0;
}

int bt_elf_build_id(const char *path, uint8_t *out, size_t max)
{
	Elf64_Ehdr eh;
	int fd, ret = -ENOENT;

	fd = bt_open_regular(path);
	if (fd < 0)
		return -errno;
	if (pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_phentsize != sizeof(Elf64_Phdr) || eh.e_phnum > 256) {
		close(fd);
		return -ENOEXEC;
	}
	for (unsigned i = 0; i < eh.e_phnum && ret < 0; i++) {
		uint8_t notes[4096];
		Elf64_Phdr ph;
		size_t len;
		int n;

		if (pread(fd, &ph, sizeof(ph),
			  (off_t)(eh.e_phoff + i * sizeof(ph))) != sizeof(ph))
			break;
		if (ph.p_type != PT_NOTE)
			continue;
		len = ph.p_filesz < sizeof(notes) ? ph.p_filesz : sizeof(notes);
		if (pread(fd, notes, len, (off_t)ph.p_offset) != (ssize_t)len)
			continue;
		n = bt_elf_note_build_id(notes, len, out, max);
		if (n > 0)
			ret = n;
	}
	close(fd);
	return ret;
}
