/* SPDX-License-Identifier: MIT */
/*
 * Synthetic fixture generator (see gen.h).  The truth comes from ptrace
 * single-stepping the real program; the stream from src/encode.
 */
#include <errno.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include <capstone/capstone.h>

#include <btrace/snapshot.h>

#include "decode-internal.h"
#include "encode.h"
#include "gen.h"
#include "snapbuild.h"
#include "util.h"

struct step {
	uint64_t ip;
	int faulted;            /* did not complete: a signal was delivered */
};

/* gen_opts.regs: the registers before each of the last GEN_REGS_RING
 * steps, by step index modulo GEN_REGS_RING */
struct regs_ring {
	uint64_t (*r)[GEN_NREGS];
};

struct captured {
	struct btrace_mapping *maps;
	size_t nmaps;
	struct btrace_code *code;
	size_t ncode;
	siginfo_t si;
	siginfo_t first_si;     /* of the first signal (gen_opts.first_siginfo) */
	struct user_regs_struct regs;
	int have;
	struct btrace_memory stack;   /* gen_opts.stack: data malloc'd */
	struct btrace_memory *data;   /* gen_opts.memory: each malloc'd */
	size_t ndata;
};

struct insn_cache {
	struct bt_map map;
	struct bt_insn_info *v;
	size_t n, cap;
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
	int fd = open(exe, O_RDONLY);
	uint64_t addr = 0;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	Elf *e = elf_begin(fd, ELF_C_READ, NULL);
	GElf_Ehdr eh;
	if (e && gelf_getehdr(e, &eh)) {
		*dyn = eh.e_type == ET_DYN;
		Elf_Scn *s = NULL;
		while ((s = elf_nextscn(e, s))) {
			GElf_Shdr sh;
			if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_SYMTAB)
				continue;
			Elf_Data *d = elf_getdata(s, NULL);
			for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
				GElf_Sym sym;
				if (!gelf_getsym(d, (int)i, &sym))
					continue;
				const char *n = elf_strptr(e, sh.sh_link, sym.st_name);
				if (n && !strcmp(n, name) && GELF_ST_TYPE(sym.st_info) == STT_FUNC)
					addr = sym.st_value;
			}
		}
	}
	if (e)
		elf_end(e);
	close(fd);
	return addr;
}

static void free_captured(struct captured *c)
{
	for (size_t i = 0; i < c->nmaps; i++)
		free(c->maps[i].path);
	for (size_t i = 0; i < c->ncode; i++) {
		free((void *)c->code[i].data);
		free(c->code[i].path);
	}
	free(c->maps);
	free(c->code);
	free((void *)c->stack.data);
	for (size_t i = 0; i < c->ndata; i++)
		free((void *)c->data[i].data);
	free(c->data);
	memset(c, 0, sizeof(*c));
}

static void *read_mem(int pid, uint64_t addr, uint64_t len)
{
	char p[64];
	uint8_t *buf = malloc(len);
	snprintf(p, sizeof(p), "/proc/%d/mem", pid);
	int fd = open(p, O_RDONLY);
	if (fd < 0 || !buf || pread(fd, buf, len, (off_t)addr) != (ssize_t)len) {
		free(buf);
		buf = NULL;
	}
	if (fd >= 0)
		close(fd);
	return buf;
}

static void *read_file(const char *path, uint64_t off, uint64_t *len)
{
	int fd = open(path, O_RDONLY);
	uint8_t *buf;
	off_t sz;

	if (fd < 0)
		return NULL;
	sz = lseek(fd, 0, SEEK_END);
	if (sz <= 0 || (uint64_t)sz <= off) {
		close(fd);
		return NULL;
	}
	if (off + *len > (uint64_t)sz)
		*len = (uint64_t)sz - off;
	buf = malloc(*len);
	if (buf && pread(fd, buf, *len, (off_t)off) != (ssize_t)*len) {
		free(buf);
		buf = NULL;
	}
	close(fd);
	return buf;
}

/* A range of the process's other memory (bt_snap_proc_data()), kept. */
static int keep_data(void *ctx, const struct btrace_memory *m)
{
	struct captured *c = ctx;
	struct btrace_memory *v = realloc(c->data, (c->ndata + 1) * sizeof(*v));
	uint8_t *d = malloc(m->size);

	if (!v || !d) {
		free(d);
		if (v)
			c->data = v;
		return -ENOMEM;
	}
	c->data = v;
	memcpy(d, m->data, m->size);
	v[c->ndata] = *m;
	v[c->ndata++].data = d;
	return 0;
}

static int capture(int pid, struct captured *c, int embed, uint64_t stack,
		   uint64_t memory)
{
	char p[64], line[4600];
	FILE *f;

	free_captured(c);
	snprintf(p, sizeof(p), "/proc/%d/maps", pid);
	f = fopen(p, "r");
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f)) {
		unsigned long long s, e, off;
		char perms[8], path[4200] = "";
		unsigned maj, mnr;
		unsigned long ino;
		if (sscanf(line, "%llx-%llx %7s %llx %x:%x %lu %4199[^\n]", &s, &e,
			   perms, &off, &maj, &mnr, &ino, path) < 7)
			continue;
		char *pp = path;
		while (*pp == ' ')
			pp++;
		size_t cap = c->nmaps;
		c->maps = realloc(c->maps, (cap + 1) * sizeof(*c->maps));
		struct btrace_mapping *m = &c->maps[c->nmaps++];
		memset(m, 0, sizeof(*m));
		m->pid = pid;
		m->start = s;
		m->end = e;
		m->pgoff = off;
		m->ino = ino;
		m->prot = (perms[0] == 'r' ? 1 : 0) | (perms[1] == 'w' ? 2 : 0) |
			  (perms[2] == 'x' ? 4 : 0);
		m->flags = perms[3] == 's' ? 1 : 2;
		m->path = strdup(*pp ? pp : "//anon");
		if (*pp == '/')
			bt_image_file_build_id(pp, m->build_id, &m->build_id_size);
		if (!embed || !(m->prot & 4))
			continue;
		struct btrace_code code = { 0 };
		uint64_t len = e - s;
		if (*pp == '/') {
			code.kind = BTRACE_CODE_FILE;
			code.file_offset = off;
			code.data = read_file(pp, off, &len);
			memcpy(code.build_id, m->build_id, sizeof(code.build_id));
			code.build_id_size = m->build_id_size;
		} else {
			code.kind = strcmp(pp, "[vdso]") ? BTRACE_CODE_ANON : BTRACE_CODE_VDSO;
			code.data = read_mem(pid, s, len);
		}
		code.vaddr = s;
		code.size = len;
		code.path = strdup(*pp ? pp : "//anon");
		if (!code.data) {
			free(code.path);
			continue;
		}
		c->code = realloc(c->code, (c->ncode + 1) * sizeof(*c->code));
		c->code[c->ncode++] = code;
	}
	fclose(f);
	ptrace(PTRACE_GETSIGINFO, pid, 0, &c->si);
	ptrace(PTRACE_GETREGS, pid, 0, &c->regs);
	c->have = 1;
	/* the stack around rsp: a quarter of what is asked below it (the
	 * frames that returned before the fault, not yet overwritten), the
	 * rest above, as mapped */
	for (size_t i = 0; stack && i < c->nmaps; i++) {
		const struct btrace_mapping *m = &c->maps[i];
		uint64_t lo, hi;
		if (c->regs.rsp < m->start || c->regs.rsp >= m->end)
			continue;
		lo = c->regs.rsp - m->start > stack / 4 ? c->regs.rsp - stack / 4 :
		     m->start;
		hi = m->end - lo > stack ? lo + stack : m->end;
		c->stack.data = read_mem(pid, lo, hi - lo);
		c->stack.vaddr = lo;
		c->stack.size = c->stack.data ? hi - lo : 0;
		c->stack.tid = pid;
	}
	/* the rest of the data, as the recorders choose it */
	if (memory)
		bt_snap_proc_data(pid, c->stack.vaddr,
				  c->stack.vaddr + c->stack.size, memory,
				  keep_data, c);
	return 0;
}

static const struct bt_insn_info *classify(csh cs, struct insn_cache *ic,
					   int pid, uint64_t ip)
{
	uint32_t v = bt_map_get(&ic->map, ip);
	uint8_t *b;
	cs_insn *in;

	if (v != UINT32_MAX)
		return &ic->v[v];
	if (ic->n == ic->cap) {
		ic->cap = ic->cap ? 2 * ic->cap : 1024;
		ic->v = realloc(ic->v, ic->cap * sizeof(*ic->v));
	}
	struct bt_insn_info *ii = &ic->v[ic->n];
	memset(ii, 0, sizeof(*ii));
	b = read_mem(pid, ip, 16);
	if (b && cs_disasm(cs, b, 16, ip, 1, &in) == 1) {
		ii->size = (uint8_t)in->size;
		const cs_x86 *x = &in->detail->x86;
		int imm = x->op_count >= 1 && x->operands[0].type == X86_OP_IMM;
		switch (in->id) {
		case X86_INS_CALL: ii->cls = imm ? BTRACE_INSN_CALL : BTRACE_INSN_CALL_IND; break;
		case X86_INS_JMP: ii->cls = imm ? BTRACE_INSN_JMP : BTRACE_INSN_JMP_IND; break;
		case X86_INS_RET: ii->cls = BTRACE_INSN_RET; break;
		case X86_INS_SYSCALL: case X86_INS_INT: case X86_INS_INT3:
			ii->cls = BTRACE_INSN_FAR; break;
		default:
			for (int i = 0; i < in->detail->groups_count; i++)
				if (in->detail->groups[i] == CS_GRP_JUMP)
					ii->cls = BTRACE_INSN_JCC;
		}
		cs_free(in, 1);
	}
	free(b);
	bt_map_put(&ic->map, ip, (uint32_t)ic->n);
	return &ic->v[ic->n++];
}

static int trace_child(const struct gen_opts *o, struct step **steps,
		       size_t *nsteps, struct captured *cap, int *pidp,
		       uint64_t *repeat_ip, struct regs_ring *ring,
		       csh cs, struct insn_cache *ic, char *eb, size_t el)
{
	int pid = fork(), st;
	size_t n = 0, c = 0;
	uint64_t max = o->max_steps ? o->max_steps : 2000000;
	int sig = 0;

	if (pid < 0)
		return fail(eb, el, "fork: %s", strerror(errno));
	if (!pid) {
		/* the program's output goes to stderr: stdout may be a TAP
		 * stream (test-decode-values), whose lines a program's write
		 * between two of them would break */
		dup2(2, 1);
		ptrace(PTRACE_TRACEME, 0, 0, 0);
		personality(ADDR_NO_RANDOMIZE);
		execv(o->argv[0], o->argv);
		_exit(127);
	}
	*pidp = pid;
	if (waitpid(pid, &st, 0) < 0 || !WIFSTOPPED(st))
		return fail(eb, el, "%s: exec under ptrace failed", o->argv[0]);
	/* Run to main. */
	int dyn = 0;
	char exe[64], real[4096];
	snprintf(exe, sizeof(exe), "/proc/%d/exe", pid);
	ssize_t rl = readlink(exe, real, sizeof(real) - 1);
	real[rl > 0 ? rl : 0] = 0;
	uint64_t main_ip = elf_sym(real, "main", &dyn);
	if (!main_ip)
		return fail(eb, el, "%s: no main symbol", real);
	*repeat_ip = o->repeat_sym ? elf_sym(real, o->repeat_sym, &dyn) : 0;
	if (o->repeat_sym && !*repeat_ip)
		return fail(eb, el, "%s: no symbol %s", real, o->repeat_sym);
	if (dyn) {
		struct captured tmp = { 0 };
		capture(pid, &tmp, 0, 0, 0);
		for (size_t i = 0; i < tmp.nmaps; i++)
			if (!strcmp(tmp.maps[i].path, real) && tmp.maps[i].pgoff == 0) {
				main_ip += tmp.maps[i].start;
				if (*repeat_ip)
					*repeat_ip += tmp.maps[i].start;
				break;
			}
		free_captured(&tmp);
	}
	errno = 0;
	long word = ptrace(PTRACE_PEEKTEXT, pid, main_ip, 0);
	if (errno)
		return fail(eb, el, "peek main: %s", strerror(errno));
	ptrace(PTRACE_POKETEXT, pid, main_ip, (word & ~0xffL) | 0xcc);
	ptrace(PTRACE_CONT, pid, 0, 0);
	waitpid(pid, &st, 0);
	if (!WIFSTOPPED(st) || WSTOPSIG(st) != SIGTRAP)
		return fail(eb, el, "did not reach main");
	ptrace(PTRACE_POKETEXT, pid, main_ip, word);
	struct user_regs_struct regs;
	ptrace(PTRACE_GETREGS, pid, 0, &regs);
	regs.rip = main_ip;
	ptrace(PTRACE_SETREGS, pid, 0, &regs);

	for (;;) {
		ptrace(PTRACE_GETREGS, pid, 0, &regs);
		if (sig == 0) {
			classify(cs, ic, pid, regs.rip);   /* while the code is there */
			int dup = n && (*steps)[n - 1].ip == regs.rip &&
				  !(*steps)[n - 1].faulted &&
				  classify(cs, ic, pid, regs.rip)->cls == BTRACE_INSN_OTHER;
			if (!dup) {   /* rep-prefixed insns stop once per iteration */
				if (n == c) {
					c = c ? 2 * c : 65536;
					*steps = realloc(*steps, c * sizeof(**steps));
				}
				if (ring->r)
					memcpy(ring->r[n % GEN_REGS_RING], &regs,
					       sizeof(ring->r[0]));
				(*steps)[n++] = (struct step){ regs.rip, 0 };
			}
		}
		if (n > max) {
			kill(pid, SIGKILL);
			waitpid(pid, &st, 0);
			return fail(eb, el, "more than %llu steps", (unsigned long long)max);
		}
		ptrace(PTRACE_SINGLESTEP, pid, 0, sig);
		sig = 0;
		if (waitpid(pid, &st, 0) < 0)
			return fail(eb, el, "waitpid: %s", strerror(errno));
		if (WIFEXITED(st) || WIFSIGNALED(st))
			break;
		if (WSTOPSIG(st) == SIGTRAP)
			continue;
		/* A signal: record the state, then deliver it. */
		sig = WSTOPSIG(st);
		siginfo_t first = cap->first_si;
		int had = cap->have;
		capture(pid, cap, !o->no_code, o->stack, o->memory);
		cap->first_si = had ? first : cap->si;
		ptrace(PTRACE_GETREGS, pid, 0, &regs);
		if (n && (*steps)[n - 1].ip == regs.rip)
			(*steps)[n - 1].faulted = 1;   /* it did not complete */
	}
	*nsteps = n;
	if (!WIFSIGNALED(st) || !cap->have)
		return fail(eb, el, "%s did not die of a signal", o->argv[0]);
	return 0;
}

/* The step sequence with s[ra, rb) repeated @rep extra times. */
struct seq {
	const struct step *s;
	size_t n, ra, rb;
	uint64_t rep;
};

static const struct step *seq_at(const struct seq *q, uint64_t v)
{
	uint64_t extra = (uint64_t)(q->rb - q->ra) * q->rep;

	if (v < q->rb)
		return &q->s[v];
	if (v < q->rb + extra)
		return &q->s[q->ra + (v - q->rb) % (q->rb - q->ra)];
	return &q->s[v - extra];
}

static int encode(const struct gen_opts *o, const struct seq *q,
		  uint64_t final_ip, csh cs, struct insn_cache *ic, int pid, struct gen_truth *t,
		  struct btrace_buffer *buf, void **enc_out, char *eb, size_t el)
{
	struct bt_pt_enc *pe = NULL;
	struct bt_bts_enc *be = NULL;
	struct bt_pt_enc_opts po = { o->retcomp, o->tnt64, o->psb_period, o->ring_size };
	int rc;

	if (o->bts)
		rc = bt_bts_enc_new(o->ring_size, &be);
	else
		rc = bt_pt_enc_new(&po, &pe);
	if (rc)
		return fail(eb, el, "encoder: %d", rc);
	if (pe)
		rc = bt_pt_enc_begin(pe, q->s[0].ip);
	int in_ovf = 0, branched = 1;
	uint64_t blk = 0;
	uint64_t n = q->n + (uint64_t)(q->rb - q->ra) * q->rep;
	for (uint64_t i = 0; i < n && !rc; i++) {
		const struct step *cur = seq_at(q, i);
		const struct step *nxt = i + 1 < n ? seq_at(q, i + 1) : cur;
		uint64_t ip = cur->ip;
		int last = i + 1 == n;
		/* the start of the straight-line block holding ip */
		if (branched)
			blk = ip;
		branched = cur->faulted ||
			   classify(cs, ic, pid, ip)->cls != BTRACE_INSN_OTHER;
		/* QEMU places a fault at the start of its block */
		uint64_t from = o->qemu ? blk : ip;
		if (pe && o->ovf_to && i == o->ovf_to) {
			rc = bt_pt_enc_overflow(pe, ip);
			in_ovf = 0;
			if (rc)
				break;
		}
		if (pe && o->ovf_to && i >= o->ovf_from && i < o->ovf_to)
			in_ovf = 1;
		if (cur->faulted) {
			if (last) {
				t->fault_ip = ip;
				t->fault_block = blk;
				if (pe)
					rc = bt_pt_enc_end(pe, from);
				else {
					struct bt_branch br = { ip, 0xffffffff81a00000ull,
								BT_BR_ASYNC, 0, 0, {0} };
					rc = bt_bts_enc_branch(be, &br);
				}
				break;
			}
			if (!t->handler_fault) {
				t->handler_fault = ip;
				t->handler_block = blk;
			}
			struct bt_branch br = { from, nxt->ip, BT_BR_ASYNC, 0, 0, {0} };
			if (in_ovf)
				continue;
			if (pe) {
				rc = bt_pt_enc_branch(pe, &br);
			} else {
				/* BTS: into the kernel, and back at the handler */
				br.to = 0xffffffff81a00000ull;
				rc = bt_bts_enc_branch(be, &br);
				struct bt_branch back = { 0xffffffff81a00100ull, nxt->ip,
							  BT_BR_FAR, 0, 2, {0} };
				if (!rc)
					rc = bt_bts_enc_branch(be, &back);
			}
			continue;
		}
		if (t->ip)
			t->ip[t->n] = ip;
		t->n++;
		const struct bt_insn_info *ii = classify(cs, ic, pid, ip);
		uint64_t next = last ? final_ip : nxt->ip;
		struct bt_branch br = { ip, next, 0, 0, ii->size, {0} };
		switch (ii->cls) {
		case BTRACE_INSN_JCC: br.kind = BT_BR_COND; br.taken = next != ip + ii->size; break;
		case BTRACE_INSN_JMP: br.kind = BT_BR_JMP; break;
		case BTRACE_INSN_JMP_IND: br.kind = BT_BR_JMP_IND; break;
		case BTRACE_INSN_CALL: br.kind = BT_BR_CALL; break;
		case BTRACE_INSN_CALL_IND: br.kind = BT_BR_CALL_IND; break;
		case BTRACE_INSN_RET: br.kind = BT_BR_RET; break;
		case BTRACE_INSN_FAR: br.kind = BT_BR_FAR; break;
		default:
			/* capstone 4 knows every branch but not every newer
			 * instruction (AVX-512 mask moves in the C library's
			 * string functions): one it cannot decode (size 0)
			 * does not branch */
			if (next == ip + ii->size || !ii->size)
				continue;
			br.kind = BT_BR_ASYNC;  /* unexpected: treat as async */
		}
		if (in_ovf)
			continue;
		if (last) {
			/* died after this instruction (a raised signal) */
			if (pe) {
				if (br.kind == BT_BR_FAR || br.kind == BT_BR_ASYNC ||
				    br.kind == BT_BR_JMP_IND || br.kind == BT_BR_CALL_IND ||
				    br.kind == BT_BR_RET) {
					rc = bt_pt_enc_branch(pe, &br);
				}
				if (!rc)
					rc = bt_pt_enc_end(pe, final_ip);
			} else {
				struct bt_branch k = { ip, 0xffffffff81a00000ull,
						       BT_BR_FAR, 0, ii->size, {0} };
				rc = bt_bts_enc_branch(be, &k);
			}
			t->fault_ip = final_ip;
			break;
		}
		rc = pe ? bt_pt_enc_branch(pe, &br) : bt_bts_enc_branch(be, &br);
	}
	if (rc)
		return fail(eb, el, "encoding failed: %d", rc);
	int wrapped = 0;
	uint64_t size = 0;
	const uint8_t *d = pe ? bt_pt_enc_data(pe, &size, &wrapped) :
				bt_bts_enc_data(be, &size, &wrapped);
	buf->kind = o->bts ? BTRACE_TRACE_BTS : BTRACE_TRACE_PT;
	buf->flags = wrapped ? BTRACE_BUF_WRAPPED : 0;
	buf->tid = pid;
	buf->cpu = -1;
	buf->requested_size = o->ring_size ? o->ring_size : size;
	buf->ring_size = o->ring_size ? o->ring_size : size;
	buf->data = d;
	buf->size = size;
	if (pe)
		enc_out[0] = pe;
	else
		enc_out[1] = be;
	return 0;
}

/* A 64-bit or 32-bit GPR as its BTRACE_REG_* index, -1 other. */
static int reg_index(unsigned r, int *w32)
{
	static const struct { unsigned q, d; int i; } t[] = {
		{ X86_REG_RAX, X86_REG_EAX, BTRACE_REG_RAX },
		{ X86_REG_RCX, X86_REG_ECX, BTRACE_REG_RCX },
		{ X86_REG_RDX, X86_REG_EDX, BTRACE_REG_RDX },
		{ X86_REG_RBX, X86_REG_EBX, BTRACE_REG_RBX },
		{ X86_REG_RSP, X86_REG_ESP, BTRACE_REG_RSP },
		{ X86_REG_RBP, X86_REG_EBP, BTRACE_REG_RBP },
		{ X86_REG_RSI, X86_REG_ESI, BTRACE_REG_RSI },
		{ X86_REG_RDI, X86_REG_EDI, BTRACE_REG_RDI },
		{ X86_REG_R8, X86_REG_R8D, BTRACE_REG_R8 },
		{ X86_REG_R9, X86_REG_R9D, BTRACE_REG_R9 },
		{ X86_REG_R10, X86_REG_R10D, BTRACE_REG_R10 },
		{ X86_REG_R11, X86_REG_R11D, BTRACE_REG_R11 },
		{ X86_REG_R12, X86_REG_R12D, BTRACE_REG_R12 },
		{ X86_REG_R13, X86_REG_R13D, BTRACE_REG_R13 },
		{ X86_REG_R14, X86_REG_R14D, BTRACE_REG_R14 },
		{ X86_REG_R15, X86_REG_R15D, BTRACE_REG_R15 },
	};
	for (size_t k = 0; k < sizeof(t) / sizeof(t[0]); k++)
		if (r == t[k].q || r == t[k].d) {
			*w32 = r == t[k].d;
			return t[k].i;
		}
	return -1;
}

static int code_bytes(const struct captured *cap, uint64_t ip,
		      const uint8_t **p, size_t *avail)
{
	for (size_t k = 0; k < cap->ncode; k++) {
		const struct btrace_code *c = &cap->code[k];
		if (c->data && ip >= c->vaddr && ip - c->vaddr < c->size) {
			*p = c->data + (ip - c->vaddr);
			*avail = c->size - (ip - c->vaddr);
			return 1;
		}
	}
	return 0;
}

static int add_acc(struct btrace_access **log, size_t *n, size_t *room,
		   uint64_t ip, uint64_t addr, uint32_t size, uint32_t fl)
{
	if (*n == *room) {
		size_t nc = *room ? 2 * *room : 4096;
		struct btrace_access *p = realloc(*log, nc * sizeof(*p));
		if (!p)
			return -1;
		*log = p;
		*room = nc;
	}
	(*log)[(*n)++] = (struct btrace_access){ ip, addr, size, fl };
	return 0;
}

/*
 * gen_opts.accesses: the memory accesses of the last instructions (those
 * the truth has registers for), computed from the true registers before
 * each: what a recorder that logs every access would log.  An instruction whose
 * accesses are not all computed here (string instructions, an operand
 * whose registers are not GPRs) gets none: the decoder then knows nothing
 * of them from the log, as for one a recorder does not log.
 */
static int truth_log(const struct captured *cap, const struct gen_truth *tr,
		     struct btrace_access **out, size_t *nout)
{
	csh cs;
	cs_insn *ci = NULL;
	struct btrace_access *log = NULL;
	size_t n = 0, room = 0;
	int rc = -1;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return -1;
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	ci = cs_malloc(cs);
	if (!ci)
		goto out;
	for (uint64_t k = 0; k < tr->nregs; k++) {
		uint64_t ip = tr->ip[tr->n - tr->nregs + k], addr = ip;
		const uint64_t *r = tr->regs + k * GEN_NREGS;
		const uint8_t *p;
		size_t avail;
		if (!code_bytes(cap, ip, &p, &avail))
			continue;
		if (avail > 16)
			avail = 16;
		if (!cs_disasm_iter(cs, &p, &avail, &addr, ci))
			continue;
		const cs_x86 *x = &ci->detail->x86;
		unsigned id = ci->id;
		int nmem = 0, ok = 1;
		uint64_t ea = 0;
		unsigned esz = 0, eacc = 0;
		if (id == X86_INS_LEA || id == X86_INS_NOP ||
		    (id >= X86_INS_PREFETCH && id <= X86_INS_PREFETCHW) ||
		    x->prefix[0] == X86_PREFIX_REP ||
		    x->prefix[0] == X86_PREFIX_REPNE)
			continue;
		for (unsigned o = 0; o < x->op_count; o++) {
			const cs_x86_op *op = &x->operands[o];
			if (op->type != X86_OP_MEM)
				continue;
			nmem++;
			uint64_t a = (uint64_t)op->mem.disp;
			int w;
			if (op->mem.segment == X86_REG_FS)
				a += r[BTRACE_REG_FS_BASE];
			else if (op->mem.segment == X86_REG_GS)
				a += r[BTRACE_REG_GS_BASE];
			if (op->mem.base == X86_REG_RIP) {
				a += ip + ci->size;
			} else if (op->mem.base != X86_REG_INVALID) {
				int b = reg_index(op->mem.base, &w);
				if (b < 0)
					ok = 0;
				else
					a += w ? r[b] & 0xffffffffu : r[b];
			}
			if (op->mem.index != X86_REG_INVALID) {
				int b = reg_index(op->mem.index, &w);
				if (b < 0)
					ok = 0;
				else
					a += (w ? r[b] & 0xffffffffu : r[b]) *
					     (uint64_t)op->mem.scale;
			}
			if (x->addr_size == 4)
				a &= 0xffffffffu;
			ea = a;
			esz = op->size;
			eacc = op->access;
			/* capstone 4 gives compares' memory as written and
			 * EVEX stores' as read */
			if (id == X86_INS_CMP || id == X86_INS_TEST ||
			    id == X86_INS_BT)
				eacc = CS_AC_READ;
			else if (o == 0 && id != X86_INS_PUSH &&
				 id != X86_INS_CALL && id != X86_INS_JMP &&
				 id != X86_INS_CLFLUSH && id != X86_INS_CLFLUSHOPT)
				eacc |= CS_AC_WRITE;
		}
		if (!ok || nmem > 1 || (nmem && (!esz || !eacc)))
			continue;
		uint64_t sp = r[BTRACE_REG_RSP];
		int e = 0;
		switch (id) {
		case X86_INS_POP: case X86_INS_RET: case X86_INS_POPFQ:
			e |= add_acc(&log, &n, &room, ip, sp, 8, 0);
			break;
		case X86_INS_LEAVE:
			e |= add_acc(&log, &n, &room, ip, r[BTRACE_REG_RBP], 8, 0);
			break;
		}
		if (nmem && (eacc & CS_AC_READ))
			e |= add_acc(&log, &n, &room, ip, ea, esz, 0);
		if (nmem && (eacc & CS_AC_WRITE))
			e |= add_acc(&log, &n, &room, ip, ea, esz, BTRACE_ACCESS_STORE);
		if (id == X86_INS_PUSH || id == X86_INS_CALL ||
		    id == X86_INS_PUSHFQ)
			e |= add_acc(&log, &n, &room, ip, sp - 8, 8, BTRACE_ACCESS_STORE);
		if (e)
			goto out;
	}
	*out = log;
	*nout = n;
	log = NULL;
	rc = 0;
out:
	free(log);
	if (ci)
		cs_free(ci, 1);
	cs_close(&cs);
	return rc;
}

static int write_snapshot(const struct gen_opts *o, const struct btrace_buffer *buf,
			  const struct captured *cap, int pid,
			  const struct gen_truth *tr, char *eb, size_t el)
{
	struct btrace_writer *w;
	struct btrace_error err;
	struct btrace_config cfg = { 0 };
	struct btrace_signal sig = { 0 };
	struct btrace_task task = { 0 };
	int rc;

	rc = btrace_writer_open(o->out, 0, &w, &err);
	if (rc < 0)
		return fail(eb, el, "%s", err.msg);
	/* the stream is exact as hardware's is, unless it imitates QEMU's */
	cfg.backend = o->qemu ? BTRACE_BACKEND_QEMU :
		      o->bts ? BTRACE_BACKEND_BTS : BTRACE_BACKEND_PT;
	cfg.trace_kind = buf->kind;
	cfg.requested_size = buf->requested_size;
	cfg.user_only = 1;
	cfg.crash_mode = BTRACE_CRASH_PRECISE;
	rc = btrace_writer_set_config(w, &cfg, &err);
	static const uint8_t pad[64];
	struct btrace_buffer empty = *buf;
	if (o->empty_trace) {
		empty.data = pad;
		empty.size = sizeof(pad);
		empty.flags = 0;
	}
	if (!rc)
		rc = btrace_writer_add_buffer(w, o->empty_trace ? &empty : buf, &err);
	for (int i = 0; !rc && i < 4 && o->meta[i]; i++) {
		char kv[512], *eq;
		snprintf(kv, sizeof(kv), "%s", o->meta[i]);
		eq = strchr(kv, '=');
		if (!eq)
			continue;
		*eq = 0;
		rc = btrace_writer_add_meta(w, kv, eq + 1, &err);
	}
	task.pid = task.tid = pid;
	task.ppid = getpid();
	task.flags = BTRACE_TASK_CRASHED;
	const char *base = strrchr(o->argv[0], '/');
	task.comm = (char *)(base ? base + 1 : o->argv[0]);
	task.exe = (char *)o->argv[0];
	if (!rc)
		rc = btrace_writer_add_task(w, &task, &err);
	for (size_t i = 0; !rc && i < cap->nmaps; i++)
		rc = btrace_writer_add_mapping(w, &cap->maps[i], &err);
	for (size_t i = 0; !rc && i < cap->ncode; i++)
		rc = btrace_writer_add_code(w, &cap->code[i], &err);
	/* the fatal signal, or (first_siginfo) the first one, as the QEMU
	 * backend records a fault that a handler re-raised */
	const siginfo_t *si = o->first_siginfo ? &cap->first_si : &cap->si;
	sig.tid = pid;
	sig.signo = si->si_signo;
	sig.code = si->si_code;
	sig.err = si->si_errno;
	sig.addr = (uint64_t)(uintptr_t)si->si_addr;
	sig.exit_status = -1;
	if (!o->no_regs) {
		sig.fault_source = BTRACE_FAULT_REGS;
		sig.fault_ip = cap->regs.rip;
		sig.has_regs = 1;
		memcpy(sig.regs, &cap->regs, sizeof(uint64_t) * BTRACE_NREGS);
	} else if (o->qemu) {
		sig.fault_source = BTRACE_FAULT_BLOCK;
		sig.fault_ip = o->first_siginfo && tr->handler_block ?
			       tr->handler_block : tr->fault_block;
	}
	if (si->si_code <= 0)
		sig.sender_pid = si->si_pid;   /* kill(), tgkill(): the sender */
	if (!rc)
		rc = btrace_writer_set_signal(w, &sig, &err);
	if (!rc && cap->stack.size)
		rc = btrace_writer_add_memory(w, &cap->stack, &err);
	for (size_t i = 0; !rc && i < cap->ndata; i++)
		rc = btrace_writer_add_memory(w, &cap->data[i], &err);
	if (!rc && o->accesses && tr->regs) {
		struct btrace_access_log log = { .tid = pid };
		struct btrace_access *e = NULL;
		size_t ne = 0;
		if (truth_log(cap, tr, &e, &ne) < 0) {
			btrace_writer_free(w);
			return fail(eb, el, "access log: out of memory");
		}
		log.entries = e;
		log.n = ne;
		rc = btrace_writer_add_accesses(w, &log, &err);
		free(e);
	}
	if (!rc)
		return btrace_writer_commit(w, &err) ? fail(eb, el, "%s", err.msg) : 0;
	btrace_writer_free(w);
	return fail(eb, el, "%s", err.msg);
}

/* The registers of the ring for the truth: before each of the last
 * completed instructions (those the truth lists: not the ones a signal
 * interrupted), then before the faulting one (the last step). */
static int keep_regs(const struct step *steps, size_t n,
		     const struct regs_ring *ring, struct gen_truth *t,
		     char *eb, size_t el)
{
	size_t lo = n > GEN_REGS_RING ? n - GEN_REGS_RING : 0, k = 0;
	size_t cnt = 0;

	if (!n || !steps[n - 1].faulted)
		return 0;
	for (size_t i = n - 1; i-- > lo;)
		if (!steps[i].faulted)
			cnt++;
		else
			break;   /* a signal before: the truth has a hole */
	t->regs = malloc((cnt + 1) * sizeof(ring->r[0]));
	if (!t->regs)
		return fail(eb, el, "out of memory");
	for (size_t i = n - 1 - cnt; i < n; i++, k++)
		memcpy(t->regs + k * GEN_NREGS, ring->r[i % GEN_REGS_RING],
		       sizeof(ring->r[0]));
	t->nregs = cnt;
	return 0;
}

int gen_run(const struct gen_opts *o, struct gen_truth *t, char *eb, size_t el)
{
	struct step *steps = NULL;
	size_t n = 0;
	struct captured cap = { 0 };
	struct insn_cache ic = { 0 };
	struct btrace_buffer buf = { 0 };
	void *encs[2] = { NULL, NULL };
	csh cs;
	int pid = 0, rc;
	uint64_t rip = 0;
	struct regs_ring ring = { NULL };

	_Static_assert(sizeof(struct user_regs_struct) == sizeof(ring.r[0]),
		       "user_regs_struct is GEN_NREGS registers");
	memset(t, 0, sizeof(*t));
	if (o->regs && !o->repeat &&
	    !(ring.r = calloc(GEN_REGS_RING, sizeof(ring.r[0]))))
		return fail(eb, el, "out of memory");
	if (cs_open(CS_ARCH_X86, CS_MODE_64, &cs) != CS_ERR_OK)
		return fail(eb, el, "capstone");
	cs_option(cs, CS_OPT_DETAIL, CS_OPT_ON);
	rc = trace_child(o, &steps, &n, &cap, &pid, &rip, &ring, cs, &ic, eb,
			 el);
	if (!rc && !n)
		rc = fail(eb, el, "no steps");
	struct seq q = { steps, n, 0, 0, 0 };
	if (!rc && rip && o->repeat) {
		/* repeat the steps between the 8th and the 12th entry to
		 * repeat_ip (a steady-state loop) */
		size_t k = 0;
		for (size_t i = 0; i < n; i++) {
			if (steps[i].ip != rip)
				continue;
			k++;
			if (k == 8)
				q.ra = i;
			if (k == 12) {
				q.rb = i;
				q.rep = o->repeat;
				break;
			}
		}
	}
	if (!rc) {
		t->ip = q.rep ? NULL : malloc(n * sizeof(*t->ip));
		t->pid = pid;
		t->signo = cap.si.si_signo;
		t->code = cap.si.si_code;
		t->ovf_keep = o->ovf_to;
		/* classification needs the dead child's code: use the cache,
		 * filled while stepping; refill misses from the captured code */
		rc = encode(o, &q, cap.regs.rip, cs, &ic, pid, t, &buf, encs, eb, el);
	}
	if (!rc && ring.r)
		rc = keep_regs(steps, n, &ring, t, eb, el);
	if (!rc && o->out)
		rc = write_snapshot(o, &buf, &cap, pid, t, eb, el);
	free(ring.r);
	bt_pt_enc_free(encs[0]);
	bt_bts_enc_free(encs[1]);
	free_captured(&cap);
	free(steps);
	bt_map_free(&ic.map);
	free(ic.v);
	cs_close(&cs);
	if (rc)
		gen_truth_free(t);
	return rc;
}

void gen_truth_free(struct gen_truth *t)
{
	free(t->ip);
	t->ip = NULL;
	t->n = 0;
	free(t->regs);
	t->regs = NULL;
	t->nregs = 0;
}
