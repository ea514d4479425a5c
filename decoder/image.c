/* SPDX-License-Identifier: MIT */
/*
 * The decoder's image: which code bytes sit at which address.  Built from
 * the snapshot's executable mappings and embedded code (file code by build
 * ID and file offset, or by path for a file without a build ID; vDSO and
 * anonymous code by address).  A file on disk fills what the snapshot lacks
 * only when its build ID matches the one recorded for the mapping (without
 * an ID: when it holds the snapshot's embedded bytes of that file);
 * otherwise the hole is noted and every decode that runs into it reports
 * a gap.
 *
 * libipt reads the code through file sections (its block cache only works
 * on sections), so embedded code is copied once into a memfd and added as
 * /proc/self/fd/N sections.  The sections go through an image section
 * cache (pt_iscache): a section added with pt_image_add_file() is mapped
 * when the decoder enters it and unmapped when it leaves, and with it goes
 * its block cache (four bytes per byte of code, zeroed at every mapping:
 * 5.6 MB for the C library), so a trace that goes back and forth between
 * the program and a library spent most of its decode in memset.  The
 * cache keeps the least recently used sections mapped up to
 * BT_ISCACHE_LIMIT bytes (code and block caches).
 */
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <intel-pt.h>

#include "decode-internal.h"
#include "elf-buildid.h"
#include "util.h"

#define BT_PROT_EXEC 0x4u
/* Bytes of sections (their code and block caches) the image section cache
 * keeps mapped: the C library, the program and a few libraries. */
#define BT_ISCACHE_LIMIT (64ull << 20)

int bt_image_file_build_id(const char *path, uint8_t *id, uint32_t *size)
{
	uint8_t buf[2 * BTRACE_BUILD_ID_MAX];
	int n = bt_elf_build_id(path, buf, sizeof(buf));

	/* not ELF, or an ID longer than a snapshot records: none */
	if (n == -ENOEXEC || n > BTRACE_BUILD_ID_MAX)
		return -ENOENT;
	if (n < 0)
		return n;
	memcpy(id, buf, (size_t)n);
	*size = (uint32_t)n;
	return 0;
}

/* ELF type and the vaddr of the first PT_LOAD's page (for the load bias). */
static int elf_load_info(const char *path, int *type, uint64_t *first_vaddr,
			 uint64_t *first_off)
{
	int fd = bt_open_regular(path);
	int ret = -BTRACE_ERR_FORMAT;

	if (fd < 0)
		return -errno;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	GElf_Ehdr eh;
	size_t n;
	if (e && gelf_getehdr(e, &eh) && !elf_getphdrnum(e, &n)) {
		*type = eh.e_type;
		for (size_t i = 0; i < n; i++) {
			GElf_Phdr ph;
			if (gelf_getphdr(e, (int)i, &ph) && ph.p_type == PT_LOAD) {
				*first_vaddr = ph.p_vaddr;
				*first_off = ph.p_offset;
				ret = 0;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

static void hexid(char *out, const uint8_t *id, uint32_t n)
{
	out[0] = 0;
	for (uint32_t i = 0; i < n; i++)
		sprintf(out + 2 * i, "%02x", id[i]);
	if (!n)
		strcpy(out, "(none)");
}

static int add_region(struct bt_ctx *c, uint64_t start, uint64_t end,
		      const uint8_t *data, int module)
{
	if (bt_grow((void **)&c->regions, &c->cregions, c->nregions + 1,
		    sizeof(*c->regions)))
		return -ENOMEM;
	c->regions[c->nregions++] = (struct bt_region){ start, end, data, module };
	return 0;
}

static int find_module(struct bt_ctx *c, const struct btrace_mapping *m)
{
	const char *path = m->path ? m->path : "//anon";

	for (size_t i = 0; i < c->nmodules; i++)
		if (!strcmp(c->modules[i].path, path))
			return (int)i;
	if (bt_grow((void **)&c->modules, &c->cmodules, c->nmodules + 1,
		    sizeof(*c->modules)))
		return -ENOMEM;
	struct bt_module *mod = &c->modules[c->nmodules];
	memset(mod, 0, sizeof(*mod));
	mod->path = strdup(path);
	if (!mod->path)
		return -ENOMEM;
	mod->lo = UINT64_MAX;
	memcpy(mod->build_id, m->build_id, sizeof(mod->build_id));
	mod->build_id_size = m->build_id_size;
	return (int)c->nmodules++;
}

/* Copy code into the memfd once; returns its memfd offset. */
static int64_t memfd_put(struct bt_ctx *c, const struct btrace_code *code)
{
	if (c->memfd < 0) {
		c->memfd = memfd_create("btrace-code", MFD_CLOEXEC);
		if (c->memfd < 0)
			return -errno;
	}
	uint64_t off = c->memfd_size;
	const uint8_t *p = code->data;
	uint64_t left = code->size;
	while (left) {
		ssize_t w = pwrite(c->memfd, p, left, (off_t)(off + (code->size - left)));
		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += w;
		left -= (uint64_t)w;
	}
	c->memfd_size += (code->size + 4095) & ~4095ull;
	return (int64_t)off;
}

/* Add @size bytes of @path at @offset, loaded at @vaddr, to the image
 * through the section cache; a libipt error code on failure. */
static int add_section(struct bt_ctx *c, const char *path, uint64_t offset,
		       uint64_t size, uint64_t vaddr)
{
	int isid = pt_iscache_add_file(c->iscache, path, offset, size, vaddr);

	if (isid < 0)
		return isid;
	return pt_image_add_cached(c->image, c->iscache, isid, NULL);
}

/* Add [vaddr, vaddr+size) backed by embedded @code at @code_off. */
static int add_embedded(struct bt_ctx *c, const struct btrace_code *code,
			int64_t *memoff, uint64_t code_off, uint64_t vaddr,
			uint64_t size, int module)
{
	char fdpath[64];
	int ret;

	if (*memoff < 0)
		return -BTRACE_ERR_INTERNAL;
	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", c->memfd);
	ret = add_section(c, fdpath, (uint64_t)*memoff + code_off, size, vaddr);
	if (ret < 0)
		return bt_error(c->err, -BTRACE_ERR_INTERNAL,
				"image: adding embedded code at 0x%llx failed: %s",
				(unsigned long long)vaddr,
				pt_errstr(pt_errcode(ret)));
	return add_region(c, vaddr, vaddr + size, code->data + code_off, module);
}

static int same_id(const uint8_t *a, uint32_t na, const uint8_t *b, uint32_t nb)
{
	return na && na == nb && !memcmp(a, b, na);
}

/* File code @code was copied from the file of mapping @m: the same build
 * ID, or, for a file without one (Go binaries, --build-id=none), the same
 * recorded path in this snapshot. */
static int code_of_file(const struct btrace_code *code,
			const struct btrace_mapping *m)
{
	if (m->build_id_size)
		return same_id(code->build_id, code->build_id_size,
			       m->build_id, m->build_id_size);
	return !code->build_id_size && code->path && m->path &&
	       m->path[0] == '/' && !strcmp(code->path, m->path);
}

/* The snapshot embedded code of the module's file (which has no build ID). */
static int embedded_from(const struct bt_ctx *c, const struct bt_module *mod)
{
	for (size_t i = 0; i < c->snap->ncode; i++) {
		const struct btrace_code *code = &c->snap->code[i];

		if (code->kind == BTRACE_CODE_FILE && !code->build_id_size &&
		    code->path && !strcmp(code->path, mod->path) && code->size)
			return 1;
	}
	return 0;
}

/* A file without a build ID is the module's file only if it holds, at the
 * same offsets, every byte of code the snapshot embedded from the module's
 * path (and there is some): nothing else can tell it from a rebuilt one. */
static int same_code_as_snapshot(const struct bt_ctx *c,
				 const struct bt_module *mod, const char *path)
{
	const struct btrace_snapshot *s = c->snap;
	int fd = bt_open_regular(path), checked = 0, ok = 1;
	uint8_t *buf = NULL;
	uint8_t id[BTRACE_BUILD_ID_MAX];
	uint32_t n = 0;
	struct stat st;

	if (fd < 0)
		return 0;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    bt_image_file_build_id(path, id, &n) == 0) {
		close(fd);
		return 0;   /* not a regular file, or it has an ID: not the one that ran */
	}
	for (size_t i = 0; i < s->ncode && ok; i++) {
		const struct btrace_code *code = &s->code[i];

		if (code->kind != BTRACE_CODE_FILE || code->build_id_size ||
		    !code->path || strcmp(code->path, mod->path) ||
		    !code->data || !code->size || code->size > (1u << 30))
			continue;
		uint8_t *nb = realloc(buf, code->size);

		if (!nb) {
			ok = 0;
			break;
		}
		buf = nb;
		ok = pread(fd, buf, code->size, (off_t)code->file_offset) ==
			    (ssize_t)code->size &&
		     !memcmp(buf, code->data, code->size);
		checked++;
	}
	free(buf);
	close(fd);
	return ok && checked;
}

/* The ELF has its code (not a separate debug file with NOBITS .text). */
static int elf_has_code(const char *path)
{
	int fd = bt_open_regular(path), ret = 0;
	size_t shstrndx;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (e && !elf_getshdrstrndx(e, &shstrndx)) {
		Elf_Scn *scn = NULL;
		ret = 1;
		while ((scn = elf_nextscn(e, scn))) {
			GElf_Shdr sh;
			const char *n;
			if (!gelf_getshdr(scn, &sh) ||
			    !(n = elf_strptr(e, shstrndx, sh.sh_name)))
				continue;
			if (!strcmp(n, ".text")) {
				ret = sh.sh_type != SHT_NOBITS;
				break;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return ret;
}

/* @path holds the module's build ID: as its code file, or its debug file. */
static int try_file(struct bt_module *mod, const char *path)
{
	uint8_t id[BTRACE_BUILD_ID_MAX];
	uint32_t n = 0;

	if (access(path, R_OK) || bt_image_file_build_id(path, id, &n) < 0 ||
	    !same_id(id, n, mod->build_id, mod->build_id_size))
		return 0;
	if (!mod->code_file && elf_has_code(path))
		mod->code_file = strdup(path);
	else if (!mod->debug_file)
		mod->debug_file = strdup(path);
	return 1;
}

/* DIR/<file name>, DIR/.build-id/xx/rest, DIR/.build-id/xx/rest.debug */
static void search_dir(struct bt_module *mod, const char *dir, size_t dlen,
		       const char *hex, int names)
{
	char p[4200];
	const char *base = strrchr(mod->path, '/');

	if (!dlen || dlen > 4000)
		return;
	if (names && base && base[1]) {
		snprintf(p, sizeof(p), "%.*s%s", (int)dlen, dir, base);
		try_file(mod, p);
	}
	if (!mod->code_file) {
		snprintf(p, sizeof(p), "%.*s/.build-id/%.2s/%s", (int)dlen, dir, hex, hex + 2);
		try_file(mod, p);
	}
	if (!mod->debug_file) {
		snprintf(p, sizeof(p), "%.*s/.build-id/%.2s/%s.debug", (int)dlen, dir, hex, hex + 2);
		try_file(mod, p);
	}
}

/* Look for the module's files by build ID: the snapshot's directory,
 * opts.debug_path (BTRACE_DEBUG_PATH), the debug directory (.build-id only), then the
 * recorded path (docs/report.md, "Finding binaries"). */
static void find_files(struct bt_ctx *c, struct bt_module *mod)
{
	char hex[2 * BTRACE_BUILD_ID_MAX + 8];
	const char *env = c->opts.debug_path;
	const char *dbg = c->opts.debug_dir ? c->opts.debug_dir : "/usr/lib/debug";

	if (mod->searched)
		return;
	mod->searched = 1;
	if (mod->path[0] != '/' || mod->path[1] == '/')
		return;
	if (!mod->build_id_size) {
		/* No build ID: the recorded path, or the same name in the
		 * search directories, if its bytes are the snapshot's. */
		const char *base = strrchr(mod->path, '/') + 1;
		char p[4200];

		if (c->opts.search_dir && *base) {
			snprintf(p, sizeof(p), "%s/%s", c->opts.search_dir, base);
			if (same_code_as_snapshot(c, mod, p))
				mod->code_file = strdup(p);
		}
		for (const char *d = env; d && *d && *base && !mod->code_file;) {
			const char *e = strchr(d, ':');
			int n = e ? (int)(e - d) : (int)strlen(d);

			snprintf(p, sizeof(p), "%.*s/%s", n < 4000 ? n : 4000, d, base);
			if (same_code_as_snapshot(c, mod, p))
				mod->code_file = strdup(p);
			d = e ? e + 1 : NULL;
		}
		if (!mod->code_file && same_code_as_snapshot(c, mod, mod->path))
			mod->code_file = strdup(mod->path);
		return;
	}
	if (mod->build_id_size < 2)
		return;
	hexid(hex, mod->build_id, mod->build_id_size);
	if (c->opts.search_dir)
		search_dir(mod, c->opts.search_dir, strlen(c->opts.search_dir), hex, 1);
	for (const char *d = env; d && *d && !(mod->code_file && mod->debug_file);) {
		const char *e = strchr(d, ':');
		size_t n = e ? (size_t)(e - d) : strlen(d);
		search_dir(mod, d, n, hex, 1);
		d = e ? e + 1 : NULL;
	}
	if (!(mod->code_file && mod->debug_file))
		search_dir(mod, dbg, strlen(dbg), hex, 0);
	if (!mod->code_file)
		try_file(mod, mod->path);
}

static int add_hole(struct bt_ctx *c, const struct btrace_mapping *m,
		    uint64_t start, uint64_t end, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));

static int add_hole(struct bt_ctx *c, const struct btrace_mapping *m,
		    uint64_t start, uint64_t end, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (bt_grow((void **)&c->holes, &c->choles, c->nholes + 1, sizeof(*c->holes)))
		return -ENOMEM;
	const char *note = bt_ctx_strdup(c, buf);
	if (!note)
		return -ENOMEM;
	c->holes[c->nholes++] = (struct bt_hole){ start, end, m->start, m->end,
						   note, 0, 0 };
	return 0;
}

/* Cover [start, end) of a file mapping from a file with its build ID. */
static int add_from_disk(struct bt_ctx *c, const struct btrace_mapping *m,
			 int mi, uint64_t start, uint64_t end)
{
	struct bt_module *mod = &c->modules[mi];
	char want[2 * BTRACE_BUILD_ID_MAX + 8], have[2 * BTRACE_BUILD_ID_MAX + 8];
	uint8_t id[BTRACE_BUILD_ID_MAX];
	uint32_t idsz = 0;
	struct stat st;
	int ret;

	if (c->opts.flags & BTRACE_DECODE_NO_DISK)
		return add_hole(c, m, start, end, "%s: code at 0x%llx-0x%llx is not in the snapshot (disk files not used)",
				mod->path, (unsigned long long)start,
				(unsigned long long)end);
	if (mod->path[0] != '/' || mod->path[1] == '/')   /* //anon */
		return add_hole(c, m, start, end, "%s: code at 0x%llx-0x%llx is not in the snapshot",
				mod->path, (unsigned long long)start,
				(unsigned long long)end);
	find_files(c, mod);
	hexid(want, m->build_id, m->build_id_size);
	if (!mod->code_file && !mod->build_id_size)
		return add_hole(c, m, start, end, "%s: code at 0x%llx-0x%llx is not in the snapshot, and %s: not used",
				mod->path, (unsigned long long)start,
				(unsigned long long)end,
				embedded_from(c, mod) ?
				"no file without a build ID that holds the code the snapshot embedded from it was found" :
				"the module has no build ID and no embedded code to check a file against");
	if (!mod->code_file) {
		ret = bt_image_file_build_id(mod->path, id, &idsz);
		if (ret < 0)
			return add_hole(c, m, start, end, "%s: code at 0x%llx-0x%llx is not in the snapshot, no file with build ID %s was found and the recorded path cannot be read (%s)",
					mod->path, (unsigned long long)start,
					(unsigned long long)end, want,
					btrace_strerror(ret));
		hexid(have, id, idsz);
		return add_hole(c, m, start, end, "%s: code at 0x%llx-0x%llx is not in the snapshot and the file on disk has build ID %s, recorded %s: not used",
				mod->path, (unsigned long long)start,
				(unsigned long long)end, have, want);
	}
	if (!mod->map) {
		int fd = bt_open_regular(mod->code_file);
		if (fd < 0 || fstat(fd, &st) < 0 || !st.st_size) {
			if (fd >= 0)
				close(fd);
			return add_hole(c, m, start, end, "%s: open failed", mod->code_file);
		}
		mod->map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
		if (mod->map == MAP_FAILED) {
			close(fd);
			mod->map = NULL;
			return add_hole(c, m, start, end, "%s: mmap failed", mod->code_file);
		}
		mod->map_size = (size_t)st.st_size;
		mod->code_fd = fd + 1;
	}
	uint64_t foff = m->pgoff + (start - m->start);
	if (foff >= mod->map_size)
		return 0;
	if (foff + (end - start) > mod->map_size)
		end = start + (mod->map_size - foff);
	char fdpath[64];

	snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", mod->code_fd - 1);
	ret = add_section(c, fdpath, foff, end - start, start);
	if (ret < 0)
		return add_hole(c, m, start, end, "%s: adding to the image failed: %s",
				mod->code_file, pt_errstr(pt_errcode(ret)));
	return add_region(c, start, end, (const uint8_t *)mod->map + foff, mi);
}

static int cmp_u64pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	return x[0] < y[0] ? -1 : x[0] > y[0];
}

static int add_mapping(struct bt_ctx *c, const struct btrace_mapping *m,
		       int64_t *memoffs)
{
	const struct btrace_snapshot *s = c->snap;
	int mi = find_module(c, m);
	uint64_t (*cov)[2] = NULL;
	size_t ncov = 0, ccov = 0;
	int ret = 0;

	if (mi < 0)
		return mi;
	struct bt_module *mod = &c->modules[mi];
	if (m->start < mod->lo)
		mod->lo = m->start;
	if (m->end > mod->hi)
		mod->hi = m->end;
	if (!mod->build_id_size && m->build_id_size) {
		memcpy(mod->build_id, m->build_id, sizeof(mod->build_id));
		mod->build_id_size = m->build_id_size;
	}
	if (!(m->prot & BT_PROT_EXEC) || bt_is_kernel(m->start))
		return 0;   /* not code, or [vsyscall] (kernel-provided) */

	for (size_t i = 0; i < s->ncode; i++) {
		const struct btrace_code *code = &s->code[i];
		uint64_t lo, hi, vaddr, coff;

		if (!code->size || !code->data)
			continue;
		if (code->kind == BTRACE_CODE_FILE) {
			if (!code_of_file(code, m))
				continue;
			uint64_t mlen = m->end - m->start;
			lo = code->file_offset > m->pgoff ? code->file_offset : m->pgoff;
			hi = code->file_offset + code->size;
			if (hi > m->pgoff + mlen)
				hi = m->pgoff + mlen;
			if (lo >= hi)
				continue;
			vaddr = m->start + (lo - m->pgoff);
			coff = lo - code->file_offset;
		} else {
			lo = code->vaddr > m->start ? code->vaddr : m->start;
			hi = code->vaddr + code->size;
			if (hi > m->end)
				hi = m->end;
			if (lo >= hi)
				continue;
			vaddr = lo;
			coff = lo - code->vaddr;
			hi = vaddr + (hi - lo);
			lo = vaddr;
		}
		uint64_t len = hi - lo;
		ret = add_embedded(c, code, &memoffs[i], coff, vaddr, len, mi);
		if (ret < 0)
			goto out;
		if (bt_grow((void **)&cov, &ccov, ncov + 1, sizeof(*cov))) {
			ret = -ENOMEM;
			goto out;
		}
		cov[ncov][0] = vaddr;
		cov[ncov][1] = vaddr + len;
		ncov++;
	}

	/* Fill the holes from disk (when the build ID matches). */
	if (ncov)   /* qsort(NULL, 0, ...) is undefined */
		qsort(cov, ncov, sizeof(*cov), cmp_u64pair);
	uint64_t at = m->start;
	size_t h0 = c->nholes;
	for (size_t i = 0; i <= ncov && at < m->end; i++) {
		uint64_t next = i < ncov ? cov[i][0] : m->end;
		if (next > m->end)
			next = m->end;
		if (next > at) {
			ret = add_from_disk(c, m, mi, at, next);
			if (ret < 0)
				goto out;
		}
		if (i < ncov && cov[i][1] > at)
			at = cov[i][1];
	}
	/* a mapping with some code and a hole: blocks can enter it */
	for (size_t h = h0; h < c->nholes; h++) {
		if (ncov || c->holes[h].start != m->start || c->holes[h].end != m->end) {
			c->holes[h].partial = 1;
			c->npartial++;
		}
	}
out:
	free(cov);
	return ret;
}

static void module_bias(struct bt_ctx *c, struct bt_module *mod)
{
	const struct btrace_snapshot *s = c->snap;
	const char *path = mod->elf;
	int type = 0;
	uint64_t v0 = 0, o0 = 0;

	mod->bias = 0;
	for (size_t i = 0; i < s->nmappings; i++) {
		const struct btrace_mapping *m = &s->mappings[i];
		if (!m->path || strcmp(m->path, mod->path) || m->pgoff)
			continue;
		if (path && !elf_load_info(path, &type, &v0, &o0)) {
			if (type == ET_EXEC)
				mod->bias = 0;
			else
				mod->bias = m->start - (v0 & ~0xfffull) + (o0 & ~0xfffull);
		} else {
			mod->bias = m->start;
		}
		mod->have_bias = 1;
		return;
	}
}

int bt_image_build(struct bt_ctx *c)
{
	const struct btrace_snapshot *s = c->snap;
	int64_t *memoffs;
	int ret = 0;

	c->memfd = -1;
	c->image = pt_image_alloc("btrace");
	c->iscache = pt_iscache_alloc("btrace");
	if (!c->image || !c->iscache ||
	    pt_iscache_set_limit(c->iscache, BT_ISCACHE_LIMIT) < 0)
		return bt_error(c->err, -ENOMEM, "image: allocation failed: out of memory");
	memoffs = malloc((s->ncode + 1) * sizeof(*memoffs));
	if (!memoffs)
		return -ENOMEM;
	/* All embedded code goes into the memfd before any section is added:
	 * libipt checks that a section's file keeps its size and mtime. */
	for (size_t i = 0; i < s->ncode; i++) {
		memoffs[i] = -1;
		if (!s->code[i].size || !s->code[i].data)
			continue;
		memoffs[i] = memfd_put(c, &s->code[i]);
		if (memoffs[i] < 0) {
			ret = bt_error(c->err, (int)memoffs[i],
				       "image: copying embedded code failed: %s",
				       btrace_strerror((int)memoffs[i]));
			free(memoffs);
			return ret;
		}
	}
	/* Embedded code first so that lookups prefer it. */
	for (size_t i = 0; i < s->nmappings && ret >= 0; i++)
		ret = add_mapping(c, &s->mappings[i], memoffs);
	free(memoffs);
	if (ret < 0)
		return ret;

	/* The file used for symbols: one with the module's code and build ID
	 * (its .dynsym and PLT too; libdw finds separate debug info for it),
	 * else the separate debug file. */
	for (size_t i = 0; i < c->nmodules; i++) {
		struct bt_module *mod = &c->modules[i];

		find_files(c, mod);
		if (mod->code_file)
			mod->elf = strdup(mod->code_file);
		else if (mod->debug_file)
			mod->elf = strdup(mod->debug_file);
		module_bias(c, mod);
	}
	return 0;
}

void bt_image_free(struct bt_ctx *c)
{
	if (c->image)
		pt_image_free(c->image);
	c->image = NULL;
	/* after the image, which holds references to its sections */
	if (c->iscache)
		pt_iscache_free(c->iscache);
	c->iscache = NULL;
	for (size_t i = 0; i < c->nmodules; i++) {
		free(c->modules[i].path);
		free(c->modules[i].elf);
		free(c->modules[i].code_file);
		free(c->modules[i].debug_file);
		free(c->modules[i].disk_note);
		if (c->modules[i].map)
			munmap(c->modules[i].map, c->modules[i].map_size);
		if (c->modules[i].code_fd > 0)
			close(c->modules[i].code_fd - 1);
	}
	free(c->modules);
	free(c->regions);
	free(c->holes);
	c->holes = NULL;
	c->nholes = c->npartial = 0;
	if (c->memfd >= 0)
		close(c->memfd);
	c->memfd = -1;
}

const struct bt_region *bt_image_region(const struct bt_ctx *c, uint64_t ip)
{
	for (size_t i = 0; i < c->nregions; i++)
		if (ip >= c->regions[i].start && ip < c->regions[i].end)
			return &c->regions[i];
	return NULL;
}

const uint8_t *bt_image_bytes(const struct bt_ctx *c, uint64_t ip,
			      size_t *avail)
{
	const struct bt_region *r = bt_image_region(c, ip);

	if (!r)
		return NULL;
	*avail = (size_t)(r->end - ip);
	return r->data + (ip - r->start);
}

int bt_image_module_of(const struct bt_ctx *c, uint64_t ip)
{
	const struct btrace_snapshot *s = c->snap;

	for (size_t i = 0; i < s->nmappings; i++) {
		const struct btrace_mapping *m = &s->mappings[i];
		if (ip < m->start || ip >= m->end)
			continue;
		const char *path = m->path ? m->path : "//anon";
		for (size_t j = 0; j < c->nmodules; j++)
			if (!strcmp(c->modules[j].path, path))
				return (int)j;
	}
	return -1;
}

const char *bt_image_why_missing(struct bt_ctx *c, uint64_t ip)
{
	int mi;

	if (bt_is_kernel(ip))
		return bt_ctx_printf(c, "kernel code at 0x%llx (not in the image)",
				     (unsigned long long)ip);
	for (size_t i = 0; i < c->nholes; i++)
		if (ip >= c->holes[i].start && ip < c->holes[i].end)
			return c->holes[i].note;
	mi = bt_image_module_of(c, ip);
	if (mi < 0)
		return bt_ctx_printf(c, "no mapping at 0x%llx in the snapshot",
				     (unsigned long long)ip);
	return bt_ctx_printf(c, "no code for %s at 0x%llx (not in the snapshot, no matching file)",
			     c->modules[mi].path, (unsigned long long)ip);
}

void bt_image_mark_entered(struct bt_ctx *c, uint64_t ip, int block)
{
	if (block && !c->npartial)
		return;
	for (size_t i = 0; i < c->nholes; i++)
		if (ip >= c->holes[i].mstart && ip < c->holes[i].mend)
			c->holes[i].used = 1;
}

int bt_image_notes(struct bt_ctx *c)
{
	int all = !!(c->opts.flags & BTRACE_DECODE_ALL_NOTES);

	for (size_t i = 0; i < c->nholes; i++) {
		int ret = 0;
		if (c->holes[i].used)
			ret = bt_ctx_note(c, "%s", c->holes[i].note);
		else if (all)
			ret = bt_ctx_note(c, "%s (the trace never entered this mapping)",
					  c->holes[i].note);
		if (ret < 0)
			return ret;
	}
	return 0;
}
