/* SPDX-License-Identifier: MIT */
/* The parts every backend's snapshot shares (snapbuild.h). */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "procmaps.h"
#include "signame.h"
#include "snapbuild.h"
#include "util.h"

#define CODE_MAX (64ull << 20)   /* the most code copied of one mapping */

void bt_snap_default_name(char *buf, size_t len, const char *comm, pid_t pid)
{
	char clean[32];
	size_t i;

	for (i = 0; comm && comm[i] && i + 1 < sizeof(clean); i++)
		clean[i] = (comm[i] == '/' || comm[i] == ' ') ? '_' : comm[i];
	clean[i] = '\0';
	snprintf(buf, len, "btrace-%s-%d.btrace", i ? clean : "process",
		 (int)pid);
}

/* @len bytes of @path at @off, into a new buffer (*@out): every one of
 * them (@got NULL: a process's memory), or as many as there are, at least
 * one (*@got: a file that may be shorter than its mapping). */
static int pread_new(const char *path, uint64_t off, uint64_t len,
		     uint8_t **out, uint64_t *got)
{
	uint8_t *buf;
	ssize_t n;
	int fd;

	if (len == 0 || len > CODE_MAX)
		return -EFBIG;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	buf = malloc(len);
	if (!buf) {
		close(fd);
		return -ENOMEM;
	}
	n = pread(fd, buf, len, (off_t)off);
	close(fd);
	if (got ? n <= 0 : n != (ssize_t)len) {
		free(buf);
		return n < 0 ? -errno : -EIO;
	}
	*out = buf;
	if (got)
		*got = (uint64_t)n;
	return 0;
}

static int copy_mem(pid_t pid, uint64_t addr, uint64_t len, uint8_t **out)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	return pread_new(path, addr, len, out, NULL);
}

/* Our own vDSO: the same kernel gives the same image. */
static int own_vdso(uint8_t **out, uint64_t *len)
{
	unsigned long base = getauxval(AT_SYSINFO_EHDR);
	char *maps, *line, *save = NULL;

	if (!base || bt_read_file("/proc/self/maps", &maps, NULL, 1 << 24) < 0)
		return -ENOENT;
	for (line = strtok_r(maps, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct bt_maps_line ml;

		if (bt_maps_parse(line, strlen(line), &ml) >= BT_MAPS_RANGE &&
		    ml.start == base && strstr(line, "[vdso]")) {
			*len = ml.end - ml.start;
			*out = malloc(*len);
			if (*out)
				memcpy(*out, (void *)base, *len);
			free(maps);
			return *out ? 0 : -ENOMEM;
		}
	}
	free(maps);
	return -ENOENT;
}

int bt_snap_add_code(struct btrace_writer *w, pid_t pid,
		     const struct btrace_mapping *maps, size_t nmaps, bool alive,
		     struct btrace_error *err)
{
	for (size_t i = 0; i < nmaps; i++) {
		const struct btrace_mapping *m = &maps[i];
		struct btrace_code c;
		uint8_t *data = NULL;
		uint64_t len = m->end - m->start, got = len;
		int r;
		bool dup = false;

		memset(&c, 0, sizeof(c));
		c.vaddr = m->start;
		if (m->path && !strcmp(m->path, "[vdso]")) {
			c.kind = BTRACE_CODE_VDSO;
			r = alive ? copy_mem(pid, m->start, len, &data) : -ESRCH;
			if (r < 0)
				r = own_vdso(&data, &got);
		} else if (!m->path || m->path[0] != '/') {
			if (!alive)
				continue;   /* anonymous code died with the process */
			c.kind = BTRACE_CODE_ANON;
			r = copy_mem(pid, m->start, len, &data);
		} else {
			/* one copy per file segment */
			for (size_t j = 0; j < i; j++)
				if (maps[j].path && !strcmp(maps[j].path, m->path) &&
				    maps[j].pgoff == m->pgoff &&
				    maps[j].end - maps[j].start == len)
					dup = true;
			if (dup)
				continue;
			c.kind = BTRACE_CODE_FILE;
			c.file_offset = m->pgoff;
			c.build_id_size = m->build_id_size;
			memcpy(c.build_id, m->build_id, sizeof(c.build_id));
			c.path = m->path;
			r = -ENOENT;
			if (alive) {
				char mf[96];

				snprintf(mf, sizeof(mf), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
					 (int)pid, m->start, m->end);
				r = pread_new(mf, m->pgoff, len, &data, &got);
			}
			if (r < 0)
				r = pread_new(m->path, m->pgoff, len, &data, &got);
		}
		if (r < 0)
			continue;   /* recorded as missing by the decoder */
		c.data = data;
		c.size = got;
		r = btrace_writer_add_code(w, &c, err);
		free(data);
		if (r < 0)
			return r;
	}
	return 0;
}

/* @argv joined by spaces; NULL when out of memory. */
static char *join_argv(char *const *argv)
{
	size_t cl = 0;
	char *cmd;

	for (char *const *a = argv; *a; a++)
		cl += strlen(*a) + 1;
	cmd = calloc(1, cl + 1);
	if (!cmd)
		return NULL;
	for (char *const *a = argv; *a; a++) {
		strcat(cmd, *a);
		if (a[1])
			strcat(cmd, " ");
	}
	return cmd;
}

/* /proc/@pid/cmdline, its arguments joined by spaces; NULL when it cannot
 * be read or is empty (a zombie, a kernel thread). */
static char *read_cmdline(pid_t pid)
{
	char path[64], *buf;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (pid <= 0 || bt_read_file(path, &buf, &len, 1 << 20) < 0)
		return NULL;
	while (len && buf[len - 1] == '\0')
		len--;
	if (!len) {
		free(buf);
		return NULL;
	}
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[len] = '\0';
	return buf;
}

int bt_snap_std_meta(struct btrace_writer *w, char *const *argv, pid_t pid,
		     struct btrace_error *err)
{
	struct utsname u;
	char tbuf[64], *cmd;
	time_t now = time(NULL);
	struct tm tm;
	int rc = 0;

	if (!uname(&u)) {
		rc = btrace_writer_add_meta(w, "host", u.nodename, err);
		if (!rc)
			rc = btrace_writer_add_meta(w, "kernel", u.release, err);
	}
	if (!rc)
		rc = btrace_writer_add_meta(w, "btrace_version", BTRACE_VERSION,
					    err);
	gmtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!rc)
		rc = btrace_writer_add_meta(w, "time", tbuf, err);
	cmd = argv ? join_argv(argv) : read_cmdline(pid);
	if (cmd && !rc)
		rc = btrace_writer_add_meta(w, "command", cmd, err);
	free(cmd);
	return rc;
}

const char *btrace_signal_str(int signo, char *buf, size_t len)
{
	const char *n = bt_sig_name(signo, BT_SIG_POLL);

	if (!n)
		return NULL;
	snprintf(buf, len, "%s", n);
	return buf;
}

/* --- the builder object (snapbuild.h) --- */

int bt_snapbuild_begin(struct bt_snapbuild *b, const char *path,
		       const char *comm, pid_t pid,
		       const struct btrace_config *cfg,
		       struct btrace_error *err)
{
	int r;

	memset(b, 0, sizeof(*b));
	b->err = err;
	b->pid = pid;
	if (path && *path)
		snprintf(b->path, sizeof(b->path), "%s", path);
	else
		bt_snap_default_name(b->path, sizeof(b->path), comm, pid);
	r = btrace_writer_open(b->path, 0, &b->w, err);
	if (r < 0) {
		b->w = NULL;
		return r;
	}
	if (cfg && (r = btrace_writer_set_config(b->w, cfg, err)) < 0)
		bt_snapbuild_abort(b);
	return r;
}

int bt_snapbuild_add_buffer(struct bt_snapbuild *b,
			    const struct btrace_buffer *buf)
{
	b->bytes += buf->size;
	b->nbuffers++;
	return btrace_writer_add_buffer(b->w, buf, b->err);
}

int bt_snapbuild_add_ring(struct bt_snapbuild *b,
			  const struct btrace_buffer *buf, const void *ring,
			  uint64_t size)
{
	b->bytes += size;
	b->nbuffers++;
	return btrace_writer_add_ring(b->w, buf, ring, b->err);
}

int bt_snapbuild_add_task(struct bt_snapbuild *b, const struct btrace_task *t)
{
	b->ntasks++;
	return btrace_writer_add_task(b->w, t, b->err);
}

int bt_snapbuild_add_mapping(struct bt_snapbuild *b,
			     const struct btrace_mapping *m)
{
	b->nmaps++;
	return btrace_writer_add_mapping(b->w, m, b->err);
}

int bt_snapbuild_add_mappings(struct bt_snapbuild *b,
			      const struct btrace_mapping *maps, size_t nmaps,
			      bool code, bool alive)
{
	int r;

	for (size_t i = 0; i < nmaps; i++)
		if ((r = bt_snapbuild_add_mapping(b, &maps[i])) < 0)
			return r;
	return code ? bt_snap_add_code(b->w, b->pid, maps, nmaps, alive,
				       b->err) : 0;
}

int bt_snapbuild_add_code(struct bt_snapbuild *b, const struct btrace_code *c)
{
	b->ncode++;
	return btrace_writer_add_code(b->w, c, b->err);
}

int bt_snapbuild_add_accesses(struct bt_snapbuild *b,
			      const struct btrace_access_log *log)
{
	return btrace_writer_add_accesses(b->w, log, b->err);
}

int bt_snapbuild_add_memory(struct bt_snapbuild *b,
			    const struct btrace_memory *m)
{
	return btrace_writer_add_memory(b->w, m, b->err);
}

void bt_snap_stack_window(uint64_t sp, uint64_t start, uint64_t end,
			  uint64_t *lo, uint64_t *hi)
{
	*lo = sp - start > BT_SNAP_STACK / 4 ? sp - BT_SNAP_STACK / 4 : start;
	*hi = end - *lo > BT_SNAP_STACK ? *lo + BT_SNAP_STACK : end;
}

/* The regions of live process @pid's /proc/PID/maps: 0, -ENOMEM, or the
 * error of reading it. */
static int proc_regions(pid_t pid, struct bt_snap_region **reg, size_t *n)
{
	char path[64], *maps;
	int r;

	*reg = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	r = bt_read_file(path, &maps, NULL, 64u << 20);
	if (r < 0)
		return r;
	r = bt_snap_regions_parse(maps, reg, n);
	free(maps);
	return r;
}

int bt_snapbuild_add_stack(struct bt_snapbuild *b,
			   const struct btrace_signal *sig)
{
	uint64_t sp = sig->regs[BTRACE_REG_RSP], lo, hi;
	struct btrace_memory m = { .tid = sig->tid };
	struct bt_snap_region *reg = NULL;
	size_t nreg = 0;
	uint8_t *buf;
	int r = 0;

	if (!sig->has_regs)
		return 0;
	r = proc_regions(b->pid, &reg, &nreg);
	/* maps that cannot be read: no stack, not an error */
	if (r == -ENOMEM)
		return bt_error(b->err, r, "snapshot: the stack failed: out of "
				"memory");
	if (r < 0)
		return 0;
	for (size_t i = 0; i < nreg; i++) {
		if (sp < reg[i].start || sp >= reg[i].end ||
		    (reg[i].prot & 3) != 3 || reg[i].special)
			continue;
		bt_snap_stack_window(sp, reg[i].start, reg[i].end, &lo, &hi);
		/* a stack that cannot be read is left out, not an error */
		if (copy_mem(b->pid, lo, hi - lo, &buf) < 0)
			break;
		m.vaddr = lo;
		m.data = buf;
		m.size = hi - lo;
		r = bt_snapbuild_add_memory(b, &m);
		free(buf);
		if (!r) {
			b->stack_lo = lo;
			b->stack_hi = hi;
		}
		break;
	}
	free(reg);
	return r;
}

/* --- the process's data at a fault (snapbuild.h) --- */

static int region_cmp(const void *a, const void *b)
{
	const struct bt_snap_region *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/* 0: writable, 1: read-only private, 2: writable but huge, -1: not
 * stored. */
static int region_kind(const struct bt_snap_region *r)
{
	if (r->special || !(r->prot & 1) || (r->prot & 4) || r->end <= r->start)
		return -1;
	if (r->prot & 2)
		return r->end - r->start > BT_SNAP_MEMORY_HUGE ? 2 : 0;
	return r->shared ? -1 : 1;
}

long bt_snap_data_select(const struct bt_snap_region *r, size_t n,
			 uint64_t stack_lo, uint64_t stack_hi,
			 uint64_t budget, struct bt_snap_range **out)
{
	struct bt_snap_region *v = NULL;
	struct bt_snap_range *o = NULL;
	size_t no = 0, co = 0;

	*out = NULL;
	if (!n || !budget)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memcpy(v, r, n * sizeof(*v));
	qsort(v, n, sizeof(*v), region_cmp);
	for (int kind = 0; kind < 3 && budget; kind++) {
		for (size_t i = 0; i < n && budget; i++) {
			uint64_t s = v[i].start, e = v[i].end;

			if (region_kind(&v[i]) != kind)
				continue;
			/* the stack's mapping: only above the window */
			if (stack_lo < stack_hi && s < stack_hi && stack_lo < e)
				s = stack_hi;
			if (s >= e)
				continue;
			if (e - s > budget)
				e = s + budget;
			budget -= e - s;
			while (s < e) {
				uint64_t len = e - s < BT_SNAP_MEMORY_CHUNK ?
					       e - s : BT_SNAP_MEMORY_CHUNK;

				if (no == co) {
					size_t c = co ? 2 * co : 16;
					struct bt_snap_range *g =
						realloc(o, c * sizeof(*o));

					if (!g) {
						free(o);
						free(v);
						return -ENOMEM;
					}
					o = g;
					co = c;
				}
				o[no].start = s;
				o[no++].size = len;
				s += len;
			}
		}
	}
	free(v);
	*out = o;
	return (long)no;
}

/* A name in brackets the kernel gives a mapping that is not plain memory
 * ([vvar], [vvar_vclock], [vsyscall], [vdso], [uprobes]...); [heap],
 * [stack...] and [anon...] (a named anonymous mapping) are plain. */
static bool special_name(const char *p, size_t len)
{
	if (!len || p[0] != '[')
		return false;
	return !((len >= 6 && !memcmp(p, "[heap]", 6)) ||
		 (len >= 6 && !memcmp(p, "[stack", 6)) ||
		 (len >= 5 && !memcmp(p, "[anon", 5)));
}

int bt_snap_regions_parse(const char *text, struct bt_snap_region **out,
			  size_t *n)
{
	struct bt_snap_region *v = NULL;
	size_t nv = 0, cv = 0, len;
	const char *line;

	while ((line = bt_maps_next(&text, &len))) {
		struct bt_maps_line ml;

		if (bt_maps_parse(line, len, &ml) < 3)   /* start, end, perms */
			continue;
		if (nv == cv) {
			size_t c = cv ? 2 * cv : 64;
			struct bt_snap_region *g = realloc(v, c * sizeof(*v));

			if (!g) {
				free(v);
				return -ENOMEM;
			}
			v = g;
			cv = c;
		}
		v[nv].start = ml.start;
		v[nv].end = ml.end;
		v[nv].prot = (ml.perms[0] == 'r' ? 1u : 0) |
			     (ml.perms[1] == 'w' ? 2u : 0) |
			     (ml.perms[2] == 'x' ? 4u : 0);
		v[nv].shared = ml.perms[3] == 's';
		v[nv].special = special_name(ml.path, ml.path_len);
		nv++;
	}
	*out = v;
	*n = nv;
	return 0;
}

int bt_snap_proc_data(pid_t pid, uint64_t stack_lo, uint64_t stack_hi,
		      uint64_t budget,
		      int (*add)(void *ctx, const struct btrace_memory *m),
		      void *ctx)
{
	struct bt_snap_region *reg = NULL;
	struct bt_snap_range *rg = NULL;
	size_t nreg = 0;
	long nrg;
	int r;

	if (!budget)
		return 0;
	r = proc_regions(pid, &reg, &nreg);
	if (r < 0)
		return r;
	nrg = bt_snap_data_select(reg, nreg, stack_lo, stack_hi, budget, &rg);
	free(reg);
	if (nrg <= 0)
		return (int)nrg;
	for (long i = 0; i < nrg && r >= 0; i++) {
		struct btrace_memory m = { .tid = BTRACE_MEMORY_PROCESS,
					   .vaddr = rg[i].start,
					   .size = rg[i].size };
		uint8_t *buf;
		int k = copy_mem(pid, rg[i].start, rg[i].size, &buf);

		if (k == -ENOMEM) {
			r = k;
			break;
		}
		/* memory that cannot be read is left out */
		if (k < 0)
			continue;
		m.data = buf;
		r = add(ctx, &m);
		free(buf);
	}
	free(rg);
	return r < 0 ? r : 0;
}

struct data_ctx {
	struct bt_snapbuild *b;
	int failed;                 /* the writer failed (b->err says why) */
};

static int add_to_builder(void *ctx, const struct btrace_memory *m)
{
	struct data_ctx *d = ctx;
	int r = bt_snapbuild_add_memory(d->b, m);

	if (r < 0)
		d->failed = 1;
	else
		d->b->data_bytes += m->size;
	return r;
}

int bt_snapbuild_add_data(struct bt_snapbuild *b, uint64_t budget)
{
	struct data_ctx d = { .b = b };
	int r = bt_snap_proc_data(b->pid, b->stack_lo, b->stack_hi, budget,
				  add_to_builder, &d);

	if (r >= 0 || d.failed)
		return r;
	if (r == -ENOMEM)
		return bt_error(b->err, r, "snapshot: the process's memory "
				"failed: out of memory");
	return 0;   /* maps that cannot be read: the data is left out */
}

int bt_snapbuild_set_signal(struct bt_snapbuild *b,
			    const struct btrace_signal *sig)
{
	return btrace_writer_set_signal(b->w, sig, b->err);
}

int bt_snapbuild_std_meta(struct bt_snapbuild *b, char *const *argv,
			  pid_t pid)
{
	return bt_snap_std_meta(b->w, argv, pid, b->err);
}

int bt_snapbuild_meta(struct bt_snapbuild *b, const char *key,
		      const char *value)
{
	return btrace_writer_add_meta(b->w, key, value, b->err);
}

int bt_snapbuild_finish(struct bt_snapbuild *b)
{
	int r;

	snprintf(b->asked, sizeof(b->asked), "%s", b->path);
	/* either frees the writer */
	r = b->keep ? bt_writer_commit_keep(b->w, &b->since, b->path,
					    sizeof(b->path), b->err) :
		      btrace_writer_commit(b->w, b->err);

	b->w = NULL;
	return r;
}

void bt_snapbuild_abort(struct bt_snapbuild *b)
{
	btrace_writer_free(b->w);
	b->w = NULL;
}

void bt_snapbuild_summary(const struct bt_snapbuild *b,
			  const struct bt_snap_summary *s, char *buf,
			  size_t len)
{
	char kbuf[32], sbuf[32], nbuf[32];
	const struct btrace_signal *sig = s->sig;

	if (s->style == BT_SNAP_SUMMARY_HW) {
		snprintf(buf, len, "snapshot written to %s (%s)", b->path,
			 s->how ? s->how : "");
		return;
	}
	if (sig->signo && !btrace_signal_str(sig->signo, nbuf, sizeof(nbuf)))
		snprintf(nbuf, sizeof(nbuf), "signal %d", sig->signo);
	snprintf(buf, len, "btrace record: wrote %s: %s in thread %d at %#llx%s, "
		 "%s of trace kept of %s asked (%llu thread%s, qemu)",
		 b->path, sig->signo ? nbuf : "exit", s->tid,
		 (unsigned long long)sig->fault_ip,
		 sig->fault_source == BTRACE_FAULT_BLOCK ? " (block)" : "",
		 bt_fmt_size(kbuf, sizeof(kbuf), s->kept),
		 bt_fmt_size(sbuf, sizeof(sbuf), s->asked),
		 (unsigned long long)b->nbuffers, b->nbuffers == 1 ? "" : "s");
}
