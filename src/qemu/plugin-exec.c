// SPDX-License-Identifier: MIT
/*
 * execve() of a traced guest: run the new program under a new
 * qemu-x86_64 with this plugin, so it stays traced.
 *
 * QEMU 7.2's linux-user execve() runs the new program natively (there is no
 * binfmt entry for the host's own architecture), which would leave the
 * program untraced: a shell script that starts the program that crashes, a
 * test runner, `make`.  At the guest's execve() the plugin (plugin argument
 * exec=1, which btrace passes) reads the path, argv and envp from guest
 * memory (guest_base is 0: guest addresses are host addresses) and itself
 * calls execve() of the emulator with the command line it was started with:
 * the same options and plugin, argv[0] as the guest gave it, the guest's
 * dynamic-loader variables as -E options (so they do not apply to the
 * emulator itself), then the program and its arguments.  The process keeps its pid, descriptors,
 * working directory and environment as the guest's execve() would have; the
 * new plugin instance publishes a fresh ring file under the same name, which
 * replaces the old one (btrace reads the file when the process dies).
 *
 * What stays native (the guest's own execve() then runs): anything but a
 * regular x86-64 ELF file or a "#!" script whose interpreter is one, a
 * program built with a sanitizer runtime (san-elf.c),
 * set-user-ID and set-group-ID files and files with capabilities (under
 * QEMU they would run without their privileges), execveat() with a
 * directory descriptor or flags, and any failure here (for example a
 * command line longer than the kernel takes).  Then the old ring only
 * records that an execve() was attempted (BT_RING_F_EXEC).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "plugin-exec.h"
#include "san-elf.h"

#define BT_ARG_MAX_STRLEN (128u * 1024)  /* the kernel's MAX_ARG_STRLEN */
#define BT_ARG_MAX_COUNT 0x7fffffffu
#define BT_SHEBANG_MAX 256               /* the kernel's BINPRM_BUF_SIZE */

struct bt_strv {
	char **v;
	size_t n, cap;
};

static int bt_strv_push(struct bt_strv *s, char *str)
{
	if (!str)
		return -1;
	if (s->n + 2 > s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 16;
		char **v = realloc(s->v, cap * sizeof(*v));

		if (!v) {
			free(str);
			return -1;
		}
		s->v = v;
		s->cap = cap;
	}
	s->v[s->n++] = str;
	s->v[s->n] = NULL;
	return 0;
}

static void bt_strv_free(struct bt_strv *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->v[i]);
	free(s->v);
	memset(s, 0, sizeof(*s));
}

/* A NUL-terminated string of guest memory, read a page at a time so that
 * one ending just before an unmapped page is still read. */
static char *bt_read_guest_str(uint64_t addr)
{
	size_t n = 0, cap = 0;
	char *s = NULL;

	for (;;) {
		size_t chunk = 4096 - ((addr + n) & 4095);
		ssize_t r;
		char *z;

		if (n + chunk + 1 > cap) {
			char *t = realloc(s, cap = n + chunk + 1);

			if (!t)
				break;
			s = t;
		}
		r = bt_peek(addr + n, s + n, chunk);
		if (r <= 0)
			break;
		z = memchr(s + n, 0, (size_t)r);
		if (z)
			return s;
		n += (size_t)r;
		if (n > BT_ARG_MAX_STRLEN)
			break;
	}
	free(s);
	return NULL;
}

/* A guest argv/envp array (NULL: empty, as Linux allows). */
static int bt_read_guest_vec(uint64_t addr, struct bt_strv *out)
{
	for (uint64_t i = 0; addr; i++) {
		uint64_t p;

		if (i >= BT_ARG_MAX_COUNT ||
		    bt_peek(addr + 8 * i, &p, 8) != 8)
			return -1;
		if (!p)
			break;
		if (bt_strv_push(out, bt_read_guest_str(p)))
			return -1;
	}
	if (!out->v) {
		out->v = calloc(1, sizeof(*out->v));
		out->cap = 1;
	}
	return out->v ? 0 : -1;
}

/* Whether @path is a file the emulator can run in place of the kernel:
 * a regular x86-64 ELF executable, without set-ID bits or capabilities.
 * On success @head holds the file's first bytes (for "#!"). */
enum bt_kind { BT_NATIVE, BT_ELF, BT_SCRIPT };

static enum bt_kind bt_classify_file(const char *path, char *head,
				     size_t headlen)
{
	struct stat st;
	ssize_t r;
	int fd;

	if (access(path, X_OK))
		return BT_NATIVE;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return BT_NATIVE;
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) ||
	    (st.st_mode & (S_ISUID | S_ISGID)) ||
	    fgetxattr(fd, "security.capability", NULL, 0) > 0) {
		close(fd);
		return BT_NATIVE;
	}
	memset(head, 0, headlen);
	r = pread(fd, head, headlen - 1, 0);
	close(fd);
	if (r >= 2 && head[0] == '#' && head[1] == '!')
		return BT_SCRIPT;
	if (r >= 20 && !memcmp(head, "\177ELF", 4) && head[4] == 2 /* 64 */ &&
	    head[5] == 1 /* LE */ && (uint8_t)head[18] == 62 /* x86-64 */ &&
	    head[19] == 0)
		return BT_ELF;
	return BT_NATIVE;
}

/*
 * The emulator's own command line up to and including the plugin's
 * argument, from /proc/self/cmdline, without "-0 NAME" and with the fd=
 * plugin argument dropped (that descriptor belonged to the first instance)
 * and comm= (the new program's name follows, bt_exec_comm()).
 * btrace builds the line as "qemu [options] -plugin SPEC PROGRAM ARGS".
 */
/* The plugin's arguments @spec (freed) with ",comm=" the basename of
 * @path, the program's name after the kernel's execve(); unchanged when
 * the name has a comma (the plugin's argument separator). */
static char *bt_exec_comm(char *spec, const char *path)
{
	const char *b = strrchr(path, '/');
	char name[16], *out = NULL;

	snprintf(name, sizeof(name), "%s", b ? b + 1 : path);
	if (!name[0] || strchr(name, ',') ||
	    asprintf(&out, "%s,comm=%s", spec, name) < 0)
		return spec;
	free(spec);
	return out;
}

static int bt_own_prefix(struct bt_strv *out, const char *comm)
{
	char *buf = NULL, *p, *end;
	size_t len = 0, cap = 0;
	ssize_t r;
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC), skip = 0;
	int rc = -1;

	if (fd < 0)
		return -1;
	/* The whole line: the guest's arguments come after ours. */
	do {
		if (len + 4096 + 1 > cap) {
			char *t = realloc(buf, cap = 2 * cap + 4096 + 1);

			if (!t) {
				r = -1;
				break;
			}
			buf = t;
		}
		r = read(fd, buf + len, 4096);
		if (r > 0)
			len += (size_t)r;
	} while (r > 0);
	close(fd);
	if (r < 0 || !len) {
		free(buf);
		return -1;
	}
	buf[len] = 0;
	end = buf + len;
	for (p = buf; p < end; p += strlen(p) + 1) {
		if (skip) {
			skip = 0;
			continue;
		}
		/* argv[0] and the guest's loader variables: set again
		 * from the new program's own. */
		if (!strcmp(p, "-0") || !strcmp(p, "-E")) {
			skip = 1;
			continue;
		}
		if (!strcmp(p, "-plugin") && p + strlen(p) + 1 < end) {
			char *spec = p + strlen(p) + 1, *copy, *o;

			if (bt_strv_push(out, strdup(p)))
				break;
			/* SPEC without ",fd=N" */
			copy = malloc(strlen(spec) + 1);
			if (!copy)
				break;
			o = copy;
			for (char *a = spec; *a;) {
				size_t l = strcspn(a, ",");

				if (strncmp(a, "fd=", 3) &&
				    strncmp(a, "comm=", 5)) {
					if (o != copy)
						*o++ = ',';
					memcpy(o, a, l);
					o += l;
				}
				a += l + (a[l] == ',');
			}
			*o = 0;
			rc = bt_strv_push(out, bt_exec_comm(copy, comm));
			break;
		}
		if (bt_strv_push(out, strdup(p)))
			break;
	}
	free(buf);
	return rc;   /* -1 also without -plugin: not btrace's layout */
}

void bt_exec_reenter(uint64_t path_addr, uint64_t argv_addr,
		     uint64_t envp_addr)
{
	struct bt_strv gargv = { 0 }, genv = { 0 }, nargv = { 0 }, henv = { 0 };
	char head[BT_SHEBANG_MAX + 1], ihead[64], exe[PATH_MAX], san_what[256];
	char *path = bt_read_guest_str(path_addr), *interp = NULL, *iarg = NULL;
	enum bt_kind kind;
	ssize_t l;
	int e;

	if (!path)
		return;
	kind = bt_classify_file(path, head, sizeof(head));
	if (kind == BT_SCRIPT &&
	    (bt_shebang_parse(head, &interp, &iarg) ||
	     bt_classify_file(interp, ihead, sizeof(ihead)) != BT_ELF))
		kind = BT_NATIVE;
	/* A sanitizer runtime's shadow memory does not run under QEMU 7.2
	 * (it grows without finishing): such a program runs natively, and
	 * the report's exec line says it ran untraced. */
	if (kind != BT_NATIVE &&
	    bt_elf_sanitizer(kind == BT_SCRIPT ? interp : path, san_what,
			     sizeof(san_what)))
		kind = BT_NATIVE;
	l = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	if (kind == BT_NATIVE || l <= 0 || bt_read_guest_vec(argv_addr, &gargv) ||
	    bt_read_guest_vec(envp_addr, &genv) || bt_own_prefix(&nargv, path))
		goto out;
	exe[l] = 0;
	/* The guest's environment: the loader's variables through -E, the
	 * rest as the emulator's own (which QEMU hands on to the guest). */
	for (size_t i = 0; i < genv.n; i++) {
		if (bt_env_guest_only(genv.v[i])) {
			if (bt_strv_push(&nargv, strdup("-E")) ||
			    bt_strv_push(&nargv, strdup(genv.v[i])))
				goto out;
		} else if (bt_strv_push(&henv, strdup(genv.v[i]))) {
			goto out;
		}
	}
	if (!henv.v && !(henv.v = calloc(1, sizeof(*henv.v))))
		goto out;
	/* argv[0] and the program as the kernel would have run them. */
	if (bt_strv_push(&nargv, strdup("-0")))
		goto out;
	if (kind == BT_SCRIPT) {
		if (bt_strv_push(&nargv, strdup(interp)) ||
		    bt_strv_push(&nargv, strdup(interp)) ||
		    (iarg && bt_strv_push(&nargv, strdup(iarg))) ||
		    bt_strv_push(&nargv, strdup(path)))
			goto out;
	} else if (bt_strv_push(&nargv, strdup(gargv.n ? gargv.v[0] : "")) ||
		   bt_strv_push(&nargv, strdup(path))) {
		goto out;
	}
	for (size_t i = 1; i < gargv.n; i++)
		if (bt_strv_push(&nargv, strdup(gargv.v[i])))
			goto out;
	e = errno;
	execve(exe, nargv.v, henv.v);
	errno = e;   /* the guest's own execve() runs now */
out:
	bt_strv_free(&nargv);
	bt_strv_free(&gargv);
	bt_strv_free(&genv);
	bt_strv_free(&henv);
	free(path);
}
