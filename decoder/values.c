/* SPDX-License-Identifier: MIT */
/*
 * Data values along the decoded path (include/btrace/values.h).
 *
 * The path is the straight run of the thread's history before the fault:
 * instruction i runs with the registers S[i] and leaves S[i + 1]; S[n] are
 * the registers at the fault (recorded with the signal).  Each instruction
 * relates its two states: a register it does not write is the same on both
 * sides; one it writes is computed from known inputs (forwards) or, where
 * the operation can be inverted, an input from the known output
 * (backwards).  Passes forwards and backwards over the path repeat until
 * nothing changes.  Memory: values stored to the thread's stack along the
 * path and loaded back (spills, pushes and pops), while no store to an
 * address that is not known could have changed them.  What is not proven
 * stays unknown; an instruction whose writes are not all understood makes
 * what it writes unknown.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>

#include <btrace/values.h>

#include "decode-internal.h"
#include "util.h"

#define NR BTRACE_NVREGS
#define NOREG 0xff
#define MAX_FACTS 512
#define MAX_CHAIN 16

struct vop {
	uint8_t type;        /* X86_OP_REG / IMM / MEM */
	uint8_t reg;         /* REG: the GPR (enum btrace_vreg), NOREG other */
	uint8_t width;       /* REG: bytes of the register; MEM: bytes read
			      * or written */
	uint8_t hi8;         /* REG: ah, ch, dh, bh */
	uint8_t access;      /* CS_AC_* */
	uint8_t base, index; /* MEM: GPRs or NOREG */
	uint8_t bad;         /* MEM: the address is never known (fs/gs, a
			      * register that is not a GPR) */
	uint8_t rip;         /* MEM: rip-relative (disp is the address) */
	uint8_t scale;
	int64_t imm;         /* IMM: value; MEM: displacement */
};

struct vinsn {
	uint64_t ip;
	unsigned id;         /* X86_INS_*, 0: capstone does not know it */
	uint8_t size;
	uint8_t nop;
	uint8_t rep;         /* a rep prefix */
	uint8_t clobber;     /* memory: 1 a range not known was written
			      * (clear every fact) */
	uint16_t rd, wr;     /* GPRs read / written */
	int32_t depth;       /* call depth it runs at */
	struct vop op[4];
};

struct fact {
	uint64_t addr, val;
	uint8_t size;
};

/*
 * Facts about memory at one point of a pass.  Backwards, the memory the
 * snapshot holds (the stack at the fault) is the memory after the last
 * instruction: it stands for every address no store between here and the
 * fault may have changed (@killed lists the ranges stored to since, a
 * store to an address not known ends it: @snap NULL).
 */
struct facts {
	struct fact f[MAX_FACTS];
	size_t n;
	const struct btrace_snapshot *snap;  /* memory at the fault, NULL none */
	struct fact killed[MAX_FACTS];
	size_t nkilled;
};

struct vstate {
	struct bt_ctx *c;
	struct vinsn *in;
	size_t n;            /* instructions; states 0..n */
	uint64_t *val;       /* (n + 1) * NR */
	uint16_t *kn;
	uint64_t conflicts;
	int changed;
	uint64_t stk_lo, stk_hi;  /* the stack's mapping, 0: none known */
	uint64_t fault_ip;        /* where the path goes after its last
				   * instruction, 0 not known */
	const struct btrace_snapshot *snap_mem;  /* its memory is the memory at
				   * the fault: NULL not known */
	struct facts *mem;
};

struct bt_values {
	struct btrace_values pub;
	uint64_t *ip;
	uint64_t *val;
	uint16_t *kn;
	uint16_t *rw;        /* reads, then writes: 2 * (n + 1) */
	struct btrace_origin_link chain[MAX_CHAIN];
};

static const char *const vreg_names[NR] = {
	"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15",
};

const char *btrace_vreg_name(unsigned reg)
{
	return reg < NR ? vreg_names[reg] : NULL;
}

/* A capstone register as a GPR: index, width in bytes, high byte. */
static int gpr_of(unsigned r, uint8_t *width, uint8_t *hi8)
{
	static const struct { uint16_t r; uint8_t g, w, h; } t[] = {
#define Q(a, b, c, d, g) { X86_REG_##a, g, 8, 0 }, { X86_REG_##b, g, 4, 0 }, \
	{ X86_REG_##c, g, 2, 0 }, { X86_REG_##d, g, 1, 0 }
		Q(RAX, EAX, AX, AL, 0), Q(RCX, ECX, CX, CL, 1),
		Q(RDX, EDX, DX, DL, 2), Q(RBX, EBX, BX, BL, 3),
		Q(RSP, ESP, SP, SPL, 4), Q(RBP, EBP, BP, BPL, 5),
		Q(RSI, ESI, SI, SIL, 6), Q(RDI, EDI, DI, DIL, 7),
		Q(R8, R8D, R8W, R8B, 8), Q(R9, R9D, R9W, R9B, 9),
		Q(R10, R10D, R10W, R10B, 10), Q(R11, R11D, R11W, R11B, 11),
		Q(R12, R12D, R12W, R12B, 12), Q(R13, R13D, R13W, R13B, 13),
		Q(R14, R14D, R14W, R14B, 14), Q(R15, R15D, R15W, R15B, 15),
#undef Q
		{ X86_REG_AH, 0, 1, 1 }, { X86_REG_CH, 1, 1, 1 },
		{ X86_REG_DH, 2, 1, 1 }, { X86_REG_BH, 3, 1, 1 },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (t[i].r == r) {
			if (width)
				*width = t[i].w;
			if (hi8)
				*hi8 = t[i].h;
			return t[i].g;
		}
	return -1;
}

/* Registers an instruction writes beyond what capstone 4 lists (implicit
 * results it is known to leave out or that matter most): a mask. */
static uint16_t implicit_writes(unsigned id)
{
	enum { A = 1u << 0, C = 1u << 1, D = 1u << 2, B = 1u << 3,
	       SP = 1u << 4, BP = 1u << 5, SI = 1u << 6, DI = 1u << 7,
	       R11 = 1u << 11 };

	switch (id) {
	case X86_INS_CPUID: return A | B | C | D;
	case X86_INS_RDTSC: case X86_INS_XGETBV: case X86_INS_RDPMC:
		return A | D;
	case X86_INS_RDTSCP: return A | C | D;
	case X86_INS_SYSCALL: return A | C | R11;
	case X86_INS_MUL: case X86_INS_IMUL: case X86_INS_DIV:
	case X86_INS_IDIV: return A | D;
	case X86_INS_CWD: case X86_INS_CDQ: case X86_INS_CQO: return D;
	case X86_INS_CBW: case X86_INS_CWDE: case X86_INS_CDQE: return A;
	case X86_INS_CMPXCHG: case X86_INS_CMPXCHG8B: case X86_INS_CMPXCHG16B:
		return A | D;
	case X86_INS_LODSB: case X86_INS_LODSW: case X86_INS_LODSD:
	case X86_INS_LODSQ: return A | SI | C;
	case X86_INS_STOSB: case X86_INS_STOSW: case X86_INS_STOSD:
	case X86_INS_STOSQ: case X86_INS_SCASB: case X86_INS_SCASW:
	case X86_INS_SCASD: case X86_INS_SCASQ: return DI | C;
	case X86_INS_MOVSB: case X86_INS_MOVSW: case X86_INS_MOVSD:
	case X86_INS_MOVSQ: case X86_INS_CMPSB: case X86_INS_CMPSW:
	case X86_INS_CMPSD: case X86_INS_CMPSQ: return SI | DI | C;
	case X86_INS_LEAVE: case X86_INS_ENTER: return SP | BP;
	case X86_INS_PUSH: case X86_INS_POP: case X86_INS_CALL:
	case X86_INS_RET: case X86_INS_PUSHFQ: case X86_INS_POPFQ:
	case X86_INS_PUSHAL: case X86_INS_POPAL:
		return SP;
	}
	return 0;
}

/*
 * What an instruction capstone 4 cannot disassemble may write: the AVX-512
 * ones of the C library's string functions (EVEX, and VEX mask
 * instructions).  From the encoding alone: the general-purpose registers
 * an EVEX instruction can write are those of a few opcodes (moves and
 * conversions to a GPR, extracts); a VEX mask instruction writes a GPR
 * only as kmov r32, k (opcode 93, ModRM.reg).  Memory: a compare or test
 * into a mask register only reads it; any other form with a memory
 * operand may store.  Anything else: every register and memory.
 */
static void raw_effects(const uint8_t *p, size_t avail, struct vinsn *out)
{
	unsigned map, opc, modrm, r;

	out->wr = 0xffff;
	out->clobber = 1;
	if (!p || avail < 4)
		return;
	if (p[0] == 0x62 && avail >= 6) {
		map = p[1] & 3;
		opc = p[4];
		modrm = p[5];
		int gpr = (map == 1 && (opc == 0x7e || opc == 0x2c || opc == 0x2d ||
					opc == 0x78 || opc == 0x79 || opc == 0xc5)) ||
			  (map == 3 && opc >= 0x14 && opc <= 0x17);
		int ro = (map == 1 && (opc == 0x74 || opc == 0x75 || opc == 0x76 ||
				       opc == 0x64 || opc == 0x65 || opc == 0x66 ||
				       opc == 0xc2)) ||
			 (map == 2 && (opc == 0x26 || opc == 0x27 || opc == 0x29 ||
				       opc == 0x37)) ||
			 (map == 3 && (opc == 0x3e || opc == 0x3f || opc == 0x1e ||
				       opc == 0x1f));
		out->wr = gpr ? 0xffff : 0;
		out->clobber = (modrm >> 6) != 3 && !ro;
		return;
	}
	if (p[0] == 0xc5) {
		map = 1;
		opc = p[2];
		modrm = p[3];
	} else if (p[0] == 0xc4 && avail >= 5) {
		map = p[1] & 0x1f;
		opc = p[3];
		modrm = p[4];
	} else {
		return;
	}
	r = ((modrm >> 3) & 7) | (p[1] & 0x80 ? 0 : 8);
	if (map == 1 && (opc == 0x90 || opc == 0x91 || opc == 0x92 ||
			 opc == 0x93 || opc == 0x98 || opc == 0x99 ||
			 (opc >= 0x41 && opc <= 0x4b))) {
		out->wr = opc == 0x93 ? (uint16_t)(1u << r) : 0;
		out->clobber = opc == 0x91 && (modrm >> 6) != 3;
	} else if (map == 3 && opc >= 0x30 && opc <= 0x33 && (modrm >> 6) == 3) {
		out->wr = 0;     /* kshift */
		out->clobber = 0;
	}
}

/* Decode the instruction at @ip into @out (what it reads and writes). */
static void decode_one(struct bt_ctx *c, cs_insn *ci, uint64_t ip,
		       struct vinsn *out)
{
	size_t avail;
	const uint8_t *p = bt_image_bytes(c, ip, &avail);
	const uint8_t *code = p;
	uint64_t addr = ip;
	cs_regs rr, ww;
	uint8_t nr = 0, nw = 0;

	memset(out, 0, sizeof(*out));
	out->ip = ip;
	if (avail > 16)
		avail = 16;
	if (!p || !c->cs_ok || !cs_disasm_iter(c->cs, &code, &avail, &addr, ci)) {
		/* not known: it may write anything */
		const struct bt_insn_info *ii = bt_insn_classify(c, ip);
		out->size = ii->size;
		raw_effects(ii->size ? p : NULL, avail, out);
		return;
	}
	const cs_x86 *x = &ci->detail->x86;
	out->id = ci->id;
	out->size = (uint8_t)ci->size;
	out->rep = x->prefix[0] == X86_PREFIX_REP ||
		   x->prefix[0] == X86_PREFIX_REPNE;
	if (cs_regs_access(c->cs, ci, rr, &nr, ww, &nw) == CS_ERR_OK) {
		for (unsigned i = 0; i < nr; i++) {
			int g = gpr_of(rr[i], NULL, NULL);
			if (g >= 0)
				out->rd |= (uint16_t)(1u << g);
		}
		for (unsigned i = 0; i < nw; i++) {
			int g = gpr_of(ww[i], NULL, NULL);
			if (g >= 0)
				out->wr |= (uint16_t)(1u << g);
		}
	} else {
		out->wr = 0xffff;
		out->clobber = 1;
	}
	out->wr |= implicit_writes(ci->id);
	out->nop = x->op_count < 4 ? x->op_count : 4;
	for (unsigned i = 0; i < out->nop; i++) {
		const cs_x86_op *o = &x->operands[i];
		struct vop *v = &out->op[i];
		v->type = (uint8_t)o->type;
		v->access = o->access;
		v->width = o->size;
		if (o->type == X86_OP_REG) {
			int g = gpr_of(o->reg, &v->width, &v->hi8);
			v->reg = g >= 0 ? (uint8_t)g : NOREG;
			/* an operand whose access capstone does not give
			 * may be written */
			if (g >= 0 && (!o->access || (o->access & CS_AC_WRITE)))
				out->wr |= (uint16_t)(1u << g);
		} else if (o->type == X86_OP_IMM) {
			v->imm = o->imm;
		} else if (o->type == X86_OP_MEM) {
			int b = -1, ix = -1;
			v->imm = o->mem.disp;
			v->scale = (uint8_t)o->mem.scale;
			if (o->mem.segment == X86_REG_FS || o->mem.segment == X86_REG_GS)
				v->bad = 1;
			if (o->mem.base == X86_REG_RIP) {
				v->rip = 1;
				v->imm = (int64_t)(ip + ci->size) + o->mem.disp;
			} else if (o->mem.base != X86_REG_INVALID) {
				b = gpr_of(o->mem.base, NULL, NULL);
				if (b < 0)
					v->bad = 1;
			}
			if (o->mem.index != X86_REG_INVALID) {
				ix = gpr_of(o->mem.index, NULL, NULL);
				if (ix < 0)
					v->bad = 1;
			}
			v->base = b >= 0 ? (uint8_t)b : NOREG;
			v->index = ix >= 0 ? (uint8_t)ix : NOREG;
			if ((o->access & CS_AC_WRITE) || !o->access) {
				/* a write the facts cannot follow: a rep
				 * string instruction, an unknown size */
				if (out->rep || !o->size || o->size > 64 ||
				    ci->id == X86_INS_LEA || ci->id == X86_INS_NOP)
					out->clobber |= ci->id != X86_INS_LEA &&
							ci->id != X86_INS_NOP;
			}
		}
	}
	switch (ci->id) {
	case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_INT:
	case X86_INS_INT1: case X86_INS_INT3: case X86_INS_INTO:
	case X86_INS_XSAVE: case X86_INS_XSAVEC: case X86_INS_XSAVEOPT:
	case X86_INS_XSAVES: case X86_INS_FXSAVE: case X86_INS_FXSAVE64:
	case X86_INS_XSAVE64: case X86_INS_XSAVEC64: case X86_INS_XSAVEOPT64:
	case X86_INS_XSAVES64: case X86_INS_ENTER: case X86_INS_PUSHAL:
		out->clobber = 1;
		break;
	}
	/* far transfers other than a system call: anything */
	if (ci->id != X86_INS_SYSCALL &&
	    bt_insn_classify(c, ip)->cls == BTRACE_INSN_FAR) {
		out->wr = 0xffff;
		out->clobber = 1;
	}
}

/* --- state --- */

static int kn(const struct vstate *s, size_t i, unsigned r)
{
	return (s->kn[i] >> r) & 1;
}

static uint64_t get(const struct vstate *s, size_t i, unsigned r)
{
	return s->val[i * NR + r];
}

static void set(struct vstate *s, size_t i, unsigned r, uint64_t v)
{
	if (r >= NR)
		return;
	if (kn(s, i, r)) {
		if (get(s, i, r) != v)
			s->conflicts++;
		return;
	}
	s->val[i * NR + r] = v;
	s->kn[i] |= (uint16_t)(1u << r);
	s->changed = 1;
}

static uint64_t mask_of(unsigned width)
{
	return width >= 8 ? ~0ull : (1ull << (8 * width)) - 1;
}

static uint64_t sext(uint64_t v, unsigned width)
{
	if (width >= 8)
		return v;
	uint64_t m = 1ull << (8 * width - 1);
	v &= mask_of(width);
	return (v ^ m) - m;
}

/* Value of a register operand before instruction @i. */
static int reg_val(const struct vstate *s, size_t i, const struct vop *o,
		   uint64_t *v)
{
	if (o->reg == NOREG || !kn(s, i, o->reg))
		return 0;
	uint64_t x = get(s, i, o->reg);
	*v = o->hi8 ? (x >> 8) & 0xff : x & mask_of(o->width);
	return 1;
}

/* The address of a memory operand in state @i. */
static int addr_of(const struct vstate *s, size_t i, const struct vop *o,
		   uint64_t *a)
{
	uint64_t x = (uint64_t)o->imm;

	if (o->type != X86_OP_MEM || o->bad)
		return 0;
	if (o->base != NOREG) {
		if (!kn(s, i, o->base))
			return 0;
		x += get(s, i, o->base);
	}
	if (o->index != NOREG) {
		if (!kn(s, i, o->index))
			return 0;
		x += get(s, i, o->index) * o->scale;
	}
	*a = x;
	return 1;
}

/* Write @v to register operand @o in state @i + 1 (the rest of the
 * register from state @i for a byte or word). */
static void put(struct vstate *s, size_t i, const struct vop *o, uint64_t v)
{
	if (o->reg == NOREG)
		return;
	if (o->width == 8) {
		set(s, i + 1, o->reg, v);
	} else if (o->width == 4) {
		set(s, i + 1, o->reg, v & 0xffffffffull);
	} else if (kn(s, i, o->reg)) {
		uint64_t old = get(s, i, o->reg);
		uint64_t m = o->hi8 ? 0xff00ull : mask_of(o->width);
		uint64_t nv = o->hi8 ? (v & 0xff) << 8 : v & m;
		set(s, i + 1, o->reg, (old & ~m) | nv);
	}
}

/* --- memory facts (the thread's stack) --- */

static int in_stack(const struct vstate *s, uint64_t a, unsigned size)
{
	return s->stk_hi && a >= s->stk_lo && a + size <= s->stk_hi &&
	       a + size > a;
}

/* The snapshot's memory at [a, a + size) when nothing stored there since:
 * 1 and *@v. */
static int snap_get(const struct facts *f, uint64_t a, unsigned size,
		    uint64_t *v)
{
	const struct btrace_snapshot *sn = f->snap;

	if (!sn || size > 8 || !size)
		return 0;
	for (size_t k = 0; k < f->nkilled; k++)
		if (a < f->killed[k].addr + f->killed[k].size &&
		    f->killed[k].addr < a + size)
			return 0;
	for (size_t k = 0; k < sn->nmemory; k++) {
		const struct btrace_memory *m = &sn->memory[k];
		if (a < m->vaddr || a - m->vaddr > m->size ||
		    m->size - (a - m->vaddr) < size)
			continue;
		uint64_t x = 0;
		for (unsigned b = 0; b < size; b++)
			x |= (uint64_t)m->data[a - m->vaddr + b] << (8 * b);
		*v = x;
		return 1;
	}
	return 0;
}

static int fact_get(const struct facts *f, uint64_t a, unsigned size,
		    uint64_t *v)
{
	for (size_t k = 0; k < f->n; k++)
		if (f->f[k].addr == a && f->f[k].size == size) {
			*v = f->f[k].val;
			return 1;
		}
	return snap_get(f, a, size, v);
}

/* Nothing is known of memory any more. */
static void fact_clear(struct facts *f)
{
	f->n = 0;
	f->snap = NULL;
}

static void fact_kill(struct facts *f, uint64_t a, unsigned size)
{
	size_t w = 0;

	int in_snap = 0;

	for (size_t k = 0; f->snap && k < f->snap->nmemory; k++)
		in_snap |= a < f->snap->memory[k].vaddr + f->snap->memory[k].size &&
			   f->snap->memory[k].vaddr < a + size;
	if (in_snap) {
		if (f->nkilled == MAX_FACTS)
			f->snap = NULL;
		else
			f->killed[f->nkilled++] = (struct fact){ a, 0, (uint8_t)size };
	}

	for (size_t k = 0; k < f->n; k++)
		if (f->f[k].addr + f->f[k].size <= a || a + size <= f->f[k].addr)
			f->f[w++] = f->f[k];
	f->n = w;
}

static void fact_set(const struct vstate *s, struct facts *f, uint64_t a,
		     unsigned size, uint64_t v)
{
	if (!in_stack(s, a, size))
		return;
	fact_kill(f, a, size);
	if (f->n == MAX_FACTS) {
		memmove(f->f, f->f + 1, (f->n - 1) * sizeof(f->f[0]));
		f->n--;
	}
	f->f[f->n++] = (struct fact){ a, v & mask_of(size), (uint8_t)size };
}

/*
 * What instruction @i stores: *@a, *@size, and the value (*@has_v, *@v)
 * before it runs (state @i).  0: it stores nothing a fact can follow
 * (then every write to memory it makes is dealt with by the caller).
 */
static int store_of(const struct vstate *s, size_t i, uint64_t *a,
		    unsigned *size, int *has_v, uint64_t *v, int *src_reg)
{
	const struct vinsn *in = &s->in[i];
	const struct vop *o0 = &in->op[0], *o1 = &in->op[1];

	*has_v = 0;
	*src_reg = -1;
	switch (in->id) {
	case X86_INS_PUSH:
		if (!kn(s, i, BTRACE_VREG_RSP) || in->nop != 1)
			return 0;
		*a = get(s, i, BTRACE_VREG_RSP) - 8;
		*size = 8;
		if (o0->type == X86_OP_REG && o0->width == 8 && o0->reg != NOREG) {
			*src_reg = o0->reg;
			*has_v = reg_val(s, i, o0, v);
		}
		/* push imm: its sign extension is not followed */
		return 1;
	case X86_INS_CALL:
		if (!kn(s, i, BTRACE_VREG_RSP))
			return 0;
		*a = get(s, i, BTRACE_VREG_RSP) - 8;
		*size = 8;
		*v = in->ip + in->size;
		*has_v = 1;
		return 1;
	case X86_INS_MOV:
		if (in->nop != 2 || o0->type != X86_OP_MEM ||
		    !addr_of(s, i, o0, a))
			return 0;
		*size = o0->width;
		if (o1->type == X86_OP_REG && o1->reg != NOREG &&
		    o1->width == o0->width) {
			if (o1->width == 8)
				*src_reg = o1->reg;
			*has_v = reg_val(s, i, o1, v);
		} else if (o1->type == X86_OP_IMM) {
			*v = (uint64_t)o1->imm & mask_of(o0->width);
			*has_v = 1;
		}
		return 1;
	}
	return 0;
}

/* The memory writes of @i other than store_of()'s: kill what they may
 * change in @f. */
static void other_writes(const struct vstate *s, size_t i, struct facts *f,
			 int stored)
{
	const struct vinsn *in = &s->in[i];
	uint64_t a;

	if (in->clobber) {
		fact_clear(f);
		return;
	}
	if (stored)
		return;
	for (unsigned k = 0; k < in->nop; k++) {
		const struct vop *o = &in->op[k];
		if (o->type != X86_OP_MEM || in->id == X86_INS_LEA ||
		    in->id == X86_INS_NOP ||
		    (o->access && !(o->access & CS_AC_WRITE)))
			continue;
		if (addr_of(s, i, o, &a))
			fact_kill(f, a, o->width);
		else
			fact_clear(f);
	}
	/* push of memory, and the like (a call whose stack pointer is not
	 * known): a store at rsp - 8 */
	if (in->id == X86_INS_PUSH || in->id == X86_INS_PUSHFQ ||
	    in->id == X86_INS_CALL) {
		if (kn(s, i, BTRACE_VREG_RSP))
			fact_kill(f, get(s, i, BTRACE_VREG_RSP) - 8, 8);
		else
			fact_clear(f);
	}
}

/*
 * What instruction @i loads into a register as is (mov, movzx, pop,
 * leave's rbp): the address, size, the destination (register, width, how
 * the value is extended).  0: none.
 */
static int load_of(const struct vstate *s, size_t i, uint64_t *a,
		   unsigned *size, const struct vop **dst, int *sign,
		   unsigned *dreg)
{
	const struct vinsn *in = &s->in[i];
	const struct vop *o0 = &in->op[0], *o1 = &in->op[1];

	*sign = 0;
	*dst = NULL;
	switch (in->id) {
	case X86_INS_POP:
		if (in->nop != 1 || o0->type != X86_OP_REG || o0->reg == NOREG ||
		    o0->width != 8 || o0->reg == BTRACE_VREG_RSP ||
		    !kn(s, i, BTRACE_VREG_RSP))
			return 0;
		*a = get(s, i, BTRACE_VREG_RSP);
		*size = 8;
		*dreg = o0->reg;
		*dst = o0;
		return 1;
	case X86_INS_LEAVE:
		if (!kn(s, i, BTRACE_VREG_RBP))
			return 0;
		*a = get(s, i, BTRACE_VREG_RBP);
		*size = 8;
		*dreg = BTRACE_VREG_RBP;
		return 1;
	case X86_INS_MOV: case X86_INS_MOVZX: case X86_INS_MOVSX:
	case X86_INS_MOVSXD:
		if (in->nop != 2 || o0->type != X86_OP_REG || o0->reg == NOREG ||
		    o1->type != X86_OP_MEM || o0->hi8 || o0->width < 4 ||
		    !addr_of(s, i, o1, a))
			return 0;
		*size = o1->width;
		if (*size > o0->width || !*size)
			return 0;
		*sign = in->id == X86_INS_MOVSX || in->id == X86_INS_MOVSXD;
		*dreg = o0->reg;
		*dst = o0;
		return 1;
	}
	return 0;
}

/* The loaded value @m (@size bytes) as the destination register holds it. */
static uint64_t loaded(uint64_t m, unsigned size, const struct vop *dst,
		       int sign)
{
	uint64_t v = sign ? sext(m, size) : m & mask_of(size);

	return dst && dst->width == 4 ? v & 0xffffffffull : v;
}

/* The memory relation of @i, with @f the facts about memory before it
 * (forwards) or after it (backwards: @back). */
static void mem_step(struct vstate *s, size_t i, struct facts *f, int back)
{
	const struct vinsn *in = &s->in[i];
	uint64_t a, v, m;
	unsigned size, dreg;
	int has_v, sign, src;
	const struct vop *dst;

	if (!s->stk_hi) {
		/* no stack known: no facts, but loads of known values still
		 * go nowhere */
		return;
	}
	if (load_of(s, i, &a, &size, &dst, &sign, &dreg) && in_stack(s, a, size)) {
		/* memory is the same before and after a load */
		if (fact_get(f, a, size, &m)) {
			if (dreg == BTRACE_VREG_RBP && in->id == X86_INS_LEAVE)
				set(s, i + 1, dreg, m);
			else
				put(s, i, dst, loaded(m, size, dst, sign));
		} else if (kn(s, i + 1, dreg) &&
			   !(dst && dst->width == 4 && size == 8)) {
			/* the register after it tells the memory */
			fact_set(s, f, a, size, get(s, i + 1, dreg));
		}
	}
	int st = store_of(s, i, &a, &size, &has_v, &v, &src);
	if (!back) {
		other_writes(s, i, f, st);
		if (st) {
			if (has_v)
				fact_set(s, f, a, size, v);
			else
				fact_kill(f, a, size);
		}
	} else {
		if (st && src >= 0 && size == 8 && fact_get(f, a, 8, &m) &&
		    !((s->in[i].wr >> src) & 1))
			set(s, i, (unsigned)src, m);
		if (st)
			fact_kill(f, a, size);
		other_writes(s, i, f, st);
	}
	if (in->id == X86_INS_SYSCALL || in->clobber)
		fact_clear(f);
}

/* --- register relations --- */

/* The value of source operand @o in state @i (a memory source: a fact
 * about the stack, @f). */
static int src_val(const struct vstate *s, size_t i, const struct vop *o,
		   const struct facts *f, uint64_t *v)
{
	uint64_t a;

	switch (o->type) {
	case X86_OP_REG:
		return reg_val(s, i, o, v);
	case X86_OP_IMM:
		*v = (uint64_t)o->imm & mask_of(o->width ? o->width : 8);
		return 1;
	case X86_OP_MEM:
		if (!f || !addr_of(s, i, o, &a) || !in_stack(s, a, o->width))
			return 0;
		return fact_get(f, a, o->width, v);
	}
	return 0;
}

/* Shift/rotate count operand value (masked as the CPU does). */
static int count_of(const struct vstate *s, size_t i, const struct vinsn *in,
		    unsigned width, unsigned *cnt)
{
	uint64_t v = 1;

	if (in->nop >= 2 && !src_val(s, i, &in->op[1], NULL, &v))
		return 0;
	*cnt = (unsigned)(v & (width == 8 ? 63 : 31));
	return 1;
}

/*
 * The registers a system call may change: rax, rcx and r11 when its number
 * (rax before it) is known and not one that sets every register
 * (rt_sigreturn restores them from the signal frame; clone, fork, vfork,
 * execve, execveat and clone3 start a new context); every register
 * otherwise.
 */
static uint16_t syscall_writes(const struct vstate *s, size_t i)
{
	if (!kn(s, i, BTRACE_VREG_RAX))
		return 0xffff;
	switch (get(s, i, BTRACE_VREG_RAX)) {
	case 15: case 56: case 57: case 58: case 59: case 322: case 435:
		return 0xffff;
	}
	return s->in[i].wr;
}

/*
 * What the path says a compare found: a je taken (or a jne not taken, the
 * path goes on where it went) right after cmp r64, imm / cmp r64, r64 /
 * test r64, r64 means the operands were equal (the tested register 0).
 * Sets the registers in state @i (before the jump @i; the compare wrote no
 * general-purpose register).
 */
/* Register @r holds a zero-extended 32-bit value before instruction @i:
 * its last writer on the path (close before) wrote it as a 32-bit
 * destination (not bsf/bsr, which leave it as it was for a source 0). */
static int upper_zero(const struct vstate *s, size_t i, unsigned r)
{
	for (size_t k = i; k-- > 0 && i - k <= 64;) {
		const struct vinsn *w = &s->in[k];
		if (!((w->wr >> r) & 1))
			continue;
		return w->id && w->id != X86_INS_XCHG && w->id != X86_INS_CMPXCHG &&
		       w->id != X86_INS_XADD && w->id != X86_INS_BSF &&
		       w->id != X86_INS_BSR && w->nop >= 1 &&
		       w->op[0].type == X86_OP_REG && w->op[0].reg == r &&
		       w->op[0].width == 4 && !w->op[0].hi8 &&
		       (w->op[0].access & CS_AC_WRITE) &&
		       !((implicit_writes(w->id) >> r) & 1);
	}
	return 0;
}

static void branch_facts(struct vstate *s, size_t i)
{
	const struct vinsn *j = &s->in[i], *c;
	uint64_t next;

	if (!i || (j->id != X86_INS_JE && j->id != X86_INS_JNE) || j->nop != 1 ||
	    j->op[0].type != X86_OP_IMM)
		return;
	c = &s->in[i - 1];
	next = i + 1 < s->n ? s->in[i + 1].ip : s->fault_ip;
	if (!next)
		return;
	int taken = next == (uint64_t)j->op[0].imm &&
		    next != j->ip + j->size;
	int fall = next == j->ip + j->size && next != (uint64_t)j->op[0].imm;
	if (!(j->id == X86_INS_JE ? taken : fall))
		return;
	if (c->nop != 2 || c->op[0].type != X86_OP_REG || c->op[0].reg == NOREG ||
	    c->op[0].hi8 || (c->op[0].width != 8 && c->op[0].width != 4))
		return;
	unsigned r0 = c->op[0].reg;
	const struct vop *o1 = &c->op[1];
	if (c->op[0].width == 4) {
		/* the low half is what was compared: the whole register
		 * when its upper half is known to be zero */
		if (!upper_zero(s, i - 1, r0))
			return;
		if (c->id == X86_INS_TEST && o1->type == X86_OP_REG && o1->reg == r0)
			set(s, i, r0, 0);
		else if (c->id == X86_INS_CMP && o1->type == X86_OP_IMM)
			set(s, i, r0, (uint64_t)o1->imm & 0xffffffffull);
		return;
	}
	if (c->id == X86_INS_TEST && o1->type == X86_OP_REG && o1->reg == r0) {
		set(s, i, r0, 0);
	} else if (c->id == X86_INS_CMP && o1->type == X86_OP_IMM) {
		set(s, i, r0, (uint64_t)o1->imm);
	} else if (c->id == X86_INS_CMP && o1->type == X86_OP_REG &&
		   o1->reg != NOREG && o1->width == 8) {
		if (kn(s, i, o1->reg))
			set(s, i, r0, get(s, i, o1->reg));
		else if (kn(s, i, r0))
			set(s, i, o1->reg, get(s, i, r0));
	}
}

/*
 * The relation of instruction @i between states @i and @i + 1 (both
 * directions).  @f: facts about memory before it (forward pass) or after
 * it (backward pass); a load is the same either way.
 */
static void relate(struct vstate *s, size_t i, const struct facts *f)
{
	const struct vinsn *in = &s->in[i];
	const struct vop *d = &in->op[0], *o1 = &in->op[1];
	uint64_t x, y, a;
	unsigned rsp = BTRACE_VREG_RSP;
	uint16_t wr = in->id == X86_INS_SYSCALL ? syscall_writes(s, i) : in->wr;

	branch_facts(s, i);
	/* registers it does not write are the same on both sides */
	for (unsigned r = 0; r < NR; r++) {
		if ((wr >> r) & 1)
			continue;
		if (kn(s, i, r))
			set(s, i + 1, r, get(s, i, r));
		else if (kn(s, i + 1, r))
			set(s, i, r, get(s, i + 1, r));
	}
	if (wr == 0xffff)
		return;
	int dreg = in->nop >= 1 && d->type == X86_OP_REG ? d->reg : NOREG;
	int full = dreg != NOREG && d->width == 8;

	switch (in->id) {
	case X86_INS_MOV: case X86_INS_MOVABS:
		if (in->nop != 2 || dreg == NOREG)
			break;
		if (src_val(s, i, o1, f, &x))
			put(s, i, d, x);
		/* mov r64, r64: the source before is the destination after;
		 * mov r32, r32 too when the source's upper half is zero */
		if (full && o1->type == X86_OP_REG && o1->reg != NOREG &&
		    o1->width == 8 && kn(s, i + 1, dreg))
			set(s, i, o1->reg, get(s, i + 1, dreg));
		else if (d->width == 4 && o1->type == X86_OP_REG &&
			 o1->reg != NOREG && o1->width == 4 && !o1->hi8 &&
			 kn(s, i + 1, dreg) && upper_zero(s, i, o1->reg))
			set(s, i, o1->reg, get(s, i + 1, dreg) & 0xffffffffull);
		break;
	case X86_INS_MOVZX:
		if (in->nop == 2 && dreg != NOREG && src_val(s, i, o1, f, &x))
			put(s, i, d, x & mask_of(o1->width));
		break;
	case X86_INS_MOVSX: case X86_INS_MOVSXD:
		if (in->nop == 2 && dreg != NOREG && src_val(s, i, o1, f, &x))
			put(s, i, d, sext(x, o1->width));
		break;
	case X86_INS_CDQE:
		if (kn(s, i, 0))
			set(s, i + 1, 0, sext(get(s, i, 0), 4));
		break;
	case X86_INS_CQO:
		if (kn(s, i, 0))
			set(s, i + 1, 2, (int64_t)get(s, i, 0) < 0 ? ~0ull : 0);
		break;
	case X86_INS_CDQ:
		if (kn(s, i, 0))
			set(s, i + 1, 2, (get(s, i, 0) & 0x80000000u) ? 0xffffffffull : 0);
		break;
	case X86_INS_LEA:
		if (dreg == NOREG || o1->type != X86_OP_MEM || o1->bad)
			break;
		if (addr_of(s, i, o1, &a)) {
			put(s, i, d, a);
		} else if (full && kn(s, i + 1, dreg) && !o1->rip) {
			/* lea d, [b + k*x + disp] with one of b, x not known
			 * (scale 1 for x): it is d after minus the rest */
			uint64_t rest = (uint64_t)o1->imm;
			int nb = o1->base != NOREG && !kn(s, i, o1->base);
			int nx = o1->index != NOREG && !kn(s, i, o1->index);
			if (nb + nx != 1 || o1->base == o1->index)
				break;
			if (o1->base != NOREG && !nb)
				rest += get(s, i, o1->base);
			if (o1->index != NOREG && !nx)
				rest += get(s, i, o1->index) * o1->scale;
			if (nb)
				set(s, i, o1->base, get(s, i + 1, dreg) - rest);
			else if (o1->scale == 1)
				set(s, i, o1->index, get(s, i + 1, dreg) - rest);
		}
		break;
	case X86_INS_ADD: case X86_INS_SUB: case X86_INS_XOR:
	case X86_INS_AND: case X86_INS_OR: {
		if (in->nop != 2 || dreg == NOREG)
			break;
		int same = o1->type == X86_OP_REG && o1->reg == dreg;
		if (same && (in->id == X86_INS_XOR || in->id == X86_INS_SUB)) {
			put(s, i, d, 0);
			break;
		}
		int hy = src_val(s, i, o1, f, &y);
		if (hy && o1->type == X86_OP_IMM)
			y = (uint64_t)sext(y, o1->width ? o1->width : 8);
		if (hy && reg_val(s, i, d, &x)) {
			uint64_t r = in->id == X86_INS_ADD ? x + y :
				     in->id == X86_INS_SUB ? x - y :
				     in->id == X86_INS_XOR ? x ^ y :
				     in->id == X86_INS_AND ? x & y : x | y;
			put(s, i, d, r & mask_of(d->width));
		} else if (hy && in->id == X86_INS_AND && !(y & mask_of(d->width))) {
			put(s, i, d, 0);
		}
		/* invert: the destination before from after (a 32-bit one
		 * when its upper half was zero before) */
		if ((full || (d->width == 4 && upper_zero(s, i, dreg))) && hy &&
		    !same && kn(s, i + 1, dreg)) {
			uint64_t o = get(s, i + 1, dreg), m = mask_of(d->width);
			if (in->id == X86_INS_ADD)
				set(s, i, dreg, (o - y) & m);
			else if (in->id == X86_INS_SUB)
				set(s, i, dreg, (o + y) & m);
			else if (in->id == X86_INS_XOR)
				set(s, i, dreg, (o ^ y) & m);
		}
		break;
	}
	case X86_INS_INC: case X86_INS_DEC: case X86_INS_NEG: case X86_INS_NOT:
		if (dreg == NOREG)
			break;
		if (reg_val(s, i, d, &x)) {
			uint64_t r = in->id == X86_INS_INC ? x + 1 :
				     in->id == X86_INS_DEC ? x - 1 :
				     in->id == X86_INS_NEG ? 0 - x : ~x;
			put(s, i, d, r & mask_of(d->width));
		}
		if ((full || (d->width == 4 && upper_zero(s, i, dreg))) &&
		    kn(s, i + 1, dreg)) {
			uint64_t o = get(s, i + 1, dreg), m = mask_of(d->width);
			set(s, i, dreg, (in->id == X86_INS_INC ? o - 1 :
					 in->id == X86_INS_DEC ? o + 1 :
					 in->id == X86_INS_NEG ? 0 - o : ~o) & m);
		}
		break;
	case X86_INS_SHL: case X86_INS_SHR: case X86_INS_SAR: {
		unsigned cnt;
		if (dreg == NOREG || (d->width != 8 && d->width != 4) ||
		    !count_of(s, i, in, d->width, &cnt) || !reg_val(s, i, d, &x))
			break;
		uint64_t r = in->id == X86_INS_SHL ? x << cnt :
			     in->id == X86_INS_SHR ? x >> cnt :
			     (uint64_t)((int64_t)sext(x, d->width) >> cnt);
		put(s, i, d, r & mask_of(d->width));
		break;
	}
	case X86_INS_IMUL:
		if (dreg == NOREG || (d->width != 8 && d->width != 4) || in->nop < 2)
			break;
		if (in->nop == 2 && reg_val(s, i, d, &x) && src_val(s, i, o1, f, &y))
			put(s, i, d, (x * y) & mask_of(d->width));
		else if (in->nop == 3 && src_val(s, i, o1, f, &x) &&
			 src_val(s, i, &in->op[2], NULL, &y))
			put(s, i, d, (x * sext(y, in->op[2].width)) &
				     mask_of(d->width));
		break;
	case X86_INS_XCHG:
		if (in->nop == 2 && full && o1->type == X86_OP_REG &&
		    o1->reg != NOREG && o1->width == 8) {
			unsigned r0 = (unsigned)dreg, r1 = o1->reg;
			if (r0 == r1) {
				if (kn(s, i, r0))
					set(s, i + 1, r0, get(s, i, r0));
				else if (kn(s, i + 1, r0))
					set(s, i, r0, get(s, i + 1, r0));
				break;
			}
			if (kn(s, i, r0)) set(s, i + 1, r1, get(s, i, r0));
			if (kn(s, i, r1)) set(s, i + 1, r0, get(s, i, r1));
			if (kn(s, i + 1, r0)) set(s, i, r1, get(s, i + 1, r0));
			if (kn(s, i + 1, r1)) set(s, i, r0, get(s, i + 1, r1));
		}
		break;
	case X86_INS_SYSCALL:
		/* rcx: where it returns */
		set(s, i + 1, BTRACE_VREG_RCX, in->ip + in->size);
		break;
	}

	/* the stack pointer */
	int64_t dsp = 0;
	int sp_ok = 1;
	switch (in->id) {
	case X86_INS_PUSH: case X86_INS_CALL: case X86_INS_PUSHFQ:
		dsp = -8;
		break;
	case X86_INS_POP:
		sp_ok = !(dreg == (int)rsp);
		dsp = 8;
		break;
	case X86_INS_POPFQ:
		dsp = 8;
		break;
	case X86_INS_RET:
		dsp = 8 + (in->nop == 1 && d->type == X86_OP_IMM ? d->imm : 0);
		break;
	case X86_INS_LEAVE:
		sp_ok = 0;
		if (kn(s, i, BTRACE_VREG_RBP))
			set(s, i + 1, rsp, get(s, i, BTRACE_VREG_RBP) + 8);
		if (kn(s, i + 1, rsp))
			set(s, i, BTRACE_VREG_RBP, get(s, i + 1, rsp) - 8);
		break;
	default:
		sp_ok = 0;
	}
	if (sp_ok) {
		if (kn(s, i, rsp))
			set(s, i + 1, rsp, get(s, i, rsp) + (uint64_t)dsp);
		if (kn(s, i + 1, rsp))
			set(s, i, rsp, get(s, i + 1, rsp) - (uint64_t)dsp);
	}
	/* push/pop: the value pushed and popped */
	if (in->id == X86_INS_POP && dreg != NOREG && dreg != (int)rsp && f &&
	    kn(s, i, rsp) && fact_get(f, get(s, i, rsp), 8, &x))
		set(s, i + 1, (unsigned)dreg, x);
}

/* Forward and backward passes until nothing changes. */
static void solve(struct vstate *s)
{
	for (int pass = 0; pass < 64; pass++) {
		s->changed = 0;
		fact_clear(s->mem);
		for (size_t i = 0; i < s->n; i++) {
			relate(s, i, s->mem);
			mem_step(s, i, s->mem, 0);
			relate(s, i, s->mem);
		}
		fact_clear(s->mem);
		/* backwards from the fault: memory is the snapshot's */
		s->mem->snap = s->snap_mem;
		s->mem->nkilled = 0;
		for (size_t i = s->n; i-- > 0;) {
			relate(s, i, s->mem);
			mem_step(s, i, s->mem, 1);
			relate(s, i, s->mem);
		}
		if (!s->changed)
			break;
	}
}

/* --- the path --- */

/* The instructions of the straight run before the end of @t's history
 * before the fault: ips into *@out (oldest first), at most @max. */
static int collect(struct bt_ctx *c, const struct btrace_thread *t,
		   uint64_t max, uint64_t **out, size_t *n)
{
	const struct btrace_fault *ft = &t->fault;
	/* a per-CPU buffer interleaves threads: no single path */
	size_t end = t->tid < 0 ? 0 : ft->found && ft->block_index < t->nblocks ?
		     (size_t)ft->block_index : t->nblocks;
	size_t first = end, total = 0;

	*out = NULL;
	*n = 0;
	/* back to the first item that breaks the run */
	while (first > 0 && total < max) {
		const struct btrace_block *b = &t->blocks[first - 1];
		if (b->kind == BTRACE_ITEM_FAR) {
			/* a system call (or another far transfer: its
			 * instruction then writes everything) */
			first--;
			continue;
		}
		if (b->kind != BTRACE_ITEM_BLOCK)
			break;
		total += b->ninsn;
		first--;
	}
	uint64_t *ip = malloc((total + 1) * sizeof(*ip));
	size_t k = 0;
	if (!ip)
		return -ENOMEM;
	for (size_t j = first; j < end; j++) {
		const struct btrace_block *b = &t->blocks[j];
		uint64_t a = b->ip;
		if (b->kind != BTRACE_ITEM_BLOCK)
			continue;
		for (uint32_t m = 0; m < b->ninsn && k < total; m++) {
			const struct bt_insn_info *ii = bt_insn_classify(c, a);
			ip[k++] = a;
			if (!ii->size) {
				/* no code: the path starts after it */
				k = 0;
				break;
			}
			a += ii->size;
		}
	}
	if (k > max) {
		memmove(ip, ip + (k - max), max * sizeof(*ip));
		k = (size_t)max;
	}
	*out = ip;
	*n = k;
	return 0;
}

/* --- the origin --- */

static void link_sym(struct bt_ctx *c, struct btrace_origin_link *l)
{
	struct btrace_insn in;

	l->sym = *bt_syms_lookup(c, l->ip);
	if (bt_insn_disasm(c, l->ip, &in) == 0)
		snprintf(l->insn, sizeof(l->insn), "%s", in.text);
}

/* "greet+0x10 (crashdemo.c:38)" */
static void where(struct bt_ctx *c, uint64_t ip, char *buf, size_t len)
{
	const struct btrace_symbol *s = bt_syms_lookup(c, ip);
	const char *fn = s->outer ? s->outer : s->function;
	const char *file = s->file ? strrchr(s->file, '/') : NULL;

	file = file ? file + 1 : s->file;
	if (fn && file && s->line)
		snprintf(buf, len, "%s (%s:%d)", fn, file, s->line);
	else if (fn)
		snprintf(buf, len, "%s+0x%llx", fn, (unsigned long long)s->offset);
	else
		snprintf(buf, len, "0x%llx", (unsigned long long)ip);
}

static const char *fname(struct bt_ctx *c, uint64_t ip)
{
	const struct btrace_symbol *s = bt_syms_lookup(c, ip);
	const char *fn = s->outer ? s->outer : s->function;

	return fn ? fn : "a function";
}

static struct btrace_origin_link *add_link(struct bt_values *v,
					   struct bt_ctx *c, uint64_t ip,
					   uint32_t kind)
{
	struct btrace_origin *o = &v->pub.origin;
	struct btrace_origin_link *l;

	if (o->nchain >= MAX_CHAIN)
		return NULL;
	l = &v->chain[o->nchain++];
	memset(l, 0, sizeof(*l));
	l->ip = ip;
	l->kind = kind;
	l->reg = -1;
	link_sym(c, l);
	return l;
}

/* The rets between the writer @j and the use @u that carried the value
 * out of the writer's function (innermost first), as links. */
static void return_links(struct bt_values *v, const struct vstate *s,
			 size_t j, size_t u, unsigned reg)
{
	int32_t lvl = s->in[j].depth, low = lvl;
	size_t rets[MAX_CHAIN];
	size_t nr = 0;

	for (size_t k = j + 1; k <= u && k < s->n; k++)
		if (s->in[k].depth < low)
			low = s->in[k].depth;
	if (u == s->n && s->n && s->in[s->n - 1].depth < low)
		low = s->in[s->n - 1].depth;
	for (size_t k = j + 1; k < u && lvl > low && nr < MAX_CHAIN; k++)
		if (s->in[k].id == X86_INS_RET && s->in[k].depth == lvl) {
			rets[nr++] = k;
			lvl--;
		}
	/* newest first */
	while (nr--) {
		size_t k = rets[nr];
		uint64_t to = k + 1 < s->n ? s->in[k + 1].ip : 0;
		char w[128];
		struct btrace_origin_link *l = add_link(v, s->c, s->in[k].ip,
							BTRACE_ORIGIN_RETURN);
		if (!l)
			return;
		l->reg = (int32_t)reg;
		if ((l->has_value = kn(s, k + 1, reg)))
			l->value = get(s, k + 1, reg);
		if (to)
			where(s->c, to, w, sizeof(w));
		else
			snprintf(w, sizeof(w), "its caller");
		if (l->has_value)
			snprintf(l->what, sizeof(l->what), "%s returned %s = 0x%llx into %s",
				 fname(s->c, s->in[k].ip), vreg_names[reg],
				 (unsigned long long)l->value, w);
		else
			snprintf(l->what, sizeof(l->what), "%s returned %s into %s",
				 fname(s->c, s->in[k].ip), vreg_names[reg], w);
	}
}

/* The last store to [a, a + size) before @j on the path with nothing in
 * between that may have changed it: its index, SIZE_MAX none. */
static size_t store_before(struct vstate *s, size_t j, uint64_t a,
			   unsigned size, int *src)
{
	for (size_t k = j; k-- > 0;) {
		const struct vinsn *in = &s->in[k];
		uint64_t sa, sv;
		unsigned ss;
		int hv;
		if (in->clobber || in->id == X86_INS_SYSCALL)
			return SIZE_MAX;
		if (store_of(s, k, &sa, &ss, &hv, &sv, src)) {
			if (sa == a && ss == size)
				return k;
			if (sa < a + size && a < sa + ss)
				return SIZE_MAX;
			continue;
		}
		/* any other write to memory that may overlap */
		for (unsigned m = 0; m < in->nop; m++) {
			const struct vop *o = &in->op[m];
			uint64_t oa;
			if (o->type != X86_OP_MEM || in->id == X86_INS_LEA ||
			    in->id == X86_INS_NOP ||
			    (o->access && !(o->access & CS_AC_WRITE)))
				continue;
			if (!addr_of(s, k, o, &oa) ||
			    (oa < a + size && a < oa + o->width))
				return SIZE_MAX;
		}
	}
	return SIZE_MAX;
}

static void describe_value(char *buf, size_t len, const char *lead,
			   const struct btrace_origin_link *l)
{
	if (l->has_value)
		snprintf(buf, len, "%s 0x%llx", lead, (unsigned long long)l->value);
	else
		snprintf(buf, len, "%s", lead);
}

/* Follow register @reg, read at position @u, back to its source. */
static void chain_of(struct bt_values *v, struct vstate *s, unsigned reg,
		     size_t u)
{
	struct btrace_origin *o = &v->pub.origin;

	while (o->nchain < MAX_CHAIN) {
		size_t j = u;
		while (j > 0 && !((s->in[j - 1].wr >> reg) & 1))
			j--;
		if (!j) {
			struct btrace_origin_link *l;
			uint64_t ip = s->n ? s->in[0].ip : 0;
			if (!ip || !(l = add_link(v, s->c, ip, BTRACE_ORIGIN_START)))
				return;
			l->reg = (int32_t)reg;
			if ((l->has_value = kn(s, 0, reg)))
				l->value = get(s, 0, reg);
			snprintf(l->what, sizeof(l->what), "%s was set before the "
				 "start of the history", vreg_names[reg]);
			return;
		}
		j--;
		return_links(v, s, j, u, reg);
		const struct vinsn *in = &s->in[j];
		const struct vop *d = &in->op[0], *o1 = &in->op[1];
		struct btrace_origin_link *l;
		uint64_t a;
		unsigned size, dreg;
		int sign, src;
		const struct vop *dst;
		char lead[96];

		l = add_link(v, s->c, in->ip, BTRACE_ORIGIN_OTHER);
		if (!l)
			return;
		l->reg = (int32_t)reg;
		if ((l->has_value = kn(s, j + 1, reg)))
			l->value = get(s, j + 1, reg);
		int dst_reg = in->nop >= 1 && d->type == X86_OP_REG && d->reg == reg;
		if (in->id == X86_INS_SYSCALL && reg == BTRACE_VREG_RAX) {
			l->kind = BTRACE_ORIGIN_SYSCALL;
			describe_value(l->what, sizeof(l->what),
				       "the result of a system call:", l);
			return;
		}
		if (dst_reg && (((in->id == X86_INS_MOV || in->id == X86_INS_MOVABS) &&
				 in->nop == 2 && o1->type == X86_OP_IMM) ||
				((in->id == X86_INS_XOR || in->id == X86_INS_SUB) &&
				 in->nop == 2 && o1->type == X86_OP_REG &&
				 o1->reg == reg))) {
			l->kind = BTRACE_ORIGIN_CONSTANT;
			describe_value(l->what, sizeof(l->what), "the constant", l);
			return;
		}
		if (load_of(s, j, &a, &size, &dst, &sign, &dreg) && dreg == reg) {
			size_t k = store_before(s, j, a, size, &src);
			l->has_addr = 1;
			l->addr = a;
			if (k != SIZE_MAX && src >= 0) {
				l->kind = BTRACE_ORIGIN_COPY;
				describe_value(lead, sizeof(lead), "loaded back", l);
				snprintf(l->what, sizeof(l->what), "%s from "
					 "[0x%llx] (the stack)", lead,
					 (unsigned long long)a);
				struct btrace_origin_link *st =
					add_link(v, s->c, s->in[k].ip,
						 BTRACE_ORIGIN_STORE);
				if (!st)
					return;
				st->has_addr = 1;
				st->addr = a;
				st->reg = src;
				if ((st->has_value = kn(s, k, (unsigned)src)))
					st->value = get(s, k, (unsigned)src);
				snprintf(st->what, sizeof(st->what), "%s stored "
					 "to [0x%llx]", vreg_names[src],
					 (unsigned long long)a);
				reg = (unsigned)src;
				u = k;
				continue;
			}
			if (k != SIZE_MAX) {
				/* stored as a constant (or the return address) */
				l->kind = BTRACE_ORIGIN_CONSTANT;
				describe_value(l->what, sizeof(l->what),
					       "a constant stored to the stack:", l);
				return;
			}
			l->kind = BTRACE_ORIGIN_LOAD;
			describe_value(lead, sizeof(lead), "loaded", l);
			snprintf(l->what, sizeof(l->what), "%s from memory at "
				 "0x%llx", lead, (unsigned long long)a);
			return;
		}
		if (in->id == X86_INS_MOV && dst_reg && in->nop == 2 &&
		    o1->type == X86_OP_MEM) {
			l->kind = BTRACE_ORIGIN_LOAD;
			describe_value(lead, sizeof(lead), "loaded", l);
			snprintf(l->what, sizeof(l->what), "%s from memory "
				 "(the address is not known)", lead);
			return;
		}
		if (dst_reg && in->nop == 2 && o1->type == X86_OP_REG &&
		    o1->reg != NOREG && o1->reg != reg &&
		    (in->id == X86_INS_MOV || in->id == X86_INS_MOVZX ||
		     in->id == X86_INS_MOVSX || in->id == X86_INS_MOVSXD)) {
			l->kind = BTRACE_ORIGIN_COPY;
			describe_value(lead, sizeof(lead), "copied", l);
			snprintf(l->what, sizeof(l->what), "%s from %s", lead,
				 vreg_names[o1->reg]);
			reg = o1->reg;
			u = j;
			continue;
		}
		if (dst_reg && ((in->nop == 2 && o1->type == X86_OP_IMM &&
				 (in->id == X86_INS_ADD || in->id == X86_INS_SUB ||
				  in->id == X86_INS_AND || in->id == X86_INS_OR ||
				  in->id == X86_INS_XOR || in->id == X86_INS_SHL ||
				  in->id == X86_INS_SHR || in->id == X86_INS_SAR)) ||
				(in->nop == 1 && (in->id == X86_INS_INC ||
				 in->id == X86_INS_DEC || in->id == X86_INS_NEG ||
				 in->id == X86_INS_NOT)))) {
			l->kind = BTRACE_ORIGIN_COMPUTE;
			describe_value(l->what, sizeof(l->what), "computed:", l);
			u = j;
			continue;
		}
		if (in->id == X86_INS_LEA && dst_reg) {
			l->kind = BTRACE_ORIGIN_COMPUTE;
			describe_value(l->what, sizeof(l->what), "an address computed:", l);
			if (o1->base != NOREG && o1->index == NOREG && !o1->rip) {
				reg = o1->base;
				u = j;
				continue;
			}
			if (o1->base == NOREG && o1->index == NOREG)
				l->kind = BTRACE_ORIGIN_CONSTANT;
			return;
		}
		describe_value(l->what, sizeof(l->what), "written:", l);
		return;
	}
}

/* The operand of the faulting instruction the origin is about. */
static void find_origin(struct bt_values *v, struct vstate *s,
			uint64_t fault_ip, cs_insn *ci)
{
	struct btrace_origin *o = &v->pub.origin;
	struct vinsn f;
	int reg = -1;

	if (!fault_ip)
		return;
	decode_one(s->c, ci, fault_ip, &f);
	if (!f.id)
		return;
	for (unsigned k = 0; k < f.nop && reg < 0; k++) {
		const struct vop *op = &f.op[k];
		if (op->type != X86_OP_MEM || op->bad || op->rip)
			continue;
		if (op->base != NOREG && op->base != BTRACE_VREG_RSP) {
			reg = op->base;
			o->role = "base";
		} else if (op->index != NOREG) {
			reg = op->index;
			o->role = "index";
		}
	}
	for (unsigned k = 0; k < f.nop && reg < 0; k++) {
		const struct vop *op = &f.op[k];
		if (op->type == X86_OP_REG && op->reg != NOREG &&
		    (op->access & CS_AC_READ)) {
			reg = op->reg;
			o->role = "operand";
		}
	}
	if (reg < 0)
		return;
	o->found = 1;
	o->reg = reg;
	o->operand = vreg_names[reg];
	if ((o->has_value = kn(s, s->n, (unsigned)reg)))
		o->value = get(s, s->n, (unsigned)reg);
	o->chain = v->chain;
	chain_of(v, s, (unsigned)reg, s->n);
}

/*
 * The snapshot's memory is the memory after the path's last instruction
 * when it is the crashed thread's, taken at the fault: nothing ran after it
 * (no signal handler), and the faulting instruction wrote nothing (no
 * instruction commits a store and then faults, but a rep string
 * instruction may have done some of its iterations).
 */
static const struct btrace_snapshot *memory_at_fault(struct bt_ctx *c,
	const struct btrace_thread *t, cs_insn *ci, uint64_t fault_ip)
{
	const struct btrace_snapshot *sn = c->snap;
	struct vinsn f;

	if (!sn->nmemory || t->fault.after_blocks || t->fault.death_ip ||
	    btrace_snapshot_meta(sn, "qemu.final_signal"))
		return NULL;
	for (size_t k = 0; k < sn->nmemory; k++)
		if (sn->memory[k].tid != t->tid)
			return NULL;
	decode_one(c, ci, fault_ip, &f);
	return f.id && !f.rep ? sn : NULL;
}

/* --- the API --- */

int btrace_values_build(const struct btrace_decode_result *res, size_t thread,
			uint64_t max_insns, struct btrace_values **out,
			struct btrace_error *err)
{
	struct bt_ctx *c;
	const struct btrace_thread *t;
	const struct btrace_signal *sig;
	struct bt_values *v;
	struct vstate s = { 0 };
	uint64_t *ip = NULL;
	size_t n = 0;
	cs_insn *ci = NULL;
	int rc = -ENOMEM;

	bt_error_clear(err);
	if (!res || !out || thread >= res->nthreads)
		return bt_error(err, -EINVAL, "values: invalid argument: %s",
				!res ? "NULL decode result" : !out ?
				"NULL output" : "no such thread");
	*out = NULL;
	/* the context's caches (code, symbols) fill as for any lookup */
	c = bt_result_ctx((struct btrace_decode_result *)(uintptr_t)res);
	t = &res->threads[thread];
	if (!max_insns)
		max_insns = 4096;
	v = calloc(1, sizeof(*v));
	if (!v || collect(c, t, max_insns, &ip, &n) < 0)
		goto oom;
	s.c = c;
	s.n = n;
	s.in = calloc(n + 1, sizeof(*s.in));
	s.val = calloc((n + 1) * NR, sizeof(*s.val));
	s.kn = calloc(n + 1, sizeof(*s.kn));
	s.mem = malloc(sizeof(*s.mem));
	if (c->cs_ok)
		ci = cs_malloc(c->cs);
	if (!s.in || !s.val || !s.kn || !s.mem || (c->cs_ok && !ci))
		goto oom;
	int32_t depth = 0;
	for (size_t i = 0; i < n; i++) {
		decode_one(c, ci, ip[i], &s.in[i]);
		s.in[i].depth = depth;
		if (s.in[i].id == X86_INS_CALL)
			depth++;
		else if (s.in[i].id == X86_INS_RET)
			depth--;
	}
	/* the registers at the fault, when they are the fault's */
	sig = c->snap->signal;
	uint64_t fault_ip = 0;
	if (t->fault.found && t->fault.exact)
		fault_ip = t->fault.ip;
	if (fault_ip && t->crashed && sig && sig->has_regs &&
	    sig->regs[BTRACE_REG_RIP] == fault_ip && sig->tid == t->tid) {
		static const uint8_t map[NR] = {
			BTRACE_REG_RAX, BTRACE_REG_RCX, BTRACE_REG_RDX,
			BTRACE_REG_RBX, BTRACE_REG_RSP, BTRACE_REG_RBP,
			BTRACE_REG_RSI, BTRACE_REG_RDI, BTRACE_REG_R8,
			BTRACE_REG_R9, BTRACE_REG_R10, BTRACE_REG_R11,
			BTRACE_REG_R12, BTRACE_REG_R13, BTRACE_REG_R14,
			BTRACE_REG_R15,
		};
		uint64_t sp = sig->regs[BTRACE_REG_RSP];
		for (unsigned r = 0; r < NR; r++)
			set(&s, n, r, sig->regs[map[r]]);
		for (size_t k = 0; k < c->snap->nmappings; k++) {
			const struct btrace_mapping *m = &c->snap->mappings[k];
			if (sp >= m->start && sp < m->end) {
				s.stk_lo = m->start;
				s.stk_hi = m->end;
			}
		}
		s.snap_mem = memory_at_fault(c, t, ci, fault_ip);
	}
	s.fault_ip = fault_ip;
	solve(&s);
	for (size_t i = 0; i < n; i++)
		if (s.in[i].id == X86_INS_SYSCALL)
			s.in[i].wr = syscall_writes(&s, i);
	ip[n] = fault_ip;
	v->pub.sz = sizeof(v->pub);
	v->pub.thread = t;
	v->pub.ninsn = n;
	v->pub.ip = v->ip = ip;
	v->pub.regs = v->val = s.val;
	v->pub.known = v->kn = s.kn;
	v->pub.conflicts = s.conflicts;
	v->rw = calloc(2 * (n + 1), sizeof(*v->rw));
	if (!v->rw)
		goto oom_after;
	for (size_t i = 0; i < n; i++) {
		v->rw[i] = s.in[i].rd;
		v->rw[n + 1 + i] = s.in[i].wr;
	}
	v->pub.reads = v->rw;
	v->pub.writes = v->rw + n + 1;
	find_origin(v, &s, fault_ip, ci);
	if (ci)
		cs_free(ci, 1);
	free(s.in);
	free(s.mem);
	*out = &v->pub;
	return 0;
oom_after:
	s.val = NULL;
	s.kn = NULL;
	ip = NULL;
	btrace_values_free(&v->pub);
	v = NULL;
oom:
	if (ci)
		cs_free(ci, 1);
	free(s.in);
	free(s.val);
	free(s.kn);
	free(s.mem);
	free(ip);
	free(v);
	return bt_error(err, rc, "values: out of memory");
}

int btrace_values_get(const struct btrace_values *v, size_t i, unsigned reg,
		      uint64_t *val)
{
	if (!v || i > v->ninsn || reg >= NR || !((v->known[i] >> reg) & 1))
		return 0;
	if (val)
		*val = v->regs[i * NR + reg];
	return 1;
}

void btrace_values_free(struct btrace_values *pv)
{
	struct bt_values *v = (struct bt_values *)(void *)pv;

	if (!v)
		return;
	free(v->ip);
	free(v->val);
	free(v->kn);
	free(v->rw);
	free(v);
}
