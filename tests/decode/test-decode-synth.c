/* SPDX-License-Identifier: MIT */
/*
 * The decoder against the truth: real programs single-stepped under ptrace,
 * encoded as Intel PT / BTS, written as .btrace, read back and decoded.
 * The decoded instruction sequence must be the true one (minus what libipt
 * cannot know by design: the straight-line instructions before an
 * overflow, the part of a wrapped ring before its first PSB).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>

#include "bt-test.h"
#include "gen.h"

static char tmpdir[256];

static const char *prog(const char *name)
{
	const char *p = getenv(name);
	return p && *p ? p : NULL;
}

struct fx {
	struct gen_truth truth;
	struct btrace_snapshot *snap;
	struct btrace_decode_result *res;
	uint64_t *ips;          /* decoded instructions of thread 0 */
	size_t n;
};

static void fx_free(struct fx *f)
{
	btrace_decode_result_free(f->res);
	btrace_snapshot_free(f->snap);
	gen_truth_free(&f->truth);
	free(f->ips);
	memset(f, 0, sizeof(*f));
}

static int expand(struct fx *f, const struct btrace_thread *t)
{
	size_t cap = 0;

	free(f->ips);
	f->ips = NULL;
	f->n = 0;
	for (size_t i = 0; i < t->nblocks; i++) {
		const struct btrace_block *b = &t->blocks[i];
		if (b->kind != BTRACE_ITEM_BLOCK)
			continue;
		struct btrace_insn *in = calloc(b->ninsn + 1, sizeof(*in));
		int k = btrace_decode_block_insns(f->res, b, in, b->ninsn);
		if (k != (int)b->ninsn) {
			free(in);
			return -1;
		}
		if (f->n + (size_t)k > cap) {
			cap = (f->n + (size_t)k) * 2;
			f->ips = realloc(f->ips, cap * sizeof(*f->ips));
		}
		for (int j = 0; j < k; j++)
			f->ips[f->n++] = in[j].ip;
		free(in);
	}
	return 0;
}

static int setup(struct bt_test *t, struct fx *f, const char *progvar,
		 const char *arg, struct gen_opts *o,
		 const struct btrace_decode_opts *dopts)
{
	char path[512], eb[512];
	struct btrace_error err;
	const char *p = prog(progvar);
	char *argv[3] = { (char *)p, (char *)arg, NULL };

	memset(f, 0, sizeof(*f));
	if (!p) {
		bt_test_fail(t, __FILE__, __LINE__, "%s not set", progvar);
		return -1;
	}
	snprintf(path, sizeof(path), "%s/%s.btrace", tmpdir, t->name);
	o->argv = argv;
	o->out = path;
	if (gen_run(o, &f->truth, eb, sizeof(eb))) {
		bt_test_fail(t, __FILE__, __LINE__, "generator: %s", eb);
		return -1;
	}
	if (btrace_snapshot_read(path, 0, &f->snap, &err) < 0) {
		bt_test_fail(t, __FILE__, __LINE__, "read: %s", err.msg);
		return -1;
	}
	if (btrace_decode(f->snap, dopts, &f->res, &err) < 0) {
		bt_test_fail(t, __FILE__, __LINE__, "decode: %s", err.msg);
		return -1;
	}
	if (!f->res->nthreads || expand(f, &f->res->threads[0]) < 0) {
		bt_test_fail(t, __FILE__, __LINE__, "no thread / expand failed");
		return -1;
	}
	return 0;
}

/* Index of the first difference between decoded and truth[off..]. */
static size_t first_diff(const struct fx *f, size_t off)
{
	size_t i = 0;
	while (i < f->n && off + i < f->truth.n && f->ips[i] == f->truth.ip[off + i])
		i++;
	return i;
}

static void check_exact(struct bt_test *t, struct fx *f)
{
	size_t d = first_diff(f, 0);

	BT_EQ_INT(t, f->truth.n, f->n);
	BT_EQ_INT(t, f->truth.n, d);
	if (d < f->n && d < f->truth.n)
		bt_test_diag("first difference at %zu: decoded 0x%llx, truth 0x%llx",
			     d, (unsigned long long)f->ips[d],
			     (unsigned long long)f->truth.ip[d]);
}

static int has_frame(const struct btrace_thread *th, const char *fn)
{
	for (size_t i = 0; i < th->nstack; i++)
		if (th->stack[i].sym.function && !strcmp(th->stack[i].sym.function, fn))
			return 1;
	return 0;
}

static void check_fault(struct bt_test *t, struct fx *f, uint64_t want)
{
	const struct btrace_thread *th = &f->res->threads[0];

	BT_CHECK(t, th->crashed);
	BT_CHECK(t, th->fault.found);
	BT_CHECK(t, th->fault.exact);
	BT_EQ_U64(t, want, th->fault.ip);
	BT_CHECK(t, th->fault.insn[0] != 0);
}

static void pt_variant(struct bt_test *t, int retcomp, int tnt64, uint32_t psb)
{
	struct fx f;
	struct gen_opts o = { .retcomp = retcomp, .tnt64 = tnt64, .psb_period = psb };

	if (setup(t, &f, "BT_PROG_NULL", "3", &o, NULL))
		goto out;
	check_exact(t, &f);
	check_fault(t, &f, f.truth.fault_ip);
	const struct btrace_thread *th = &f.res->threads[0];
	BT_REQUIRE(t, th->nstack >= 3);
	BT_EQ_STR(t, "store", th->stack[0].sym.function);
	BT_CHECK(t, th->stack[0].flags & BTRACE_CALL_TAILCALL);
	/* the tail caller is a frame of its own (as gdb shows it), at its
	 * jump, entered by a call */
	BT_EQ_STR(t, "tail", th->stack[1].sym.function);
	BT_CHECK(t, !(th->stack[1].flags & BTRACE_CALL_TAILCALL));
	BT_EQ_STR(t, "leaf", th->stack[2].sym.function);
	BT_CHECK(t, has_frame(th, "leaf"));
	BT_CHECK(t, has_frame(th, "middle"));
	BT_EQ_STR(t, "main", th->stack[th->nstack - 1].sym.function);
	BT_CHECK(t, th->stack[th->nstack - 1].flags & BTRACE_CALL_PARTIAL);
	BT_EQ_INT(t, 0, th->ngaps);
	BT_CHECK(t, th->stack[0].sym.line > 0);
	BT_CHECK(t, th->ncalls > 10);
out:
	fx_free(&f);
}

/* A cycle of tail calls (ping <-> pong, 100 jumps) then a tail call to
 * store: the stack keeps no frame per jump of the cycle, only the
 * function the cycle was in when it tail-called store. */
static void test_pt_tail_cycle(struct bt_test *t)
{
	struct fx f;
	struct gen_opts o = { 0 };

	if (setup(t, &f, "BT_PROG_TAILCYCLE", NULL, &o, NULL))
		goto out;
	check_exact(t, &f);
	check_fault(t, &f, f.truth.fault_ip);
	const struct btrace_thread *th = &f.res->threads[0];
	BT_EQ_INT(t, 3, (int)th->nstack);
	BT_REQUIRE(t, th->nstack >= 3);
	BT_EQ_STR(t, "store", th->stack[0].sym.function);
	BT_CHECK(t, th->stack[0].flags & BTRACE_CALL_TAILCALL);
	BT_EQ_STR(t, "ping", th->stack[1].sym.function);
	BT_CHECK(t, !(th->stack[1].flags & BTRACE_CALL_TAILCALL));
	BT_EQ_STR(t, "main", th->stack[2].sym.function);
out:
	fx_free(&f);
}

/* An indirect tail call (via_a -> via_b through a pointer) changes the
 * frame's function; a direct one (via_b -> outer) keeps the caller as a
 * frame; and a frame whose function changed that way has a return address
 * of its own: a direct tail call to the function of a frame below it
 * (outer) is not a cycle of tail calls going back there. */
static void test_pt_tail_indirect(struct bt_test *t)
{
	static const char *const want[] = { "store", "outer", "via_b", "outer",
					    "main" };
	struct fx f;
	struct gen_opts o = { 0 };

	if (setup(t, &f, "BT_PROG_TAILIND", NULL, &o, NULL))
		goto out;
	check_exact(t, &f);
	check_fault(t, &f, f.truth.fault_ip);
	const struct btrace_thread *th = &f.res->threads[0];
	BT_EQ_INT(t, 5, (int)th->nstack);
	BT_REQUIRE(t, th->nstack >= 5);
	for (int i = 0; i < 5; i++)
		BT_EQ_STR(t, want[i], th->stack[i].sym.function);
	BT_CHECK(t, !(th->stack[0].flags & BTRACE_CALL_TAILCALL));
	BT_CHECK(t, th->stack[1].flags & BTRACE_CALL_TAILCALL);
	BT_CHECK(t, th->stack[2].flags & BTRACE_CALL_TAILCALL);
	BT_CHECK(t, !(th->stack[3].flags & BTRACE_CALL_TAILCALL));
	BT_CHECK(t, !has_frame(th, "via_a"));
out:
	fx_free(&f);
}

/* A handler that ends in a tail call returns from the function it jumped
 * to: into the signal trampoline, and rt_sigreturn back into outer; the
 * stack of the later fault is the one before the signal. */
static void test_pt_handler_tail(struct bt_test *t)
{
	static const char *const want[] = { "store", "outer", "main" };
	struct fx f;
	struct gen_opts o = { 0 };

	if (setup(t, &f, "BT_PROG_SIGTAIL", NULL, &o, NULL))
		goto out;
	check_exact(t, &f);
	check_fault(t, &f, f.truth.fault_ip);
	const struct btrace_thread *th = &f.res->threads[0];
	BT_EQ_INT(t, 3, (int)th->nstack);
	BT_REQUIRE(t, th->nstack >= 3);
	for (int i = 0; i < 3; i++) {
		BT_EQ_STR(t, want[i], th->stack[i].sym.function);
		BT_CHECK(t, !(th->stack[i].flags & BTRACE_CALL_SIGNAL));
	}
out:
	fx_free(&f);
}

static void test_pt_plain(struct bt_test *t) { pt_variant(t, 0, 0, 0); }
static void test_pt_retcomp_tnt64(struct bt_test *t) { pt_variant(t, 1, 1, 0); }
static void test_pt_psb64(struct bt_test *t) { pt_variant(t, 1, 0, 64); }

static void test_pt_tail_only(struct bt_test *t)
{
	struct fx f, g;
	struct gen_opts o = { .retcomp = 1, .psb_period = 256 };
	struct btrace_decode_opts d = { .sz = sizeof(d), .last = 40,
					.unit = BTRACE_UNIT_BLOCKS };

	if (setup(t, &f, "BT_PROG_LOOP", "3000", &o, &d))
		goto out;
	memset(&g, 0, sizeof(g));
	const struct btrace_thread *th = &f.res->threads[0];
	BT_CHECK(t, th->truncated);
	BT_CHECK(t, th->decoded_bytes < th->buffer_bytes / 4);
	/* the tail is the end of the true path */
	size_t off = f.truth.n - f.n;
	BT_CHECK(t, f.n >= 40);
	BT_EQ_INT(t, f.n, first_diff(&f, off));
	check_fault(t, &f, f.truth.fault_ip);
	BT_EQ_STR(t, "boom", th->stack[0].sym.function);
	BT_EQ_STR(t, "main", th->stack[1].sym.function);
out:
	fx_free(&f);
}

static void test_pt_wrapped(struct bt_test *t)
{
	struct fx f;
	struct gen_opts o = { .retcomp = 1, .psb_period = 512, .ring_size = 2048 };

	if (setup(t, &f, "BT_PROG_LOOP", "20000", &o, NULL))
		goto out;
	const struct btrace_thread *th = &f.res->threads[0];
	BT_CHECK(t, f.n > 100);
	BT_CHECK(t, f.n < f.truth.n);
	BT_EQ_INT(t, f.n, first_diff(&f, f.truth.n - f.n));
	BT_CHECK(t, th->unusable_bytes > 0);
	BT_REQUIRE(t, th->ngaps >= 1);
	BT_EQ_INT(t, BTRACE_GAP_UNUSABLE, th->gaps[0].kind);
	BT_EQ_INT(t, th->unusable_bytes, th->gaps[0].bytes);
	BT_CHECK(t, !th->complete);
	check_fault(t, &f, f.truth.fault_ip);
out:
	fx_free(&f);
}

static void test_pt_overflow(struct bt_test *t)
{
	struct fx f;
	struct gen_opts o = { .retcomp = 1, .ovf_from = 3000, .ovf_to = 3400 };

	if (setup(t, &f, "BT_PROG_NULL", "3", &o, NULL))
		goto out;
	const struct btrace_thread *th = &f.res->threads[0];
	/* truth[0, j) + truth[3400, n) with j <= 3000: libipt drops the
	 * straight-line instructions after the last branch that used trace */
	size_t j = first_diff(&f, 0);
	BT_CHECK(t, j <= 3000 && j + 16 >= 3000);
	size_t rest = f.truth.n - 3400;
	BT_EQ_INT(t, j + rest, f.n);
	if (f.n == j + rest)
		BT_CHECK(t, !memcmp(f.ips + j, f.truth.ip + 3400, rest * sizeof(uint64_t)));
	int ovf = 0;
	for (size_t i = 0; i < th->ngaps; i++)
		ovf += th->gaps[i].kind == BTRACE_GAP_OVERFLOW;
	BT_EQ_INT(t, 1, ovf);
	check_fault(t, &f, f.truth.fault_ip);
out:
	fx_free(&f);
}

static void test_pt_handler_reraise(struct bt_test *t)
{
	struct fx f;
	struct gen_opts o = { .retcomp = 1 };

	if (setup(t, &f, "BT_PROG_HANDLER", NULL, &o, NULL))
		goto out;
	check_exact(t, &f);
	const struct btrace_thread *th = &f.res->threads[0];
	BT_CHECK(t, f.truth.handler_fault != 0);
	BT_CHECK(t, f.truth.code <= 0);   /* re-raised: not a kernel fault */
	check_fault(t, &f, f.truth.handler_fault);
	BT_CONTAINS(t, th->fault.how, "handler");
	BT_REQUIRE(t, th->nstack >= 3);
	BT_EQ_STR(t, "poke", th->stack[0].sym.function);
	BT_EQ_STR(t, "outer", th->stack[1].sym.function);
	BT_EQ_STR(t, "main", th->stack[2].sym.function);
out:
	fx_free(&f);
}

/* The same program, with the signal recorded the way the QEMU backend does
 * (the original fault's siginfo, SEGV_MAPERR; registers at the death): the
 * fault comes from the registers and the stack is the live one at the end,
 * after the handler returned into __restore_rt and rt_sigreturn went back
 * to the faulting instruction.  The signal frame must be gone: no handler
 * frame, no __restore_rt, no [signal handler] mark (gdb: poke <- outer <-
 * main). */
static void test_pt_handler_sigreturn(struct bt_test *t)
{
	struct fx f;
	struct gen_opts o = { .retcomp = 1, .first_siginfo = 1 };

	if (setup(t, &f, "BT_PROG_HANDLER", NULL, &o, NULL))
		goto out;
	check_exact(t, &f);
	const struct btrace_thread *th = &f.res->threads[0];
	BT_CHECK(t, f.truth.code <= 0);   /* the death: the re-raise */
	BT_REQUIRE(t, f.snap->signal != NULL);
	BT_EQ_INT(t, 1, f.snap->signal->code);   /* recorded: SEGV_MAPERR */
	BT_EQ_U64(t, f.truth.handler_fault, f.truth.fault_ip);
	check_fault(t, &f, f.truth.handler_fault);
	BT_CONTAINS(t, th->fault.how, "registers");
	BT_REQUIRE(t, th->nstack >= 3);
	BT_EQ_STR(t, "poke", th->stack[0].sym.function);
	BT_EQ_STR(t, "outer", th->stack[1].sym.function);
	BT_EQ_STR(t, "main", th->stack[2].sym.function);
	BT_EQ_INT(t, 3, th->nstack);
	for (size_t i = 0; i < th->nstack; i++)
		BT_CHECK(t, !(th->stack[i].flags & BTRACE_CALL_SIGNAL));
	BT_CHECK(t, !has_frame(th, "__restore_rt"));
	BT_CHECK(t, !has_frame(th, "handler"));
	/* the handler ran and is in the call history */
	int handler = 0;
	for (size_t i = 0; i < th->ncalls; i++)
		handler |= th->calls[i].sym && th->calls[i].sym->function &&
			   !strcmp(th->calls[i].sym->function, "handler") &&
			   (th->calls[i].flags & BTRACE_CALL_SIGNAL);
	BT_CHECK(t, handler);
out:
	fx_free(&f);
}

/* Registers at the signal that are not where the trace's last asynchronous
 * event is (the signal was taken later, somewhere else: a passive snapshot,
 * registers read at a later stop): the fault is the registers' instruction,
 * marked at the end of the history, and the stack is the live one there;
 * the earlier async event is neither the fault's place in the history nor
 * the stack's moment. */
static void test_pt_regs_elsewhere(struct bt_test *t)
{
	struct fx f;
	struct gen_opts o = { 0 };
	struct btrace_decode_result *res = NULL;
	struct btrace_error err;

	if (setup(t, &f, "BT_PROG_NULL", "3", &o, NULL))
		goto out;
	const struct btrace_thread *th0 = &f.res->threads[0];
	BT_REQUIRE(t, f.snap->signal != NULL && th0->nstack >= 2);
	/* the return address in the caller of the faulting function: code
	 * that exists, not the async event's instruction */
	uint64_t elsewhere = th0->stack[1].ip;
	BT_REQUIRE(t, elsewhere != f.truth.fault_ip);
	f.snap->signal->fault_ip = elsewhere;
	f.snap->signal->regs[BTRACE_REG_RIP] = elsewhere;
	f.snap->signal->fault_source = BTRACE_FAULT_REGS;
	BT_REQUIRE(t, btrace_decode(f.snap, NULL, &res, &err) == 0);
	const struct btrace_thread *th = &res->threads[0];
	BT_CHECK(t, th->fault.found);
	BT_EQ_U64(t, elsewhere, th->fault.ip);
	BT_CONTAINS(t, th->fault.how, "registers");
	if (BT_CHECK(t, th->fault.block_index < th->nblocks)) {
		const struct btrace_block *b = &th->blocks[th->fault.block_index];
		/* the fault is its own item at the end, at the registers' ip */
		BT_EQ_INT(t, BTRACE_ITEM_FAULT, b->kind);
		BT_EQ_U64(t, elsewhere, b->ip);
		BT_EQ_INT(t, th->nblocks - 1, th->fault.block_index);
	}
	btrace_decode_result_free(res);
out:
	fx_free(&f);
}

static void test_pt_longjmp(struct bt_test *t)
{
	struct fx f;
	struct gen_opts o = { .retcomp = 1 };

	if (setup(t, &f, "BT_PROG_LONGJMP", NULL, &o, NULL))
		goto out;
	check_exact(t, &f);
	check_fault(t, &f, f.truth.fault_ip);
	const struct btrace_thread *th = &f.res->threads[0];
	BT_REQUIRE(t, th->nstack >= 2);
	BT_EQ_STR(t, "crash", th->stack[0].sym.function);
	BT_EQ_STR(t, "main", th->stack[1].sym.function);
	BT_EQ_INT(t, 2, th->nstack);
	BT_CHECK(t, !has_frame(th, "deep"));
out:
	fx_free(&f);
}

static void test_bts(struct bt_test *t)
{
	struct fx f;
	struct gen_opts o = { .bts = 1 };

	if (setup(t, &f, "BT_PROG_NULL", "3", &o, NULL))
		goto out;
	const struct btrace_thread *th = &f.res->threads[0];
	/* BTS knows nothing before the first branch's source */
	size_t off = f.truth.n - f.n;
	BT_CHECK(t, off < 64);
	BT_EQ_INT(t, f.n, first_diff(&f, off));
	check_fault(t, &f, f.truth.fault_ip);
	BT_EQ_STR(t, "store", th->stack[0].sym.function);
	BT_CHECK(t, has_frame(th, "middle"));
	BT_EQ_INT(t, 0, th->ngaps);
out:
	fx_free(&f);
}

static void test_disk_build_id(struct bt_test *t)
{
	struct fx f;
	struct gen_opts o = { .retcomp = 1, .no_code = 1 };

	/* no embedded code: the files on disk match their build IDs */
	if (setup(t, &f, "BT_PROG_NULL", "2", &o, NULL))
		goto out;
	check_exact(t, &f);
	BT_EQ_INT(t, 0, f.res->threads[0].ngaps);

	/* a stale file: the recorded build ID differs -> a gap, not a decode */
	for (size_t i = 0; i < f.snap->nmappings; i++)
		if (f.snap->mappings[i].path &&
		    strstr(f.snap->mappings[i].path, "crash-null"))
			f.snap->mappings[i].build_id[0] ^= 0xff;
	struct btrace_decode_result *r;
	struct btrace_error err;
	BT_REQUIRE(t, btrace_decode(f.snap, NULL, &r, &err) == 0);
	const struct btrace_thread *th = &r->threads[0];
	int noimage = 0;
	for (size_t i = 0; i < th->ngaps; i++)
		noimage += th->gaps[i].kind == BTRACE_GAP_NOIMAGE;
	BT_CHECK(t, noimage >= 1);
	BT_CHECK(t, th->ninsn == 0);
	int noted = 0;
	for (size_t i = 0; i < r->nimage_notes; i++)
		noted += strstr(r->image_notes[i], "build ID") != NULL;
	BT_CHECK(t, noted >= 1);
	btrace_decode_result_free(r);
out:
	fx_free(&f);
}

static int copy_file(const char *from, const char *to)
{
	FILE *in = fopen(from, "rb"), *out = in ? fopen(to, "wb") : NULL;
	char buf[65536];
	size_t n;
	int ret = 0;

	if (!in || !out)
		ret = -1;
	while (!ret && (n = fread(buf, 1, sizeof(buf), in)) > 0)
		if (fwrite(buf, 1, n, out) != n)
			ret = -1;
	if (in)
		fclose(in);
	if (out && fclose(out))
		ret = -1;
	return ret;
}

/* Binaries moved away from their recorded path: found by build ID next to
 * the snapshot (search_dir) and in opts.debug_path. */
static void test_find_binaries(struct bt_test *t)
{
	struct fx f;
	struct gen_opts o = { .retcomp = 1, .no_code = 1 };
	char sdir[300], edir[300], copy[700];
	const char *exe = prog("BT_PROG_NULL");

	if (setup(t, &f, "BT_PROG_NULL", "2", &o, NULL))
		goto out;
	BT_REQUIRE(t, exe != NULL);
	const char *name = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe;
	/* the recorded path no longer exists (the reader owns the old
	 * strings: they are put back before freeing) */
	char moved[512], *orig[64] = { 0 };
	snprintf(moved, sizeof(moved), "/nonexistent-btrace-dir/%s", name);
	for (size_t i = 0; i < f.snap->nmappings && i < 64; i++) {
		char *p = f.snap->mappings[i].path;
		if (p && strstr(p, "crash-null")) {
			orig[i] = p;
			f.snap->mappings[i].path = moved;
		}
	}
#define NEED(c) do { int ok_ = !!(c); BT_CHECK_(t, ok_, "%s", #c); if (!ok_) goto restore; } while (0)
	struct btrace_decode_opts d = { .sz = sizeof(d) };
	struct btrace_decode_result *r;
	struct btrace_error err;

	/* not found: no instructions, a missing-image gap */
	NEED(btrace_decode(f.snap, &d, &r, &err) == 0);
	BT_EQ_INT(t, 0, r->threads[0].ninsn);
	btrace_decode_result_free(r);

	/* next to the snapshot */
	snprintf(sdir, sizeof(sdir), "%s/snapdir", tmpdir);
	mkdir(sdir, 0700);
	snprintf(copy, sizeof(copy), "%s/%s", sdir, name);
	NEED(copy_file(exe, copy) == 0);
	d.search_dir = sdir;
	NEED(btrace_decode(f.snap, &d, &r, &err) == 0);
	BT_EQ_INT(t, f.truth.n, r->threads[0].ninsn);
	BT_EQ_INT(t, 0, r->threads[0].ngaps);
	BT_EQ_STR(t, "store", r->threads[0].stack[0].sym.function);
	btrace_decode_result_free(r);
	unlink(copy);

	/* in opts.debug_path (BTRACE_DEBUG_PATH), as DIR/.build-id/xx/rest */
	const struct btrace_mapping *m = NULL;
	for (size_t i = 0; i < f.snap->nmappings; i++)
		if (f.snap->mappings[i].path && strstr(f.snap->mappings[i].path, "crash-null"))
			m = &f.snap->mappings[i];
	NEED(m && m->build_id_size >= 2);
	char hex[2 * BTRACE_BUILD_ID_MAX + 1];
	for (uint32_t i = 0; i < m->build_id_size; i++)
		sprintf(hex + 2 * i, "%02x", m->build_id[i]);
	snprintf(edir, sizeof(edir), "%s/dbg/.build-id/%.2s", tmpdir, hex);
	char d1[300];
	snprintf(d1, sizeof(d1), "%s/dbg", tmpdir);
	mkdir(d1, 0700);
	snprintf(d1, sizeof(d1), "%s/dbg/.build-id", tmpdir);
	mkdir(d1, 0700);
	mkdir(edir, 0700);
	snprintf(copy, sizeof(copy), "%s/%s", edir, hex + 2);
	NEED(copy_file(exe, copy) == 0);
	snprintf(d1, sizeof(d1), "/nonexistent-btrace-x:%s/dbg", tmpdir);
	d.debug_path = d1;        /* the CLI's BTRACE_DEBUG_PATH */
	d.search_dir = NULL;
	NEED(btrace_decode(f.snap, &d, &r, &err) == 0);
	BT_EQ_INT(t, f.truth.n, r->threads[0].ninsn);
	BT_EQ_INT(t, 0, r->threads[0].ngaps);
	btrace_decode_result_free(r);
	d.debug_path = NULL;
	unlink(copy);
restore:
	for (size_t i = 0; i < f.snap->nmappings && i < 64; i++)
		if (orig[i])
			f.snap->mappings[i].path = orig[i];
#undef NEED
out:
	fx_free(&f);
}

static void test_bad_input(struct bt_test *t)
{
	struct btrace_snapshot s;
	struct btrace_buffer b;
	struct btrace_decode_result *r = NULL;
	struct btrace_error err;
	uint8_t junk[300];

	memset(&s, 0, sizeof(s));
	memset(&b, 0, sizeof(b));
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (uint8_t)(i * 37 + 11);
	b.kind = BTRACE_TRACE_PT;
	b.tid = 7;
	b.data = junk;
	b.size = sizeof(junk);
	s.buffers = &b;
	s.nbuffers = 1;
	BT_EQ_INT(t, -EINVAL, btrace_decode(NULL, NULL, &r, &err));
	BT_REQUIRE(t, btrace_decode(&s, NULL, &r, &err) == 0);
	BT_EQ_INT(t, 1, r->nthreads);
	BT_EQ_INT(t, 0, r->threads[0].ninsn);
	BT_CHECK(t, r->threads[0].ngaps >= 1);
	BT_CHECK(t, !r->threads[0].complete);
	btrace_decode_result_free(r);
	b.kind = BTRACE_TRACE_BTS;
	BT_REQUIRE(t, btrace_decode(&s, NULL, &r, &err) == 0);
	BT_CHECK(t, r->threads[0].ngaps >= 1);
	btrace_decode_result_free(r);
}

static void tmp_init(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bt-decode-test-%d", getpid());
	mkdir(tmpdir, 0700);
}

static void test_setup(struct bt_test *t)
{
	tmp_init();
	BT_CHECK(t, access(tmpdir, W_OK) == 0);
}

BT_TESTS(test_setup, test_pt_plain, test_pt_retcomp_tnt64, test_pt_psb64,
	 test_pt_tail_cycle, test_pt_tail_indirect, test_pt_handler_tail,
	 test_pt_tail_only, test_pt_wrapped, test_pt_overflow,
	 test_pt_handler_reraise, test_pt_handler_sigreturn, test_pt_longjmp,
	 test_pt_regs_elsewhere,
	 test_bts,
	 test_disk_build_id, test_find_binaries, test_bad_input)
