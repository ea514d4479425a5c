/* SPDX-License-Identifier: MIT */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
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

/* The build ID in the notes at [@off, @off + @len) of @fd, 0 if none. */
static int notes_at(int fd, uint64_t off, uint64_t len, uint8_t *out,
		    size_t max)
{
	size_t n = len < 65536 ? (size_t)len : 65536;
	uint8_t *notes;
	int ret = 0;

	if (!n || !(notes = malloc(n)))
		return 0;
	if (pread(fd, notes, n, (off_t)off) == (ssize_t)n)
		ret = bt_elf_note_build_id(notes, n, out, max);
	free(notes);
	return ret;
}

/* The fields of an ELF header, either class, that the search needs. */
struct ehdr {
	int is64;
	uint64_t phoff, shoff;
	unsigned phentsize, phnum, shentsize, shnum;
};

static int read_ehdr(int fd, struct ehdr *h)
{
	uint8_t e[64];
	ssize_t r = pread(fd, e, sizeof(e), 0);

	if (r < 52 || memcmp(e, ELFMAG, SELFMAG) || e[EI_DATA] != ELFDATA2LSB ||
	    (e[EI_CLASS] != ELFCLASS64 && e[EI_CLASS] != ELFCLASS32))
		return -ENOEXEC;
	h->is64 = e[EI_CLASS] == ELFCLASS64;
	if (h->is64 && r < 64)
		return -ENOEXEC;
	h->phoff = h->is64 ? bt_le64(e + 32) : bt_le32(e + 28);
	h->shoff = h->is64 ? bt_le64(e + 40) : bt_le32(e + 32);
	h->phentsize = bt_le16(e + (h->is64 ? 54 : 42));
	h->phnum = bt_le16(e + (h->is64 ? 56 : 44));
	h->shentsize = bt_le16(e + (h->is64 ? 58 : 46));
	h->shnum = bt_le16(e + (h->is64 ? 60 : 48));
	if (h->phentsize != (h->is64 ? 56u : 32u) || h->phnum > 256)
		return -ENOEXEC;
	return 0;
}

/* From the PT_NOTE segments: what a running process has mapped. */
static int from_segments(int fd, const struct ehdr *h, uint8_t *out,
			 size_t max)
{
	for (unsigned i = 0; i < h->phnum; i++) {
		uint8_t ph[56];
		int n;

		if (pread(fd, ph, h->phentsize,
			  (off_t)(h->phoff + (uint64_t)i * h->phentsize)) !=
		    (ssize_t)h->phentsize)
			break;
		if (bt_le32(ph) != PT_NOTE)
			continue;
		n = h->is64 ? notes_at(fd, bt_le64(ph + 8), bt_le64(ph + 32), out, max)
			    : notes_at(fd, bt_le32(ph + 4), bt_le32(ph + 16), out, max);
		if (n > 0)
			return n;
	}
	return 0;
}

/* From the SHT_NOTE sections: a separate debug file, or a file without
 * program headers. */
static int from_sections(int fd, const struct ehdr *h, uint8_t *out,
			 size_t max)
{
	if (h->shentsize != (h->is64 ? 64u : 40u) || h->shnum > 65280)
		return 0;
	for (unsigned i = 0; i < h->shnum; i++) {
		uint8_t sh[64];
		int n;

		if (pread(fd, sh, h->shentsize,
			  (off_t)(h->shoff + (uint64_t)i * h->shentsize)) !=
		    (ssize_t)h->shentsize)
			break;
		if (bt_le32(sh + 4) != SHT_NOTE)
			continue;
		n = h->is64 ? notes_at(fd, bt_le64(sh + 24), bt_le64(sh + 32), out, max)
			    : notes_at(fd, bt_le32(sh + 16), bt_le32(sh + 20), out, max);
		if (n > 0)
			return n;
	}
	return 0;
}

int bt_elf_build_id(const char *path, uint8_t *out, size_t max)
{
	struct ehdr h;
	int fd, ret;

	fd = bt_open_regular(path);
	if (fd < 0)
		return -errno;
	ret = read_ehdr(fd, &h);
	if (!ret) {
		ret = from_segments(fd, &h, out, max);
		if (!ret)
			ret = from_sections(fd, &h, out, max);
		if (!ret)
			ret = -ENOENT;
	}
	close(fd);
	return ret;
}
