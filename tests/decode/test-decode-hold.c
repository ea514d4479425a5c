/* SPDX-License-Identifier: MIT */
/*
 * A long signal-handler path after the fault (the QEMU backend's snapshot:
 * qemu.final_signal) decoded with a bounded history (keep, as `btrace
 * report` asks): the decoder keeps the window before the fault, the head
 * and the end of the path after it, in bounded memory (decoder/decode.c,
 * hold), and counts the rest exactly.  Checked against the same snapshot
 * decoded keeping everything (keep 0): the same fault, stack, window
 * before the fault, first and last calls after it, counts and death.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>

#include "bt-test.h"
#include "gen.h"

#define KEEP 48u
/* the ring after the head grows to the compaction trigger before it is
 * cut (decode.c: at least 4096 items, twice what is kept) */
#define RING_MAX 8192u

static char tmpdir[256];
static struct btrace_snapshot *snap;

/* First call entry at or after the fault's item (cmd-report.c's
 * calls_end()). */
static size_t calls_end(const struct btrace_thread *t)
{
	size_t n = 0;

	while (n < t->ncalls && t->calls[n].first_block < t->fault.block_index)
		n++;
	return n;
}

/* The k-th call entry after the fault, NULL when it was left out. */
static const struct btrace_call *after(const struct btrace_thread *t,
				       uint64_t k)
{
	uint64_t i = calls_end(t) + k;

	if (t->omitted_calls && i >= t->omit_call_at) {
		if (i < t->omit_call_at + t->omitted_calls)
			return NULL;
		i -= t->omitted_calls;
	}
	return i < t->ncalls ? &t->calls[i] : NULL;
}

static int same_call(const struct btrace_call *a, const struct btrace_call *b)
{
	return a && b && a->ip == b->ip && a->depth == b->depth &&
	       a->flags == b->flags && a->ninsn == b->ninsn &&
	       a->nblocks == b->nblocks && a->end_ip == b->end_ip;
}

static int decode(struct btrace_decode_result **r, uint64_t keep)
{
	struct btrace_decode_opts o = { .sz = sizeof(o), .unit = BTRACE_UNIT_CALLS,
					.last = KEEP, .keep = keep };
	struct btrace_error err;

	if (btrace_decode(snap, &o, r, &err) < 0) {
		bt_test_diag("decode: %s", err.msg);
		return -1;
	}
	return 0;
}

static void test_setup(struct bt_test *t)
{
	char path[512], eb[512];
	const char *p = getenv("BT_PROG_PANIC");
	char *argv[2] = { (char *)p, NULL };
	struct gen_opts o = { .retcomp = 1, .qemu = 1, .no_regs = 1,
			      .first_siginfo = 1, .psb_period = 100000000,
			      .meta = { "qemu.final_signal=SIGSEGV" } };
	struct gen_truth truth = { 0 };
	struct btrace_error err;

	BT_REQUIRE(t, p && *p);
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bt-decode-hold-%d", getpid());
	BT_REQUIRE(t, mkdir(tmpdir, 0700) == 0);
	snprintf(path, sizeof(path), "%s/panic.btrace", tmpdir);
	o.argv = argv;
	o.out = path;
	if (gen_run(&o, &truth, eb, sizeof(eb))) {
		bt_test_fail(t, __FILE__, __LINE__, "generator: %s", eb);
		return;
	}
	gen_truth_free(&truth);
	BT_REQUIRE(t, btrace_snapshot_read(path, 0, &snap, &err) == 0);
	unlink(path);
	rmdir(tmpdir);
}

static void test_bounded(struct bt_test *t)
{
	struct btrace_decode_result *all = NULL, *kept = NULL;

	BT_REQUIRE(t, snap != NULL);
	BT_REQUIRE(t, decode(&all, 0) == 0);
	BT_REQUIRE(t, decode(&kept, KEEP) == 0);
	BT_REQUIRE(t, all->nthreads == 1 && kept->nthreads == 1);
	const struct btrace_thread *a = &all->threads[0], *k = &kept->threads[0];
	size_t ea = calls_end(a), ek = calls_end(k);
	uint64_t na = a->ncalls - ea, nk = k->ncalls - ek + k->omitted_calls;

	bt_test_diag("whole: %zu blocks, %zu calls; kept: %zu blocks, %zu calls, "
		     "%llu blocks and %llu calls omitted", a->nblocks, a->ncalls,
		     k->nblocks, k->ncalls,
		     (unsigned long long)k->omitted_blocks,
		     (unsigned long long)k->omitted_calls);
	/* the path after the fault is long: thousands of calls */
	BT_CHECK(t, na > 20000);
	BT_CHECK(t, a->fault.found && k->fault.found);
	BT_EQ_U64(t, a->fault.ip, k->fault.ip);
	BT_EQ_U64(t, a->fault.death_ip, k->fault.death_ip);
	BT_CHECK(t, a->fault.death_ip != 0);
	BT_EQ_U64(t, a->ninsn, k->ninsn);
	/* the counts are exact */
	BT_EQ_U64(t, a->fault.after_blocks, k->fault.after_blocks);
	BT_EQ_U64(t, na, nk);
	/* bounded: the omitted part holds nearly all of the path, what is
	 * stored is a few times the history asked for */
	BT_CHECK(t, k->omitted_blocks > 0 && k->omitted_calls > 0);
	BT_CHECK(t, k->nblocks <= RING_MAX + 16 * KEEP);
	BT_CHECK(t, k->ncalls <= k->nblocks);
	BT_CHECK(t, k->nblocks * 20 < a->nblocks);
	BT_CHECK(t, k->omit_block_at > k->fault.block_index);
	/* the stack at the fault */
	BT_EQ_U64(t, a->nstack, k->nstack);
	for (size_t i = 0; i < a->nstack && i < k->nstack; i++)
		BT_EQ_U64(t, a->stack[i].ip, k->stack[i].ip);
	/* the window before the fault: KEEP blocks, KEEP calls (or all
	 * there are) */
	size_t nb = a->fault.block_index < KEEP ? a->fault.block_index : KEEP;
	size_t nc = ea < KEEP ? ea : KEEP;
	bt_test_diag("before the fault: %zu blocks, %zu calls (kept: %zu, %zu)",
		     (size_t)a->fault.block_index, ea,
		     (size_t)k->fault.block_index, ek);
	BT_CHECK(t, nb > 8 && nc > 2);
	BT_REQUIRE(t, k->fault.block_index >= nb && ek >= nc);
	for (size_t i = 1; i <= nb; i++) {
		const struct btrace_block *x = &a->blocks[a->fault.block_index - i];
		const struct btrace_block *y = &k->blocks[k->fault.block_index - i];
		BT_CHECK(t, x->kind == y->kind && x->ip == y->ip &&
			 x->ninsn == y->ninsn);
	}
	for (size_t i = 1; i <= nc; i++)
		BT_CHECK(t, same_call(&a->calls[ea - i], &k->calls[ek - i]));
	/* the first and the last KEEP calls after it */
	for (uint64_t i = 0; i < KEEP; i++) {
		BT_CHECK(t, same_call(after(a, i), after(k, i)));
		BT_CHECK(t, same_call(after(a, na - 1 - i), after(k, na - 1 - i)));
	}
	btrace_decode_result_free(all);
	btrace_decode_result_free(kept);
}

static void test_cleanup(struct bt_test *t)
{
	BT_CHECK(t, snap != NULL);
	btrace_snapshot_free(snap);
	snap = NULL;
}

BT_TESTS(test_setup, test_bounded, test_cleanup)
