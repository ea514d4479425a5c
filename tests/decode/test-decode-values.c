/* SPDX-License-Identifier: MIT */
/*
 * Recovered register values against the truth (include/btrace/values.h).
 * Each program given is single-stepped to its fault under ptrace with the
 * true registers before every one of its last instructions (gen.c), the
 * snapshot decoded, and the values recovered along the last 1,000
 * instructions before the fault compared with the true ones: a single
 * wrong value fails the program, and so does a conflict (two derivations
 * of one value that disagree: one was wrong, even if not the one kept).  The share recovered is printed per
 * program and in total (--table: a Markdown table, for bench/).
 *
 *	test-decode-values [--table] [--min PERCENT] [--floors FILE CONFIG]
 *	                   [--stack BYTES]
 *	                   [--memory BYTES] [--log] [--misses] PROG[=ARG] ...
 *
 * --min: fail a program whose share is below PERCENT.  --floors: fail a
 * program whose share is below its floor for CONFIG in FILE (lines
 * "CONFIG PROG PERCENT"), or that has none there; a program with no value
 * compared fails in any case.  --stack: the
 * snapshot holds up to BYTES of the crashed thread's stack at the fault
 * (the memory section), as btrace record stores it.  --memory: and up to
 * BYTES of the process's other memory (tid 0), as btrace record --memory
 * chooses it (bt_snap_data_select(), src/snapbuild.h).  --log: and an
 * access log (the accesses section) of the last instructions' memory
 * accesses, computed from the true registers (gen_opts.accesses).
 * --misses: print, per program, where the values not recovered are: the
 * functions with the most (instruction, register) values unknown, and the
 * registers (a diagnostic, as TAP comments).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>
#include <btrace/values.h>

#include "gen.h"

#define WINDOW 1000

static const unsigned reg_of[BTRACE_NVREGS] = {
	BTRACE_REG_RAX, BTRACE_REG_RCX, BTRACE_REG_RDX, BTRACE_REG_RBX,
	BTRACE_REG_RSP, BTRACE_REG_RBP, BTRACE_REG_RSI, BTRACE_REG_RDI,
	BTRACE_REG_R8, BTRACE_REG_R9, BTRACE_REG_R10, BTRACE_REG_R11,
	BTRACE_REG_R12, BTRACE_REG_R13, BTRACE_REG_R14, BTRACE_REG_R15,
};

struct count {
	uint64_t total, known, wrong, conflicts, insns;
	/* the registers each instruction reads (before it) or writes
	 * (after it, but for the last one: those are the fault's) */
	uint64_t ototal, oknown;
};

static const char *base(const char *p)
{
	const char *s = strrchr(p, '/');
	return s ? s + 1 : p;
}

/* One program: 0 compared (*@c filled), -1 the run failed (@why). */
static uint64_t stack;
static uint64_t memory;
static int use_log;
static int misses;

/* --misses: unknown values per function (by name, linear: a diagnostic) */
struct miss {
	const char *fn;
	uint64_t n;
};

static void count_miss(struct miss *m, size_t *nm, size_t cap, const char *fn)
{
	for (size_t i = 0; i < *nm; i++)
		if (!strcmp(m[i].fn, fn)) {
			m[i].n++;
			return;
		}
	if (*nm < cap)
		m[(*nm)++] = (struct miss){ fn, 1 };
}

static int miss_cmp(const void *a, const void *b)
{
	const struct miss *x = a, *y = b;
	return x->n < y->n ? 1 : x->n > y->n ? -1 : 0;
}

static int run(const char *dir, char *spec, struct count *c, char *why,
	       size_t wl, int verbose)
{
	char path[512], eb[512];
	char *arg = strchr(spec, '=');
	char *argv[3] = { spec, NULL, NULL };
	struct gen_opts o = { 0 };
	struct gen_truth tr;
	struct btrace_snapshot *snap = NULL;
	struct btrace_decode_result *res = NULL;
	struct btrace_values *v = NULL;
	struct btrace_error err;
	int rc = -1;

	if (arg) {
		*arg++ = 0;
		argv[1] = arg;
	}
	memset(c, 0, sizeof(*c));
	snprintf(path, sizeof(path), "%s/%s.btrace", dir, base(spec));
	o.argv = argv;
	o.out = path;
	o.regs = 1;
	o.stack = stack;
	o.memory = memory;
	o.accesses = use_log;
	if (gen_run(&o, &tr, eb, sizeof(eb))) {
		snprintf(why, wl, "generator: %s", eb);
		return -1;
	}
	struct btrace_decode_opts d = { .sz = sizeof(d), .unit = BTRACE_UNIT_INSNS,
					.last = 2 * WINDOW };
	if (btrace_snapshot_read(path, 0, &snap, &err) < 0 ||
	    btrace_decode(snap, &d, &res, &err) < 0 || res->crashed_thread < 0 ||
	    btrace_values_build(res, (size_t)res->crashed_thread, WINDOW, &v,
				&err) < 0) {
		snprintf(why, wl, "%.500s", res && res->crashed_thread < 0 ?
			 "no crashed thread" : err.msg);
		goto out;
	}
	if (memory) {
		/* the process's memory (tid 0) is there, within the budget */
		uint64_t data = 0;

		for (size_t k = 0; k < snap->nmemory; k++)
			if (snap->memory[k].tid == BTRACE_MEMORY_PROCESS)
				data += snap->memory[k].size;
		if (!data || data > memory) {
			snprintf(why, wl, "%llu bytes of process memory in the "
				 "snapshot, --memory %llu",
				 (unsigned long long)data,
				 (unsigned long long)memory);
			goto out;
		}
	}
	if (!tr.regs || v->ninsn > tr.nregs || v->ninsn > tr.n) {
		snprintf(why, wl, "the truth has %llu instructions with "
			 "registers, the path %zu", (unsigned long long)tr.nregs,
			 v->ninsn);
		goto out;
	}
	if (v->ip[v->ninsn] != tr.fault_ip) {
		snprintf(why, wl, "fault at 0x%llx, truth 0x%llx",
			 (unsigned long long)v->ip[v->ninsn],
			 (unsigned long long)tr.fault_ip);
		goto out;
	}
	struct miss fm[256];
	size_t nfm = 0;
	uint64_t rmiss[BTRACE_NVREGS] = { 0 };
	/* position k of the path is truth instruction n - ninsn + k, its
	 * registers at nregs - ninsn + k; k = ninsn: the fault */
	for (size_t k = 0; k <= v->ninsn; k++) {
		const uint64_t *truth = tr.regs + (tr.nregs - v->ninsn + k) * GEN_NREGS;
		if (k < v->ninsn && v->ip[k] != tr.ip[tr.n - v->ninsn + k]) {
			snprintf(why, wl, "path instruction %zu at 0x%llx, "
				 "truth 0x%llx", k, (unsigned long long)v->ip[k],
				 (unsigned long long)tr.ip[tr.n - v->ninsn + k]);
			goto out;
		}
		if (k == v->ninsn)
			break;   /* the fault's are the recorded ones */
		c->insns++;
		const uint64_t *after = truth + GEN_NREGS;
		for (unsigned r = 0; r < BTRACE_NVREGS; r++) {
			uint64_t x;
			if ((v->reads[k] >> r) & 1) {
				c->ototal++;
				c->oknown += btrace_values_get(v, k, r, &x);
			}
			if (((v->writes[k] >> r) & 1) && k + 1 < v->ninsn) {
				c->ototal++;
				if (btrace_values_get(v, k + 1, r, &x)) {
					c->oknown++;
					c->wrong += x != after[reg_of[r]];
				}
			}
		}
		for (unsigned r = 0; r < BTRACE_NVREGS; r++) {
			uint64_t x;
			c->total++;
			if (!btrace_values_get(v, k, r, &x)) {
				if (misses) {
					struct btrace_symbol sy = { 0 };
					if (btrace_decode_symbolize(res, v->ip[k], &sy) < 0 ||
					    !sy.outer)
						sy.outer = "?";
					count_miss(fm, &nfm, 256, sy.outer);
					rmiss[r]++;
				}
				continue;
			}
			c->known++;
			if (x != truth[reg_of[r]]) {
				if (verbose && c->wrong < 20)
					printf("# %s: wrong %s before 0x%llx "
					       "(#%zu): 0x%llx, true 0x%llx\n",
					       base(spec), btrace_vreg_name(r),
					       (unsigned long long)v->ip[k], k,
					       (unsigned long long)x,
					       (unsigned long long)truth[reg_of[r]]);
				c->wrong++;
			}
		}
	}
	c->conflicts = v->conflicts;
	if (misses) {
		qsort(fm, nfm, sizeof(*fm), miss_cmp);
		for (size_t i = 0; i < nfm && i < 8; i++)
			printf("# %s: %llu unknown in %s\n", base(spec),
			       (unsigned long long)fm[i].n, fm[i].fn);
		printf("# %s: unknown per register:", base(spec));
		for (unsigned r = 0; r < BTRACE_NVREGS; r++)
			printf(" %s %llu", btrace_vreg_name(r),
			       (unsigned long long)rmiss[r]);
		printf("\n");
	}
	rc = 0;
out:
	btrace_values_free(v);
	btrace_decode_result_free(res);
	btrace_snapshot_free(snap);
	unlink(path);
	gen_truth_free(&tr);
	return rc;
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 0.0;
}

/* The floor of @prog under @config in @path (lines "CONFIG PROG
 * PERCENT", # comments): the share of values it must recover; -1 none. */
static double floor_of(const char *path, const char *config, const char *prog)
{
	char line[512], cfg[128], name[256];
	double v, found = -1;
	FILE *f = fopen(path, "r");

	if (!f) {
		fprintf(stderr, "%s: open failed: %s\n", path, strerror(errno));
		return -1;
	}
	while (fgets(line, sizeof(line), f)) {
		if (line[0] == '#')
			continue;
		if (sscanf(line, "%127s %255s %lf", cfg, name, &v) == 3 &&
		    !strcmp(cfg, config) && !strcmp(name, prog))
			found = v;
	}
	fclose(f);
	return found;
}

int main(int argc, char **argv)
{
	char tmpl[] = "/tmp/bt-values-XXXXXX";
	char why[1024];
	struct count all = { 0 };
	int table = 0, failed = 0, first = 1;
	double min = 0;
	const char *floors = NULL, *config = NULL;

	while (first < argc && argv[first][0] == '-') {
		if (!strcmp(argv[first], "--table"))
			table = 1;
		else if (!strcmp(argv[first], "--min") && first + 1 < argc)
			min = atof(argv[++first]);
		else if (!strcmp(argv[first], "--stack") && first + 1 < argc)
			stack = strtoull(argv[++first], NULL, 0);
		else if (!strcmp(argv[first], "--memory") && first + 1 < argc)
			memory = strtoull(argv[++first], NULL, 0);
		else if (!strcmp(argv[first], "--log"))
			use_log = 1;
		else if (!strcmp(argv[first], "--misses"))
			misses = 1;
		else if (!strcmp(argv[first], "--floors") && first + 2 < argc) {
			floors = argv[++first];
			config = argv[++first];
		} else {
			fprintf(stderr, "usage: %s [--table] [--min PCT] [--floors FILE CONFIG] [--stack BYTES] [--memory BYTES] [--log] [--misses] PROG[=ARG]...\n",
				argv[0]);
			return 2;
		}
		first++;
	}
	if (!mkdtemp(tmpl)) {
		fprintf(stderr, "mkdtemp: %s\n", strerror(errno));
		return 1;
	}
	if (table) {
		printf("| program | instructions | register values | recovered | share | wrong | operand values | recovered | share |\n");
		printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	} else {
		printf("1..%d\n", argc - first + 1);
	}
	for (int i = first; i < argc; i++) {
		struct count c;
		char *spec = strdup(argv[i]);
		const char *name = base(argv[i]);
		int rc = spec ? run(tmpl, spec, &c, why, sizeof(why), !table) : -1;
		free(spec);
		if (rc < 0) {
			failed = 1;
			if (table)
				printf("| %s | failed: %s | | | | | | | |\n", name, why);
			else
				printf("not ok %d - %s: %s\n", i - first + 1, name, why);
			continue;
		}
		all.total += c.total;
		all.known += c.known;
		all.wrong += c.wrong;
		all.insns += c.insns;
		all.conflicts += c.conflicts;
		all.ototal += c.ototal;
		all.oknown += c.oknown;
		/* two derivations that disagree: one of them was wrong; a
		 * program with nothing compared proves nothing */
		double fl = -1;
		int bad = c.wrong || c.conflicts || !c.total ||
			  pct(c.known, c.total) < min;

		if (floors) {
			fl = floor_of(floors, config, name);
			if (fl < 0)
				printf("# %s: no floor for %s in %s (config %s): "
				       "add one\n", name, name, floors, config);
			bad |= fl < 0 || pct(c.known, c.total) < fl;
			if (fl >= 0 && pct(c.known, c.total) < fl)
				printf("# %s: %.1f%% recovered, below its floor "
				       "%.1f%% (%s, config %s)\n", name,
				       pct(c.known, c.total), fl, floors, config);
		}
		failed |= bad;
		if (table)
			printf("| %s | %llu | %llu | %llu | %.1f%% | %llu | %llu | %llu | %.1f%% |\n", name,
			       (unsigned long long)c.insns,
			       (unsigned long long)c.total,
			       (unsigned long long)c.known,
			       pct(c.known, c.total), (unsigned long long)c.wrong,
			       (unsigned long long)c.ototal,
			       (unsigned long long)c.oknown, pct(c.oknown, c.ototal));
		else
			printf("%s %d - %s: %llu instructions, %llu of %llu "
			       "register values recovered (%.1f%%; of the "
			       "registers the instructions read or write: "
			       "%.1f%%), %llu wrong, "
			       "%llu conflicts\n", bad ? "not ok" : "ok",
			       i - first + 1, name, (unsigned long long)c.insns,
			       (unsigned long long)c.known,
			       (unsigned long long)c.total, pct(c.known, c.total),
			       pct(c.oknown, c.ototal),
			       (unsigned long long)c.wrong,
			       (unsigned long long)c.conflicts);
	}
	if (table)
		printf("| **total** | %llu | %llu | %llu | %.1f%% | %llu | %llu | %llu | %.1f%% |\n",
		       (unsigned long long)all.insns,
		       (unsigned long long)all.total,
		       (unsigned long long)all.known, pct(all.known, all.total),
		       (unsigned long long)all.wrong,
		       (unsigned long long)all.ototal,
		       (unsigned long long)all.oknown, pct(all.oknown, all.ototal));
	else
		printf("%s %d - total: %llu of %llu register values recovered "
		       "(%.1f%%), %llu wrong\n", all.wrong ? "not ok" : "ok",
		       argc - first + 1, (unsigned long long)all.known,
		       (unsigned long long)all.total, pct(all.known, all.total),
		       (unsigned long long)all.wrong);
	rmdir(tmpl);
	return failed || all.wrong ? 1 : 0;
}
