// SPDX-License-Identifier: MIT
/*
 * Whether an ELF program is built with a sanitizer runtime (ASan, TSan,
 * MSan, HWASan), whose shadow memory QEMU 7.2 cannot emulate: its
 * DT_NEEDED names the runtime (gcc: libasan.so.N), or it defines the
 * runtime's init symbol (clang links the runtime statically).  Used by
 * btrace at launch (qemu-limits.c) and by the plugin at an execve()
 * (plugin-exec.c: such a program stays native).
 */
#include <elf.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "san-elf.h"

#define BT_ELF_MAX_TABLE (64u << 20)   /* dynsym/symtab/strtab we read */

static const char *const bt_san_libs[] = {
	"libasan.so", "libtsan.so", "libmsan.so", "libhwasan.so",
	"libclang_rt.asan", "libclang_rt.tsan", "libclang_rt.msan",
	"libclang_rt.hwasan",
};
static const struct {
	const char *sym, *name;
} bt_san_syms[] = {
	{ "__asan_init", "AddressSanitizer" },
	{ "__tsan_init", "ThreadSanitizer" },
	{ "__msan_init", "MemorySanitizer" },
	{ "__hwasan_init", "HWAddressSanitizer" },
};

const char *bt_san_of_lib(const char *lib)
{
	const char *b = strrchr(lib, '/');

	b = b ? b + 1 : lib;
	for (size_t i = 0; i < sizeof(bt_san_libs) / sizeof(*bt_san_libs);
	     i++)
		if (!strncmp(b, bt_san_libs[i], strlen(bt_san_libs[i])))
			return strstr(b, "tsan") ? "ThreadSanitizer" :
			       strstr(b, "hwasan") ? "HWAddressSanitizer" :
			       strstr(b, "msan") ? "MemorySanitizer" :
			       "AddressSanitizer";
	return NULL;
}

static void *bt_read_at(int fd, uint64_t off, uint64_t size, uint64_t fsize)
{
	char *p;

	if (!size || size > BT_ELF_MAX_TABLE || off > fsize ||
	    size > fsize - off)
		return NULL;
	p = malloc(size + 1);
	if (!p)
		return NULL;
	if (pread(fd, p, size, (off_t)off) != (ssize_t)size) {
		free(p);
		return NULL;
	}
	p[size] = 0;
	return p;
}

/* The sanitizer @path's ELF file names (DT_NEEDED) or defines, or NULL.
 * @what: the library or symbol that tells. */
const char *bt_elf_sanitizer(const char *path, char *what, size_t wlen)
{
	const char *found = NULL;
	Elf64_Ehdr eh;
	Elf64_Shdr *sh = NULL;
	struct stat st;
	/* Not blocking on a FIFO: only a regular file is read. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || pread(fd, &eh, sizeof(eh), 0) != sizeof(eh) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || !eh.e_shnum)
		goto out;
	sh = bt_read_at(fd, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(*sh),
			(uint64_t)st.st_size);
	if (!sh)
		goto out;
	for (unsigned i = 0; i < eh.e_shnum && !found; i++) {
		uint32_t t = sh[i].sh_type, link = sh[i].sh_link;
		char *tab, *str;

		if ((t != SHT_DYNAMIC && t != SHT_DYNSYM && t != SHT_SYMTAB) ||
		    link >= eh.e_shnum)
			continue;
		tab = bt_read_at(fd, sh[i].sh_offset, sh[i].sh_size,
				 (uint64_t)st.st_size);
		str = bt_read_at(fd, sh[link].sh_offset, sh[link].sh_size,
				 (uint64_t)st.st_size);
		if (tab && str && t == SHT_DYNAMIC) {
			Elf64_Dyn *d = (Elf64_Dyn *)tab;

			for (size_t k = 0; k < sh[i].sh_size / sizeof(*d) &&
			     d[k].d_tag != DT_NULL && !found; k++)
				if (d[k].d_tag == DT_NEEDED &&
				    d[k].d_un.d_val < sh[link].sh_size &&
				    (found = bt_san_of_lib(str +
							  d[k].d_un.d_val)))
					snprintf(what, wlen, "it needs %s",
						 str + d[k].d_un.d_val);
		} else if (tab && str) {
			Elf64_Sym *s = (Elf64_Sym *)tab;

			for (size_t k = 0; k < sh[i].sh_size / sizeof(*s) &&
			     !found; k++) {
				const char *nm;

				if (s[k].st_shndx == SHN_UNDEF ||
				    s[k].st_name >= sh[link].sh_size)
					continue;
				nm = str + s[k].st_name;
				for (size_t m = 0; m < sizeof(bt_san_syms) /
						       sizeof(*bt_san_syms);
				     m++)
					if (!strcmp(nm, bt_san_syms[m].sym)) {
						found = bt_san_syms[m].name;
						snprintf(what, wlen, "it "
							 "defines %s", nm);
						break;
					}
			}
		}
		free(tab);
		free(str);
	}
out:
	free(sh);
	close(fd);
	return found;
}

