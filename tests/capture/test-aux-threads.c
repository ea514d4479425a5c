/* SPDX-License-Identifier: MIT */
/*
 * Many threads on few CPUs through the engine's catch-all rings, end to
 * end with real streams.  A real multi-threaded program (mtprog: two
 * threads started at once, two started late, one of those crashing while
 * the others run) is single-stepped, every thread, on simulated CPUs
 * (mtstep.h: threads outnumber CPUs, migrate, and run at once).  Each
 * slice a thread ran on a CPU is encoded as Intel PT and as BTS by the
 * software encoder (src/encode); the simulated hardware (aux-sim.h, the
 * kernel's rules as written) writes the slices of each CPU into that
 * CPU's overwrite-mode AUX ring, and the data ring gets what the kernel
 * writes there at each switch: ITRACE_START at an event's first sched-in
 * (perf_log_itrace_start() from event_sched_in()), PERF_RECORD_SWITCH when
 * the event asks for it (perf_event_switch()), PERF_RECORD_AUX with the
 * thread and time at every sched-out (pt_event_stop()/bts_event_stop() ->
 * perf_aux_output_end() -> perf_event_aux_event()), drained now and then
 * as the engine's loop does.  At the crash the engine's own snapshot code
 * (bt_engine_write(): ring location, split by thread, code, signal) writes
 * the snapshot from those rings while the process is stopped at the signal,
 * as precise mode does.  Then for every thread and CPU the decoder must
 * return that thread's true path on that CPU: all of it when the ring kept
 * it, else a suffix at least as long as the slices the ring kept whole
 * (the ring overwrote the rest: a thread that ran on two CPUs has a hole
 * where one ring wrapped).  The snapshot is exported to perf.data and,
 * where perf is installed, perf's decode of the PT export must give each
 * thread the same instructions.
 *
 * Model assumption beyond the kernel: every slice starts with PSB+ (a
 * fresh encoder per sched-in), so a thread's slice decodes without the
 * bytes another thread left on that CPU before it.  What real hardware
 * emits at TraceEn 0->1 is the hardware's rule, not the kernel's; only the
 * hardware suite can tell.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <btrace/decode.h>
#include <btrace/export.h>
#include <btrace/snapshot.h>

#include "aux-sim.h"
#include "bt-test.h"
#include "encode.h"
#include "capture/engine-internal.h"
#include "mtstep.h"
#include "util.h"

#define PS 4096ull
#define KENTRY 0xffffffff81a00000ull   /* a kernel entry, for BTS */
#define KEXIT  0xffffffff81a00100ull

/* Two runs: A (the crashing thread works 40 rounds first; quanta of 40 to
 * 400 steps) and B (it crashes in its first round, right after it was
 * created; quanta of 10 to 120 steps: more switches).  @run and @enc are
 * the run the current case looks at. */
static struct mt_run run, runs[2];
static bool have_run, have_runs[2];
static char tmpdir[256];
static int cpu_id[MT_MAX_CPUS];   /* the machine's CPU of simulated CPU c */

struct enc {
	uint8_t *pt, *bts;
	uint64_t npt, nbts;
};
static struct enc *enc, *encs[2];  /* per slice */

static void use_run(int i)
{
	run = runs[i];
	enc = encs[i];
	have_run = have_runs[i];
}

static uint64_t next_of(const struct mt_thread *t, uint64_t i)
{
	return i + 1 < t->n ? t->ip[i + 1] : t->final_ip;
}

/* The branch executed by instruction @i of @t, if any. */
static bool branch_of(const struct mt_thread *t, uint64_t i,
		      struct bt_branch *br)
{
	uint64_t ip = t->ip[i], next = next_of(t, i);
	uint8_t size = 0;
	int cls = mt_classify(&run, ip, &size);

	memset(br, 0, sizeof(*br));
	br->from = ip;
	br->to = next;
	br->len = size;
	switch (cls) {
	case BTRACE_INSN_JCC:
		br->kind = BT_BR_COND;
		br->taken = next != ip + size;
		return true;
	case BTRACE_INSN_JMP: br->kind = BT_BR_JMP; return true;
	case BTRACE_INSN_JMP_IND: br->kind = BT_BR_JMP_IND; return true;
	case BTRACE_INSN_CALL: br->kind = BT_BR_CALL; return true;
	case BTRACE_INSN_CALL_IND: br->kind = BT_BR_CALL_IND; return true;
	case BTRACE_INSN_RET: br->kind = BT_BR_RET; return true;
	case BTRACE_INSN_FAR: br->kind = BT_BR_FAR; return true;
	default:
		/* an instruction capstone cannot decode (size 0) does not
		 * branch (as in tests/decode/gen.c) */
		if (next == ip + size || !size)
			return false;
		br->kind = BT_BR_ASYNC;
		return true;
	}
}

static int copy_out(const uint8_t *d, uint64_t n, uint8_t **out,
		    uint64_t *nout)
{
	*out = malloc(n ? n : 1);
	if (!*out)
		return -1;
	memcpy(*out, d, n);
	*nout = n;
	return 0;
}

/* Each slice as the hardware writes it between a sched-in and the next
 * sched-out.  PT: PSB+ TIP.PGE(resume IP) ... FUP(stop IP) TIP.PGD.  BTS
 * (user only): the kernel->user record of the return into the thread,
 * its taken branches (a system call as user->kernel and kernel->user), and
 * the user->kernel record of the interrupt that stopped it. */
static int encode_slices(void)
{
	enc = calloc(run.nsl, sizeof(*enc));
	if (!enc)
		return -1;
	for (size_t k = 0; k < run.nsl; k++) {
		const struct mt_slice *s = &run.sl[k];
		const struct mt_thread *t = &run.th[s->th];
		struct bt_pt_enc_opts po = { 0, 0, 256, 0 };
		struct bt_pt_enc *pe = NULL;
		struct bt_bts_enc *be = NULL;
		struct bt_branch br;
		const uint8_t *d;
		uint64_t n;
		int rc, wr;

		if (bt_pt_enc_new(&po, &pe) || bt_bts_enc_new(0, &be))
			return -1;
		rc = bt_pt_enc_begin(pe, s->start_ip);
		br = (struct bt_branch){ KEXIT, s->start_ip, BT_BR_FAR, 0, 2, { 0 } };
		if (!rc)
			rc = bt_bts_enc_branch(be, &br);
		for (uint64_t i = s->a; i < s->b && !rc; i++) {
			if (!branch_of(t, i, &br))
				continue;
			rc = bt_pt_enc_branch(pe, &br);
			if (rc)
				break;
			if (br.kind == BT_BR_FAR) {
				struct bt_branch in = { br.from, KENTRY, BT_BR_FAR, 0, br.len, { 0 } };
				struct bt_branch back = { KEXIT, br.to, BT_BR_FAR, 0, 2, { 0 } };

				rc = bt_bts_enc_branch(be, &in);
				if (!rc)
					rc = bt_bts_enc_branch(be, &back);
			} else {
				rc = bt_bts_enc_branch(be, &br);
			}
		}
		if (!rc)
			rc = bt_pt_enc_end(pe, s->next_ip);
		br = (struct bt_branch){ s->next_ip, KENTRY, BT_BR_ASYNC, 0, 0, { 0 } };
		if (!rc)
			rc = bt_bts_enc_branch(be, &br);
		if (!rc) {
			d = bt_pt_enc_data(pe, &n, &wr);
			rc = copy_out(d, n, &enc[k].pt, &enc[k].npt);
		}
		if (!rc) {
			d = bt_bts_enc_data(be, &n, &wr);
			rc = copy_out(d, n, &enc[k].bts, &enc[k].nbts);
		}
		bt_pt_enc_free(pe);
		bt_bts_enc_free(be);
		if (rc)
			return -1;
	}
	return 0;
}

struct kase {
	const char *name;
	bool bts;
	uint64_t ring;
	bool lazy;              /* BTS: index wrapped before the next record */
	bool context_switch;    /* the events also ask for switch records */
	uint64_t drain_every;   /* switches between drains of the data rings */
	uint64_t data_pages;    /* of each data ring (0: 8) */
	bool lossy;             /* the data rings overflow between drains:
				 * AUX records lost (PERF_RECORD_LOST) */
};

static const char *case_path(const struct kase *k, const char *ext)
{
	static char p[2][600];
	static int i;
	char *b = p[i++ % 2];

	snprintf(b, 600, "%s/%s%s", tmpdir, k->name, ext);
	return b;
}

static int thread_index(pid_t tid)
{
	for (int i = 0; i < run.nth; i++)
		if (run.th[i].tid == tid)
			return i;
	return -1;
}

/* Replay the run through the simulated hardware into the engine's rings
 * and write the snapshot with the engine's code.  Also says, per slice,
 * whether its CPU ring kept it whole (@whole) and per CPU whether the ring
 * wrapped (@wrapped). */
static int replay(struct bt_test *t, const struct kase *k, bool *whole,
		  bool *wrapped)
{
	struct btrace_record_opts rec = { .sz = sizeof(rec) };
	struct btrace_record_result res = { 0 };
	struct bt_engine_opts o;
	struct bt_engine e;
	struct aux_sim_host h;
	struct aux_sim sim[MT_MAX_CPUS];
	struct btrace_error err = { 0 };
	struct btrace_signal sig;
	bool started[MT_MAX_THREADS][MT_MAX_CPUS];
	uint64_t end = k->bts ? k->ring - k->ring % 24 : k->ring;
	uint64_t dp = k->data_pages ? k->data_pages : 8;
	int ret;

	memset(&o, 0, sizeof(o));
	o.rec = &rec;
	o.trace_attr.exclude_kernel = 1;
	o.trace_attr.exclude_hv = 1;
	o.pmu_name = k->bts ? "intel_bts (simulated)" : "intel_pt (simulated)";
	o.has_aux = true;
	o.data_pages = 8;
	o.sideband_pages = 8;
	o.cfg.backend = k->bts ? BTRACE_BACKEND_BTS : BTRACE_BACKEND_PT;
	o.cfg.trace_kind = k->bts ? BTRACE_TRACE_BTS : BTRACE_TRACE_PT;
	rec.flags = BTRACE_RECORD_QUIET;
	memset(&e, 0, sizeof(e));
	e.o = &o;
	e.rec = &rec;
	e.res = &res;
	e.pidfd = -1;
	e.sigfd = -1;
	e.pid = run.pid;
	if (bt_engine_prepare(&e, &err) < 0) {
		bt_test_diag("bt_engine_prepare: %s", err.msg);
		return -1;
	}
	if (!(e.ncpus >= run.ncpus)) {
		bt_test_fail(t, __FILE__, __LINE__, "e.ncpus >= run.ncpus");
		return -1;
	}
	e.ncpus = run.ncpus;    /* the simulated CPUs, the machine's first */
	for (int c = 0; c < run.ncpus; c++)
		cpu_id[c] = e.cpus[c];
	bt_sideband_init(&e.sb, e.pid);
	if (!(bt_sideband_synthesize(&e.sb, e.pid, &err) == 0)) {
		bt_test_fail(t, __FILE__, __LINE__, "bt_sideband_synthesize(&e.sb, e.pid, &err) == 0");
		return -1;
	}
	aux_sim_host_default(&h);
	h.online_cpus = run.ncpus;
	memset(started, 0, sizeof(started));
	for (int c = 0; c < run.ncpus; c++) {
		struct bt_perf_ring *r = &e.cpu_rings[c];

		aux_sim_init(&sim[c], k->bts ? AUX_SIM_BTS : AUX_SIM_PT, &h);
		sim[c].sample_id_all = true;
		sim[c].pid = (uint32_t)run.pid;
		sim[c].context_switch = k->context_switch;
		sim[c].bts_lazy_wrap = k->lazy;
		if (!(aux_sim_mmap_data(&sim[c], (1 + dp) * PS, true) == 0)) {
			bt_test_fail(t, __FILE__, __LINE__, "aux_sim_mmap_data(&sim[c], (1 + dp) * PS, true) == 0");
			return -1;
		}
		aux_sim_set_aux_area(&sim[c], (1 + dp) * PS, k->ring);
		if (!(aux_sim_mmap_aux(&sim[c], k->ring, (1 + dp) * PS, false) == 0)) {
			bt_test_fail(t, __FILE__, __LINE__, "aux_sim_mmap_aux(&sim[c], k->ring, (1 + dp) * PS, false) == 0");
			return -1;
		}
		r->base = sim[c].base;
		r->data_size = sim[c].data_size;
		r->writable = true;
		r->aux = sim[c].aux;
		r->aux_size = k->ring;
		r->aux_requested = k->ring;
	}
	e.cpu_rings_open = true;

	for (size_t i = 0; i < run.nev; i++) {
		const struct mt_slice *s = &run.sl[run.ev[i].slice];
		struct aux_sim *x = &sim[s->cpu];

		x->tid = (uint32_t)run.th[s->th].tid;
		if (!run.ev[i].out) {
			/* perf_event_task_sched_in(): the context's events
			 * (event_sched_in(): ITRACE_START the first time,
			 * pmu::add -> start), then the switch record */
			x->now = 1 + s->t_in;
			if (!started[s->th][s->cpu]) {
				aux_sim_itrace_start(x);
				started[s->th][s->cpu] = true;
			}
			aux_sim_start(x);
			aux_sim_switch(x, false);
		} else {
			/* perf_event_task_sched_out(): the switch record,
			 * then the events stopped (PERF_RECORD_AUX) */
			const struct enc *en = &enc[run.ev[i].slice];

			x->now = 1 + s->t_out;
			if (k->bts)
				aux_sim_write(x, en->bts, en->nbts);
			else
				aux_sim_write(x, en->pt, en->npt);
			aux_sim_switch(x, true);
			aux_sim_stop(x);
		}
		if (k->drain_every && i % k->drain_every == k->drain_every - 1)
			bt_engine_drain_trace(&e);
	}
	for (int c = 0; c < run.ncpus; c++) {
		if (sim[c].lost)
			bt_test_diag("cpu %d: %llu data-ring record(s) lost", c,
				     (unsigned long long)sim[c].lost);
		wrapped[c] = sim[c].written > end;
	}
	/* which slices each ring kept whole: the newest bytes, up to the
	 * hardware's end */
	for (int c = 0; c < run.ncpus; c++) {
		uint64_t left = end;

		for (size_t i = run.nsl; i-- > 0;) {
			const struct mt_slice *s = &run.sl[i];
			uint64_t n = k->bts ? enc[i].nbts : enc[i].npt;

			if (s->cpu != c)
				continue;
			whole[i] = n <= left;
			left = n <= left ? left - n : 0;
		}
	}

	memset(&sig, 0, sizeof(sig));
	sig.tid = run.th[run.crashed].tid;
	sig.signo = run.si.si_signo;
	sig.code = run.si.si_code;
	sig.addr = (uint64_t)(uintptr_t)run.si.si_addr;
	sig.exit_status = -1;
	sig.fault_source = BTRACE_FAULT_REGS;
	sig.fault_ip = run.regs.rip;
	sig.has_regs = 1;
	memcpy(sig.regs, &run.regs, sizeof(uint64_t) * BTRACE_NREGS);
	ret = bt_engine_write(&e, case_path(k, ".btrace"), BTRACE_CRASH_PRECISE,
			      &sig, true, &err);
	if (ret < 0)
		bt_test_diag("bt_engine_write: %s", err.msg);
	/* the simulator owns the memory: the engine must not unmap it */
	for (int c = 0; c < run.ncpus; c++) {
		e.cpu_rings[c].base = NULL;
		e.cpu_rings[c].aux = NULL;
		e.cpu_rings[c].data_size = 0;
		e.cpu_rings[c].aux_size = 0;
	}
	bt_engine_release(&e);
	for (int c = 0; c < run.ncpus; c++)
		aux_sim_fini(&sim[c]);
	return ret;
}

/* The decoded instructions of result thread @i. */
static int thread_ips(struct btrace_decode_result *res, size_t i,
		      uint64_t **ips, size_t *n)
{
	const struct btrace_thread *t = &res->threads[i];
	size_t cap = 0;

	*ips = NULL;
	*n = 0;
	for (size_t j = 0; j < t->nblocks; j++) {
		const struct btrace_block *b = &t->blocks[j];
		struct btrace_insn *in;
		int k;

		if (b->kind != BTRACE_ITEM_BLOCK)
			continue;
		in = calloc(b->ninsn + 1, sizeof(*in));
		if (!in)
			return -1;
		k = btrace_decode_block_insns(res, b, in, b->ninsn);
		if (k != (int)b->ninsn) {
			free(in);
			return -1;
		}
		if (*n + (size_t)k + 1 > cap) {
			cap = (*n + (size_t)k + 1) * 2;
			*ips = realloc(*ips, cap * sizeof(**ips));
			if (!*ips) {
				free(in);
				return -1;
			}
		}
		for (int m = 0; m < k; m++)
			(*ips)[(*n)++] = in[m].ip;
		free(in);
	}
	return 0;
}

/* The true path of thread @th on CPU @cpu: its slices there, in order;
 * @min: the instructions of the slices the ring kept whole. */
static uint64_t *expected(int th, int cpu, const bool *whole, size_t *n,
			  size_t *min, bool *all_whole)
{
	uint64_t *v = NULL;
	size_t cap = 0;

	*n = *min = 0;
	*all_whole = true;
	for (size_t i = 0; i < run.nsl; i++) {
		const struct mt_slice *s = &run.sl[i];
		const struct mt_thread *t = &run.th[th];

		if (s->th != th || s->cpu != cpu)
			continue;
		if (*n + (s->b - s->a) + 1 > cap) {
			cap = (*n + (s->b - s->a) + 1) * 2;
			v = realloc(v, cap * sizeof(*v));
			if (!v)
				return NULL;
		}
		memcpy(v + *n, t->ip + s->a, (s->b - s->a) * sizeof(*v));
		*n += s->b - s->a;
		if (whole[i])
			*min += s->b - s->a;
		else
			*all_whole = false;
	}
	return v;
}

/* From slice @i0 at instruction @k0 on, @ips is @th's slices on @cpu
 * in order with some left out whole. */
static bool slices_from(int th, int cpu, size_t i0, size_t k0,
			const uint64_t *ips, size_t n)
{
	size_t pos = 0;

	for (size_t i = i0; i < run.nsl && pos < n; i++) {
		const struct mt_slice *s = &run.sl[i];
		size_t k = i == i0 ? k0 : 0, len = s->b - s->a - k;
		const uint64_t *seg = run.th[th].ip + s->a + k;

		if (s->th != th || s->cpu != cpu || !len)
			continue;
		if (pos + len <= n && !memcmp(ips + pos, seg, len * sizeof(*ips)))
			pos += len;
		else if (i == i0)
			return false;
	}
	return pos == n;
}

/* @ips is @th's slices on @cpu in order with some left out whole (bytes
 * whose owner is unknown: AUX records were lost), the first one kept
 * possibly cut at its start. */
static bool is_slice_subsequence(int th, int cpu, const uint64_t *ips,
				 size_t n)
{
	if (!n)
		return true;
	for (size_t i = 0; i < run.nsl; i++) {
		const struct mt_slice *s = &run.sl[i];

		if (s->th != th || s->cpu != cpu)
			continue;
		for (size_t k = 0; k < s->b - s->a; k++)
			if (run.th[th].ip[s->a + k] == ips[0] &&
			    slices_from(th, cpu, i, k, ips, n))
				return true;
	}
	return false;
}

struct piece {
	pid_t tid;
	uint64_t *ips;
	size_t n;
	bool used;
};

/* perf's decode of the PT export (perf script --itrace=i0nse over the
 * snapshot's code only): each thread's instructions must be its pieces'
 * decoded instructions, piece after piece (perf orders a thread's CPU
 * queues its own way). */
static void perf_check(struct bt_test *t, const char *pdata,
		       const char *symfs, struct piece *pc, size_t npc)
{
	char cmd[9000], line[256];
	uint64_t *pip = NULL;
	pid_t *ptid = NULL;
	size_t pn = 0, pcap = 0, errors = 0;
	FILE *f;

	snprintf(cmd, sizeof(cmd),
		 "perf script --symfs '%s' -i '%s' --itrace=i0nse -F tid,ip 2>/dev/null",
		 symfs, pdata);
	f = popen(cmd, "r");
	BT_REQUIRE(t, f != NULL);
	while (fgets(line, sizeof(line), f)) {
		unsigned long long ip;
		int tid;

		if (strstr(line, "trace error"))
			errors++;
		if (sscanf(line, "%d %llx", &tid, &ip) != 2)
			continue;
		if (pn == pcap) {
			pcap = pcap ? 2 * pcap : 65536;
			pip = realloc(pip, pcap * sizeof(*pip));
			ptid = realloc(ptid, pcap * sizeof(*ptid));
			BT_REQUIRE(t, pip && ptid);
		}
		pip[pn] = ip;
		ptid[pn++] = tid;
	}
	BT_EQ_INT(t, 0, pclose(f));
	BT_EQ_U64(t, 0, errors);
	bt_test_diag("perf: %zu instructions", pn);
	BT_CHECK(t, pn > 0);
	for (size_t i = 0; i < npc; i++)
		pc[i].used = false;
	/* each thread's lines: a sequence of whole pieces of that thread */
	for (int th = 0; th < run.nth; th++) {
		pid_t tid = run.th[th].tid;
		size_t want = 0, got = 0, p = 0;
		uint64_t *seq = malloc((pn + 1) * sizeof(*seq));

		BT_REQUIRE(t, seq != NULL);
		for (size_t i = 0; i < pn; i++)
			if (ptid[i] == tid)
				seq[got++] = pip[i];
		for (size_t i = 0; i < npc; i++)
			if (pc[i].tid == tid)
				want += pc[i].n;
		BT_EQ_U64(t, want, got);
		while (p < got) {
			size_t i;

			for (i = 0; i < npc; i++)
				if (!pc[i].used && pc[i].tid == tid && pc[i].n &&
				    p + pc[i].n <= got &&
				    !memcmp(seq + p, pc[i].ips, pc[i].n * sizeof(*seq)))
					break;
			if (i == npc) {
				bt_test_diag("thread %d: perf's instruction %zu (0x%llx) starts no piece btrace decoded",
					     (int)tid, p, (unsigned long long)seq[p]);
				bt_test_fail(t, __FILE__, __LINE__, "see the diagnostics above");
				break;
			}
			pc[i].used = true;
			p += pc[i].n;
		}
		free(seq);
	}
	free(pip);
	free(ptid);
}

static bool have_perf(void)
{
	return system("command -v perf >/dev/null 2>&1") == 0;
}

static void run_case(struct bt_test *t, const struct kase *k)
{
	bool *whole = calloc(run.nsl + 1, sizeof(*whole));
	bool wrapped[MT_MAX_CPUS] = { false };
	struct btrace_snapshot *snap = NULL;
	struct btrace_decode_result *res = NULL;
	struct btrace_error err = { 0 };
	struct piece *pc = NULL;
	size_t npc = 0;
	const char *v;
	bool seen[MT_MAX_THREADS][MT_MAX_CPUS];

	BT_REQUIRE(t, have_run && whole != NULL);
	BT_REQUIRE(t, replay(t, k, whole, wrapped) == 0);
	BT_REQUIRE(t, btrace_snapshot_read(case_path(k, ".btrace"), 0, &snap, &err) == 0);
	v = btrace_snapshot_meta(snap, "capture.cpu_split");
	bt_test_diag("%s: %s", k->name, v ? v : "(no capture.cpu_split)");
	BT_CHECK(t, v != NULL);
	/* every AUX record was read: every byte has its thread; records
	 * lost: the bytes no record accounts for have none, and say so */
	v = btrace_snapshot_meta(snap, "limit.cpu-split");
	if (v)
		bt_test_diag("limit.cpu-split: %s", v);
	BT_CHECK(t, k->lossy ? v != NULL : v == NULL);
	BT_REQUIRE(t, btrace_decode(snap, NULL, &res, &err) == 0);
	/* with records lost the crashed thread's newest slices may have no
	 * known owner: then it has no piece (and the report says why) */
	if (!k->lossy || res->crashed_thread >= 0) {
		BT_REQUIRE(t, res->crashed_thread >= 0);
		BT_EQ_INT(t, run.th[run.crashed].tid,
			  res->threads[res->crashed_thread].tid);
	}
	memset(seen, 0, sizeof(seen));
	pc = calloc(res->nthreads + 1, sizeof(*pc));
	BT_REQUIRE(t, pc != NULL);
	for (size_t i = 0; i < res->nthreads; i++) {
		const struct btrace_thread *rt = &res->threads[i];
		int th = thread_index(rt->tid), cpu = -1;
		uint64_t *ips = NULL, *exp;
		size_t n = 0, en = 0, min = 0;
		bool all_whole;

		for (int c = 0; c < run.ncpus; c++)
			if (rt->cpu >= 0 && rt->cpu == cpu_id[c])
				cpu = c;
		if (k->lossy && rt->tid == -1 && cpu >= 0)
			continue;    /* the bytes of no known thread */
		if (th < 0 || cpu < 0) {
			bt_test_diag("result thread %zu: tid %d cpu %d is no thread of the run on a simulated CPU",
				     i, (int)rt->tid, (int)rt->cpu);
			bt_test_fail(t, __FILE__, __LINE__, "see the diagnostics above");
			continue;
		}
		BT_CHECK(t, !seen[th][cpu]);     /* one piece per thread and CPU */
		seen[th][cpu] = true;
		BT_REQUIRE(t, thread_ips(res, i, &ips, &n) == 0);
		exp = expected(th, cpu, whole, &en, &min, &all_whole);
		BT_REQUIRE(t, exp != NULL || en == 0);
		/* the decoded path is the end of the true one on that CPU,
		 * all of it when the ring kept it; with records lost, the
		 * slices of unknown owner are left out, whole */
		if (k->lossy) {
			if (!is_slice_subsequence(th, cpu, ips, n)) {
				bt_test_diag("%s: thread %d cpu %d: the %zu decoded instructions are not its slices there (%zu instructions; a suffix: %d)",
					     k->name, (int)rt->tid, cpu, n, en,
					     n <= en && !memcmp(ips, exp + (en - n), n * sizeof(*ips)));
				for (size_t g = 0; g < rt->ngaps && g < 3; g++)
					bt_test_diag("gap %zu at offset %llu: %s", g,
						     (unsigned long long)rt->gaps[g].offset,
						     rt->gaps[g].reason ? rt->gaps[g].reason : "-");
				bt_test_fail(t, __FILE__, __LINE__, "see the diagnostics above");
			}
		} else if (n > en || memcmp(ips, exp + (en - n), n * sizeof(*ips))) {
			size_t j = 0;

			while (j < n && j < en && ips[j] == exp[en - n + j])
				j++;
			bt_test_diag("%s: thread %d cpu %d: decoded %zu, truth %zu; first difference at %zu: 0x%llx, truth 0x%llx",
				     k->name, (int)rt->tid, cpu, n, en, j,
				     (unsigned long long)(j < n ? ips[j] : 0),
				     (unsigned long long)(j < n && n <= en ? exp[en - n + j] : 0));
			bt_test_fail(t, __FILE__, __LINE__, "see the diagnostics above");
		}
		if (k->lossy)
			;
		else if (all_whole)
			BT_EQ_U64(t, en, n);
		else
			BT_CHECK(t, n >= min);
		if ((int)i == res->crashed_thread) {
			/* the crashed thread's piece is the one of the CPU it
			 * crashed on (the newest), and it ends at its last
			 * instruction */
			const struct mt_thread *ct = &run.th[run.crashed];

			for (size_t j = run.nsl; j-- > 0;)
				if (run.sl[j].th == run.crashed) {
					BT_EQ_INT(t, run.sl[j].cpu, cpu);
					break;
				}
			BT_CHECK(t, n > 0 && ips[n - 1] == ct->ip[ct->n - 1]);
		}
		pc[npc++] = (struct piece){ rt->tid, ips, n, false };
		free(exp);
	}
	/* every thread a ring kept a whole slice of is in the snapshot */
	for (size_t i = 0; !k->lossy && i < run.nsl; i++)
		if (whole[i] && run.sl[i].b > run.sl[i].a &&
		    !seen[run.sl[i].th][run.sl[i].cpu]) {
			bt_test_diag("%s: thread %d on cpu %d is missing", k->name,
				     (int)run.th[run.sl[i].th].tid, run.sl[i].cpu);
			bt_test_fail(t, __FILE__, __LINE__, "see the diagnostics above");
			break;
		}
	/* the cases named so wrap their rings */
	if (strstr(k->name, "wrapped"))
		BT_CHECK(t, wrapped[0] || (run.ncpus > 1 && wrapped[1]));
	{
		size_t threads = 0;

		for (int th = 0; th < run.nth; th++) {
			bool any = false;

			for (int c = 0; c < run.ncpus; c++)
				any = any || seen[th][c];
			threads += any;
		}
		bt_test_diag("%s: %zu pieces of %zu threads decoded; rings wrapped: %s%s",
			     k->name, npc, threads, wrapped[0] ? "cpu0 " : "",
			     run.ncpus > 1 && wrapped[1] ? "cpu1" : "");
	}

	/* perf.data: every trace byte exported (BTS: whole records) */
	{
		struct btrace_export_opts eo = { .sz = sizeof(eo) };
		struct btrace_export_result er = { .sz = sizeof(er) };
		uint64_t bytes = 0;
		const char *out = case_path(k, ".perf.data");

		static const uint8_t psb[16] = { 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
						 0x02, 0x82, 0x02, 0x82, 0x02, 0x82,
						 0x02, 0x82, 0x02, 0x82 };

		/* BTS: whole records; PT: from the first PSB of a wrapped
		 * ring (the bytes before it cannot be decoded) */
		uint64_t nbuf = 0;

		for (size_t i = 0; i < snap->nbuffers; i++) {
			const struct btrace_buffer *b = &snap->buffers[i];
			const uint8_t *p;

			/* the bytes of no known thread are left out: perf
			 * would need switch records to split them */
			if (b->tid < 0)
				continue;
			nbuf++;
			if (k->bts) {
				bytes += b->size / 24 * 24;
				continue;
			}
			p = (b->flags & BTRACE_BUF_WRAPPED) ?
			    memmem(b->data, b->size, psb, sizeof(psb)) : b->data;
			if (p)
				bytes += b->size - (uint64_t)(p - b->data);
		}
		BT_REQUIRE(t, btrace_export_perf_data(snap, out, &eo, &er, &err) == 0);
		BT_EQ_U64(t, bytes, er.trace_bytes);
		BT_EQ_U64(t, nbuf, er.nbuffers);
		BT_EQ_U64(t, snap->nbuffers - nbuf, er.nskipped);
		for (uint32_t i = 0; i < er.nnotes; i++)
			bt_test_diag("export note: %s", er.notes[i]);
		if (!k->bts && have_perf())
			perf_check(t, out, er.symfs_dir, pc, npc);
		else if (!k->bts)
			bt_test_diag("perf is not installed: perf's decode not compared");
	}
	for (size_t i = 0; i < npc; i++)
		free(pc[i].ips);
	free(pc);
	btrace_decode_result_free(res);
	btrace_snapshot_free(snap);
	free(whole);
}

static const struct kase k_pt_big = { "pt-kept", false, 256 * 1024, false, false, 16, 0, false };
static const struct kase k_pt_small = { "pt-2pages", false, 2 * PS, false, true, 8, 0, false };
static const struct kase k_pt_tiny = { "pt-wrapped-1page", false, PS, false, false, 4, 0, false };
static const struct kase k_bts_big = { "bts-kept", true, 4096 * 1024, false, false, 16, 0, false };
static const struct kase k_bts_small = { "bts-wrapped", true, 8 * PS, false, true, 8, 0, false };
static const struct kase k_bts_lazy = { "bts-wrapped-late", true, 8 * PS, true, false, 8, 0, false };

static void test_pt_kept(struct bt_test *t) { use_run(0); run_case(t, &k_pt_big); }
static void test_pt_two_pages(struct bt_test *t) { use_run(0); run_case(t, &k_pt_small); }
static void test_pt_wrapped_one_page(struct bt_test *t) { use_run(0); run_case(t, &k_pt_tiny); }
static void test_bts_kept(struct bt_test *t) { use_run(0); run_case(t, &k_bts_big); }
static void test_bts_wrapped(struct bt_test *t) { use_run(0); run_case(t, &k_bts_small); }
static void test_bts_wrapped_late(struct bt_test *t) { use_run(0); run_case(t, &k_bts_lazy); }

/* run B: created and crashing at once, short quanta */
static const struct kase kb_pt = { "b-pt-wrapped", false, 2 * PS, false, false, 8, 0, false };
static const struct kase kb_pt_big = { "b-pt-kept", false, 256 * 1024, false, true, 16, 0, false };
static const struct kase kb_bts = { "b-bts-wrapped", true, 4 * PS, false, true, 8, 0, false };
static const struct kase kb_bts_lazy = { "b-bts-wrapped-late", true, 16 * PS, true, false, 3, 0, false };

static void test_b_pt_kept(struct bt_test *t) { use_run(1); run_case(t, &kb_pt_big); }
static void test_b_pt_wrapped(struct bt_test *t) { use_run(1); run_case(t, &kb_pt); }
static void test_b_bts_wrapped(struct bt_test *t) { use_run(1); run_case(t, &kb_bts); }
static void test_b_bts_wrapped_late(struct bt_test *t) { use_run(1); run_case(t, &kb_bts_lazy); }

/* one-page data rings drained every 150 switches: AUX records are lost
 * in the middle (PERF_RECORD_LOST where the next one fits) */
static const struct kase kb_lossy = { "b-pt-records-lost", false, 4 * PS, false, true, 400, 1, true };
static const struct kase kb_lossy_bts = { "b-bts-records-lost", true, 8 * PS, false, true, 400, 1, true };

static void test_b_pt_records_lost(struct bt_test *t) { use_run(1); run_case(t, &kb_lossy); }
static void test_b_bts_records_lost(struct bt_test *t) { use_run(1); run_case(t, &kb_lossy_bts); }

/* What the run itself must have: more threads than CPUs, threads created
 * while others ran, migrations, and the crash while others ran. */
static void run_shape(struct bt_test *t, int which)
{
	int migrated = 0, late = 0, open_others = 0;

	use_run(which);
	BT_REQUIRE(t, have_run);
	bt_test_diag("%d threads on %d CPUs, %zu slices, %llu steps; thread %d crashed at 0x%llx",
		     run.nth, run.ncpus, run.nsl, (unsigned long long)run.steps,
		     (int)run.th[run.crashed].tid,
		     (unsigned long long)run.th[run.crashed].final_ip);
	BT_CHECK(t, run.nth == 5);
	BT_CHECK(t, run.nth > run.ncpus);
	BT_EQ_INT(t, SIGSEGV, run.si.si_signo);
	for (int th = 0; th < run.nth; th++) {
		int first = -1;
		bool moved = false;

		for (size_t i = 0; i < run.nsl; i++)
			if (run.sl[i].th == th) {
				if (first < 0)
					first = run.sl[i].cpu;
				else if (run.sl[i].cpu != first)
					moved = true;
			}
		migrated += moved;
		late += run.th[th].created_at > run.th[0].n / 2;
	}
	for (size_t i = 0; i < run.nsl; i++)
		open_others += run.sl[i].open && run.sl[i].th != run.crashed;
	BT_CHECK(t, migrated >= 2);
	BT_CHECK(t, late >= 1);
	BT_CHECK(t, run.ncpus < 2 || open_others >= 1);
	if (which == 1) {
		/* the crashed thread was created late and died within its
		 * first few hundred instructions */
		const struct mt_thread *ct = &run.th[run.crashed];

		BT_CHECK(t, ct->created_at > 0);
		BT_CHECK(t, ct->n < 1000);
	}
}

static void test_run_shape(struct bt_test *t) { run_shape(t, 0); }
static void test_b_run_shape(struct bt_test *t) { run_shape(t, 1); }

int main(void)
{
	static const struct bt_test_case cases[] = {
		BT_TEST_CASE(test_run_shape),
		BT_TEST_CASE(test_pt_kept),
		BT_TEST_CASE(test_pt_two_pages),
		BT_TEST_CASE(test_pt_wrapped_one_page),
		BT_TEST_CASE(test_bts_kept),
		BT_TEST_CASE(test_bts_wrapped),
		BT_TEST_CASE(test_bts_wrapped_late),
		BT_TEST_CASE(test_b_run_shape),
		BT_TEST_CASE(test_b_pt_kept),
		BT_TEST_CASE(test_b_pt_wrapped),
		BT_TEST_CASE(test_b_bts_wrapped),
		BT_TEST_CASE(test_b_bts_wrapped_late),
		BT_TEST_CASE(test_b_pt_records_lost),
		BT_TEST_CASE(test_b_bts_records_lost),
	};
	const char *prog = getenv("BT_PROG_MT");
	char *argv_a[3] = { (char *)prog, (char *)"40", NULL };
	char *argv_b[3] = { (char *)prog, (char *)"0", NULL };
	char eb[512];
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	/* few CPUs: two (one on a one-CPU machine: the engine's rings are
	 * the machine's CPUs) */
	int nc = ncpu >= 2 ? 2 : 1;
	int rc;

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/bt-aux-threads-XXXXXX");
	if (!mkdtemp(tmpdir)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	if (!prog || !*prog) {
		fprintf(stderr, "BT_PROG_MT not set\n");
		return 1;
	}
	for (int i = 0; i < 2; i++) {
		if (mt_run(i ? argv_b : argv_a, nc, i ? 777 : 12345, i ? 10 : 40,
			   i ? 120 : 400, &runs[i], eb, sizeof(eb)) == 0) {
			run = runs[i];
			enc = NULL;
			have_runs[i] = encode_slices() == 0;
			encs[i] = enc;
		} else {
			fprintf(stderr, "single-stepping %s: %s\n", prog, eb);
		}
	}
	rc = bt_test_run(cases, (int)(sizeof(cases) / sizeof(cases[0])));
	for (int i = 0; i < 2; i++) {
		if (!have_runs[i])
			rc = 1;   /* ptrace is allowed here: the runs must work */
		for (size_t k = 0; encs[i] && k < runs[i].nsl; k++) {
			free(encs[i][k].pt);
			free(encs[i][k].bts);
		}
		free(encs[i]);
		mt_finish(&runs[i]);
	}
	if (!getenv("BT_TEST_KEEP")) {
		char cmd[400];

		snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
		if (system(cmd) != 0)
			fprintf(stderr, "could not remove %s\n", tmpdir);
	}
	return rc;
}
