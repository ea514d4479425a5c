// SPDX-License-Identifier: MIT
/*
 * End-to-end tests of the QEMU backend on real crashing programs (built by
 * meson into $BT_PROGS): signal, crashed thread, exact fault address, the
 * PT tail decoded with libipt against the code embedded in the snapshot,
 * and QEMU's own -d exec log; exit status and signal passthrough; errors.
 */
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <intel-pt.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>

#include "bt-test.h"
#include "qemu-record.h"

static char progs[4096];
static char workdir[] = "/tmp/bt-qemu-test-XXXXXX";

static void prog_path(char *out, size_t len, const char *name)
{
	snprintf(out, len, "%s/%s", progs, name);
}

/* Record @argv (argv[0] a program name in $BT_PROGS). */
/* Set in a child whose standard output is not the TAP stream. */
static int own_stdout;

/* Run the recording with the program's standard output on our standard
 * error: standard output carries TAP only. */
static int run_record(struct btrace_record_opts *o,
		      struct btrace_record_result *res, struct btrace_error *err)
{
	int saved, r;

	if (own_stdout)
		return bt_qemu_record(o, res, err);
	fflush(stdout);
	saved = dup(1);
	if (saved < 0 || dup2(2, 1) < 0)
		return bt_qemu_record(o, res, err);
	r = bt_qemu_record(o, res, err);
	fflush(stdout);
	dup2(saved, 1);
	close(saved);
	return r;
}

static int record(const char *name, const char *arg, uint64_t size,
		  const char *out, struct btrace_record_result *res,
		  struct btrace_error *err)
{
	char path[4200];
	char *argv[3] = { path, (char *)arg, NULL };
	struct btrace_record_opts o = { .sz = sizeof(o) };

	prog_path(path, sizeof(path), name);
	o.backend = BTRACE_BACKEND_QEMU;
	o.argv = argv;
	o.output = out;
	o.size = size;
	o.flags = BTRACE_RECORD_QUIET;
	memset(err, 0, sizeof(*err));
	return run_record(&o, res, err);
}

/* Record $BT_PROGS/@name with two arguments (either may be NULL). */
static int record2(const char *name, const char *a1, const char *a2,
		   const char *out, struct btrace_record_result *res,
		   struct btrace_error *err)
{
	char path[4200];
	char *argv[4] = { path, (char *)a1, (char *)a2, NULL };
	struct btrace_record_opts o = { .sz = sizeof(o) };

	prog_path(path, sizeof(path), name);
	o.backend = BTRACE_BACKEND_QEMU;
	o.argv = argv;
	o.output = out;
	o.flags = BTRACE_RECORD_QUIET;
	memset(err, 0, sizeof(*err));
	return run_record(&o, res, err);
}

/* "key=0x..." (or key=N) from a file a test program wrote. */
static uint64_t read_key(const char *file, const char *key)
{
	char buf[512], *p;
	FILE *f = fopen(file, "r");
	size_t n;

	if (!f)
		return 0;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	p = strstr(buf, key);
	if (!p || p[strlen(key)] != '=')
		return 0;
	return strtoull(p + strlen(key) + 1, NULL, 0);
}

static const struct btrace_task *crashed_task(const struct btrace_snapshot *s)
{
	for (size_t i = 0; i < s->ntasks; i++)
		if (s->tasks[i].flags & BTRACE_TASK_CRASHED)
			return &s->tasks[i];
	return NULL;
}

static const struct btrace_buffer *buffer_of(const struct btrace_snapshot *s,
					     int tid)
{
	for (size_t i = 0; i < s->nbuffers; i++)
		if (s->buffers[i].tid == tid)
			return &s->buffers[i];
	return NULL;
}

/* Base address of the mapping of @file (file offset 0). */
static uint64_t map_base(const struct btrace_snapshot *s, const char *file)
{
	for (size_t i = 0; i < s->nmappings; i++) {
		const char *p = s->mappings[i].path;

		if (p && strstr(p, file) && s->mappings[i].pgoff == 0)
			return s->mappings[i].start;
	}
	return 0;
}

/* ---- decoding the tail with libipt over the embedded code ---- */

static int read_code(uint8_t *buf, size_t size, const struct pt_asid *asid,
		     uint64_t ip, void *ctx)
{
	const struct btrace_snapshot *s = ctx;

	for (size_t i = 0; i < s->ncode; i++) {
		const struct btrace_code *c = &s->code[i];

		if (ip >= c->vaddr && ip < c->vaddr + c->size) {
			size_t n = c->vaddr + c->size - ip;

			if (n > size)
				n = size;
			memcpy(buf, c->data + (ip - c->vaddr), n);
			return (int)n;
		}
	}
	return -pte_nomap;
}

struct tail {
	uint64_t *ip;
	size_t n, cap;
	uint64_t last_async_at;
	uint64_t async_at[16];    /* the first ones */
	int nasync;
	int error;
};

static void tail_push(struct tail *t, uint64_t ip)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 4096;
		t->ip = realloc(t->ip, t->cap * sizeof(*t->ip));
	}
	t->ip[t->n++] = ip;
}

static void decode_tail(const struct btrace_snapshot *s,
			const struct btrace_buffer *b, struct tail *t)
{
	struct pt_config cfg;
	struct pt_insn_decoder *d;
	int st;

	memset(t, 0, sizeof(*t));
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)b->data;
	cfg.end = (uint8_t *)b->data + b->size;
	d = pt_insn_alloc_decoder(&cfg);
	if (!d) {
		t->error = -1;
		return;
	}
	pt_image_set_callback(pt_insn_get_image(d), read_code, (void *)s);
	st = pt_insn_sync_forward(d);
	while (st >= 0) {
		struct pt_insn insn;

		while (st & pts_event_pending) {
			struct pt_event ev;

			st = pt_insn_event(d, &ev, sizeof(ev));
			if (st < 0)
				break;
			if (ev.type == ptev_async_disabled) {
				if (t->nasync < 16)
					t->async_at[t->nasync] =
						ev.variant.async_disabled.at;
				t->nasync++;
				t->last_async_at = ev.variant.async_disabled.at;
			}
		}
		if (st < 0 || (st & pts_eos))
			break;
		st = pt_insn_next(d, &insn, sizeof(insn));
		if (insn.iclass != ptic_error)
			tail_push(t, insn.ip);
	}
	if (st < 0 && st != -pte_eos) {
		uint64_t off = 0;

		t->error = st;
		pt_insn_get_offset(d, &off);
		bt_test_diag("decode: %s at offset %" PRIu64 " of %" PRIu64
			     ", after %zu insns, last ip 0x%" PRIx64,
			     pt_errstr(pt_errcode(st)), off, b->size, t->n,
			     t->n ? t->ip[t->n - 1] : 0);
	}
	pt_insn_free_decoder(d);
}

/* ---- tests ---- */

static void test_null_fnptr(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err;
	struct btrace_snapshot *s = NULL;
	const struct btrace_task *ct;
	const struct btrace_buffer *b;
	char out[256], log[256], qargs[300];
	struct tail tl;
	FILE *f;
	uint64_t tbs[64];
	size_t ntb = 0, k, j;
	char line[512];

	snprintf(out, sizeof(out), "%s/fnptr.btrace", workdir);
	snprintf(log, sizeof(log), "%s/exec.log", workdir);
	snprintf(qargs, sizeof(qargs), "-d exec,nochain -D %s", log);
	setenv("BTRACE_QEMU_ARGS", qargs, 1);
	BT_REQUIRE(t, record("crash-fnptr", "10", 0, out, &res, &err) == 0);
	unsetenv("BTRACE_QEMU_ARGS");
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	BT_EQ_INT(t, 1, res.snapshots);
	BT_EQ_STR(t, out, res.snapshot_path);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->signal != NULL);
	BT_EQ_INT(t, SIGSEGV, s->signal->signo);
	BT_EQ_INT(t, BTRACE_FAULT_CORE, s->signal->fault_source);
	BT_EQ_INT(t, 1, s->signal->has_regs);
	BT_EQ_U64(t, s->signal->fault_ip, s->signal->regs[BTRACE_REG_RIP]);
	BT_EQ_U64(t, 0, s->signal->addr);    /* NULL + 0 */
	BT_EQ_INT(t, BTRACE_BACKEND_QEMU, s->config.backend);
	BT_EQ_INT(t, BTRACE_TRACE_PT, s->config.trace_kind);
	ct = crashed_task(s);
	BT_REQUIRE(t, ct != NULL);
	BT_EQ_INT(t, s->signal->tid, ct->tid);
	BT_CHECK(t, s->ncode > 0);
	BT_CHECK(t, map_base(s, "crash-fnptr") != 0);
	BT_CHECK(t, btrace_snapshot_meta(s, "command") != NULL);
	b = buffer_of(s, ct->tid);
	BT_REQUIRE(t, b != NULL);

	/* The PT tail decodes and ends at the exact fault. */
	decode_tail(s, b, &tl);
	BT_EQ_INT(t, 0, tl.error);
	BT_CHECK(t, tl.n > 1000);
	BT_CHECK(t, tl.nasync >= 1);
	BT_EQ_U64(t, s->signal->fault_ip, tl.last_async_at);

	/* QEMU's own log: the last executed TB starts must appear, in
	 * order, at the end of the decoded instructions. */
	f = fopen(log, "r");
	BT_REQUIRE(t, f != NULL);
	while (fgets(line, sizeof(line), f)) {
		char *p = strstr(line, "Trace ");
		unsigned long long pc;

		if (!p || !(p = strchr(p, '[')) ||
		    sscanf(p, "[%*x/%llx", &pc) != 1)
			continue;
		if (ntb == (sizeof(tbs) / sizeof(tbs[0]))) {
			memmove(tbs, tbs + 1, sizeof(tbs) - sizeof(tbs[0]));
			ntb--;
		}
		tbs[ntb++] = pc;
	}
	fclose(f);
	BT_CHECK(t, ntb == (sizeof(tbs) / sizeof(tbs[0])));
	/* Walk both backwards: every TB start is found in the decoded
	 * path, in order, no more than 600 instructions apart. */
	for (k = ntb, j = tl.n; k > 0 && j > 0; k--) {
		size_t lim = j > 600 ? j - 600 : 0;

		while (j > lim && tl.ip[j - 1] != tbs[k - 1])
			j--;
		if (j == lim)
			break;
		j--;
	}
	BT_EQ_INT(t, 0, (int)k);
	free(tl.ip);
	btrace_snapshot_free(s);
}

static void test_reraise_keeps_first_fault(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err;
	struct btrace_snapshot *s = NULL;
	char out[256];
	const char *rr = NULL;

	snprintf(out, sizeof(out), "%s/reraise.btrace", workdir);
	BT_REQUIRE(t, record("crash-reraise", NULL, 0, out, &res, &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->signal != NULL);
	BT_EQ_INT(t, SIGSEGV, s->signal->signo);
	/* The original fault (in crash_here), not the raise() in the
	 * handler.  Here the handler returns with SIGSEGV pending, so QEMU
	 * dies re-executing the faulting store and the core is exact; a
	 * handler that never returns leaves only the plugin's note of the
	 * fault's block (BLOCK, with qemu.reraise_ip). */
	BT_CHECK(t, s->signal->fault_source == BTRACE_FAULT_CORE ||
		 (s->signal->fault_source == BTRACE_FAULT_BLOCK &&
		  btrace_snapshot_meta(s, "qemu.reraise_ip")));
	BT_EQ_U64(t, 0, s->signal->addr);
	BT_CHECK(t, s->signal->code > 0);   /* a real fault: SEGV_MAPERR */
	(void)rr;
	BT_CHECK(t, s->signal->fault_ip >= map_base(s, "crash-reraise") &&
		 s->signal->fault_ip < map_base(s, "crash-reraise") + 0x10000);
	btrace_snapshot_free(s);
}

static void test_thread_crash(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err;
	struct btrace_snapshot *s = NULL;
	const struct btrace_task *ct;
	char out[256];

	snprintf(out, sizeof(out), "%s/thread.btrace", workdir);
	BT_REQUIRE(t, record("crash-thread", NULL, 1 << 20, out, &res,
			     &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->signal != NULL);
	ct = crashed_task(s);
	BT_REQUIRE(t, ct != NULL);
	/* A worker, not the main thread; one buffer per thread. */
	BT_CHECK(t, ct->tid != ct->pid);
	BT_EQ_INT(t, ct->tid, s->signal->tid);
	BT_CHECK(t, s->nbuffers >= 5);
	BT_EQ_INT(t, BTRACE_FAULT_CORE, s->signal->fault_source);
	BT_CHECK(t, buffer_of(s, ct->tid) != NULL);
	btrace_snapshot_free(s);
}

static void simple_signal(struct bt_test *t, const char *prog, int sig,
			  int exact)
{
	struct btrace_record_result res;
	struct btrace_error err;
	struct btrace_snapshot *s = NULL;
	char out[256];
	struct tail tl;

	snprintf(out, sizeof(out), "%s/%s.btrace", workdir, prog);
	BT_REQUIRE(t, record(prog, NULL, 0, out, &res, &err) == 0);
	BT_EQ_INT(t, 128 + sig, res.shell_status);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->signal != NULL);
	BT_EQ_INT(t, sig, s->signal->signo);
	BT_EQ_INT(t, exact ? BTRACE_FAULT_CORE : BTRACE_FAULT_BLOCK,
		  s->signal->fault_source);
	decode_tail(s, buffer_of(s, s->signal->tid), &tl);
	BT_EQ_INT(t, 0, tl.error);
	BT_EQ_U64(t, s->signal->fault_ip, tl.last_async_at);
	free(tl.ip);
	btrace_snapshot_free(s);
}

static void test_abort(struct bt_test *t)
{
	simple_signal(t, "crash-abort", SIGABRT, 1);
}

static void test_sigfpe(struct bt_test *t)
{
	simple_signal(t, "crash-fpe", SIGFPE, 1);
}

static void test_sigill(struct bt_test *t)
{
	simple_signal(t, "crash-ill", SIGILL, 1);
}

static void test_dlopen(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err;
	struct btrace_snapshot *s = NULL;
	char out[256], lib[4200];
	uint64_t base;

	snprintf(out, sizeof(out), "%s/dlopen.btrace", workdir);
	prog_path(lib, sizeof(lib), "libcrashlib.so");
	BT_REQUIRE(t, record("crash-dlopen", lib, 0, out, &res, &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->signal != NULL);
	base = map_base(s, "libcrashlib.so");
	/* The library loaded by dlopen is in the map copy, with code. */
	BT_CHECK(t, base != 0);
	BT_CHECK(t, s->signal->fault_ip > base &&
		 s->signal->fault_ip < base + 0x10000);
	btrace_snapshot_free(s);
}

static void test_long_run_wraps(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err;
	struct btrace_snapshot *s = NULL;
	const struct btrace_buffer *b;
	char out[256];
	struct tail tl;

	snprintf(out, sizeof(out), "%s/long.btrace", workdir);
	BT_REQUIRE(t, record("long-run", "3000000", 64 << 10, out, &res,
			     &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->signal != NULL);
	b = buffer_of(s, s->signal->tid);
	BT_REQUIRE(t, b != NULL);
	BT_CHECK(t, b->flags & BTRACE_BUF_WRAPPED);
	BT_CHECK(t, b->size <= (64 << 10) + b->pad);
	decode_tail(s, b, &tl);
	BT_EQ_INT(t, 0, tl.error);
	BT_CHECK(t, tl.n > 10000);
	BT_EQ_U64(t, s->signal->fault_ip, tl.last_async_at);
	free(tl.ip);
	btrace_snapshot_free(s);
}

static void test_exit_status(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err;
	char out[256];

	snprintf(out, sizeof(out), "%s/exit.btrace", workdir);
	BT_REQUIRE(t, record("exit-code", "7", 0, out, &res, &err) == 0);
	BT_CHECK(t, WIFEXITED(res.exit_status));
	BT_EQ_INT(t, 7, res.shell_status);
	BT_EQ_INT(t, 0, res.snapshots);
	BT_CHECK(t, access(out, F_OK) != 0);
}

static void test_signal_forwarded(struct bt_test *t)
{
	int pfd[2];
	pid_t pid;
	int status = 0;
	char buf[64] = "";
	ssize_t n = 0;

	BT_REQUIRE(t, pipe(pfd) == 0);
	pid = fork();
	BT_REQUIRE(t, pid >= 0);
	if (pid == 0) {
		struct btrace_record_result res;
		struct btrace_error err;

		dup2(pfd[1], 1);
		own_stdout = 1;
		close(pfd[0]);
		record("exit-code", "wait", 0, NULL, &res, &err);
		_exit(res.shell_status);
	}
	close(pfd[1]);
	/* Wait for the guest to be ready, then signal btrace only. */
	n = read(pfd[0], buf, sizeof(buf) - 1);
	BT_CHECK(t, n > 0 && strstr(buf, "ready"));
	kill(pid, SIGTERM);
	n = read(pfd[0], buf, sizeof(buf) - 1);
	buf[n > 0 ? n : 0] = 0;
	BT_CONTAINS(t, buf, "got SIGTERM");
	waitpid(pid, &status, 0);
	BT_CHECK(t, WIFEXITED(status));
	BT_EQ_INT(t, 42, WEXITSTATUS(status));
	close(pfd[0]);
}

static void test_errors(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err;
	char fake[300];
	int fd;
	Elf64_Ehdr eh;

	/* Nonexistent program. */
	BT_EQ_INT(t, -ENOENT, record("no-such-program", NULL, 0, NULL, &res,
				     &err));
	BT_CONTAINS(t, err.msg, "no-such-program");
	/* Not x86-64: an AArch64 ELF header. */
	snprintf(fake, sizeof(fake), "%s/arm64-prog", workdir);
	memset(&eh, 0, sizeof(eh));
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_AARCH64;
	fd = open(fake, O_WRONLY | O_CREAT | O_TRUNC, 0755);
	BT_REQUIRE(t, fd >= 0);
	BT_CHECK(t, write(fd, &eh, sizeof(eh)) == sizeof(eh));
	close(fd);
	{
		char *argv[] = { fake, NULL };
		struct btrace_record_opts o = { .sz = sizeof(o), .argv = argv,
						.flags = BTRACE_RECORD_QUIET };

		BT_EQ_INT(t, -ENOEXEC, bt_qemu_record(&o, &res, &err));
		BT_CONTAINS(t, err.msg, "not an x86-64 program");
		/* Missing emulator. */
		setenv("BTRACE_QEMU", "/nonexistent/qemu-x86_64", 1);
		BT_EQ_INT(t, -ENOENT, bt_qemu_record(&o, &res, &err));
		BT_CONTAINS(t, err.msg, "qemu-x86_64");
		BT_CONTAINS(t, err.hint, "qemu-user");
		unsetenv("BTRACE_QEMU");
	}
	unlink(fake);
}

/* Why this machine cannot run the QEMU backend, or NULL.  Decided from the
 * machine (the emulator on the PATH or in $BTRACE_QEMU, and its own -h),
 * not from bt_qemu_find_emulator(), the code under test. */
static const char *machine_lacks_qemu(void)
{
	static char why[600];
	const char *q = getenv("BTRACE_QEMU");
	char cmd[700], line[256];
	int plugin = 0;
	FILE *f;

	if (!q || !*q)
		q = "qemu-x86_64";
	if (strchr(q, '\'') || strlen(q) > 500)
		return "BTRACE_QEMU: not a usable path";
	snprintf(cmd, sizeof(cmd), "command -v '%s' >/dev/null 2>&1 && '%s' -h 2>&1",
		 q, q);
	f = popen(cmd, "r");
	if (!f)
		return "popen failed";
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "-plugin"))
			plugin = 1;
	if (pclose(f) != 0 && !plugin) {
		snprintf(why, sizeof(why), "%s is not installed (package qemu-user)", q);
		return why;
	}
	if (!plugin) {
		snprintf(why, sizeof(why), "%s has no TCG plugin support", q);
		return why;
	}
	return NULL;
}

/* Before main prints the plan: the skip is the whole plan ("1..0"). */
__attribute__((constructor)) static void skip_without_qemu(void)
{
	const char *why = machine_lacks_qemu();

	if (why)
		bt_test_skip_all(why);
}

static void test_setup(struct bt_test *t)
{
	const char *p = getenv("BT_PROGS");

	BT_REQUIRE(t, p != NULL);
	snprintf(progs, sizeof(progs), "%s", p);
	BT_REQUIRE(t, mkdtemp(workdir) != NULL);
}

static void test_cleanup(struct bt_test *t)
{
	char cmd[300];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", workdir);
	BT_EQ_INT(t, 0, system(cmd));
}

/* A forked child that crashes gets its own snapshot, named with its pid;
 * the parent goes on and its exit status passes through. */
static void test_fork_child(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err;
	struct btrace_snapshot *s = NULL;
	const struct btrace_task *ct;
	char out[256], pidf[256], want[300];
	struct tail tl;
	int child;

	snprintf(out, sizeof(out), "%s/fork.btrace", workdir);
	snprintf(pidf, sizeof(pidf), "%s/fork.pid", workdir);
	BT_REQUIRE(t, record("crash-fork", pidf, 0, out, &res, &err) == 0);
	BT_CHECK(t, WIFEXITED(res.exit_status));
	BT_EQ_INT(t, 5, res.shell_status);
	child = (int)read_key(pidf, "child");
	BT_REQUIRE(t, child > 0);
	snprintf(want, sizeof(want), "%s/fork-%d.btrace", workdir, child);
	BT_EQ_INT(t, 1, res.snapshots);
	BT_EQ_STR(t, want, res.snapshot_path);
	BT_CHECK(t, access(out, F_OK) != 0);   /* the parent did not crash */
	BT_REQUIRE(t, btrace_snapshot_read(want, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->signal != NULL);
	BT_EQ_INT(t, SIGSEGV, s->signal->signo);
	BT_EQ_INT(t, child, s->signal->tid);
	BT_EQ_INT(t, BTRACE_FAULT_CORE, s->signal->fault_source);
	BT_CHECK(t, WIFSIGNALED(s->signal->exit_status) &&
		 WTERMSIG(s->signal->exit_status) == SIGSEGV);
	ct = crashed_task(s);
	BT_REQUIRE(t, ct != NULL);
	BT_EQ_INT(t, child, ct->pid);
	decode_tail(s, buffer_of(s, child), &tl);
	BT_EQ_INT(t, 0, tl.error);
	BT_CHECK(t, tl.n > 100);   /* child_work's loop ran in the child */
	BT_EQ_U64(t, s->signal->fault_ip, tl.last_async_at);
	free(tl.ip);
	btrace_snapshot_free(s);
}

/* SIGSEGV handlers that never return to the fault: the snapshot still
 * names the original fault (signal, address, block of crash_here), and so
 * does the report: by docs/report.md ("Finding the fault", rule 2: the
 * trace did not stop at the fault, a handler ran) the fault is the
 * asynchronous event that entered the handler, in crash_here (exact, or
 * its block named), and the stack at the fault is crash_here <- main; never
 * the handler's
 * _exit, abort or longjmp. */
static void check_handler_report(struct bt_test *t,
				 const struct btrace_snapshot *s, uint64_t fn)
{
	struct btrace_decode_result *res = NULL;
	const struct btrace_thread *th;
	struct btrace_error err;

	BT_REQUIRE(t, btrace_decode(s, NULL, &res, &err) == 0);
	BT_REQUIRE(t, res->crashed_thread >= 0 &&
		      (size_t)res->crashed_thread < res->nthreads);
	th = &res->threads[res->crashed_thread];
	BT_CHECK(t, th->fault.found);
	BT_EQ_STR(t, "crash_here", th->fault.sym.function);
	/* The registers are those of the death, in the handler: the trace
	 * alone knows the block of the fault, so the fault is either exact at
	 * the faulting instruction or, honestly, not exact and the block that
	 * holds it is named (docs/report.md, "Exactness"). */
	if (th->fault.exact)
		BT_EQ_U64(t, fn, th->fault.ip);
	else
		BT_CHECK(t, th->fault.block_ip <= fn &&
			    fn <= th->fault.block_end_ip);
	if (BT_CHECK(t, th->nstack >= 2)) {
		BT_EQ_STR(t, "crash_here", th->stack[0].sym.function);
		BT_EQ_STR(t, "main", th->stack[1].sym.function);
	}
	bt_test_diag("report: fault %s+0x%" PRIx64 " (%s, %s)",
		     th->fault.sym.function ? th->fault.sym.function : "?",
		     th->fault.sym.offset, th->fault.exact ? "exact" : "not exact",
		     th->fault.how ? th->fault.how : "?");
	btrace_decode_result_free(res);
}

static void handler_case(struct bt_test *t, const char *mode, int shell,
			 const char *final)
{
	struct btrace_record_result res;
	struct btrace_error err;
	struct btrace_snapshot *s = NULL;
	char out[256], addrf[256];
	const char *fs;
	uint64_t fn;
	struct tail tl;
	int seen = 0;

	snprintf(out, sizeof(out), "%s/handler-%s.btrace", workdir, mode);
	snprintf(addrf, sizeof(addrf), "%s/handler-%s.txt", workdir, mode);
	BT_REQUIRE(t, record2("crash-handler", mode, addrf, out, &res,
			      &err) == 0);
	BT_EQ_INT(t, shell, res.shell_status);
	if (!final) {
		/* it exited: no crash snapshot (docs/qemu-backend.md, step
		 * 8) */
		struct stat st;

		BT_EQ_INT(t, 0, res.snapshots);
		BT_CHECK(t, stat(out, &st) != 0);
		return;
	}
	BT_EQ_INT(t, 1, res.snapshots);
	fn = read_key(addrf, "crash_here");
	BT_REQUIRE(t, fn != 0);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->signal != NULL);
	BT_EQ_INT(t, SIGSEGV, s->signal->signo);
	BT_EQ_U64(t, 0x10, s->signal->addr);
	BT_CHECK(t, s->signal->code > 0);
	BT_EQ_INT(t, BTRACE_FAULT_BLOCK, s->signal->fault_source);
	BT_EQ_U64(t, fn, s->signal->fault_ip);   /* crash_here is one block */
	BT_EQ_INT(t, res.exit_status, s->signal->exit_status);
	fs = btrace_snapshot_meta(s, "qemu.final_signal");
	BT_REQUIRE(t, fs != NULL);
	BT_CONTAINS(t, fs, final);
	/* The trace enters crash_here, leaves it asynchronously (the fault)
	 * and goes on into the handler. */
	decode_tail(s, buffer_of(s, s->signal->tid), &tl);
	BT_EQ_INT(t, 0, tl.error);
	for (int i = 0; i < tl.nasync && i < 16; i++)
		seen |= tl.async_at[i] == fn;
	BT_CHECK(t, seen);
	BT_CHECK(t, tl.nasync >= 2);   /* the fault, and the end */
	free(tl.ip);
	check_handler_report(t, s, fn);
	btrace_snapshot_free(s);
}

static void test_handler_abort(struct bt_test *t)
{
	handler_case(t, "abort", 128 + SIGABRT, "SIGABRT");
}

/* A handler that exits (_exit(3) in it, or siglongjmp back to main, which
 * exits 4): the process did not die of a signal, so no crash snapshot,
 * and the exit status passes through. */
static void test_handler_exit(struct bt_test *t)
{
	handler_case(t, "exit", 3, NULL);
}

static void test_handler_longjmp(struct bt_test *t)
{
	handler_case(t, "longjmp", 4, NULL);
}

/* Code written into anonymous memory is embedded (ANON) and decodes. */
static void jit_case(struct bt_test *t, const char *mode)
{
	struct btrace_record_result res;
	struct btrace_error err;
	struct btrace_snapshot *s = NULL;
	char out[256], addrf[256];
	uint64_t code, fault;
	const struct btrace_code *anon = NULL;
	struct tail tl;

	snprintf(out, sizeof(out), "%s/jit-%s.btrace", workdir, mode);
	snprintf(addrf, sizeof(addrf), "%s/jit-%s.txt", workdir, mode);
	BT_REQUIRE(t, record2("crash-jit", mode, addrf, out, &res, &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	code = read_key(addrf, "code");
	fault = read_key(addrf, "fault");
	BT_REQUIRE(t, code && fault);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->signal != NULL);
	BT_EQ_INT(t, BTRACE_FAULT_CORE, s->signal->fault_source);
	BT_EQ_U64(t, fault, s->signal->fault_ip);
	for (size_t i = 0; i < s->ncode; i++)
		if (s->code[i].kind == BTRACE_CODE_ANON &&
		    s->code[i].vaddr <= code &&
		    s->code[i].vaddr + s->code[i].size > fault)
			anon = &s->code[i];
	BT_REQUIRE(t, anon != NULL);
	BT_EQ_INT(t, 0x31, anon->data[code - anon->vaddr]);   /* xor */
	decode_tail(s, buffer_of(s, s->signal->tid), &tl);
	BT_EQ_INT(t, 0, tl.error);
	BT_REQUIRE(t, tl.n >= 4);
	/* The path ends in the generated code: xor, test, je (not taken,
	 * argc is 3), inc; then the store faults. */
	BT_EQ_U64(t, code, tl.ip[tl.n - 4]);
	BT_EQ_U64(t, code + 6, tl.ip[tl.n - 1]);
	BT_EQ_U64(t, fault, tl.last_async_at);
	free(tl.ip);
	btrace_snapshot_free(s);
}

static void test_jit_rwx(struct bt_test *t)
{
	jit_case(t, "rwx");
}

static void test_jit_rx(struct bt_test *t)
{
	jit_case(t, "rx");
}

static void test_threads16(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err;
	struct btrace_snapshot *s = NULL;
	const struct btrace_task *ct;
	char out[256];

	snprintf(out, sizeof(out), "%s/threads16.btrace", workdir);
	BT_REQUIRE(t, record("crash-threads16", "100", 1 << 20, out, &res,
			     &err) == 0);
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->signal != NULL);
	ct = crashed_task(s);
	BT_REQUIRE(t, ct != NULL);
	BT_CHECK(t, ct->tid != ct->pid);
	BT_CHECK(t, s->nbuffers >= 17);   /* main + 16 */
	BT_EQ_INT(t, BTRACE_FAULT_CORE, s->signal->fault_source);
	btrace_snapshot_free(s);
}

/* Entries of @dir, "." and ".." aside; with @ring, only regular files
 * named ring.<pid> one level down (in btrace-qemu-XXXXXX). */
static int count_entries(const char *dir, int ring)
{
	DIR *d = opendir(dir), *sub;
	struct dirent *de, *se;
	char path[600], file[900];
	struct stat st;
	int n = 0;

	if (!d)
		return -1;
	while ((de = readdir(d))) {
		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		if (!ring) {
			n++;
			continue;
		}
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		sub = opendir(path);
		while (sub && (se = readdir(sub))) {
			snprintf(file, sizeof(file), "%s/%s", path, se->d_name);
			if (!strncmp(se->d_name, "ring.", 5) &&
			    !lstat(file, &st) && S_ISREG(st.st_mode))
				n++;
		}
		if (sub)
			closedir(sub);
	}
	closedir(d);
	return n;
}

/* The launched process's ring is a memfd: the guest and what it execs
 * never see its descriptor, and nothing is left in $TMPDIR.  With
 * BTRACE_QEMU_KEEP_RINGS=1 the rings are also copied into files in the
 * kept ring directory, and a crash recorded that way is as exact. */
static void test_ring_storage(struct bt_test *t)
{
	struct btrace_record_result res;
	struct btrace_error err;
	struct btrace_snapshot *s = NULL;
	struct btrace_record_opts o = { .sz = sizeof(o) };
	char tmp[300], list[300], cmd[400], out[256], buf[8192];
	char *argv[] = { (char *)"/bin/sh", (char *)"-c", cmd, NULL };
	const struct btrace_task *ct;
	struct tail tl;
	FILE *f;
	size_t n;

	snprintf(tmp, sizeof(tmp), "%s/tmpdir", workdir);
	snprintf(list, sizeof(list), "%s/fds.txt", workdir);
	snprintf(out, sizeof(out), "%s/keep.btrace", workdir);
	BT_REQUIRE(t, mkdir(tmp, 0700) == 0);
	setenv("TMPDIR", tmp, 1);

	/* An exec'd program lists its descriptors: no ring among them. */
	snprintf(cmd, sizeof(cmd), "exec ls -l /proc/self/fd/ > %s", list);
	o.backend = BTRACE_BACKEND_QEMU;
	o.argv = argv;
	o.flags = BTRACE_RECORD_QUIET;
	memset(&err, 0, sizeof(err));
	BT_REQUIRE(t, bt_qemu_record(&o, &res, &err) == 0);
	BT_EQ_INT(t, 0, res.shell_status);
	f = fopen(list, "r");
	BT_REQUIRE(t, f != NULL);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = 0;
	BT_CHECK(t, strstr(buf, "fds.txt") != NULL);   /* the listing ran */
	BT_CHECK(t, strstr(buf, "memfd:") == NULL);
	BT_CHECK(t, strstr(buf, "btrace-qemu-") == NULL);
	BT_EQ_INT(t, 0, count_entries(tmp, 0));

	/* The fallback: ring files, kept. */
	setenv("BTRACE_QEMU_KEEP_RINGS", "1", 1);
	BT_REQUIRE(t, record("crash-fnptr", "10", 0, out, &res, &err) == 0);
	unsetenv("BTRACE_QEMU_KEEP_RINGS");
	unsetenv("TMPDIR");
	BT_EQ_INT(t, 128 + SIGSEGV, res.shell_status);
	BT_EQ_INT(t, 1, count_entries(tmp, 1));
	BT_REQUIRE(t, btrace_snapshot_read(out, 0, &s, &err) == 0);
	BT_REQUIRE(t, s->signal != NULL);
	BT_EQ_INT(t, BTRACE_FAULT_CORE, s->signal->fault_source);
	ct = crashed_task(s);
	BT_REQUIRE(t, ct != NULL && buffer_of(s, ct->tid) != NULL);
	decode_tail(s, buffer_of(s, ct->tid), &tl);
	BT_EQ_INT(t, 0, tl.error);
	BT_CHECK(t, tl.n > 1000);
	BT_EQ_U64(t, s->signal->fault_ip, tl.last_async_at);
	free(tl.ip);
	btrace_snapshot_free(s);
}

BT_TESTS(test_setup, test_null_fnptr, test_reraise_keeps_first_fault,
	 test_thread_crash, test_abort, test_sigfpe, test_sigill, test_dlopen,
	 test_long_run_wraps, test_exit_status, test_signal_forwarded,
	 test_errors, test_fork_child, test_handler_abort, test_handler_exit,
	 test_handler_longjmp, test_jit_rwx, test_jit_rx, test_threads16,
	 test_ring_storage, test_cleanup)
