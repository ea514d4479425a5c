// SPDX-License-Identifier: MIT
/*
 * Minimal ELF reading for the QEMU backend: program headers, the GNU build
 * ID, and the NT_PRSTATUS notes of a guest core.  Bounds-checked; no libelf
 * (libbtrace must not depend on it).
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "qemu-record.h"
#include "elf-buildid.h"
#include "util.h"

int bt_qemu_pread_all(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t r = pread(fd, (uint8_t *)buf + done, len - done,
				  (off_t)(off + done));

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -EIO;
		done += (size_t)r;
	}
	return 0;
}

/* Walk the notes in [buf, buf+len); call @fn for each. */
static void bt_notes(const uint8_t *buf, size_t len,
		     void (*fn)(void *ctx, uint32_t type, const char *name,
				const uint8_t *desc, uint32_t dsz),
		     void *ctx)
{
	size_t off = 0;

	while (off + 12 <= len) {
		uint32_t nsz = bt_le32(buf + off);
		uint32_t dsz = bt_le32(buf + off + 4);
		uint32_t type = bt_le32(buf + off + 8);
		size_t nal = ((size_t)nsz + 3) & ~(size_t)3;
		size_t dal = ((size_t)dsz + 3) & ~(size_t)3;
		const char *name = (const char *)buf + off + 12;

		if (nsz > len || dsz > len || off + 12 + nal + dal > len)
			break;
		if (nsz && name[nsz - 1] != 0)
			name = "";
		fn(ctx, type, name, buf + off + 12 + nal, dsz);
		off += 12 + nal + dal;
	}
}

/*
 * Read the program headers of an ELF64 file: as many as the format allows
 * (e_phnum, or with PN_XNUM the count in section header 0's sh_info, the
 * extension a core of 65,535 mappings or more uses: elf(5)), bounded by
 * the file's size only.  A core has a program header per mapping, and a
 * process may have up to vm.max_map_count (65,530 by default) of them.
 */
static int bt_elf_phdrs(int fd, Elf64_Ehdr *eh, Elf64_Phdr **out)
{
	Elf64_Phdr *ph;
	struct stat st;
	uint64_t n = eh->e_phnum;

	if (eh->e_phentsize != sizeof(Elf64_Phdr) || n == 0 || fstat(fd, &st))
		return -EINVAL;
	if (n == PN_XNUM) {
		Elf64_Shdr sh0;

		if (!eh->e_shoff || eh->e_shentsize != sizeof(sh0) ||
		    bt_qemu_pread_all(fd, &sh0, sizeof(sh0), eh->e_shoff))
			return -EINVAL;
		n = sh0.sh_info;
	}
	if (!n || eh->e_phoff > (uint64_t)st.st_size ||
	    n > ((uint64_t)st.st_size - eh->e_phoff) / sizeof(*ph) ||
	    n > INT_MAX)
		return -EINVAL;
	ph = calloc(n, sizeof(*ph));
	if (!ph)
		return -ENOMEM;
	if (bt_qemu_pread_all(fd, ph, n * sizeof(*ph), eh->e_phoff)) {
		free(ph);
		return -EIO;
	}
	*out = ph;
	return (int)n;
}

int bt_qemu_elf_read(const char *path, struct bt_qemu_elf *e)
{
	unsigned char ident[EI_NIDENT];
	Elf64_Ehdr eh;
	Elf64_Phdr *ph = NULL;
	int fd, n, rc = 0;

	memset(e, 0, sizeof(*e));
	fd = bt_open_regular(path);
	if (fd < 0)
		return -errno;
	if (bt_qemu_pread_all(fd, ident, sizeof(ident), 0) ||
	    memcmp(ident, ELFMAG, SELFMAG)) {
		rc = -ENOEXEC;
		goto out;
	}
	if (ident[EI_CLASS] != ELFCLASS64 || ident[EI_DATA] != ELFDATA2LSB) {
		/* Still report the machine for a clear message. */
		Elf32_Ehdr e32;

		if (!bt_qemu_pread_all(fd, &e32, sizeof(e32), 0))
			e->machine = e32.e_machine;
		rc = 0;
		goto out;
	}
	e->is_elf64 = 1;
	if (bt_qemu_pread_all(fd, &eh, sizeof(eh), 0)) {
		rc = -ENOEXEC;
		goto out;
	}
	e->machine = eh.e_machine;
	e->type = eh.e_type;
	n = bt_elf_phdrs(fd, &eh, &ph);
	if (n < 0)
		goto out;   /* no program headers: not loadable, no build id */
	for (int i = 0; i < n; i++) {
		if (ph[i].p_type == PT_INTERP)
			e->has_interp = 1;
		if (ph[i].p_type == PT_LOAD && e->nseg < BT_ARRAY_SIZE(e->seg)) {
			struct bt_qemu_elf_seg *s = &e->seg[e->nseg++];

			s->offset = ph[i].p_offset;
			s->vaddr = ph[i].p_vaddr;
			s->filesz = ph[i].p_filesz;
			s->flags = ph[i].p_flags;
		}
		if (ph[i].p_type == PT_NOTE && ph[i].p_filesz &&
		    ph[i].p_filesz < (1u << 20) && !e->build_id_size) {
			uint8_t *buf = malloc(ph[i].p_filesz);

			if (buf && !bt_qemu_pread_all(fd, buf, ph[i].p_filesz,
						 ph[i].p_offset)) {
				int bid = bt_elf_note_build_id(buf, ph[i].p_filesz,
							       e->build_id,
							       BTRACE_BUILD_ID_MAX);

				if (bid > 0)
					e->build_id_size = (uint32_t)bid;
			}
			free(buf);
		}
	}
out:
	free(ph);
	close(fd);
	return rc;
}

/* elf_prstatus on x86-64: pr_cursig at 12, pr_pid at 32, pr_reg at 112. */
#define BT_PRSTATUS_CURSIG 12
#define BT_PRSTATUS_PID 32
#define BT_PRSTATUS_REG 112
#define BT_PRSTATUS_MIN (BT_PRSTATUS_REG + 8 * BTRACE_NREGS)

static void bt_core_note(void *ctx, uint32_t type, const char *name,
			 const uint8_t *desc, uint32_t dsz)
{
	struct bt_qemu_core *c = ctx;

	if (type == NT_AUXV && strcmp(name, "CORE") == 0) {
		for (uint32_t off = 0; off + 16 <= dsz; off += 16) {
			uint64_t key = bt_le64(desc + off);
			uint64_t val = bt_le64(desc + off + 8);

			if (key == AT_NULL)
				break;
			if (key == AT_RANDOM && val)
				c->initial_stack = val;
			if (key == AT_EXECFN && val && !c->initial_stack)
				c->initial_stack = val;
		}
		return;
	}
	if (type != NT_PRSTATUS || dsz < BT_PRSTATUS_MIN)
		return;
	c->nthreads++;
	if (c->found)
		return;   /* the first one is the thread that died */
	c->found = 1;
	c->signo = (int16_t)bt_le16(desc + BT_PRSTATUS_CURSIG);
	c->tid = (int32_t)bt_le32(desc + BT_PRSTATUS_PID);
	for (int i = 0; i < BTRACE_NREGS; i++)
		c->regs[i] = bt_le64(desc + BT_PRSTATUS_REG + 8 * i);
}

static int bt_vma_cmp(const void *a, const void *b)
{
	const struct bt_qemu_core_vma *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

int bt_qemu_core_read(const char *path, struct bt_qemu_core *c)
{
	Elf64_Ehdr eh;
	Elf64_Phdr *ph = NULL;
	int fd, n, rc = -ENOEXEC;

	memset(c, 0, sizeof(*c));
	fd = bt_open_regular(path);
	if (fd < 0)
		return -errno;
	if (bt_qemu_pread_all(fd, &eh, sizeof(eh), 0) ||
	    memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
	    eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_type != ET_CORE)
		goto out;
	n = bt_elf_phdrs(fd, &eh, &ph);
	for (int i = 0; i < n; i++) {
		uint8_t *buf;

		if (ph[i].p_type == PT_LOAD && ph[i].p_memsz &&
		    ph[i].p_vaddr + ph[i].p_memsz > ph[i].p_vaddr) {
			struct bt_qemu_core_vma *v = c->vmas;

			if (!v && !(v = c->vmas = calloc((size_t)n, sizeof(*v)))) {
				rc = -ENOMEM;
				goto out;
			}
			v[c->nvmas].start = ph[i].p_vaddr;
			v[c->nvmas].end = ph[i].p_vaddr + ph[i].p_memsz;
			v[c->nvmas].flags = ph[i].p_flags;
			c->nvmas++;
		}
		if (ph[i].p_type == PT_LOAD && ph[i].p_filesz) {
			struct bt_qemu_core_load *l = c->loads;

			if (!l && !(l = c->loads = calloc((size_t)n, sizeof(*l)))) {
				rc = -ENOMEM;
				goto out;
			}
			l[c->nloads].vaddr = ph[i].p_vaddr;
			l[c->nloads].offset = ph[i].p_offset;
			l[c->nloads].filesz = ph[i].p_filesz;
			l[c->nloads].flags = ph[i].p_flags;
			c->nloads++;
			continue;
		}
		if (ph[i].p_type != PT_NOTE || !ph[i].p_filesz ||
		    ph[i].p_filesz > (64u << 20))
			continue;
		buf = malloc(ph[i].p_filesz);
		if (buf && !bt_qemu_pread_all(fd, buf, ph[i].p_filesz, ph[i].p_offset))
			bt_notes(buf, ph[i].p_filesz, bt_core_note, c);
		free(buf);
	}
	if (c->nvmas)   /* qsort(NULL, 0, ...) is undefined */
		qsort(c->vmas, c->nvmas, sizeof(*c->vmas), bt_vma_cmp);
	rc = c->found ? 0 : -ENOENT;
out:
	if (rc) {   /* nothing half-read: found is 0 */
		bt_qemu_core_free(c);
		memset(c, 0, sizeof(*c));
	}
	free(ph);
	close(fd);
	return rc;
}

void bt_qemu_core_free(struct bt_qemu_core *c)
{
	free(c->loads);
	c->loads = NULL;
	c->nloads = 0;
	free(c->vmas);
	c->vmas = NULL;
	c->nvmas = 0;
}
