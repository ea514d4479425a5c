/* SPDX-License-Identifier: MIT */
/* The snapshot builder's shared parts: /proc/PID/maps lines, the default
 * file name, signal names, the builder object and its summary lines. */
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include "procmaps.h"
#include "signame.h"
#include "snapbuild.h"
#include "util.h"
#include "bt-test.h"

static int parse(const char *line, struct bt_maps_line *m)
{
	return bt_maps_parse(line, strlen(line), m);
}

/* The path of @m as a string (it is not NUL-terminated in general). */
static const char *path_of(const struct bt_maps_line *m, char *buf, size_t len)
{
	size_t n = m->path_len < len - 1 ? m->path_len : len - 1;

	memcpy(buf, m->path, n);
	buf[n] = '\0';
	return buf;
}

static void test_maps_full_line(struct bt_test *t)
{
	struct bt_maps_line m;
	char p[256];

	BT_EQ_INT(t, BT_MAPS_ALL,
		  parse("7f0a12340000-7f0a12360000 r-xp 00002000 fd:01 1234567   "
			"        /usr/lib/x86_64-linux-gnu/libc.so.6", &m));
	BT_EQ_U64(t, 0x7f0a12340000ull, m.start);
	BT_EQ_U64(t, 0x7f0a12360000ull, m.end);
	BT_EQ_STR(t, "r-xp", m.perms);
	BT_EQ_U64(t, 0x2000, m.pgoff);
	BT_EQ_INT(t, 0xfd, (int)m.maj);
	BT_EQ_INT(t, 1, (int)m.min);
	BT_EQ_U64(t, 1234567, m.ino);
	BT_EQ_STR(t, "/usr/lib/x86_64-linux-gnu/libc.so.6", path_of(&m, p, sizeof(p)));
}

static void test_maps_names(struct bt_test *t)
{
	struct bt_maps_line m;
	char p[256];

	/* spaces and " (deleted)" are part of the name */
	BT_EQ_INT(t, BT_MAPS_ALL,
		  parse("1000-2000 r-xp 00000000 08:02 42 /tmp/my dir/a b.so (deleted)", &m));
	BT_EQ_STR(t, "/tmp/my dir/a b.so (deleted)", path_of(&m, p, sizeof(p)));
	/* anonymous: no path, with or without trailing blanks */
	BT_EQ_INT(t, BT_MAPS_ALL, parse("1000-2000 rw-p 00000000 00:00 0", &m));
	BT_EQ_U64(t, 0, m.path_len);
	BT_EQ_STR(t, "", m.path);
	BT_EQ_INT(t, BT_MAPS_ALL, parse("1000-2000 rw-p 00000000 00:00 0      ", &m));
	BT_EQ_U64(t, 0, m.path_len);
	BT_EQ_INT(t, BT_MAPS_ALL,
		  parse("7ffd1000-7ffd3000 r-xp 00000000 00:00 0   [vdso]", &m));
	BT_EQ_STR(t, "[vdso]", path_of(&m, p, sizeof(p)));
	/* the line ends at @len, not at a NUL: the next line is not read */
	{
		const char *two = "1000-2000 r-xp 0 00:00 0\n3000-4000 r-xp 0 00:00 0 /x";
		BT_EQ_INT(t, BT_MAPS_ALL, bt_maps_parse(two, strcspn(two, "\n"), &m));
		BT_EQ_U64(t, 0, m.path_len);
		BT_EQ_U64(t, 0x2000, m.end);
	}
}

static void test_maps_long_path(struct bt_test *t)
{
	size_t n = 8192;
	char *line = malloc(n + 64);
	struct bt_maps_line m;

	BT_CHECK(t, line != NULL);
	if (!line)
		return;
	strcpy(line, "1000-2000 r-xp 00000000 08:02 42 /");
	memset(line + strlen(line), 'a', n);
	line[34 + n] = '\0';
	BT_EQ_INT(t, BT_MAPS_ALL, parse(line, &m));
	BT_EQ_U64(t, n + 1, m.path_len);
	BT_CHECK(t, m.path == line + 33);
	free(line);
}

static void test_maps_missing_fields(struct bt_test *t)
{
	struct bt_maps_line m;

	BT_EQ_INT(t, 0, parse("", &m));
	BT_EQ_INT(t, 0, parse("garbage", &m));
	BT_EQ_INT(t, 1, parse("1000", &m));
	BT_EQ_INT(t, 1, parse("1000-", &m));
	BT_EQ_INT(t, BT_MAPS_RANGE, parse("1000-2000", &m));
	BT_EQ_U64(t, 0x2000, m.end);
	BT_EQ_STR(t, "", m.perms);
	BT_EQ_INT(t, 3, parse("1000-2000 r-xp", &m));
	BT_EQ_INT(t, 4, parse("1000-2000 r-xp 0", &m));
	BT_EQ_INT(t, 5, parse("1000-2000 r-xp 0 08", &m));
	BT_EQ_INT(t, 6, parse("1000-2000 r-xp 0 08:02", &m));
	BT_EQ_INT(t, 6, parse("1000-2000 r-xp 0 08:02 x /a", &m));
	/* fields not read are zero, the path empty */
	BT_EQ_U64(t, 0, m.ino);
	BT_EQ_U64(t, 0, m.path_len);
	/* an overlong perms field is cut at 7 bytes, never overflows */
	BT_EQ_INT(t, 3, parse("1000-2000 rwxpxxxxxxxxxxxx", &m));
	BT_EQ_STR(t, "rwxpxxx", m.perms);
}

static void test_maps_next(struct bt_test *t)
{
	const char *text = "a\n\nbc\nd", *cur = text, *l;
	size_t len = 0;

	l = bt_maps_next(&cur, &len);
	BT_CHECK(t, l == text && len == 1);
	l = bt_maps_next(&cur, &len);
	BT_CHECK(t, l == text + 2 && len == 0);
	l = bt_maps_next(&cur, &len);
	BT_CHECK(t, l == text + 3 && len == 2);
	l = bt_maps_next(&cur, &len);
	BT_CHECK(t, l == text + 6 && len == 1);
	BT_CHECK(t, bt_maps_next(&cur, &len) == NULL);
	cur = NULL;
	BT_CHECK(t, bt_maps_next(&cur, &len) == NULL);
}

static void test_default_name(struct bt_test *t)
{
	char buf[128];

	bt_snap_default_name(buf, sizeof(buf), "crash", 42);
	BT_EQ_STR(t, "btrace-crash-42.btrace", buf);
	/* '/' and ' ' are cleaned: a name, never a path */
	bt_snap_default_name(buf, sizeof(buf), "a b/../c", 7);
	BT_EQ_STR(t, "btrace-a_b_.._c-7.btrace", buf);
	bt_snap_default_name(buf, sizeof(buf), "", 9);
	BT_EQ_STR(t, "btrace-process-9.btrace", buf);
	bt_snap_default_name(buf, sizeof(buf), NULL, 9);
	BT_EQ_STR(t, "btrace-process-9.btrace", buf);
	/* at most 31 bytes of the name */
	bt_snap_default_name(buf, sizeof(buf),
			     "0123456789012345678901234567890123456789", 1);
	BT_EQ_STR(t, "btrace-0123456789012345678901234567890-1.btrace", buf);
}

static void test_signal_name(struct bt_test *t)
{
	char buf[32];

	BT_EQ_STR(t, "SIGSEGV", btrace_signal_str(11, buf, sizeof(buf)));
	BT_EQ_STR(t, "SIGABRT", btrace_signal_str(6, buf, sizeof(buf)));
	BT_CHECK(t, btrace_signal_str(0, buf, sizeof(buf)) == NULL);
	BT_CHECK(t, btrace_signal_str(-3, buf, sizeof(buf)) == NULL);
	BT_CHECK(t, btrace_signal_str(200, buf, sizeof(buf)) == NULL);

	/* The one table (src/signame.c): 29 is SIGIO for the decoder's
	 * outputs and SIGPOLL for libbtrace's, which is the C library's
	 * name; real-time signals have no name. */
	BT_EQ_STR(t, "SIGIO", bt_sig_name(29, BT_SIG_IO));
	BT_EQ_STR(t, "SIGPOLL", bt_sig_name(29, BT_SIG_POLL));
	BT_EQ_STR(t, "SIGSTKFLT", bt_sig_name(16, BT_SIG_IO));
	BT_EQ_STR(t, "SIGSYS", bt_sig_name(31, BT_SIG_POLL));
	BT_CHECK(t, bt_sig_name(32, BT_SIG_IO) == NULL);
	BT_CHECK(t, bt_sig_name(34, BT_SIG_POLL) == NULL);
	BT_CHECK(t, bt_sig_name(0, BT_SIG_IO) == NULL);
	/* libbtrace's names are the C library's (sigabbrev_np), as they
	 * were before the table */
	for (int i = -1; i < 70; i++) {
		const char *a = btrace_signal_str(i, buf, sizeof(buf));
		const char *c = i > 0 && i < 65 ? sigabbrev_np(i) : NULL;

		BT_CHECK(t, (a == NULL) == (c == NULL));
		if (a && c) {
			BT_EQ_STR(t, a + 3, c);
			BT_CHECK(t, !strncmp(a, "SIG", 3));
		}
		if (i != 29 && a)
			BT_EQ_STR(t, a, bt_sig_name(i, BT_SIG_IO));
	}
}

/*
 * The code of this process's own executable mappings, found by the maps
 * parser in /proc/self/maps and copied by the builder, reads back equal to
 * the bytes in memory: the vDSO and the file segment holding this function.
 */
static void test_add_code_self(struct bt_test *t)
{
	struct btrace_mapping maps[8];
	size_t nmaps = 0, len;
	char *text = NULL, out[] = "/tmp/bt-snapbuild-XXXXXX";
	const char *cur, *l;
	uint64_t here = (uint64_t)(uintptr_t)&test_add_code_self;
	struct btrace_writer *w = NULL;
	struct btrace_snapshot *s = NULL;
	struct btrace_error err = { 0 };
	int fd, file_seen = 0, vdso_seen = 0;

	BT_REQUIRE(t, bt_read_file("/proc/self/maps", &text, NULL, 1 << 24) == 0);
	cur = text;
	while ((l = bt_maps_next(&cur, &len)) && nmaps < 8) {
		struct bt_maps_line m;
		struct btrace_mapping *bm = &maps[nmaps];

		if (bt_maps_parse(l, len, &m) != BT_MAPS_ALL || m.perms[2] != 'x')
			continue;
		if (!(here >= m.start && here < m.end) &&
		    !(m.path_len == 6 && !memcmp(m.path, "[vdso]", 6)))
			continue;
		memset(bm, 0, sizeof(*bm));
		bm->start = m.start;
		bm->end = m.end;
		bm->pgoff = m.pgoff;
		bm->prot = 5;
		bm->path = strndup(m.path, m.path_len);
		nmaps++;
	}
	BT_CHECK(t, nmaps >= 1);
	fd = mkstemp(out);
	BT_REQUIRE(t, fd >= 0);
	close(fd);
	BT_REQUIRE(t, btrace_writer_open(out, 0, &w, &err) == 0);
	BT_EQ_INT(t, 0, bt_snap_add_code(w, getpid(), maps, nmaps, true, &err));
	BT_EQ_INT(t, 0, btrace_writer_commit(w, &err));
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	for (size_t i = 0; i < s->ncode; i++) {
		const struct btrace_code *c = &s->code[i];

		if (c->kind == BTRACE_CODE_VDSO) {
			vdso_seen = 1;
			BT_CHECK(t, !memcmp(c->data, (void *)(uintptr_t)c->vaddr,
					    c->size));
		} else if (c->kind == BTRACE_CODE_FILE && here >= c->vaddr &&
			   here < c->vaddr + c->size) {
			file_seen = 1;
			/* this function's first bytes, as mapped */
			BT_CHECK(t, !memcmp(c->data + (here - c->vaddr),
					    (void *)(uintptr_t)here, 16));
		}
	}
	BT_CHECK(t, file_seen);
	BT_CHECK(t, vdso_seen);
	btrace_snapshot_free(s);
	unlink(out);
	for (size_t i = 0; i < nmaps; i++)
		free(maps[i].path);
	free(text);
}

static size_t dir_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d)))
		if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
			n++;
	closedir(d);
	return n;
}

/*
 * The builder object: what a backend feeds it reads back from the file,
 * under the default name when no path is given; it counts what the summary
 * says, and both backends' summary lines come out as they were; an aborted
 * build leaves no file behind.
 */
/* --- the process's other memory at a fault (bt_snap_data_select()) --- */

/* A process's maps, out of address order on purpose (the rule sorts). */
static const char *const synth_maps =
	"7ffff7fc3000-7ffff7fc7000 r--p 00000000 00:00 0    [vvar]\n"
	"7fff8000-8fff8000 rw-p 00000000 00:00 0\n"   /* ASan's low shadow */
	"555555554000-555555555000 r--p 00000000 fd:01 11   /usr/bin/prog\n"
	"555555555000-555555556000 r-xp 00001000 fd:01 11   /usr/bin/prog\n"
	"555555557000-555555558000 r--p 00002000 fd:01 11   /usr/bin/prog\n"
	"555555558000-555555559000 rw-p 00003000 fd:01 11   /usr/bin/prog\n"
	"555555559000-55555557a000 rw-p 00000000 00:00 0    [heap]\n"
	"7ffff7d00000-7ffff7d10000 r--s 00000000 fd:01 12   /usr/share/font\n"
	"7ffff7d10000-7ffff7d11000 rw-s 00000000 00:05 13   /dev/shm/x\n"
	"7ffff7d20000-7ffff7d28000 r--p 00000000 fd:01 14   /lib/libc.so.6\n"
	"7ffff7d28000-7ffff7eb0000 r-xp 00028000 fd:01 14   /lib/libc.so.6\n"
	"7ffff7eb0000-7ffff7eb4000 r--p 001b0000 fd:01 14   /lib/libc.so.6\n"
	"7ffff7eb4000-7ffff7eb6000 rw-p 001b4000 fd:01 14   /lib/libc.so.6\n"
	"7ffff7eb6000-7ffff7ec3000 rw-p 00000000 00:00 0\n"
	"7ffff7ec3000-7ffff7ec4000 ---p 00000000 00:00 0\n"
	"7ffff7ec4000-7ffff7ec5000 rw-p 00000000 00:00 0    [anon:glibc: malloc]\n"
	"7ffff7fc7000-7ffff7fc9000 r-xp 00000000 00:00 0    [vdso]\n"
	"7ffff7fc9000-7ffff7fca000 rwxp 00000000 00:00 0\n"
	"7ffffffde000-7ffffffff000 rw-p 00000000 00:00 0    [stack]\n"
	"ffffffffff600000-ffffffffff601000 --xp 00000000 00:00 0 [vsyscall]\n";

static long select_synth(struct bt_test *t, uint64_t lo, uint64_t hi,
			 uint64_t budget, struct bt_snap_range **out)
{
	struct bt_snap_region *reg = NULL;
	size_t n = 0;
	long k;

	BT_EQ_INT(t, 0, bt_snap_regions_parse(synth_maps, &reg, &n));
	BT_EQ_U64(t, 20, n);
	k = bt_snap_data_select(reg, n, lo, hi, budget, out);
	free(reg);
	return k;
}

static void test_data_rule(struct bt_test *t)
{
	/* the stack window stored: [7ffffffe0000, 7fffffff0000) */
	static const struct bt_snap_range want[] = {
		/* writable, in address order */
		{ 0x555555558000, 0x1000 },          /* .data */
		{ 0x555555559000, 0x21000 },         /* [heap] */
		{ 0x7ffff7d10000, 0x1000 },          /* shared, writable */
		{ 0x7ffff7eb4000, 0x2000 },          /* libc .data */
		{ 0x7ffff7eb6000, 0xd000 },          /* anonymous (TLS) */
		{ 0x7ffff7ec4000, 0x1000 },          /* a named anonymous one */
		{ 0x7fffffff0000, 0xf000 },          /* the stack above the window */
		/* then read-only private ones, in address order */
		{ 0x555555554000, 0x1000 },
		{ 0x555555557000, 0x1000 },          /* RELRO */
		{ 0x7ffff7d20000, 0x8000 },
		{ 0x7ffff7eb0000, 0x4000 },          /* libc's RELRO */
		/* then the huge writable ones (above 128 MiB), in sections of
		 * 16 MiB: the first */
		{ 0x7fff8000, 16 << 20 },
	};
	struct bt_snap_range *r = NULL;
	long n = select_synth(t, 0x7ffffffe0000, 0x7fffffff0000, 1ull << 30, &r);

	/* the huge one: 256 MiB in 16 sections, after the others */
	BT_EQ_INT(t, (int)BT_ARRAY_SIZE(want) - 1 + 16, (int)n);
	for (long i = 0; i < n && i < (long)BT_ARRAY_SIZE(want); i++) {
		BT_EQ_U64(t, want[i].start, r[i].start);
		BT_EQ_U64(t, want[i].size, r[i].size);
	}
	if (n == (long)BT_ARRAY_SIZE(want) - 1 + 16) {
		BT_EQ_U64(t, 0x7fff8000 + (15ull << 24), r[n - 1].start);
		BT_EQ_U64(t, 16 << 20, r[n - 1].size);
	}
	free(r);
	/* no stack window: the whole stack mapping, last of the writable */
	n = select_synth(t, 0, 0, 1ull << 30, &r);
	BT_EQ_INT(t, (int)BT_ARRAY_SIZE(want) - 1 + 16, (int)n);
	if (n == (long)BT_ARRAY_SIZE(want) - 1 + 16) {
		BT_EQ_U64(t, 0x7ffffffde000, r[6].start);
		BT_EQ_U64(t, 0x21000, r[6].size);
	}
	free(r);
}

static void test_data_budget(struct bt_test *t)
{
	struct bt_snap_range *r = NULL;
	uint64_t sum = 0;
	long n;

	/* .data whole, the heap cut to what is left (its start kept), then
	 * nothing: no read-only mapping either */
	n = select_synth(t, 0, 0, 0x1000 + 0x800, &r);
	BT_EQ_INT(t, 2, (int)n);
	if (n == 2) {
		BT_EQ_U64(t, 0x555555558000, r[0].start);
		BT_EQ_U64(t, 0x1000, r[0].size);
		BT_EQ_U64(t, 0x555555559000, r[1].start);
		BT_EQ_U64(t, 0x800, r[1].size);
	}
	free(r);
	/* every budget: never more than it, and all of it when there is
	 * that much to store */
	for (uint64_t b = 1; b < 0x80000; b = b * 3 + 0x123) {
		sum = 0;
		n = select_synth(t, 0, 0, b, &r);
		for (long i = 0; i < n; i++)
			sum += r[i].size;
		BT_CHECK_(t, sum == b, "budget %#llx: %#llx stored",
			  (unsigned long long)b, (unsigned long long)sum);
		free(r);
	}
	/* the writable ones all fit, the read-only ones get what is left */
	n = select_synth(t, 0, 0, 0x54000 + 0x1100, &r);
	BT_EQ_INT(t, 9, (int)n);
	if (n == 9) {
		BT_EQ_U64(t, 0x555555554000, r[7].start);
		BT_EQ_U64(t, 0x1000, r[7].size);
		BT_EQ_U64(t, 0x555555557000, r[8].start);
		BT_EQ_U64(t, 0x100, r[8].size);
	}
	free(r);
	/* a budget of 0: nothing */
	BT_EQ_INT(t, 0, (int)select_synth(t, 0, 0, 0, &r));
	BT_CHECK(t, r == NULL);
}

static void test_data_chunks(struct bt_test *t)
{
	struct bt_snap_region big = { .start = 0x10000000,
				      .end = 0x10000000 + 40 * (1ull << 20),
				      .prot = 3 };
	struct bt_snap_range *r = NULL;
	long n = bt_snap_data_select(&big, 1, 0, 0, 36ull << 20, &r);

	/* 36 MiB of a 40 MiB mapping: two whole chunks and 4 MiB */
	BT_EQ_INT(t, 3, (int)n);
	if (n == 3) {
		BT_EQ_U64(t, 0x10000000, r[0].start);
		BT_EQ_U64(t, BT_SNAP_MEMORY_CHUNK, r[0].size);
		BT_EQ_U64(t, 0x10000000 + BT_SNAP_MEMORY_CHUNK, r[1].start);
		BT_EQ_U64(t, 0x10000000 + 2 * BT_SNAP_MEMORY_CHUNK, r[2].start);
		BT_EQ_U64(t, 4ull << 20, r[2].size);
	}
	free(r);
}

/* A live child's data through the builder: its global, its heap and a
 * page made read-only after it was written (as RELRO is) are stored with
 * tid 0; its code is not, nor an executable anonymous page. */
static uint8_t child_global[256];

static const uint8_t *find_range(const struct btrace_snapshot *s,
				 uint64_t addr, size_t len, int32_t *tid)
{
	for (size_t i = 0; i < s->nmemory; i++)
		if (addr >= s->memory[i].vaddr &&
		    addr - s->memory[i].vaddr <= s->memory[i].size &&
		    len <= s->memory[i].size - (addr - s->memory[i].vaddr)) {
			*tid = s->memory[i].tid;
			return s->memory[i].data + (addr - s->memory[i].vaddr);
		}
	return NULL;
}

static void test_data_live(struct bt_test *t)
{
	char dir[] = "/tmp/bt-snapdata-XXXXXX", path[PATH_MAX];
	struct btrace_config cfg = { .trace_kind = BTRACE_TRACE_PT };
	struct btrace_snapshot *s = NULL;
	struct btrace_error err = { 0 };
	struct bt_snapbuild b;
	struct btrace_signal sig = { 0 };
	uint8_t *heap = malloc(4096), pat[256], hpat[256], rpat[256];
	uint8_t *ro = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	uint8_t *ex = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	const uint8_t *got;
	int go[2], ready[2], st;
	int32_t tid = -1;
	pid_t pid;
	char c = 0;

	BT_REQUIRE(t, heap && ro != MAP_FAILED && ex != MAP_FAILED &&
		   pipe(go) == 0 && pipe(ready) == 0 && mkdtemp(dir));
	for (int i = 0; i < 256; i++) {
		pat[i] = (uint8_t)(0xa5 ^ i);
		hpat[i] = (uint8_t)(0x3c ^ (i * 7));
		rpat[i] = (uint8_t)(0x5a + i * 3);
	}
	pid = fork();
	BT_REQUIRE(t, pid >= 0);
	if (pid == 0) {
		/* the child's own values, not the parent's (copy on write) */
		close(go[1]);
		close(ready[0]);
		memcpy(child_global, pat, 256);
		memcpy(heap, hpat, 256);
		memcpy(ro, rpat, 256);
		memset(ex, 0xcc, 4096);
		c = mprotect(ro, 4096, PROT_READ) ||
		    mprotect(ex, 4096, PROT_READ | PROT_EXEC) ? 'e' : 'r';
		if (write(ready[1], &c, 1) != 1 || read(go[0], &c, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(go[0]);
	close(ready[1]);
	BT_CHECK(t, read(ready[0], &c, 1) == 1 && c == 'r');
	snprintf(path, sizeof(path), "%s/data.btrace", dir);
	BT_EQ_INT(t, 0, bt_snapbuild_begin(&b, path, "child", pid, &cfg, &err));
	/* its stack first: the window around a stack pointer on our (and
	 * so its) stack, from its /proc/PID/maps */
	sig.tid = pid;
	sig.has_regs = 1;
	sig.regs[BTRACE_REG_RSP] = (uintptr_t)&sig;
	BT_EQ_INT(t, 0, bt_snapbuild_add_stack(&b, &sig));
	BT_CHECK(t, b.stack_lo <= (uintptr_t)&sig &&
		    (uintptr_t)&sig < b.stack_hi &&
		    b.stack_hi - b.stack_lo <= BT_SNAP_STACK);
	BT_EQ_INT(t, 0, bt_snapbuild_add_data(&b, 64ull << 20));
	BT_CHECK(t, b.data_bytes > 0 && b.data_bytes <= (64ull << 20));
	BT_EQ_INT(t, 0, bt_snapbuild_finish(&b));
	close(go[1]);
	close(ready[0]);
	waitpid(pid, &st, 0);
	BT_REQUIRE(t, btrace_snapshot_read(path, 0, &s, &err) == 0);
	got = find_range(s, (uintptr_t)child_global, 256, &tid);
	BT_CHECK_(t, got != NULL, "no range holds the global at %p",
		  (void *)child_global);
	if (got) {
		BT_EQ_INT(t, BTRACE_MEMORY_PROCESS, tid);
		BT_EQ_MEM(t, pat, got, 256);
	}
	got = find_range(s, (uintptr_t)heap, 256, &tid);
	BT_CHECK_(t, got != NULL, "no range holds the heap block at %p",
		  (void *)heap);
	if (got)
		BT_EQ_MEM(t, hpat, got, 256);
	got = find_range(s, (uintptr_t)ro, 256, &tid);
	BT_CHECK_(t, got != NULL, "no range holds the read-only page at %p",
		  (void *)ro);
	if (got)
		BT_EQ_MEM(t, rpat, got, 256);
	got = find_range(s, (uintptr_t)&sig, sizeof(sig), &tid);
	BT_CHECK_(t, got != NULL && tid == pid, "the stack at %p: %s, tid %d",
		  (void *)&sig, got ? "stored" : "not stored", (int)tid);
	/* the window is stored once: no process range overlaps it */
	for (size_t i = 0; i < s->nmemory; i++)
		if (s->memory[i].tid == BTRACE_MEMORY_PROCESS)
			BT_CHECK(t, s->memory[i].vaddr >= b.stack_hi ||
				    s->memory[i].vaddr + s->memory[i].size <=
				    b.stack_lo);
	BT_CHECK_(t, find_range(s, (uintptr_t)ex, 1, &tid) == NULL,
		  "the executable page at %p was stored", (void *)ex);
	BT_CHECK_(t, find_range(s, (uintptr_t)&test_data_live, 1, &tid) == NULL,
		  "the code at %p was stored", (void *)&test_data_live);
	btrace_snapshot_free(s);
	unlink(path);
	rmdir(dir);
	free(heap);
	munmap(ro, 4096);
	munmap(ex, 4096);
}

static void test_builder(struct bt_test *t)
{
	char dir[] = "/tmp/bt-snapbuild-XXXXXX", line[PATH_MAX + 256];
	char abs[PATH_MAX + 64], want[PATH_MAX + 256];
	static uint8_t trace[3] = { 1, 2, 3 };
	struct btrace_config cfg = { .trace_kind = BTRACE_TRACE_PT };
	struct btrace_buffer buf = { .kind = BTRACE_TRACE_PT, .tid = 7,
				     .cpu = -1, .data = trace, .size = 3,
				     .head = 3 };
	struct btrace_task task = { .pid = 42, .tid = 7, .comm = "crash" };
	struct btrace_signal sig = { .tid = 7, .signo = SIGSEGV,
				     .fault_ip = 0x1234,
				     .fault_source = BTRACE_FAULT_BLOCK,
				     .exit_status = -1 };
	struct btrace_snapshot *s = NULL;
	struct btrace_error err = { 0 };
	struct bt_snapbuild b;
	struct bt_snap_summary qs = { .style = BT_SNAP_SUMMARY_QEMU,
				      .sig = &sig, .tid = 7, .kept = 3,
				      .asked = 4 << 20 };
	struct bt_snap_summary hs = { .style = BT_SNAP_SUMMARY_HW,
				      .how = "precise" };
	int cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	BT_REQUIRE(t, cwd >= 0 && mkdtemp(dir) && chdir(dir) == 0);
	BT_EQ_INT(t, 0, bt_snapbuild_begin(&b, NULL, "a b", 42, &cfg, &err));
	BT_EQ_STR(t, "btrace-a_b-42.btrace", b.path);
	BT_EQ_INT(t, 0, bt_snapbuild_add_buffer(&b, &buf));
	BT_EQ_INT(t, 0, bt_snapbuild_add_task(&b, &task));
	BT_EQ_INT(t, 0, bt_snapbuild_set_signal(&b, &sig));
	BT_EQ_INT(t, 0, bt_snapbuild_meta(&b, "capture.test", "fed"));
	BT_EQ_U64(t, 3, b.bytes);
	BT_EQ_U64(t, 1, b.nbuffers);
	BT_EQ_U64(t, 1, b.ntasks);
	BT_EQ_INT(t, 0, bt_snapbuild_finish(&b));
	BT_CHECK(t, b.w == NULL);
	snprintf(abs, sizeof(abs), "%s/%s", dir, b.path);
	BT_REQUIRE(t, btrace_snapshot_read(abs, 0, &s, &err) == 0);
	BT_EQ_U64(t, 1, s->nbuffers);
	BT_EQ_MEM(t, trace, s->buffers[0].data, 3);
	BT_EQ_U64(t, 1, s->ntasks);
	BT_REQUIRE(t, s->signal != NULL);
	BT_EQ_INT(t, SIGSEGV, s->signal->signo);
	BT_EQ_STR(t, "fed", btrace_snapshot_meta(s, "capture.test"));
	btrace_snapshot_free(s);

	bt_snapbuild_summary(&b, &qs, line, sizeof(line));
	BT_EQ_STR(t, "btrace record: wrote btrace-a_b-42.btrace: SIGSEGV in "
		  "thread 7 at 0x1234 (block), 3 B of trace kept of 4.0 MiB "
		  "asked (1 thread, qemu)", line);
	sig.signo = 0;
	sig.fault_source = BTRACE_FAULT_CORE;
	bt_snapbuild_summary(&b, &qs, line, sizeof(line));
	BT_CONTAINS(t, line, ": exit in thread 7 at 0x1234, 3 B");
	bt_snapbuild_summary(&b, &hs, line, sizeof(line));
	snprintf(want, sizeof(want), "snapshot written to %s (precise)", b.path);
	BT_EQ_STR(t, want, line);

	/* aborted: neither the file nor its temporary one stays */
	BT_EQ_INT(t, 0, bt_snapbuild_begin(&b, "gone.btrace", NULL, 1, &cfg,
					   &err));
	BT_EQ_INT(t, 0, bt_snapbuild_add_buffer(&b, &buf));
	bt_snapbuild_abort(&b);
	BT_CHECK(t, b.w == NULL);
	BT_EQ_U64(t, 1, dir_entries("."));
	BT_CHECK(t, access("gone.btrace", F_OK) != 0);

	unlink(abs);
	BT_CHECK(t, fchdir(cwd) == 0);
	close(cwd);
	rmdir(dir);
}

BT_TESTS(test_maps_full_line, test_maps_names, test_maps_long_path,
	 test_maps_missing_fields, test_maps_next, test_default_name,
	 test_signal_name, test_add_code_self, test_data_rule,
	 test_data_budget, test_data_chunks, test_data_live, test_builder)
