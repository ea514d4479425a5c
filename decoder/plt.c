/* SPDX-License-Identifier: MIT */
/*
 * PLT entries: named the way gdb and perf name them ("strcmp@plt"), so a
 * call through the PLT shows what it calls, and known as trampolines, so the
 * jump from the stub to the function is part of the call, not a tail call.
 *
 * Each entry of .plt, .plt.sec and .plt.got holds an indirect jump through
 * a GOT slot (`jmp *disp(%rip)`, with or without endbr64/bnd); the slot is
 * the r_offset of a JUMP_SLOT / GLOB_DAT relocation that names the symbol
 * (IRELATIVE: the IFUNC resolver at the addend).  Lazy-binding entries of an
 * IBT .plt have no such jump but push their .rela.plt index.  The entry bytes
 * are read from the decoder's image (what ran), else from the ELF file.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode-internal.h"
#include "util.h"

#ifndef R_X86_64_IRELATIVE
#define R_X86_64_IRELATIVE 37
#endif

struct got_name {
	uint64_t got;
	const char *name;
};

struct plt_elf {
	Elf *e;
	size_t shstrndx;
	struct got_name *gots;
	size_t ngots, cgots;
	const char **rela_plt;     /* names by .rela.plt index */
	size_t nrela_plt;
};

static Elf_Scn *find_scn(struct plt_elf *pe, const char *name, GElf_Shdr *sh)
{
	Elf_Scn *scn = NULL;

	while ((scn = elf_nextscn(pe->e, scn))) {
		const char *n;
		if (!gelf_getshdr(scn, sh))
			continue;
		n = elf_strptr(pe->e, pe->shstrndx, sh->sh_name);
		if (n && !strcmp(n, name))
			return scn;
	}
	return NULL;
}

/* Name of the function symbol at @value in the section @symscn. */
static const char *sym_at(struct plt_elf *pe, Elf_Scn *symscn, uint64_t value)
{
	GElf_Shdr sh;
	Elf_Data *d;

	if (!symscn || !gelf_getshdr(symscn, &sh) || sh.sh_type == SHT_NOBITS ||
	    !sh.sh_entsize || !(d = elf_getdata(symscn, NULL)))
		return NULL;
	for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
		GElf_Sym sym;
		if (!gelf_getsym(d, (int)i, &sym) || sym.st_value != value ||
		    (GELF_ST_TYPE(sym.st_info) != STT_FUNC &&
		     GELF_ST_TYPE(sym.st_info) != STT_GNU_IFUNC))
			continue;
		const char *n = elf_strptr(pe->e, sh.sh_link, sym.st_name);
		if (n && *n)
			return n;
	}
	return NULL;
}

static int read_relocs(struct bt_ctx *c, struct plt_elf *pe, const char *name)
{
	GElf_Shdr sh, symsh;
	Elf_Scn *scn = find_scn(pe, name, &sh), *symscn, *tab;
	Elf_Data *d, *symd;
	int is_plt = !strcmp(name, ".rela.plt");

	if (!scn || sh.sh_type != SHT_RELA || !sh.sh_entsize ||
	    !(d = elf_getdata(scn, NULL)))
		return 0;
	symscn = elf_getscn(pe->e, sh.sh_link);
	if (!symscn || !gelf_getshdr(symscn, &symsh) || symsh.sh_type == SHT_NOBITS ||
	    !(symd = elf_getdata(symscn, NULL)))
		return 0;
	tab = NULL;
	{
		GElf_Shdr s2;
		tab = find_scn(pe, ".symtab", &s2);
		if (tab && s2.sh_type == SHT_NOBITS)
			tab = NULL;
	}
	size_t n = sh.sh_size / sh.sh_entsize;
	if (is_plt) {
		pe->rela_plt = calloc(n + 1, sizeof(*pe->rela_plt));
		if (!pe->rela_plt)
			return -ENOMEM;
		pe->nrela_plt = n;
	}
	for (size_t i = 0; i < n; i++) {
		GElf_Rela r;
		GElf_Sym sym;
		const char *nm = NULL;
		char buf[64];

		if (!gelf_getrela(d, (int)i, &r))
			continue;
		unsigned type = (unsigned)GELF_R_TYPE(r.r_info);
		size_t si = GELF_R_SYM(r.r_info);
		if ((type == R_X86_64_JUMP_SLOT || type == R_X86_64_GLOB_DAT) && si &&
		    gelf_getsym(symd, (int)si, &sym))
			nm = elf_strptr(pe->e, symsh.sh_link, sym.st_name);
		else if (type == R_X86_64_IRELATIVE) {
			nm = sym_at(pe, symscn, (uint64_t)r.r_addend);
			if (!nm)
				nm = sym_at(pe, tab, (uint64_t)r.r_addend);
			if (!nm) {
				snprintf(buf, sizeof(buf), "*ABS*+0x%llx",
					 (unsigned long long)r.r_addend);
				nm = buf;
			}
		}
		if (!nm || !*nm)
			continue;
		const char *dm = bt_demangle(c, nm, strlen(nm));
		const char *full = bt_ctx_printf(c, "%s@plt", dm ? dm : nm);
		if (!full)
			return -ENOMEM;
		if (is_plt)
			pe->rela_plt[i] = full;
		if (bt_grow((void **)&pe->gots, &pe->cgots, pe->ngots + 1,
			    sizeof(*pe->gots)))
			return -ENOMEM;
		pe->gots[pe->ngots++] = (struct got_name){ r.r_offset, full };
	}
	return 0;
}

static const char *got_lookup(const struct plt_elf *pe, uint64_t got)
{
	for (size_t i = 0; i < pe->ngots; i++)
		if (pe->gots[i].got == got)
			return pe->gots[i].name;
	return NULL;
}

static int add_entry(struct bt_ctx *c, uint64_t start, uint64_t end,
		     const char *name)
{
	if (bt_grow((void **)&c->plt, &c->cplt, c->nplt + 1, sizeof(*c->plt)))
		return -ENOMEM;
	c->plt[c->nplt++] = (struct bt_plt_entry){ start, end, name };
	return 0;
}

/* Name the entry at @p (@n bytes, at link-time address @vaddr). */
static const char *entry_name(const struct plt_elf *pe, const uint8_t *p,
			      size_t n, uint64_t vaddr, int lazy_plt)
{
	for (size_t k = 0; k + 6 <= n; k++) {
		if (p[k] == 0xff && p[k + 1] == 0x25) {
			int32_t disp = (int32_t)bt_le32(p + k + 2);
			const char *nm = got_lookup(pe, vaddr + k + 6 + (int64_t)disp);
			if (nm)
				return nm;
		}
	}
	/* IBT lazy .plt entry: endbr64; push $index; bnd jmp .plt0 */
	if (lazy_plt) {
		for (size_t k = 0; k + 5 <= n; k++) {
			if (p[k] == 0x68) {
				uint32_t idx = bt_le32(p + k + 1);
				if (idx < pe->nrela_plt)
					return pe->rela_plt[idx];
				return NULL;
			}
		}
	}
	return NULL;
}

static int load_section(struct bt_ctx *c, struct plt_elf *pe,
			const struct bt_module *mod, const char *name)
{
	GElf_Shdr sh;
	Elf_Scn *scn = find_scn(pe, name, &sh);
	uint64_t entsize;
	const uint8_t *bytes;
	size_t avail = 0;
	int ret;

	if (!scn || !sh.sh_size || !(sh.sh_flags & SHF_EXECINSTR))
		return 0;
	entsize = !strcmp(name, ".plt.got") && sh.sh_entsize == 8 ? 8 : 16;
	uint64_t start = mod->bias + sh.sh_addr, end = start + sh.sh_size;
	if (bt_grow((void **)&c->plt_ranges, &c->cplt_ranges, c->nplt_ranges + 1,
		    sizeof(*c->plt_ranges)))
		return -ENOMEM;
	c->plt_ranges[c->nplt_ranges][0] = start;
	c->plt_ranges[c->nplt_ranges][1] = end;
	c->nplt_ranges++;

	bytes = bt_image_bytes(c, start, &avail);
	if (!bytes || avail < sh.sh_size) {
		Elf_Data *d = sh.sh_type == SHT_NOBITS ? NULL : elf_getdata(scn, NULL);
		bytes = d && d->d_size >= sh.sh_size ? d->d_buf : NULL;
	}
	for (uint64_t off = 0; off + entsize <= sh.sh_size; off += entsize) {
		const char *nm = bytes ?
			entry_name(pe, bytes + off, entsize, sh.sh_addr + off,
				   !strcmp(name, ".plt")) : NULL;
		ret = add_entry(c, start + off, start + off + entsize, nm);
		if (ret < 0)
			return ret;
	}
	return 0;
}

static int load_module(struct bt_ctx *c, const struct bt_module *mod)
{
	struct plt_elf pe = { 0 };
	int fd, ret = 0;

	fd = open(mod->elf, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	pe.e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!pe.e || elf_getshdrstrndx(pe.e, &pe.shstrndx) < 0)
		goto out;
	ret = read_relocs(c, &pe, ".rela.plt");
	if (ret >= 0)
		ret = read_relocs(c, &pe, ".rela.dyn");
	if (ret >= 0)
		ret = load_section(c, &pe, mod, ".plt");
	if (ret >= 0)
		ret = load_section(c, &pe, mod, ".plt.sec");
	if (ret >= 0)
		ret = load_section(c, &pe, mod, ".plt.got");
out:
	free(pe.gots);
	free(pe.rela_plt);
	if (pe.e)
		elf_end(pe.e);
	close(fd);
	return ret;
}

static int cmp_entry(const void *a, const void *b)
{
	const struct bt_plt_entry *x = a, *y = b;
	return x->start < y->start ? -1 : x->start > y->start;
}

int bt_plt_load(struct bt_ctx *c)
{
	for (size_t i = 0; i < c->nmodules; i++) {
		const struct bt_module *mod = &c->modules[i];
		if (!mod->elf || !mod->have_bias)
			continue;
		int ret = load_module(c, mod);
		if (ret < 0)
			return bt_error(c->err, ret, "%s: reading the PLT failed: %s",
					mod->path, btrace_strerror(ret));
	}
	if (c->nplt)   /* qsort(NULL, 0, ...) is undefined */
		qsort(c->plt, c->nplt, sizeof(*c->plt), cmp_entry);
	return 0;
}

int bt_plt_contains(const struct bt_ctx *c, uint64_t ip)
{
	for (size_t i = 0; i < c->nplt_ranges; i++)
		if (ip >= c->plt_ranges[i][0] && ip < c->plt_ranges[i][1])
			return 1;
	return 0;
}

uint64_t bt_plt_lookup(const struct bt_ctx *c, uint64_t ip, const char **name)
{
	size_t lo = 0, hi = c->nplt;

	*name = NULL;
	if (!bt_plt_contains(c, ip))
		return 0;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (c->plt[mid].end <= ip)
			lo = mid + 1;
		else if (c->plt[mid].start > ip)
			hi = mid;
		else {
			*name = c->plt[mid].name;
			return c->plt[mid].start;
		}
	}
	return 0;
}
