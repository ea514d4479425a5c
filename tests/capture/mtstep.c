/* SPDX-License-Identifier: MIT */
/* Multi-threaded single-step truth (see mtstep.h). */
#include "mtstep.h"

#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include <capstone/capstone.h>

#include <btrace/decode.h>

#include "decode-internal.h"

#define MAX_STEPS 3000000ull

struct cls {
	uint8_t cls, size;
};

struct priv {
	csh cs;
	struct bt_map map;
	struct cls *v;
	size_t n, cap;
	/* per thread: the instruction being stepped, not complete yet (a
	 * rep-string iteration, a system call stopped at a ptrace event) */
	bool have_pending[MT_MAX_THREADS];
	uint64_t pending[MT_MAX_THREADS];
	/* stopped at a ptrace event inside a system call: the instruction
	 * was executed (the thread is in the kernel), its return is the next
	 * stop, which executes nothing */
	bool in_syscall[MT_MAX_THREADS];
};

static int fail(char *eb, size_t el, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(eb, el, fmt, ap);
	va_end(ap);
	return -1;
}

static uint64_t elf_sym(const char *exe, const char *name, int *dyn)
{
	int fd = open(exe, O_RDONLY | O_CLOEXEC);
	uint64_t addr = 0;
	Elf *e;
	GElf_Ehdr eh;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	if (e && gelf_getehdr(e, &eh)) {
		Elf_Scn *s = NULL;

		*dyn = eh.e_type == ET_DYN;
		while (!addr && (s = elf_nextscn(e, s))) {
			GElf_Shdr sh;
			Elf_Data *d;

			if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_SYMTAB)
				continue;
			d = elf_getdata(s, NULL);
			for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym sym;
				const char *nm;

				if (!gelf_getsym(d, (int)i, &sym))
					continue;
				nm = elf_strptr(e, sh.sh_link, sym.st_name);
				if (nm && !strcmp(nm, name) && sym.st_value) {
					addr = sym.st_value;
					break;
				}
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return addr;
}

/* The load base of the file @real in @pid (its mapping at offset 0). */
static uint64_t load_base(pid_t pid, const char *real)
{
	char p[64], line[4600];
	uint64_t base = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/%d/maps", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return 0;
	while (!base && fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perms[8], path[4200] = "";
		unsigned maj, mnr;
		unsigned long ino;

		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %lu %4199s", &s, &e,
			   perms, &off, &maj, &mnr, &ino, path) == 8 &&
		    !strcmp(path, real) && off == 0)
			base = s;
	}
	fclose(f);
	return base;
}

int mt_classify(struct mt_run *r, uint64_t ip, uint8_t *size)
{
	struct priv *pv = r->priv;
	uint32_t v = bt_map_get(&pv->map, ip);
	uint8_t b[16];
	char path[64];
	cs_insn *in;
	struct cls c = { BTRACE_INSN_OTHER, 0 };
	int fd;

	if (v != UINT32_MAX) {
		*size = pv->v[v].size;
		return pv->v[v].cls;
	}
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)r->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0 && pread(fd, b, sizeof(b), (off_t)ip) == (ssize_t)sizeof(b) &&
	    cs_disasm(pv->cs, b, sizeof(b), ip, 1, &in) == 1) {
		const cs_x86 *x = &in->detail->x86;
		int imm = x->op_count >= 1 && x->operands[0].type == X86_OP_IMM;

		c.size = (uint8_t)in->size;
		switch (in->id) {
		case X86_INS_CALL: c.cls = imm ? BTRACE_INSN_CALL : BTRACE_INSN_CALL_IND; break;
		case X86_INS_JMP: c.cls = imm ? BTRACE_INSN_JMP : BTRACE_INSN_JMP_IND; break;
		case X86_INS_RET: c.cls = BTRACE_INSN_RET; break;
		case X86_INS_SYSCALL: case X86_INS_INT: case X86_INS_INT3:
			c.cls = BTRACE_INSN_FAR; break;
		default:
			for (int i = 0; i < in->detail->groups_count; i++)
				if (in->detail->groups[i] == CS_GRP_JUMP)
					c.cls = BTRACE_INSN_JCC;
		}
		cs_free(in, 1);
	}
	if (fd >= 0)
		close(fd);
	if (pv->n == pv->cap) {
		pv->cap = pv->cap ? 2 * pv->cap : 1024;
		pv->v = realloc(pv->v, pv->cap * sizeof(*pv->v));
		if (!pv->v)
			abort();
	}
	pv->v[pv->n] = c;
	bt_map_put(&pv->map, ip, (uint32_t)pv->n++);
	*size = c.size;
	return c.cls;
}

static uint64_t rip_of(pid_t tid)
{
	struct user_regs_struct regs;

	if (ptrace(PTRACE_GETREGS, tid, 0, &regs) < 0)
		return 0;
	return regs.rip;
}

/* Where thread @i stands: the instruction it executes next. */
static uint64_t where(struct mt_run *r, int i)
{
	struct priv *pv = r->priv;

	return pv->have_pending[i] ? pv->pending[i] : rip_of(r->th[i].tid);
}

static int add_thread(struct mt_run *r, pid_t tid)
{
	struct mt_thread *t;

	if (r->nth == MT_MAX_THREADS)
		return -1;
	t = &r->th[r->nth++];
	memset(t, 0, sizeof(*t));
	t->tid = tid;
	t->created_at = r->steps;
	return r->nth - 1;
}

static int push_ip(struct mt_thread *t, uint64_t ip)
{
	if (t->n == t->cap) {
		t->cap = t->cap ? 2 * t->cap : 16384;
		t->ip = realloc(t->ip, t->cap * sizeof(*t->ip));
		if (!t->ip)
			return -1;
	}
	t->ip[t->n++] = ip;
	return 0;
}

enum { STEP_OK, STEP_CRASH, STEP_FAIL };

/* One single-step of thread @i.  New threads go to @runq. */
static int step(struct mt_run *r, int i, int *runq, int *nrq, char *eb,
		size_t el)
{
	struct priv *pv = r->priv;
	struct mt_thread *t = &r->th[i];
	int st;
	uint8_t sz;

	if (!pv->have_pending[i]) {
		pv->pending[i] = rip_of(t->tid);
		pv->have_pending[i] = true;
		mt_classify(r, pv->pending[i], &sz);  /* while the code is there */
	}
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) < 0)
		return fail(eb, el, "PTRACE_SINGLESTEP %d: %s", (int)t->tid,
			    strerror(errno)), STEP_FAIL;
	if (waitpid(t->tid, &st, __WALL) < 0)
		return fail(eb, el, "waitpid %d: %s", (int)t->tid,
			    strerror(errno)), STEP_FAIL;
	if (!WIFSTOPPED(st))
		return fail(eb, el, "thread %d ended (status 0x%x)", (int)t->tid,
			    st), STEP_FAIL;
	if (WSTOPSIG(st) == SIGTRAP && (st >> 16) == PTRACE_EVENT_CLONE) {
		unsigned long nt = 0;
		int k, s2;

		/* the thread is inside its clone system call, which the
		 * hardware has seen (a far branch into the kernel): it
		 * counts as executed here, and the next stop is its return;
		 * the new thread waits in its first stop */
		if (push_ip(t, pv->pending[i]) < 0)
			return fail(eb, el, "out of memory"), STEP_FAIL;
		pv->have_pending[i] = false;
		pv->in_syscall[i] = true;
		if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &nt) < 0)
			return fail(eb, el, "GETEVENTMSG: %s", strerror(errno)), STEP_FAIL;
		do {
			if (waitpid((pid_t)nt, &s2, __WALL) < 0)
				return fail(eb, el, "waitpid new thread %lu: %s", nt,
					    strerror(errno)), STEP_FAIL;
		} while (!WIFSTOPPED(s2));
		k = add_thread(r, (pid_t)nt);
		if (k < 0)
			return fail(eb, el, "more than %d threads", MT_MAX_THREADS), STEP_FAIL;
		runq[(*nrq)++] = k;
		return STEP_OK;
	}
	if (WSTOPSIG(st) == SIGTRAP && pv->in_syscall[i]) {
		/* the return of the system call: nothing else ran */
		pv->in_syscall[i] = false;
		pv->have_pending[i] = false;
		return STEP_OK;
	}
	if (WSTOPSIG(st) == SIGTRAP) {
		uint64_t rip = rip_of(t->tid);

		/* a rep-string iteration stops with the IP unchanged */
		if (rip == pv->pending[i] &&
		    mt_classify(r, rip, &sz) == BTRACE_INSN_OTHER)
			return STEP_OK;
		if (push_ip(t, pv->pending[i]) < 0)
			return fail(eb, el, "out of memory"), STEP_FAIL;
		pv->have_pending[i] = false;
		return STEP_OK;
	}
	if (WSTOPSIG(st) == SIGSEGV || WSTOPSIG(st) == SIGBUS ||
	    WSTOPSIG(st) == SIGILL || WSTOPSIG(st) == SIGFPE) {
		t->crashed = true;
		r->crashed = i;
		ptrace(PTRACE_GETSIGINFO, t->tid, 0, &r->si);
		ptrace(PTRACE_GETREGS, t->tid, 0, &r->regs);
		return STEP_CRASH;
	}
	return STEP_OK;   /* another stop (a stray SIGSTOP): not delivered */
}

static int add_slice(struct mt_run *r, int th, int cpu)
{
	struct mt_slice *s;

	if (r->nsl == r->csl) {
		r->csl = r->csl ? 2 * r->csl : 256;
		r->sl = realloc(r->sl, r->csl * sizeof(*r->sl));
		if (!r->sl)
			return -1;
	}
	s = &r->sl[r->nsl];
	memset(s, 0, sizeof(*s));
	s->th = th;
	s->cpu = cpu;
	s->a = r->th[th].n;
	s->start_ip = where(r, th);
	s->t_in = r->steps;
	return (int)r->nsl++;
}

static int add_event(struct mt_run *r, size_t slice, bool out)
{
	if (r->nev == r->cev) {
		r->cev = r->cev ? 2 * r->cev : 512;
		r->ev = realloc(r->ev, r->cev * sizeof(*r->ev));
		if (!r->ev)
			return -1;
	}
	r->ev[r->nev++] = (struct mt_event){ slice, out };
	return 0;
}

static void close_slice(struct mt_run *r, size_t k, bool open)
{
	struct mt_slice *s = &r->sl[k];

	s->b = r->th[s->th].n;
	s->next_ip = where(r, s->th);
	s->t_out = r->steps;
	s->open = open;
	add_event(r, k, true);
}

int mt_run(char *const argv[], int ncpus, uint32_t seed, uint32_t qmin,
	   uint32_t qmax, struct mt_run *r, char *eb, size_t el)
{
	struct priv *pv;
	struct { int th; uint32_t left; size_t slice; } cpu[MT_MAX_CPUS];
	int runq[4 * MT_MAX_THREADS], nrq = 0, st, dyn = 0, rc;
	uint64_t main_ip;
	char exe[64], real[4096];
	ssize_t rl;
	long word;
	struct user_regs_struct regs;
	uint32_t rnd = seed ? seed : 1;

	memset(r, 0, sizeof(*r));
	r->crashed = -1;
	r->ncpus = ncpus < 1 ? 1 : ncpus > MT_MAX_CPUS ? MT_MAX_CPUS : ncpus;
	pv = calloc(1, sizeof(*pv));
	if (!pv)
		return fail(eb, el, "out of memory");
	r->priv = pv;
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &pv->cs) != CS_ERR_OK)
		return fail(eb, el, "capstone");
	cs_option(pv->cs, CS_OPT_DETAIL, CS_OPT_ON);

	r->pid = fork();
	if (r->pid < 0)
		return fail(eb, el, "fork: %s", strerror(errno));
	if (!r->pid) {
		int fd = open("/dev/null", O_RDWR);

		dup2(fd, 1);
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		execv(argv[0], argv);
		_exit(127);
	}
	if (waitpid(r->pid, &st, 0) < 0 || !WIFSTOPPED(st))
		return fail(eb, el, "%s: exec under ptrace failed", argv[0]);
	ptrace(PTRACE_SETOPTIONS, r->pid, 0,
	       PTRACE_O_TRACECLONE | PTRACE_O_EXITKILL);
	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)r->pid);
	rl = readlink(exe, real, sizeof(real) - 1);
	real[rl > 0 ? rl : 0] = 0;
	main_ip = elf_sym(real, "main", &dyn);
	if (!main_ip)
		return fail(eb, el, "%s: no main symbol", real);
	if (dyn)
		main_ip += load_base(r->pid, real);
	/* run to main: an int3 there, then the instruction put back */
	errno = 0;
	word = ptrace(PTRACE_PEEKTEXT, r->pid, main_ip, 0);
	if (errno)
		return fail(eb, el, "peek main: %s", strerror(errno));
	ptrace(PTRACE_POKETEXT, r->pid, main_ip, (word & ~0xffL) | 0xcc);
	ptrace(PTRACE_CONT, r->pid, 0, 0);
	if (waitpid(r->pid, &st, 0) < 0 || !WIFSTOPPED(st) ||
	    WSTOPSIG(st) != SIGTRAP)
		return fail(eb, el, "did not reach main");
	ptrace(PTRACE_POKETEXT, r->pid, main_ip, word);
	ptrace(PTRACE_GETREGS, r->pid, 0, &regs);
	regs.rip = main_ip;
	ptrace(PTRACE_SETREGS, r->pid, 0, &regs);

	add_thread(r, r->pid);
	runq[nrq++] = 0;
	for (int c = 0; c < r->ncpus; c++)
		cpu[c].th = -1;
	for (;;) {
		for (int c = 0; c < r->ncpus; c++) {
			if (cpu[c].th < 0) {
				int k;

				if (!nrq)
					continue;
				cpu[c].th = runq[0];
				memmove(runq, runq + 1, (size_t)--nrq * sizeof(*runq));
				k = add_slice(r, cpu[c].th, c);
				if (k < 0 || add_event(r, (size_t)k, false) < 0)
					return fail(eb, el, "out of memory");
				cpu[c].slice = (size_t)k;
				rnd = rnd * 1103515245u + 12345u;
				cpu[c].left = qmin + (rnd >> 8) % (qmax - qmin + 1);
			}
			rc = step(r, cpu[c].th, runq, &nrq, eb, el);
			r->steps++;
			if (rc == STEP_FAIL)
				return -1;
			if (rc == STEP_CRASH)
				goto crashed;
			if (r->steps > MAX_STEPS)
				return fail(eb, el, "more than %llu steps",
					    (unsigned long long)MAX_STEPS);
			if (--cpu[c].left == 0) {
				close_slice(r, cpu[c].slice, false);
				runq[nrq++] = cpu[c].th;
				cpu[c].th = -1;
			}
		}
	}
crashed:
	/* btrace's precise mode disables the siblings first, then the
	 * thread that crashed (bt_engine_disable_siblings_first()) */
	for (int c = 0; c < r->ncpus; c++)
		if (cpu[c].th >= 0 && cpu[c].th != r->crashed) {
			r->steps++;
			close_slice(r, cpu[c].slice, true);
		}
	for (int c = 0; c < r->ncpus; c++)
		if (cpu[c].th == r->crashed) {
			r->steps++;
			close_slice(r, cpu[c].slice, true);
		}
	for (int i = 0; i < r->nth; i++)
		r->th[i].final_ip = where(r, i);
	return 0;
}

void mt_finish(struct mt_run *r)
{
	struct priv *pv = r->priv;
	int st;

	if (r->pid > 0) {
		kill(r->pid, SIGKILL);
		/* every traced thread is reaped by its tracer (this run's
		 * only: another run may still be stopped), the leader last */
		for (int i = r->nth; i-- > 0;)
			while (waitpid(r->th[i].tid, &st, __WALL) > 0 &&
			       !WIFEXITED(st) && !WIFSIGNALED(st))
				;
		if (!r->nth)
			waitpid(r->pid, &st, __WALL);
	}
	for (int i = 0; i < r->nth; i++)
		free(r->th[i].ip);
	free(r->sl);
	free(r->ev);
	if (pv) {
		cs_close(&pv->cs);
		bt_map_free(&pv->map);
		free(pv->v);
		free(pv);
	}
	memset(r, 0, sizeof(*r));
}
