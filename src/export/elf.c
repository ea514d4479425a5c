// SPDX-License-Identifier: MIT
/*
 * ELF files for perf: a minimal ELF64 rebuilt from the code a snapshot
 * embeds (the executable segments, at their original file offsets, with
 * the build-ID note), and the build ID of an ELF file on disk.
 *
 * perf reads the instruction bytes for its Intel PT decoder at
 * "ip - map start + pgoff" in the file it finds for the mapping, so only
 * the file offsets matter; the rebuilt file has no symbols.  It is sparse:
 * the holes between the segments read as zeros and take no disk space.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "export-internal.h"
#include "util.h"

static const char shstrtab[] = "\0.note.gnu.build-id\0.text\0.shstrtab";
#define STR_NOTE 1
#define STR_TEXT 20
#define STR_SHSTRTAB 26

static int code_cmp(const void *a, const void *b)
{
	const struct btrace_code *x = *(const struct btrace_code *const *)a;
	const struct btrace_code *y = *(const struct btrace_code *const *)b;

	return x->file_offset < y->file_offset ? -1 :
	       x->file_offset > y->file_offset;
}

void bt_export_elf_free(struct bt_elf_image *im)
{
	free(im->pieces);
	free(im->own);
	memset(im, 0, sizeof(*im));
}

int bt_export_build_elf(const struct btrace_snapshot *snap, const uint8_t *bid,
			uint32_t bid_size, struct bt_elf_image *out)
{
	const struct btrace_code **seg = NULL;
	size_t nseg = 0, i;
	uint64_t hdr_end, end = 0, note_off, str_off, sh_off, total, meta_size;
	uint32_t note_size;
	uint8_t *f;

	memset(out, 0, sizeof(*out));
	seg = calloc(snap->ncode ? snap->ncode : 1, sizeof(*seg));
	if (!seg)
		return -ENOMEM;
	for (i = 0; i < snap->ncode; i++) {
		const struct btrace_code *c = &snap->code[i];

		if (c->kind != BTRACE_CODE_FILE || c->build_id_size != bid_size ||
		    memcmp(c->build_id, bid, bid_size) || !c->size)
			continue;
		seg[nseg++] = c;
	}
	if (!nseg) {
		free(seg);
		return 1;
	}
	qsort(seg, nseg, sizeof(*seg), code_cmp);
	for (i = 0; i < nseg; i++) {
		/* the reader bounds these; never trust a wrap here either */
		if (seg[i]->file_offset > (1ull << 40) ||
		    seg[i]->size > (1ull << 40) - seg[i]->file_offset) {
			free(seg);
			return -BTRACE_ERR_FORMAT;
		}
		if (seg[i]->file_offset + seg[i]->size > end)
			end = seg[i]->file_offset + seg[i]->size;
	}

	hdr_end = sizeof(Elf64_Ehdr) + (nseg + 1) * sizeof(Elf64_Phdr);
	note_size = (uint32_t)(sizeof(Elf64_Nhdr) + 4 + ((bid_size + 3) & ~3u));
	note_off = (end + 7) & ~7ull;
	str_off = note_off + note_size;
	sh_off = (str_off + sizeof(shstrtab) + 7) & ~7ull;
	total = sh_off + (nseg + 3) * sizeof(Elf64_Shdr);
	if (seg[0]->file_offset < hdr_end || end > (1ull << 40)) {
		/* The code overlaps where our headers go (a file whose first
		 * loadable segment starts at offset 0 and is executable):
		 * keep the bytes at their offsets without our headers. */
		total = end;
		hdr_end = 0;
	}
	/* Pieces: the segments, then (with headers) the ELF and program
	 * headers at 0 and the note, strings and section headers after the
	 * code.  Only the headers are allocated: [0, hdr_end) and
	 * [note_off, total) in one buffer. */
	meta_size = hdr_end ? hdr_end + (total - note_off) : 0;
	out->pieces = calloc(nseg + 2, sizeof(*out->pieces));
	f = calloc(1, meta_size ? meta_size : 1);
	if (!out->pieces || !f) {
		free(out->pieces);
		free(f);
		free(seg);
		out->pieces = NULL;
		return -ENOMEM;
	}
	out->own = f;
	out->size = total;
	for (i = 0; i < nseg; i++)
		out->pieces[out->npieces++] = (struct bt_piece){
			seg[i]->file_offset, seg[i]->size, seg[i]->data };
	if (hdr_end) {
		uint8_t *t = f + hdr_end;    /* file offset note_off */
		Elf64_Ehdr *eh = (Elf64_Ehdr *)f;
		Elf64_Phdr *ph = (Elf64_Phdr *)(f + sizeof(*eh));
		Elf64_Shdr *sh = (Elf64_Shdr *)(t + (sh_off - note_off));
		Elf64_Nhdr *nh = (Elf64_Nhdr *)t;

		memcpy(eh->e_ident, ELFMAG, SELFMAG);
		eh->e_ident[EI_CLASS] = ELFCLASS64;
		eh->e_ident[EI_DATA] = ELFDATA2LSB;
		eh->e_ident[EI_VERSION] = EV_CURRENT;
		eh->e_ident[EI_OSABI] = ELFOSABI_SYSV;
		eh->e_type = ET_DYN;
		eh->e_machine = EM_X86_64;
		eh->e_version = EV_CURRENT;
		eh->e_phoff = sizeof(*eh);
		eh->e_shoff = sh_off;
		eh->e_ehsize = sizeof(*eh);
		eh->e_phentsize = sizeof(Elf64_Phdr);
		eh->e_phnum = (uint16_t)(nseg + 1);
		eh->e_shentsize = sizeof(Elf64_Shdr);
		eh->e_shnum = (uint16_t)(nseg + 3);
		eh->e_shstrndx = (uint16_t)(nseg + 2);

		nh->n_namesz = 4;
		nh->n_descsz = bid_size;
		nh->n_type = NT_GNU_BUILD_ID;
		memcpy(t + sizeof(*nh), "GNU", 4);
		memcpy(t + sizeof(*nh) + 4, bid, bid_size);
		memcpy(t + (str_off - note_off), shstrtab, sizeof(shstrtab));

		/* p_vaddr = p_offset: the load bias is not recorded */
		for (i = 0; i < nseg; i++) {
			ph[i].p_type = PT_LOAD;
			ph[i].p_flags = PF_R | PF_X;
			ph[i].p_offset = seg[i]->file_offset;
			ph[i].p_vaddr = ph[i].p_paddr = seg[i]->file_offset;
			ph[i].p_filesz = ph[i].p_memsz = seg[i]->size;
			ph[i].p_align = 1;
			sh[i + 2].sh_name = STR_TEXT;
			sh[i + 2].sh_type = SHT_PROGBITS;
			sh[i + 2].sh_flags = SHF_ALLOC | SHF_EXECINSTR;
			sh[i + 2].sh_addr = seg[i]->file_offset;
			sh[i + 2].sh_offset = seg[i]->file_offset;
			sh[i + 2].sh_size = seg[i]->size;
			sh[i + 2].sh_addralign = 1;
		}
		ph[nseg].p_type = PT_NOTE;
		ph[nseg].p_flags = PF_R;
		ph[nseg].p_offset = ph[nseg].p_vaddr = ph[nseg].p_paddr = note_off;
		ph[nseg].p_filesz = ph[nseg].p_memsz = note_size;
		ph[nseg].p_align = 4;
		sh[1].sh_name = STR_NOTE;
		sh[1].sh_type = SHT_NOTE;
		sh[1].sh_flags = SHF_ALLOC;
		sh[1].sh_addr = sh[1].sh_offset = note_off;
		sh[1].sh_size = note_size;
		sh[1].sh_addralign = 4;
		sh[nseg + 2].sh_name = STR_SHSTRTAB;
		sh[nseg + 2].sh_type = SHT_STRTAB;
		sh[nseg + 2].sh_offset = str_off;
		sh[nseg + 2].sh_size = sizeof(shstrtab);
		sh[nseg + 2].sh_addralign = 1;
		out->pieces[out->npieces++] = (struct bt_piece){ 0, hdr_end, f };
		out->pieces[out->npieces++] = (struct bt_piece){
			note_off, total - note_off, t };
	}
	free(seg);
	return 0;
}
