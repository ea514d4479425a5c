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
#include <stdarg.h>
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
/* bytes from the fs base holding glibc's struct pthread (its rseq area,
 * which the kernel writes, included), but for its first TCB_HEAD bytes:
 * the thread control block header the x86-64 ABI fixes at the fs base
 * (tcb, dtv, self, the stack guard at fs:0x28 and the pointer guard),
 * which only the thread itself writes */
#define TCB_SPAN 4096
#define TCB_HEAD 0x40

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
	uint8_t fs;          /* MEM: fs-relative (the thread's fs base added) */
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
			      * (clear every fact); 2 a rep movs or stos:
			      * the range rep_range() says, or not known */
	uint16_t rd, wr;     /* GPRs read / written */
	uint16_t iwr;        /* of @wr, those implicit_writes() adds */
	int32_t depth;       /* call depth it runs at */
	uint64_t eflags;     /* capstone's X86_EFLAGS_* of it */
	uint32_t acc, nacc;  /* its accesses in the log: acc .. acc + nacc - 1 */
	uint8_t logged;      /* the log holds every access it made */
	uint8_t two_mem;     /* two memory operands (a string instruction) */
	uint8_t uncond;      /* capstone does not know it, and it makes the
			      * same accesses in every run: an EVEX or VEX
			      * encoding whose ModRM names a register, or
			      * EVEX without a mask, or VEX other than
			      * masked moves and gathers */
	uint8_t fold;        /* not an instruction: the loop turns the
			      * recorder folded out of the history right
			      * before the loop block at @ip, as one step that
			      * may write the registers of @wr, and memory
			      * when @clobber (fold_effects()) */
	uint8_t fold_df;     /* @fold: the turns may change the direction
			      * flag */
	uint8_t away;        /* a system call the path does not leave by
			      * the instruction after it (sys_away()) */
	struct vop op[4];
};

struct fact {
	uint64_t addr, val;
	uint32_t size;       /* a killed range: up to what a system call
			      * may write */
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
	int stk_heap;             /* it is the brk area ("[heap]") */
	int fault_df;             /* the direction flag at the fault, -1 not
				   * known */
	int qemu;                 /* recorded by the QEMU backend */
	int have_fault;           /* @fault_ip is known (it may be 0: a call
				   * through a NULL pointer) */
	int sole;                 /* the crashed thread is its process's
				   * only thread */
	int32_t tid;              /* the thread's */
	const struct btrace_decode_result *res;  /* its decode (the other
				   * threads' histories) */
	cs_insn *ci;              /* capstone's scratch, NULL none */
	uint64_t fault_ip;        /* where the path goes after its last
				   * instruction, 0 not known */
	uint64_t fs_base;         /* the thread's fs base at the fault */
	size_t fs_from;           /* it is the fs base from this instruction
				   * on (after the last arch_prctl); n + 1:
				   * not known */
	const struct btrace_snapshot *snap_mem;  /* its memory is the memory at
				   * the fault: NULL not known */
	struct facts *mem;
	/* the process's private mappings, by address, when the crashed
	 * thread is its only thread (its memory then changes only by the
	 * instructions of the path and by system calls): facts follow its
	 * memory there as on the stack; NULL otherwise */
	struct priv { uint64_t lo, hi; int ro; } *priv;
	size_t npriv;
	size_t remap_after;       /* loads from 0..remap_after - 1 come before a
				   * system call that may change mappings */
	uint8_t *searched;        /* rt_sigreturn i's frame searched for */
	const struct btrace_access *log;  /* the accesses the recorder logged,
				   * NULL none (vinsn.acc indexes it) */
	size_t *fold_at;          /* align_log(): the fold marks it met, newest
				   * first: the index of the loop block's
				   * first instruction after the turns */
	uint64_t *fold_ip;        /* the loop block of each */
	size_t nfold;
};

struct bt_values {
	struct btrace_values pub;
	uint64_t *ip;
	uint64_t *val;
	uint16_t *kn;
	uint16_t *rw;        /* reads, then writes: 2 * (n + 1) */
	uint8_t *fold;       /* n + 1 */
	struct btrace_origin_link chain[MAX_CHAIN];
	char operand[64];    /* origin.operand when it is memory */
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
static uint16_t implicit_writes(const cs_insn *ci)
{
	const cs_x86 *x = &ci->detail->x86;
	unsigned id = ci->id;
	int regop = 0;
	enum { A = 1u << 0, C = 1u << 1, D = 1u << 2, B = 1u << 3,
	       SP = 1u << 4, BP = 1u << 5, SI = 1u << 6, DI = 1u << 7,
	       R11 = 1u << 11 };

	/* a string instruction counts rcx down with a rep prefix only */
	uint16_t rc = x->prefix[0] == X86_PREFIX_REP ||
		      x->prefix[0] == X86_PREFIX_REPNE ? C : 0;

	for (unsigned k = 0; k < x->op_count; k++)
		regop |= x->operands[k].type == X86_OP_REG;
	switch (id) {
	case X86_INS_CPUID: return A | B | C | D;
	case X86_INS_RDTSC: case X86_INS_XGETBV: case X86_INS_RDPMC:
		return A | D;
	case X86_INS_RDTSCP: return A | C | D;
	case X86_INS_SYSCALL: return A | C | R11;
	case X86_INS_IMUL:
		/* imul r, r/m (, imm) writes its destination alone */
		return x->op_count == 1 ? A | D : 0;
	case X86_INS_MUL: case X86_INS_DIV:
	case X86_INS_IDIV: return A | D;
	case X86_INS_CWD: case X86_INS_CDQ: case X86_INS_CQO: return D;
	case X86_INS_CBW: case X86_INS_CWDE: case X86_INS_CDQE: return A;
	case X86_INS_CMPXCHG: return A;
	case X86_INS_CMPXCHG8B: case X86_INS_CMPXCHG16B:
		return A | D;
	case X86_INS_LODSB: case X86_INS_LODSW: case X86_INS_LODSD:
	case X86_INS_LODSQ: return A | SI | rc;
	case X86_INS_STOSB: case X86_INS_STOSW: case X86_INS_STOSD:
	case X86_INS_STOSQ: case X86_INS_SCASB: case X86_INS_SCASW:
	case X86_INS_SCASD: case X86_INS_SCASQ: return DI | rc;
	case X86_INS_MOVSD: case X86_INS_CMPSD:
		/* also the SSE scalar moves and compares of doubles
		 * (capstone 4 gives `movsd xmm0, [rsi]` the same id): those
		 * have a register operand */
		if (regop)
			return 0;
		return SI | DI | rc;
	case X86_INS_MOVSB: case X86_INS_MOVSW:
	case X86_INS_MOVSQ: case X86_INS_CMPSB: case X86_INS_CMPSW:
	case X86_INS_CMPSQ: return SI | DI | rc;
	case X86_INS_LEAVE: case X86_INS_ENTER: return SP | BP;
	case X86_INS_PUSH: case X86_INS_POP: case X86_INS_CALL:
	case X86_INS_RET: case X86_INS_PUSHFQ: case X86_INS_POPFQ:
	case X86_INS_PUSHAL: case X86_INS_POPAL:
		return SP;
	}
	return 0;
}

/* A string instruction (movs, stos, lods, cmps, scas): the bytes it
 * moves rsi and rdi by, 0 not one (@iwr: its implicit writes, which tell
 * the SSE movsd/cmpsd from the string ones). */
static unsigned string_step(unsigned id, uint16_t iwr)
{
	switch (id) {
	case X86_INS_MOVSB: case X86_INS_STOSB: case X86_INS_LODSB:
	case X86_INS_CMPSB: case X86_INS_SCASB:
		return 1;
	case X86_INS_MOVSW: case X86_INS_STOSW: case X86_INS_LODSW:
	case X86_INS_CMPSW: case X86_INS_SCASW:
		return 2;
	case X86_INS_MOVSD: case X86_INS_CMPSD:
		return iwr ? 4 : 0;
	case X86_INS_STOSD: case X86_INS_LODSD: case X86_INS_SCASD:
		return 4;
	case X86_INS_MOVSQ: case X86_INS_STOSQ: case X86_INS_LODSQ:
	case X86_INS_CMPSQ: case X86_INS_SCASQ:
		return 8;
	}
	return 0;
}

/* movs or stos: a string instruction that stores at rdi. */
static int string_store(unsigned id)
{
	switch (id) {
	case X86_INS_MOVSB: case X86_INS_MOVSW: case X86_INS_MOVSD:
	case X86_INS_MOVSQ: case X86_INS_STOSB: case X86_INS_STOSW:
	case X86_INS_STOSD: case X86_INS_STOSQ:
		return 1;
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
		out->uncond = (modrm >> 6) == 3 || !(p[3] & 7);
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
	out->uncond = (modrm >> 6) == 3 ||
		      !(map == 2 && ((opc >= 0x90 && opc <= 0x93) ||
				     opc == 0x2c || opc == 0x2d || opc == 0x2e ||
				     opc == 0x2f || opc == 0x8c || opc == 0x8e));
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

/* Instructions whose first operand, memory, is only read (compares aside). */
static int reads_dest_only(unsigned id)
{
	switch (id) {
	case X86_INS_PUSH: case X86_INS_CALL: case X86_INS_JMP:
	case X86_INS_NOP: case X86_INS_LEA: case X86_INS_PREFETCH:
	case X86_INS_PREFETCHNTA: case X86_INS_PREFETCHT0:
	case X86_INS_PREFETCHT1: case X86_INS_PREFETCHT2:
	case X86_INS_PREFETCHW: case X86_INS_CLFLUSH: case X86_INS_CLFLUSHOPT:
		return 1;
	}
	return 0;
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
	out->iwr = implicit_writes(ci);
	out->wr |= out->iwr;
	if (!out->rep && string_step(ci->id, out->iwr))
		out->wr &= (uint16_t)~(1u << BTRACE_VREG_RCX);
	/* compares write no register (capstone 4 lists test's first
	 * operand, `test al, 1`, as written) */
	int cmp = ci->id == X86_INS_TEST || ci->id == X86_INS_CMP ||
		  ci->id == X86_INS_BT;
	if (cmp)
		out->wr = 0;
	out->eflags = x->eflags;
	out->nop = x->op_count < 4 ? x->op_count : 4;
	unsigned nmem = 0;
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
			if (g >= 0 && !cmp &&
			    (!o->access || (o->access & CS_AC_WRITE)))
				out->wr |= (uint16_t)(1u << g);
		} else if (o->type == X86_OP_IMM) {
			v->imm = o->imm;
		} else if (o->type == X86_OP_MEM) {
			int b = -1, ix = -1;
			nmem++;
			v->imm = o->mem.disp;
			/* a 32-bit address (0x67 prefix) wraps at 4 GiB */
			if (x->addr_size != 8)
				v->bad = 1;
			v->scale = (uint8_t)o->mem.scale;
			if (o->mem.segment == X86_REG_FS)
				v->fs = 1;
			else if (o->mem.segment == X86_REG_GS)
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
			/* compares read their memory operand (capstone 4
			 * gives `test byte ptr [rbx], 0x20` no access or a
			 * write); any other instruction may write it when it
			 * is the destination (capstone 4 gives the EVEX store
			 * `vmovdqu64 ymmword ptr [rdi], ymm16` as a read) */
			if (ci->id == X86_INS_TEST || ci->id == X86_INS_CMP ||
			    ci->id == X86_INS_BT)
				v->access = CS_AC_READ;
			else if ((i == 0 && !reads_dest_only(ci->id)) ||
				 ci->id == X86_INS_XCHG)
				v->access |= CS_AC_WRITE;
			if ((v->access & CS_AC_WRITE) || !v->access) {
				/* a write the facts cannot follow: a rep
				 * string instruction, an unknown size */
				if (out->rep || !o->size || o->size > 64 ||
				    ci->id == X86_INS_LEA || ci->id == X86_INS_NOP)
					out->clobber |= ci->id != X86_INS_LEA &&
							ci->id != X86_INS_NOP;
			}
		}
	}
	out->two_mem = nmem > 1;
	if (out->clobber && out->rep && string_step(ci->id, out->iwr) &&
	    string_store(ci->id))
		out->clobber = 2;
	switch (ci->id) {
	case X86_INS_SYSENTER: case X86_INS_INT:
	case X86_INS_INT1: case X86_INS_INT3: case X86_INS_INTO:
	case X86_INS_ENTER: case X86_INS_PUSHAL:
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

/* Where the path went after instruction @j: 1 and *@next, 0 not known
 * (the last instruction, the fault not known). */
static int next_ip(const struct vstate *s, size_t j, uint64_t *next)
{
	if (j + 1 >= s->n && !s->have_fault)
		return 0;
	*next = j + 1 < s->n ? s->in[j + 1].ip : s->fault_ip;
	return 1;
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

static int log_addr(const struct vstate *s, size_t i, const struct vop *o,
		    uint64_t *a);

/* The address of a memory operand in state @i: from its registers, or
 * from the access log. */
static int addr_of(const struct vstate *s, size_t i, const struct vop *o,
		   uint64_t *a)
{
	uint64_t x = (uint64_t)o->imm;

	if (o->type != X86_OP_MEM)
		return 0;
	if (o->bad)
		return log_addr(s, i, o, a);
	if (o->fs) {
		if (i < s->fs_from)
			return log_addr(s, i, o, a);
		x += s->fs_base;
	}
	if (o->base != NOREG) {
		if (!kn(s, i, o->base))
			return log_addr(s, i, o, a);
		x += get(s, i, o->base);
	}
	if (o->index != NOREG) {
		if (!kn(s, i, o->index))
			return log_addr(s, i, o, a);
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

/* --- the access log --- */

/*
 * A recorder may log the memory accesses of the crashed thread's last
 * instructions (struct btrace_access).  Each logged address is a fact about
 * the instruction that made it: its memory operand's address (the
 * registers that form it, when only one of them is not known otherwise),
 * the stack pointer of a push, pop, call or ret.  The log only ever adds
 * addresses: an instruction's write the log does not show is dealt with as
 * before (an address not known ends what is known of memory), so an
 * access a recorder does not log cannot make a value wrong.
 */

/* The stack slot an instruction accesses beside its operands: 1 a store
 * at rsp - 8 (push, call, pushfq), 2 a load at rsp (pop, ret, popfq), 3 a
 * load at rbp (leave); 0 none. */
static int stack_access(unsigned id)
{
	switch (id) {
	case X86_INS_PUSH: case X86_INS_CALL: case X86_INS_PUSHFQ:
		return 1;
	case X86_INS_POP: case X86_INS_RET: case X86_INS_POPFQ:
		return 2;
	case X86_INS_LEAVE:
		return 3;
	}
	return 0;
}

/* Instructions that may access memory in one run and not in another (a
 * rep string instruction with rcx 0, masked moves, gathers, one capstone
 * does not know unless its encoding says otherwise). */
static int may_skip(const struct vinsn *in)
{
	if (!in->id)
		return !in->uncond;
	switch (in->id) {
	case X86_INS_MASKMOVQ: case X86_INS_MASKMOVDQU:
	case X86_INS_VMASKMOVPS: case X86_INS_VMASKMOVPD:
	case X86_INS_VPMASKMOVD: case X86_INS_VPMASKMOVQ:
	case X86_INS_VGATHERDPS: case X86_INS_VGATHERDPD:
	case X86_INS_VGATHERQPS: case X86_INS_VGATHERQPD:
	case X86_INS_VPGATHERDD: case X86_INS_VPGATHERDQ:
	case X86_INS_VPGATHERQD: case X86_INS_VPGATHERQQ:
		return 1;
	}
	return in->rep;
}

/* A push or pop of a register or a push of an immediate: rsp moves by 8
 * and its one access is its stack slot. */
static int stack_run(const struct vinsn *in)
{
	return (in->id == X86_INS_PUSH || in->id == X86_INS_POP) &&
	       in->nop == 1 && in->op[0].type != X86_OP_MEM;
}

/* Instructions that access memory in every run, and that a recorder logs
 * every time: a push, pop, call or ret, and a mov to or from memory.  Not
 * a push, pop, call or ret right after a push or pop (stack_run()): the
 * QEMU backend does not log its stack slot when the two are in one block
 * (the slot is the previous one's plus or minus 8). */
static int sure_access(const struct vstate *s, size_t i)
{
	const struct vinsn *in = &s->in[i];
	int sa = stack_access(in->id);

	if (sa == 1 || sa == 2)
		return !(i && stack_run(&s->in[i - 1]));
	for (unsigned k = 0; in->id == X86_INS_MOV && k < in->nop; k++)
		if (in->op[k].type == X86_OP_MEM)
			return 1;
	return 0;
}

/* The log's entries with the address of instruction @i that may_skip():
 * its own, when an instruction between its previous run on the path (or
 * the path's start) and it accessed memory for sure (then an earlier
 * run's entries are followed by that instruction's).  Looked for over at
 * most 512 instructions back. */
static int skip_sure(const struct vstate *s, size_t i)
{
	for (size_t k = i, seen = 0; k-- > 0 && seen < 512; seen++) {
		if (s->in[k].ip == s->in[i].ip)
			return 0;
		if (sure_access(s, k))
			return 1;
	}
	return 0;
}

/* The address of memory operand @o of instruction @i from the log: the
 * lowest address of the instruction's logged accesses other than its
 * stack slot, when they all lie within the operand's width. */
static int log_addr(const struct vstate *s, size_t i, const struct vop *o,
		    uint64_t *a)
{
	const struct vinsn *in = &s->in[i];
	int sa = stack_access(in->id);
	uint64_t lo = UINT64_MAX;
	unsigned cnt = 0;

	/* a rep string instruction's: the QEMU backend keeps those of its
	 * last iteration alone */
	if (!s->log || !in->logged || !in->nacc || in->two_mem || in->rep ||
	    o->type != X86_OP_MEM || !o->width || sa == 3 ||
	    in->id == X86_INS_LEA || in->id == X86_INS_NOP)
		return 0;
	for (uint32_t k = 0; k < in->nacc; k++) {
		const struct btrace_access *e = &s->log[in->acc + k];
		int st = e->flags & BTRACE_ACCESS_STORE;
		if ((sa == 1 && st) || (sa == 2 && !st))
			continue;   /* the stack slot */
		if (st && o->access && !(o->access & CS_AC_WRITE))
			return 0;   /* a store the operand does not make */
		if (e->addr < lo)
			lo = e->addr;
		cnt++;
	}
	if (!cnt)
		return 0;
	for (uint32_t k = 0; k < in->nacc; k++) {
		const struct btrace_access *e = &s->log[in->acc + k];
		int st = e->flags & BTRACE_ACCESS_STORE;
		if ((sa == 1 && st) || (sa == 2 && !st))
			continue;
		if (e->addr - lo > o->width || e->size > o->width - (e->addr - lo))
			return 0;
	}
	*a = lo;
	return 1;
}

/* The stack pointer (leave: rbp) before instruction @i from its logged
 * stack slot. */
static void log_stack(struct vstate *s, size_t i)
{
	const struct vinsn *in = &s->in[i];
	int sa = stack_access(in->id);
	const struct btrace_access *slot = NULL;
	unsigned cnt = 0;

	if (!sa || !s->log || !in->logged)
		return;
	for (uint32_t k = 0; k < in->nacc; k++) {
		const struct btrace_access *e = &s->log[in->acc + k];
		int st = e->flags & BTRACE_ACCESS_STORE;
		if ((sa == 1) == !!st) {
			slot = e;
			cnt++;
		}
	}
	if (cnt != 1 || slot->size != 8)
		return;
	if (sa == 1)
		set(s, i, BTRACE_VREG_RSP, slot->addr + 8);
	else if (sa == 2)
		set(s, i, BTRACE_VREG_RSP, slot->addr);
	else
		set(s, i, BTRACE_VREG_RBP, slot->addr);
}

/* The one register of a memory operand's address not known otherwise,
 * from the logged address (an index only when its scale is 1: times 2, 4
 * or 8 the top bits would be lost). */
static void log_regs(struct vstate *s, size_t i)
{
	const struct vinsn *in = &s->in[i];
	uint64_t a;

	if (!s->log || !in->logged)
		return;
	for (unsigned k = 0; k < in->nop; k++) {
		const struct vop *o = &in->op[k];
		if (o->type != X86_OP_MEM || o->bad || o->rip ||
		    (o->base == NOREG && o->index == NOREG) ||
		    o->base == o->index || !log_addr(s, i, o, &a))
			continue;
		uint64_t x = a - (uint64_t)o->imm;
		if (o->fs) {
			if (i < s->fs_from)
				continue;
			x -= s->fs_base;
		}
		int nb = o->base != NOREG && !kn(s, i, o->base);
		int nx = o->index != NOREG && !kn(s, i, o->index);
		if (nb + nx != 1)
			continue;
		if (o->base != NOREG && !nb)
			x -= get(s, i, o->base);
		if (o->index != NOREG && !nx)
			x -= get(s, i, o->index) * o->scale;
		if (nb)
			set(s, i, o->base, x);
		else if (o->scale == 1)
			set(s, i, o->index, x);
	}
}

/*
 * Give the path's instructions their accesses in @log (@nlog, in the
 * order made, the last one the last before the fault): from the end, an
 * instruction's are the log's last entries with its address.  The
 * faulting instruction's own, made before it faulted, come first.  It
 * stops, and the instructions before get none (not @logged), where that
 * is not certain: at the log's first entry (unless @complete: the log
 * holds every access since the thread started; the entries of the
 * instruction it stopped in may have been lost before it), at an
 * instruction that may make no access in one run (may_skip()) whose
 * entries could be an earlier run's (skip_sure()), and where the path
 * runs one instruction twice in a row and the log holds accesses of it.
 *
 * A fold mark (BTRACE_ACCESS_FOLD) stands right before the accesses of
 * the execution of the loop block, at the mark's address, that follows
 * the turns folded out, so the turns ran right before one of the runs of
 * that block's first instruction that lie between the last instruction
 * with accesses before the mark and the first with accesses after it
 * (the instructions between make none; the first after it may be the
 * block's first).  When exactly one run lies there, the walk notes the
 * fold at it (s->fold_at, s->fold_ip) and goes on before it with the
 * entries before the mark, the accesses of the path before the turns.
 * When more lie there (the loop ran again with no access between), which
 * one is not known, and *@cut is the index of the last of them (the path
 * after it holds no turn folded out); when none does, the log is out of
 * step with the path, and *@cut is the index after the first instruction
 * with accesses after the mark; when the walk stops before it meets an
 * access from before the mark, likewise (a run further back may be the
 * one).  The walk stops there (*@cut 0: it did not stop so).  Returns
 * the index of the first instruction given its accesses (the number of
 * instructions: none).
 */
static void add_fold(struct vstate *s, size_t at, uint64_t ip)
{
	/* one per instruction (and one at the fault) at most: the walk
	 * notes each index once, going down */
	s->fold_at[s->nfold] = at;
	s->fold_ip[s->nfold++] = ip;
}

static int is_mark(const struct btrace_access *e)
{
	return (e->flags & BTRACE_ACCESS_FOLD) != 0;
}

/* A fold mark met on the walk back, the run of its loop block the turns
 * ran before not told yet. */
struct pending {
	int on;
	uint64_t ip;         /* the loop block */
	size_t after;        /* the first instruction with accesses after the
			      * mark (n: the fault) */
	size_t last;         /* the last run of the block's first instruction
			      * since, when @runs */
	unsigned runs;
};

/* Where the path of @n instructions is cut for pending mark @p when the
 * place of its turns is not told: at the last run of its block, or, with
 * none, after the first instruction with accesses after the mark; when
 * that is the fault (a log that ends in the mark: out of step with the
 * path), the whole path. */
static size_t pending_cut(const struct pending *p, size_t n)
{
	return p->runs ? p->last : p->after < n ? p->after + 1 : n;
}

/* Where the turns of pending mark @p ran, now that the walk met an access
 * from before the mark (no run of its block lies further back): 0 noted
 * (s->fold_at), or 1 and *@cut. */
static int place_fold(struct vstate *s, const struct pending *p, size_t *cut)
{
	if (p->runs == 1) {
		add_fold(s, p->last, p->ip);
		return 0;
	}
	*cut = pending_cut(p, s->n);
	return 1;
}

static size_t align_log(struct vstate *s, const struct btrace_access *log,
			uint64_t nlog, int complete, size_t *cut)
{
	uint64_t j = nlog;
	size_t i;
	struct pending p = { 0 };

	*cut = 0;
	s->log = log;
	if (!log || !s->have_fault ||
	    (s->n && s->in[s->n - 1].ip == s->fault_ip))
		return s->n;
	while (j && log[j - 1].ip == s->fault_ip && !is_mark(&log[j - 1]))
		j--;
	if (j && is_mark(&log[j - 1])) {
		/* turns folded right before the fault, or earlier with no
		 * access since */
		p = (struct pending){ 1, log[j - 1].ip, s->n, s->n,
				      log[j - 1].ip == s->fault_ip };
	}
	for (i = s->n; i-- > 0;) {
		struct vinsn *in = &s->in[i];
		/* the log's entries left: while a mark is pending, those
		 * before it */
		uint64_t top = p.on ? j - 1 : j, k = top;

		while (k && log[k - 1].ip == in->ip && !is_mark(&log[k - 1]))
			k--;
		if (may_skip(in) && k < top && !skip_sure(s, i))
			break;
		if (k < top && i && s->in[i - 1].ip == in->ip)
			break;
		if (!k && !complete)
			break;   /* the log may have started inside it */
		if (p.on && k < top) {
			/* accesses from before the mark: the loop block ran
			 * after this instruction */
			if (place_fold(s, &p, cut))
				return *cut;
			p.on = 0;
			j = top;
		}
		in->acc = (uint32_t)k;
		in->nacc = (uint32_t)(p.on ? 0 : j - k);
		in->logged = 1;
		if (p.on) {
			if (in->ip == p.ip && !p.runs++)
				p.last = i;
			continue;
		}
		j = k;
		if (k && is_mark(&log[k - 1]))
			p = (struct pending){ 1, log[k - 1].ip, i, i,
					      in->ip == log[k - 1].ip };
	}
	if (p.on) {
		/* the walk stopped before an access from before the mark:
		 * a run of the block further back may be the one */
		*cut = pending_cut(&p, s->n);
		return *cut;
	}
	return i + 1;
}

/* --- memory facts (the thread's stack) --- */

static int in_stack(const struct vstate *s, uint64_t a, unsigned size)
{
	return s->stk_hi && a >= s->stk_lo && a + size <= s->stk_hi &&
	       a + size > a;
}

/* The private mapping holding [a, a + size), NULL none. */
static const struct priv *priv_of(const struct vstate *s, uint64_t a,
				  unsigned size)
{
	size_t lo = 0, hi = s->npriv;

	if (!size || a + size < a)
		return NULL;
	/* the thread's control block (struct pthread at the fs base): the
	 * kernel writes its rseq area (the CPU the thread runs on), which
	 * is past the header */
	if (s->fs_base && a < s->fs_base + TCB_SPAN &&
	    s->fs_base + TCB_HEAD < a + size)
		return NULL;
	while (lo < hi) {
		size_t mid = (lo + hi) / 2;
		if (s->priv[mid].hi <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < s->npriv && s->priv[lo].lo <= a &&
	       a + size <= s->priv[lo].hi ? &s->priv[lo] : NULL;
}

/* Memory facts can follow [a, a + size): the thread's stack, or the
 * private memory of a process whose only thread it is. */
static int trusted(const struct vstate *s, uint64_t a, unsigned size)
{
	return in_stack(s, a, size) || priv_of(s, a, size);
}

static int mem_read(const struct btrace_snapshot *sn, uint64_t a,
		    unsigned size, uint64_t *v)
{
	for (size_t k = 0; sn && size <= 8 && size && k < sn->nmemory; k++) {
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

/* A load by instruction @i from a mapping that is read-only at the fault
 * and stays mapped as it is from @i to the fault (no system call after @i
 * that may change mappings or their protection): what the snapshot holds,
 * whatever was stored anywhere else (a store there would have faulted). */
static int ro_get(const struct vstate *s, size_t i, uint64_t a,
		  unsigned size, uint64_t *v)
{
	const struct priv *p = priv_of(s, a, size);

	return p && p->ro && i >= s->remap_after && mem_read(s->snap_mem, a, size, v);
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
	return mem_read(sn, a, size, v);
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

/* The snapshot's memory at [@a, @a + @size) is no longer what it was here
 * (too many such ranges: no memory at the fault is used any more). */
static void snap_kill(struct facts *f, uint64_t a, unsigned size)
{
	if (f->nkilled == MAX_FACTS)
		f->snap = NULL;
	else
		f->killed[f->nkilled++] = (struct fact){ a, 0, size };
}

/* The facts about [@a, @end) are gone. */
static void fact_drop(struct facts *f, uint64_t a, uint64_t end)
{
	size_t w = 0;

	for (size_t k = 0; k < f->n; k++)
		if (f->f[k].addr + f->f[k].size <= a || end <= f->f[k].addr)
			f->f[w++] = f->f[k];
	f->n = w;
}

static void fact_kill(struct facts *f, uint64_t a, unsigned size)
{
	int in_snap = 0;

	for (size_t k = 0; f->snap && k < f->snap->nmemory; k++)
		in_snap |= a < f->snap->memory[k].vaddr + f->snap->memory[k].size &&
			   f->snap->memory[k].vaddr < a + size;
	if (in_snap)
		snap_kill(f, a, size);
	fact_drop(f, a, a + size);
}

/* fact_kill() of [@a, @a + @len), a range of any length: the snapshot's
 * memory in it by the pieces of it the snapshot holds. */
static void fact_kill_range(struct facts *f, uint64_t a, uint64_t len)
{
	uint64_t end = a + len < a ? UINT64_MAX : a + len;

	for (size_t k = 0; f->snap && k < f->snap->nmemory; k++) {
		const struct btrace_memory *m = &f->snap->memory[k];
		uint64_t lo = m->vaddr > a ? m->vaddr : a;
		uint64_t hi = m->vaddr + m->size < end ? m->vaddr + m->size : end;

		while (f->snap && lo < hi) {
			uint64_t n = hi - lo > UINT32_MAX ? UINT32_MAX : hi - lo;
			snap_kill(f, lo, (unsigned)n);
			lo += n;
		}
	}
	fact_drop(f, a, end);
}

static void fact_set(const struct vstate *s, struct facts *f, uint64_t a,
		     unsigned size, uint64_t v)
{
	if (!trusted(s, a, size))
		return;
	fact_kill(f, a, size);
	if (f->n == MAX_FACTS) {
		memmove(f->f, f->f + 1, (f->n - 1) * sizeof(f->f[0]));
		f->n--;
	}
	f->f[f->n++] = (struct fact){ a, v & mask_of(size), size };
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

static int rep_range(const struct vstate *s, size_t i, uint64_t *a,
		     uint64_t *len);

/* Operand @o of @in is memory it may write (lea and nop only compute
 * the address; capstone's access, when it gives one, says the rest). */
static int mem_dest(const struct vinsn *in, const struct vop *o)
{
	return o->type == X86_OP_MEM && in->id != X86_INS_LEA &&
	       in->id != X86_INS_NOP &&
	       (!o->access || (o->access & CS_AC_WRITE));
}

/* The memory writes of @i other than store_of()'s: kill what they may
 * change in @f. */
static void other_writes(const struct vstate *s, size_t i, struct facts *f,
			 int stored)
{
	const struct vinsn *in = &s->in[i];
	uint64_t a, len;
	int r;

	if (in->clobber == 2 && (r = rep_range(s, i, &a, &len)) >= 0) {
		if (r)
			fact_kill_range(f, a, len);
		return;
	}
	if (in->clobber) {
		fact_clear(f);
		return;
	}
	if (stored)
		return;
	for (unsigned k = 0; k < in->nop; k++) {
		const struct vop *o = &in->op[k];
		if (!mem_dest(in, o))
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

/* xsave and the like: a store of the extended state at the operand's
 * address, of a size this CPU's features set (xsave's area is at most
 * 11,008 bytes with every feature defined today, AMX included). */
#define XSAVE_MAX 12288

static int xsave_area(unsigned id)
{
	switch (id) {
	case X86_INS_XSAVE: case X86_INS_XSAVEC: case X86_INS_XSAVEOPT:
	case X86_INS_XSAVES: case X86_INS_FXSAVE: case X86_INS_FXSAVE64:
	case X86_INS_XSAVE64: case X86_INS_XSAVEC64: case X86_INS_XSAVEOPT64:
	case X86_INS_XSAVES64:
		return 1;
	}
	return 0;
}

static void xsave_mem(const struct vstate *s, size_t i, struct facts *f)
{
	const struct vinsn *in = &s->in[i];
	uint64_t a;

	if (in->nop >= 1 && addr_of(s, i, &in->op[0], &a) &&
	    a + XSAVE_MAX > a)
		fact_kill(f, a, XSAVE_MAX);
	else
		fact_clear(f);
}

/*
 * The user memory system call @i may write, by its number (rax before it)
 * and its pointer arguments: 0 none, 1 [*@a, *@a + *@len), -1 not known
 * (a system call not listed here, or whose number or pointer is not
 * known, may have written anything).
 */
static int syscall_range(const struct vstate *s, size_t i, uint64_t *a,
			 uint64_t *len)
{
	enum { RAX = BTRACE_VREG_RAX, RSI = BTRACE_VREG_RSI,
	       RDX = BTRACE_VREG_RDX, R10 = BTRACE_VREG_R10 };
	unsigned ptr;

	if (!kn(s, i, RAX))
		return -1;
	switch (get(s, i, RAX)) {
	case 1: case 3: case 8: case 10: case 15: case 20:
	case 24: case 39: case 60: case 62: case 102: case 104: case 107:
	case 108: case 110: case 186: case 200: case 231: case 234:
		/* write, close, lseek, mprotect, rt_sigreturn, writev,
		 * sched_yield, getpid, exit, kill, get[ug]id, gete[ug]id,
		 * getppid, gettid, tkill, exit_group, tgkill: no user memory
		 * (mmap, munmap and brk: syscall_ranges()) */
		return 0;
	case 13:     /* rt_sigaction: the old action, 32 bytes, at rdx */
		ptr = RDX;
		*len = 32;
		break;
	case 14:     /* rt_sigprocmask: the old set at rdx, r10 bytes */
		if (!kn(s, i, R10) || get(s, i, R10) > 128)
			return -1;
		ptr = RDX;
		*len = get(s, i, R10);
		break;
	case 0:      /* read: rdx bytes at rsi */
		if (!kn(s, i, RDX))
			return -1;
		ptr = RSI;
		*len = get(s, i, RDX);
		break;
	default:
		return -1;
	}
	if (!kn(s, i, ptr))
		return -1;
	*a = get(s, i, ptr);
	if (!*a || !*len)
		return 0;
	return *len > UINT32_MAX || *a + *len < *a ? -1 : 1;
}

/* System call @i (rax 9) is an mmap without MAP_FIXED (0x10): it maps
 * only where nothing is mapped (do_mmap(); MAP_FIXED_NOREPLACE fails with
 * EEXIST on a mapped range). */
static int mmap_unfixed(const struct vstate *s, size_t i)
{
	return kn(s, i, BTRACE_VREG_R10) && !(get(s, i, BTRACE_VREG_R10) & 0x10);
}

/*
 * The system calls that change the mappings: what they map or unmap is
 * not what it held (a range unmapped may be mapped again, with other
 * contents).  mmap with MAP_FIXED: [rdi, + the length in pages) (the
 * result is rdi or an error); without it, nothing: do_mmap() then maps
 * only where nothing is mapped (MAP_FIXED_NOREPLACE fails with EEXIST
 * otherwise), and what was there before was ended when it was unmapped
 * (by munmap, brk, or a call not known, which ends everything); munmap:
 * [rdi, + rsi in pages); brk: the brk area lies below the stack
 * (mm->brk < mm->start_stack): everything but the thread's stack, unless
 * the stack is in the brk area.  Any other call: syscall_range().  The
 * memory system call @i may change: the ranges (at most 2: start and
 * length) into @r and their count; -1 not known.
 */
static int syscall_ranges(const struct vstate *s, size_t i, uint64_t r[2][2])
{
	enum { RAX = BTRACE_VREG_RAX, RDI = BTRACE_VREG_RDI,
	       RSI = BTRACE_VREG_RSI, R10 = BTRACE_VREG_R10 };
	uint64_t len = get(s, i, RSI);

	switch (kn(s, i, RAX) ? get(s, i, RAX) : ~0ull) {
	case 9:
		/* without MAP_FIXED: only where nothing was mapped (and a
		 * fact there was ended when it was unmapped) */
		if (mmap_unfixed(s, i))
			return 0;
		if (!kn(s, i, RSI) || len > UINT64_MAX - 4095)
			return -1;
		if (kn(s, i, R10) && kn(s, i, RDI))
			/* MAP_FIXED: at rdi, or nowhere */
			r[0][0] = get(s, i, RDI);
		else if (kn(s, i + 1, RAX) && get(s, i + 1, RAX) < -4096ull)
			r[0][0] = get(s, i + 1, RAX);
		else
			return -1;
		r[0][1] = (len + 4095) & ~4095ull;
		break;
	case 11:
		if (!kn(s, i, RDI) || !kn(s, i, RSI) || len > UINT64_MAX - 4095)
			return -1;
		r[0][0] = get(s, i, RDI);
		r[0][1] = (len + 4095) & ~4095ull;
		break;
	case 12:
		if (!s->stk_hi || s->stk_heap)
			return -1;
		r[0][0] = 0;
		r[0][1] = s->stk_lo;
		r[1][0] = s->stk_hi;
		r[1][1] = UINT64_MAX - s->stk_hi;
		return 2;
	default:
		return syscall_range(s, i, &r[0][0], &r[0][1]);
	}
	/* up to the end of the address space */
	if (r[0][1] > UINT64_MAX - r[0][0])
		r[0][1] = UINT64_MAX - r[0][0];
	return 1;
}

/* What system call @i may write is no longer known in @f. */
static void syscall_mem(const struct vstate *s, size_t i, struct facts *f)
{
	uint64_t m[2][2];
	int r = syscall_ranges(s, i, m);

	if (r < 0)
		fact_clear(f);
	for (int k = 0; k < r; k++)
		fact_kill_range(f, m[k][0], m[k][1]);
}

/* rt_sigreturn @i goes back to a context the path left by a signal
 * delivered at a system call's return (the call's next instruction, or
 * the call itself restarted): no handler entered at its return. */
static int sigreturn_resumes(const struct vstate *s, size_t i)
{
	uint64_t next;

	if (!next_ip(s, i, &next))
		return 0;
	for (size_t j = i; j-- > 0;) {
		const struct vinsn *in = &s->in[j];
		if (in->away && kn(s, j, BTRACE_VREG_RAX) &&
		    get(s, j, BTRACE_VREG_RAX) != 15 &&
		    (next == in->ip + in->size || next == in->ip))
			return 1;
	}
	return 0;
}

/*
 * The memory a signal delivered at the return of system call @i (away)
 * wrote: its frame, from the handler's stack pointer up to at most the
 * stack pointer before the call (get_sigframe(): below the red zone, or
 * on the alternate stack when that does not hold the stack pointer less
 * 128: a stack that starts more than 128 bytes below the stack pointer,
 * as the frame does, then ends below that too).  Not
 * known (either stack pointer, or which call it was): every fact ends.
 * rt_sigreturn writes nothing, unless a pending signal was delivered as
 * it returned.
 */
static void delivery_mem(const struct vstate *s, size_t i, struct facts *f)
{
	enum { RAX = BTRACE_VREG_RAX, RSP = BTRACE_VREG_RSP };
	uint64_t lo, hi;

	if (kn(s, i, RAX) && get(s, i, RAX) == 15) {
		if (!sigreturn_resumes(s, i))
			fact_clear(f);
		return;
	}
	if (!kn(s, i, RAX) || !kn(s, i, RSP) || !kn(s, i + 1, RSP)) {
		fact_clear(f);
		return;
	}
	lo = get(s, i + 1, RSP);
	hi = get(s, i, RSP);
	if (lo >= hi || hi - lo <= 128 || hi - lo > (1u << 20))
		fact_clear(f);
	else
		fact_kill_range(f, lo, hi - lo);
}

static int upper_zero(const struct vstate *s, size_t i, unsigned r);

/* The memory relation of @i, with @f the facts about memory before it
 * (forwards) or after it (backwards: @back). */
static void mem_step(struct vstate *s, size_t i, struct facts *f, int back)
{
	const struct vinsn *in = &s->in[i];
	uint64_t a, v, m;
	unsigned size, dreg;
	int has_v, sign, src;
	const struct vop *dst;

	if (!s->stk_hi && !s->npriv) {
		/* no memory to follow: no facts */
		return;
	}
	if (load_of(s, i, &a, &size, &dst, &sign, &dreg) && trusted(s, a, size)) {
		/* memory is the same before and after a load */
		if (ro_get(s, i, a, size, &m) || fact_get(f, a, size, &m)) {
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
		const struct vop *o1 = &in->op[1];
		if (st && src >= 0 && size == 8 && fact_get(f, a, 8, &m) &&
		    !((s->in[i].wr >> src) & 1))
			set(s, i, (unsigned)src, m);
		else if (st && size == 4 && in->id == X86_INS_MOV &&
			 o1->type == X86_OP_REG && o1->reg != NOREG &&
			 o1->width == 4 && !o1->hi8 && fact_get(f, a, 4, &m) &&
			 upper_zero(s, i, o1->reg))
			/* a 32-bit store of a register whose last writer
			 * zero-extended it: the whole register */
			set(s, i, o1->reg, m);
		if (st)
			fact_kill(f, a, size);
		other_writes(s, i, f, st);
	}
	if (in->id == X86_INS_SYSCALL) {
		syscall_mem(s, i, f);
		if (in->away)
			delivery_mem(s, i, f);
	} else if (xsave_area(in->id))
		xsave_mem(s, i, f);
	/* (a rep movs or stos: other_writes() ended its range, or every
	 * fact when the range is not known) */
	if (in->clobber == 1)
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
		if (!f || !addr_of(s, i, o, &a) || !trusted(s, a, o->width))
			return 0;
		return ro_get(s, i, a, o->width, v) || fact_get(f, a, o->width, v);
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
	/* a signal delivered at its return: x64_setup_rt_frame() set rdi
	 * (the signal), rsi and rdx (the frame's siginfo and ucontext), rsp
	 * (the frame) and rax (0); the call's result is in the frame */
	if (s->in[i].away)
		return s->in[i].wr | 1u << BTRACE_VREG_RAX |
		       1u << BTRACE_VREG_RDX | 1u << BTRACE_VREG_RSI |
		       1u << BTRACE_VREG_RDI | 1u << BTRACE_VREG_RSP;
	return s->in[i].wr;
}

/*
 * A system call the path leaves for another place than the instruction
 * after it (or itself, restarted): the kernel went back to user mode
 * elsewhere.  rt_sigreturn does (to the context its frame holds, or to a
 * handler of a signal pending then); any other call only when a signal
 * was delivered at its return (arch_do_signal_or_restart() ->
 * handle_signal() -> setup_rt_frame(), QEMU's process_pending_signals()
 * alike): the handler's first instruction comes next, its registers
 * those setup_rt_frame() gave it, its frame written below the stack
 * pointer.  The instruction after the call, or the call itself when
 * handle_signal() restarts it (-ERESTARTNOINTR, -ERESTARTSYS with
 * SA_RESTART, -ERESTART_RESTARTBLOCK: rip back by 2), comes next only
 * from the handler's rt_sigreturn, with the registers of the frame.
 */
static int sys_away(const struct vstate *s, size_t i)
{
	uint64_t next;

	return s->in[i].id == X86_INS_SYSCALL && next_ip(s, i, &next) &&
	       next != s->in[i].ip + s->in[i].size && next != s->in[i].ip;
}

/* --- flags and conditions --- */

/* Condition codes in the encoding's order (the low bit negates). */
enum { CC_O, CC_NO, CC_B, CC_AE, CC_E, CC_NE, CC_BE, CC_A, CC_S, CC_NS,
       CC_P, CC_NP, CC_L, CC_GE, CC_LE, CC_G };

/* The condition instruction @id tests (jcc, cmovcc, setcc): 1 and *@cc. */
static int cc_of(unsigned id, unsigned *cc)
{
	static const struct { uint16_t j, c, st; } t[16] = {
		[CC_O] = { X86_INS_JO, X86_INS_CMOVO, X86_INS_SETO },
		[CC_NO] = { X86_INS_JNO, X86_INS_CMOVNO, X86_INS_SETNO },
		[CC_B] = { X86_INS_JB, X86_INS_CMOVB, X86_INS_SETB },
		[CC_AE] = { X86_INS_JAE, X86_INS_CMOVAE, X86_INS_SETAE },
		[CC_E] = { X86_INS_JE, X86_INS_CMOVE, X86_INS_SETE },
		[CC_NE] = { X86_INS_JNE, X86_INS_CMOVNE, X86_INS_SETNE },
		[CC_BE] = { X86_INS_JBE, X86_INS_CMOVBE, X86_INS_SETBE },
		[CC_A] = { X86_INS_JA, X86_INS_CMOVA, X86_INS_SETA },
		[CC_S] = { X86_INS_JS, X86_INS_CMOVS, X86_INS_SETS },
		[CC_NS] = { X86_INS_JNS, X86_INS_CMOVNS, X86_INS_SETNS },
		[CC_P] = { X86_INS_JP, X86_INS_CMOVP, X86_INS_SETP },
		[CC_NP] = { X86_INS_JNP, X86_INS_CMOVNP, X86_INS_SETNP },
		[CC_L] = { X86_INS_JL, X86_INS_CMOVL, X86_INS_SETL },
		[CC_GE] = { X86_INS_JGE, X86_INS_CMOVGE, X86_INS_SETGE },
		[CC_LE] = { X86_INS_JLE, X86_INS_CMOVLE, X86_INS_SETLE },
		[CC_G] = { X86_INS_JG, X86_INS_CMOVG, X86_INS_SETG },
	};
	for (unsigned k = 0; k < 16; k++)
		if (id && (t[k].j == id || t[k].c == id || t[k].st == id)) {
			*cc = k;
			return 1;
		}
	return 0;
}

/* Instructions known to leave the flags as they are (what may sit between
 * a flag's writer and its reader): anything else may change them. */
static int keeps_flags(const struct vinsn *in)
{
	unsigned cc;

	switch (in->id) {
	case X86_INS_MOV: case X86_INS_MOVABS: case X86_INS_MOVZX:
	case X86_INS_MOVSX: case X86_INS_MOVSXD: case X86_INS_LEA:
	case X86_INS_PUSH: case X86_INS_POP: case X86_INS_NOP:
	case X86_INS_XCHG: case X86_INS_BSWAP: case X86_INS_NOT:
	case X86_INS_CDQE: case X86_INS_CWDE: case X86_INS_CDQ:
	case X86_INS_CQO: case X86_INS_JMP: case X86_INS_ENDBR64:
		return !in->rep;
	}
	return cc_of(in->id, &cc);
}

#define FL_CF 1u
#define FL_PF 2u
#define FL_ZF 4u
#define FL_SF 8u
#define FL_OF 16u

/*
 * The flags instruction @k leaves, computed from its operands in state @k
 * (cmp, test, add, sub, and, or, xor, neg on registers and immediates):
 * 1 and *@fl (FL_*).
 */
static int flags_of(const struct vstate *s, size_t k, unsigned *fl)
{
	const struct vinsn *in = &s->in[k];
	const struct vop *d = &in->op[0], *o1 = &in->op[1];
	uint64_t x, y = 0, r, m, sb;
	unsigned w;

	if (in->rep || in->nop < 1 || d->type != X86_OP_REG || d->hi8 ||
	    !reg_val(s, k, d, &x))
		return 0;
	w = d->width;
	if (w != 1 && w != 2 && w != 4 && w != 8)
		return 0;
	m = mask_of(w);
	sb = 1ull << (8 * w - 1);
	switch (in->id) {
	case X86_INS_CMP: case X86_INS_SUB: case X86_INS_TEST:
	case X86_INS_ADD: case X86_INS_AND: case X86_INS_OR: case X86_INS_XOR:
		if (in->nop != 2)
			return 0;
		if (o1->type == X86_OP_REG) {
			if (!reg_val(s, k, o1, &y))
				return 0;
		} else if (o1->type == X86_OP_IMM) {
			y = (uint64_t)sext((uint64_t)o1->imm & mask_of(o1->width ? o1->width : 8),
					   o1->width ? o1->width : 8) & m;
		} else {
			return 0;
		}
		break;
	case X86_INS_NEG:
		if (in->nop != 1)
			return 0;
		break;
	default:
		return 0;
	}
	x &= m;
	y &= m;
	unsigned f = 0;
	switch (in->id) {
	case X86_INS_CMP: case X86_INS_SUB:
		r = (x - y) & m;
		f |= x < y ? FL_CF : 0;
		f |= ((x ^ y) & (x ^ r) & sb) ? FL_OF : 0;
		break;
	case X86_INS_ADD:
		r = (x + y) & m;
		f |= r < x ? FL_CF : 0;
		f |= (~(x ^ y) & (x ^ r) & sb) ? FL_OF : 0;
		break;
	case X86_INS_NEG:
		r = (0 - x) & m;
		f |= x ? FL_CF : 0;
		f |= x == sb ? FL_OF : 0;
		break;
	default:   /* test, and, or, xor: CF = OF = 0 */
		r = in->id == X86_INS_OR ? x | y : in->id == X86_INS_XOR ? x ^ y :
		    x & y;
		break;
	}
	f |= r == 0 ? FL_ZF : 0;
	f |= (r & sb) ? FL_SF : 0;
	f |= __builtin_parityll(r & 0xff) ? 0 : FL_PF;
	*fl = f;
	return 1;
}

/* Condition @cc on flags @f. */
static int cc_holds(unsigned cc, unsigned f)
{
	int cf = !!(f & FL_CF), zf = !!(f & FL_ZF), sf = !!(f & FL_SF),
	    of = !!(f & FL_OF), pf = !!(f & FL_PF), r;

	switch (cc & ~1u) {
	case CC_O: r = of; break;
	case CC_B: r = cf; break;
	case CC_E: r = zf; break;
	case CC_BE: r = cf || zf; break;
	case CC_S: r = sf; break;
	case CC_P: r = pf; break;
	case CC_L: r = sf != of; break;
	default: r = zf || sf != of; break;   /* CC_LE */
	}
	return (cc & 1) ? !r : r;
}

/* The instruction whose flags instruction @i reads: its index, or -1 when
 * one between may have changed them (not a known flag-neutral one). */
static long flag_writer(const struct vstate *s, size_t i)
{
	for (size_t k = i; k-- > 0 && i - k <= 32;) {
		const struct vinsn *w = &s->in[k];
		if (w->id == X86_INS_CMP || w->id == X86_INS_TEST ||
		    w->id == X86_INS_SUB || w->id == X86_INS_ADD ||
		    w->id == X86_INS_AND || w->id == X86_INS_OR ||
		    w->id == X86_INS_XOR || w->id == X86_INS_NEG)
			return (long)k;
		if (!keeps_flags(w))
			return -1;
	}
	return -1;
}

/* An indirect jmp or call through a register: the register held the
 * address the path went to (the path runs on only through blocks and
 * system calls: the next instruction is the branch's target). */
static void target_facts(struct vstate *s, size_t i)
{
	const struct vinsn *in = &s->in[i];
	const struct vop *o = &in->op[0];
	uint64_t next;

	if ((in->id == X86_INS_JMP || in->id == X86_INS_CALL) && in->nop == 1 &&
	    o->type == X86_OP_REG && o->reg != NOREG && o->width == 8 &&
	    next_ip(s, i, &next))
		set(s, i, o->reg, next);
}

/* Instruction @id loads the flags from memory (popf, iret). */
static int pops_flags(unsigned id)
{
	switch (id) {
	case X86_INS_POPF: case X86_INS_POPFQ: case X86_INS_POPFD:
	case X86_INS_IRET: case X86_INS_IRETD: case X86_INS_IRETQ:
		return 1;
	}
	return 0;
}

/* Whether instruction @k may change the direction flag other than by cld
 * or std: popf, iret, rt_sigreturn (or a system call not known). */
static int df_other(const struct vstate *s, size_t k)
{
	const struct vinsn *in = &s->in[k];

	if (in->fold)
		return in->fold_df;
	if (pops_flags(in->id))
		return 1;
	switch (in->id) {
	case X86_INS_SYSCALL:
		/* (a signal delivered at its return: handle_signal() clears
		 * the flag) */
		return !kn(s, k, BTRACE_VREG_RAX) || in->away ||
		       get(s, k, BTRACE_VREG_RAX) == 15;
	}
	return !in->id;   /* not disassembled */
}

/* The direction flag before instruction @i: the last cld or std before
 * it, or, when no instruction from it to the fault changes the flag, the
 * flag at the fault.  -1 not known. */
static int df_at(const struct vstate *s, size_t i)
{
	for (size_t k = i; k-- > 0;) {
		if (s->in[k].id == X86_INS_CLD)
			return 0;
		if (s->in[k].id == X86_INS_STD)
			return 1;
		if (df_other(s, k))
			break;
	}
	if (s->fault_df < 0)
		return -1;
	for (size_t k = i; k < s->n; k++)
		if (s->in[k].id == X86_INS_CLD || s->in[k].id == X86_INS_STD ||
		    df_other(s, k))
			return -1;
	return s->fault_df;
}

/* A rep movs or stos (clobber 2) stores rcx elements at rdi, upwards or
 * downwards: 1 and the range, 0 nothing (rcx 0), -1 not known. */
static int rep_range(const struct vstate *s, size_t i, uint64_t *a,
		     uint64_t *len)
{
	const struct vinsn *in = &s->in[i];
	uint64_t w = string_step(in->id, in->iwr), c, d;
	int df;

	if (!kn(s, i, BTRACE_VREG_RCX) || !kn(s, i, BTRACE_VREG_RDI) ||
	    (df = df_at(s, i)) < 0)
		return -1;
	c = get(s, i, BTRACE_VREG_RCX);
	d = get(s, i, BTRACE_VREG_RDI);
	if (!c)
		return 0;
	if (c > (1ull << 40) / w)
		return -1;
	*len = c * w;
	*a = df ? d - (c - 1) * w : d;
	if (*a + *len < *a)
		return -1;
	return 1;
}

/* A string instruction without rep moves rsi and rdi (those it writes) by
 * its width, up or down as the direction flag says; a rep movs or stos
 * (which runs to the end: no condition) by rcx times that, and leaves rcx
 * 0. */
static void string_regs(struct vstate *s, size_t i)
{
	const struct vinsn *in = &s->in[i];
	uint64_t w = string_step(in->id, in->iwr);
	static const unsigned r[2] = { BTRACE_VREG_RSI, BTRACE_VREG_RDI };
	int df;

	if (!w || (in->rep && !string_store(in->id)) ||
	    (df = df_at(s, i)) < 0)
		return;
	if (in->rep) {
		if (!kn(s, i, BTRACE_VREG_RCX))
			return;
		w *= get(s, i, BTRACE_VREG_RCX);
		set(s, i + 1, BTRACE_VREG_RCX, 0);
	}
	uint64_t d = df ? -w : w;
	for (unsigned k = 0; k < 2; k++) {
		if (!((in->iwr >> r[k]) & 1))
			continue;
		if (kn(s, i, r[k]))
			set(s, i + 1, r[k], get(s, i, r[k]) + d);
		else if (kn(s, i + 1, r[k]))
			set(s, i, r[k], get(s, i + 1, r[k]) - d);
	}
}

/* Whether the path went to the jump's target: 1 taken, 0 fell through,
 * -1 not known. */
static int jump_taken(const struct vstate *s, size_t j)
{
	const struct vinsn *in = &s->in[j];
	uint64_t next;

	if (!next_ip(s, j, &next) || in->nop != 1 ||
	    in->op[0].type != X86_OP_IMM)
		return -1;
	int t = next == (uint64_t)in->op[0].imm, f = next == in->ip + in->size;
	return t == f ? -1 : t;
}

/*
 * Condition @cc of the flags instruction @i reads: 1 holds, 0 does not,
 * -1 not known.  From the flags' writer when its operands are known, or
 * from a conditional jump on the same flags the path took or did not.
 */
static int cond_at(const struct vstate *s, size_t i, unsigned cc)
{
	long k = flag_writer(s, i);
	unsigned f, jc;

	if (k < 0)
		return -1;
	if (flags_of(s, (size_t)k, &f))
		return cc_holds(cc, f);
	/* a jump reading the same flags, before or after @i */
	for (size_t j = (size_t)k + 1; j < s->n && j - (size_t)k <= 32; j++) {
		const struct vinsn *in = &s->in[j];
		if (j != i && in->id >= X86_INS_JAE && in->id <= X86_INS_JS &&
		    cc_of(in->id, &jc) && (jc | 1) == (cc | 1)) {
			int t = jump_taken(s, j);
			if (t >= 0)
				return jc == cc ? t : !t;
		}
		if (j != i && !keeps_flags(in))
			break;
	}
	return -1;
}

/* Register @r holds a zero-extended 32-bit value before instruction @i:
 * its last writer on the path (close before) wrote it as a 32-bit
 * destination (not bsf/bsr, which leave it as it was for a source 0). */
static int upper_zero(const struct vstate *s, size_t i, unsigned r)
{
	for (size_t k = i; k-- > 0 && i - k <= 64;) {
		const struct vinsn *w = &s->in[k];
		if (w->id == X86_INS_SYSCALL && r == BTRACE_VREG_RAX &&
		    kn(s, k, r)) {
			/* getpid, getppid, gettid (a pid, at most 2^22),
			 * get[ug]id, gete[ug]id (an unsigned 32-bit id): they
			 * cannot fail */
			switch (get(s, k, r)) {
			case 39: case 110: case 186: case 102: case 104:
			case 107: case 108:
				return 1;
			}
		}
		if (!((w->wr >> r) & 1))
			continue;
		/* a byte or word written alone keeps the upper half */
		if (w->id && w->nop >= 1 && w->op[0].type == X86_OP_REG &&
		    w->op[0].reg == r && w->op[0].width <= 2 &&
		    !((w->iwr >> r) & 1) && w->id != X86_INS_XCHG &&
		    !(w->nop >= 2 && w->op[1].type == X86_OP_REG &&
		      w->op[1].reg == r && w->op[1].width > 2))
			continue;
		return w->id && w->id != X86_INS_XCHG && w->id != X86_INS_CMPXCHG &&
		       w->id != X86_INS_XADD && w->id != X86_INS_BSF &&
		       w->id != X86_INS_BSR && w->nop >= 1 &&
		       w->op[0].type == X86_OP_REG && w->op[0].reg == r &&
		       w->op[0].width == 4 && !w->op[0].hi8 &&
		       (w->op[0].access & CS_AC_WRITE) &&
		       !((w->iwr >> r) & 1);
	}
	return 0;
}

/*
 * What the path says the flags' writer found: a je taken (or a jne not
 * taken) on the flags of cmp r, imm / cmp r, r / test r, r means the
 * operands were equal (the tested register 0), on those of sub, add, and,
 * or, xor or neg of a register that its result was 0.
 */
static void branch_facts(struct vstate *s, size_t i)
{
	const struct vinsn *j = &s->in[i], *c;
	long kw;

	if (!i || (j->id != X86_INS_JE && j->id != X86_INS_JNE))
		return;
	int t = jump_taken(s, i);
	/* ZF set: je taken, jne not taken */
	if (t < 0 || t != (j->id == X86_INS_JE) || (kw = flag_writer(s, i)) < 0)
		return;
	size_t k = (size_t)kw;
	c = &s->in[k];
	if (c->nop < 1 || c->op[0].type != X86_OP_REG || c->op[0].reg == NOREG ||
	    c->op[0].hi8 || (c->op[0].width != 8 && c->op[0].width != 4))
		return;
	unsigned r0 = c->op[0].reg;
	const struct vop *o1 = &c->op[1];
	if (c->id != X86_INS_CMP && c->id != X86_INS_TEST) {
		/* sub, add, and, or, xor, neg: the result was zero (a
		 * 32-bit one zero-extended) */
		set(s, k + 1, r0, 0);
		return;
	}
	if (c->nop != 2)
		return;
	if (c->op[0].width == 4) {
		/* the low half is what was compared: the whole register
		 * when its upper half is known to be zero */
		if (!upper_zero(s, k, r0))
			return;
		if (c->id == X86_INS_TEST && o1->type == X86_OP_REG && o1->reg == r0)
			set(s, k, r0, 0);
		else if (c->id == X86_INS_CMP && o1->type == X86_OP_IMM)
			set(s, k, r0, (uint64_t)o1->imm & 0xffffffffull);
		return;
	}
	if (c->id == X86_INS_TEST && o1->type == X86_OP_REG && o1->reg == r0) {
		set(s, k, r0, 0);
	} else if (c->id == X86_INS_CMP && o1->type == X86_OP_IMM) {
		set(s, k, r0, (uint64_t)o1->imm);
	} else if (c->id == X86_INS_CMP && o1->type == X86_OP_REG &&
		   o1->reg != NOREG && o1->width == 8) {
		if (kn(s, k, o1->reg))
			set(s, k, r0, get(s, k, o1->reg));
		else if (kn(s, k, r0))
			set(s, k, o1->reg, get(s, k, r0));
	}
}

/*
 * rt_sigreturn (@i: the system call with rax 15) restores every register
 * from the signal frame at the stack pointer: the sigcontext at rsp + 40
 * (struct rt_sigframe: the restorer's address at rsp - 8, then the
 * ucontext: flags, link, stack_t, then r8-r15, rdi, rsi, rbp, rbx, rdx,
 * rax, rcx, rsp, rip).  When every register after it is known, the frame
 * is the one place of the memory at the fault holding all of them, the
 * next instruction's address and, before them, the restorer (the
 * instruction before the system call): found once and only once, the
 * stack pointer before the system call is its address.  Not found (the
 * frame overwritten since, the memory not in the snapshot) or found twice
 * (a copy of it): nothing.
 */
static void sigreturn_frame(struct vstate *s, size_t i)
{
	static const uint8_t order[16] = {
		BTRACE_VREG_R8, BTRACE_VREG_R9, BTRACE_VREG_R10, BTRACE_VREG_R11,
		BTRACE_VREG_R12, BTRACE_VREG_R13, BTRACE_VREG_R14,
		BTRACE_VREG_R15, BTRACE_VREG_RDI, BTRACE_VREG_RSI,
		BTRACE_VREG_RBP, BTRACE_VREG_RBX, BTRACE_VREG_RDX,
		BTRACE_VREG_RAX, BTRACE_VREG_RCX, BTRACE_VREG_RSP,
	};
	const struct btrace_snapshot *sn = s->snap_mem;
	uint64_t restorer, next, found = 0;
	unsigned nfound = 0;

	if (!sn || !i || kn(s, i, BTRACE_VREG_RSP) || s->kn[i + 1] != 0xffff ||
	    s->in[i - 1].id != X86_INS_MOV)
		return;
	/* the memory and what is sought do not change: once */
	if (!next_ip(s, i, &next) || !s->searched || s->searched[i])
		return;
	s->searched[i] = 1;
	restorer = s->in[i - 1].ip;
	for (size_t m = 0; m < sn->nmemory; m++) {
		const struct btrace_memory *mm = &sn->memory[m];
		uint64_t base = (mm->vaddr + 7) & ~7ull;
		/* from rsp - 8: the restorer, 5 words of the ucontext, the 16
		 * registers and rip */
		const uint64_t need = 8 * 23;
		if (mm->size < need || base - mm->vaddr > mm->size - need)
			continue;
		for (uint64_t a = base; a - mm->vaddr <= mm->size - need; a += 8) {
			const uint8_t *p = mm->data + (a - mm->vaddr);
			unsigned k;
			if (bt_le64(p) != restorer)
				continue;
			for (k = 0; k < 17; k++)
				if (bt_le64(p + 48 + 8 * k) !=
				    (k < 16 ? get(s, i + 1, order[k]) : next))
					break;
			if (k == 17) {
				found = a + 8;
				nfound++;
			}
		}
	}
	if (nfound == 1)
		set(s, i, BTRACE_VREG_RSP, found);
}

/* The rsp change of instruction @i when it is a constant: 1 and *@d. */
static int rsp_delta(const struct vstate *s, size_t i, int64_t *d)
{
	const struct vinsn *in = &s->in[i];
	const struct vop *o0 = &in->op[0], *o1 = &in->op[1];

	switch (in->id) {
	case X86_INS_PUSH: case X86_INS_CALL: case X86_INS_PUSHFQ:
		*d = -8;
		return in->id != X86_INS_PUSH || in->nop == 1;
	case X86_INS_POP:
		*d = 8;
		return in->nop == 1 && !(o0->type == X86_OP_REG &&
					 o0->reg == BTRACE_VREG_RSP);
	case X86_INS_POPFQ:
		*d = 8;
		return 1;
	case X86_INS_RET:
		*d = 8 + (in->nop == 1 && o0->type == X86_OP_IMM ? o0->imm : 0);
		return 1;
	case X86_INS_ADD: case X86_INS_SUB:
		if (in->nop != 2 || o0->type != X86_OP_REG ||
		    o0->reg != BTRACE_VREG_RSP || o0->width != 8 ||
		    o1->type != X86_OP_IMM)
			return 0;
		*d = in->id == X86_INS_ADD ? o1->imm : -o1->imm;
		return 1;
	case X86_INS_LEA:
		if (in->nop != 2 || o0->type != X86_OP_REG ||
		    o0->reg != BTRACE_VREG_RSP || o0->width != 8 ||
		    o1->type != X86_OP_MEM || o1->bad || o1->rip ||
		    o1->base != BTRACE_VREG_RSP || o1->index != NOREG)
			return 0;
		*d = o1->imm;
		return 1;
	}
	return 0;
}

/*
 * The relation of instruction @i between states @i and @i + 1 (both
 * directions).  @f: facts about memory before it (forward pass) or after
 * it (backward pass); a load is the same either way.
 */
/* mul, imul, div and idiv of one 32- or 64-bit operand: rdx:rax (edx:eax
 * zero-extended) from rax (and rdx for a division) and the operand.  A
 * division whose quotient would not fit faults: it is not on the path. */
static void muldiv(struct vstate *s, size_t i, const struct facts *f)
{
	enum { RAX = BTRACE_VREG_RAX, RDX = BTRACE_VREG_RDX };
	const struct vinsn *in = &s->in[i];
	const struct vop *o = &in->op[0];
	int div = in->id == X86_INS_DIV || in->id == X86_INS_IDIV;
	int sgn = in->id == X86_INS_IMUL || in->id == X86_INS_IDIV;
	uint64_t a, d = 0, y, lo, hi;

	if ((o->width != 4 && o->width != 8) || !kn(s, i, RAX) ||
	    (div && !kn(s, i, RDX)) || !src_val(s, i, o, f, &y))
		return;
	a = get(s, i, RAX);
	if (div)
		d = get(s, i, RDX);
	if (o->width == 8) {
		unsigned __int128 n = ((unsigned __int128)d << 64) | a;
		if (!div && !sgn) {
			unsigned __int128 p = (unsigned __int128)a * y;
			lo = (uint64_t)p;
			hi = (uint64_t)(p >> 64);
		} else if (!div) {
			__int128 p = (__int128)(int64_t)a * (int64_t)y;
			lo = (uint64_t)p;
			hi = (uint64_t)((unsigned __int128)p >> 64);
		} else if (!y) {
			return;
		} else if (!sgn) {
			unsigned __int128 q = n / y;
			if (q >> 64)
				return;
			lo = (uint64_t)q;
			hi = (uint64_t)(n % y);
		} else {
			__int128 sn = (__int128)n, sy = (int64_t)y, q;
			if (sy == -1 && sn == (__int128)((unsigned __int128)1 << 127))
				return;
			q = sn / sy;
			if (q < INT64_MIN || q > INT64_MAX)
				return;
			lo = (uint64_t)(int64_t)q;
			hi = (uint64_t)(int64_t)(sn % sy);
		}
	} else {
		uint32_t a32 = (uint32_t)a, y32 = (uint32_t)y;
		uint64_t n = ((uint64_t)(uint32_t)d << 32) | a32;
		if (!div) {
			uint64_t p = sgn ? (uint64_t)((int64_t)(int32_t)a32 *
						      (int32_t)y32) :
				     (uint64_t)a32 * y32;
			lo = (uint32_t)p;
			hi = (uint32_t)(p >> 32);
		} else if (!y32) {
			return;
		} else if (!sgn) {
			if (n / y32 > UINT32_MAX)
				return;
			lo = n / y32;
			hi = n % y32;
		} else {
			int64_t sn = (int64_t)n, sy = (int32_t)y32;
			if (sy == -1 && sn == INT64_MIN)
				return;
			if (sn / sy < INT32_MIN || sn / sy > INT32_MAX)
				return;
			lo = (uint32_t)(int32_t)(sn / sy);
			hi = (uint32_t)(int32_t)(sn % sy);
		}
	}
	set(s, i + 1, RAX, lo);
	set(s, i + 1, RDX, hi);
}

/* The inverse of odd @y modulo 2^64 (Newton's iteration: each step
 * doubles the bits that are right, from 3). */
static uint64_t inverse_odd(uint64_t y)
{
	uint64_t v = y;

	for (int k = 0; k < 5; k++)
		v *= 2 - y * v;
	return v;
}

/*
 * imul of two or three operands backwards: the product modulo 2^width
 * with an odd factor known tells the other factor modulo 2^width (an odd
 * number has an inverse; an even one loses the top bits).  The whole
 * register of that factor when the width is 64, or 32 with its upper half
 * known to be zero.
 */
static void imul_back(struct vstate *s, size_t i, const struct facts *f)
{
	const struct vinsn *in = &s->in[i];
	const struct vop *d = &in->op[0];
	const struct vop *a, *b;
	uint64_t m = mask_of(d->width), p, y;

	if (!kn(s, i + 1, d->reg))
		return;
	p = get(s, i + 1, d->reg) & m;
	/* d = a * b: a the unknown register factor, b the known one */
	if (in->nop == 3) {
		a = &in->op[1];
		b = &in->op[2];
		if (!src_val(s, i, b, NULL, &y))
			return;
		y = sext(y, b->width);
	} else {
		a = reg_val(s, i, d, &y) ? &in->op[1] : d;
		b = a == d ? &in->op[1] : d;
		if (!src_val(s, i, b, f, &y))
			return;
	}
	if (!(y & 1) || a->type != X86_OP_REG || a->reg == NOREG || a->hi8 ||
	    a->width != d->width || (in->nop == 2 && a->reg == b->reg &&
				     b->type == X86_OP_REG))
		return;
	uint64_t x = (p * inverse_odd(y)) & m;
	if (d->width == 8)
		set(s, i, a->reg, x);
	else if (d->width == 4 && upper_zero(s, i, a->reg))
		set(s, i, a->reg, x);
}

static void relate(struct vstate *s, size_t i, const struct facts *f)
{
	const struct vinsn *in = &s->in[i];
	const struct vop *d = &in->op[0], *o1 = &in->op[1];
	uint64_t x, y, a;
	unsigned rsp = BTRACE_VREG_RSP;
	uint16_t wr = in->id == X86_INS_SYSCALL ? syscall_writes(s, i) : in->wr;

	branch_facts(s, i);
	target_facts(s, i);
	string_regs(s, i);
	log_stack(s, i);
	log_regs(s, i);
	if (in->id == X86_INS_SYSCALL && kn(s, i, BTRACE_VREG_RAX) &&
	    get(s, i, BTRACE_VREG_RAX) == 15)
		sigreturn_frame(s, i);
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
		if (dreg == NOREG || !count_of(s, i, in, d->width, &cnt) ||
		    !reg_val(s, i, d, &x))
			break;
		uint64_t r = in->id == X86_INS_SHL ? x << cnt :
			     in->id == X86_INS_SHR ? x >> cnt :
			     (uint64_t)((int64_t)sext(x, d->width) >> cnt);
		put(s, i, d, r & mask_of(d->width));
		break;
	}
	case X86_INS_MUL: case X86_INS_DIV: case X86_INS_IDIV:
		if (in->nop == 1)
			muldiv(s, i, f);
		break;
	case X86_INS_IMUL:
		if (in->nop == 1) {
			muldiv(s, i, f);
			break;
		}
		if (dreg == NOREG || (d->width != 8 && d->width != 4) || in->nop < 2)
			break;
		if (in->nop == 2 && reg_val(s, i, d, &x) && src_val(s, i, o1, f, &y))
			put(s, i, d, (x * y) & mask_of(d->width));
		else if (in->nop == 3 && src_val(s, i, o1, f, &x) &&
			 src_val(s, i, &in->op[2], NULL, &y))
			put(s, i, d, (x * sext(y, in->op[2].width)) &
				     mask_of(d->width));
		imul_back(s, i, f);
		break;
	case X86_INS_BSF: case X86_INS_BSR: case X86_INS_TZCNT:
	case X86_INS_POPCNT: {
		/* not lzcnt: a CPU without it runs bsr (the same for tzcnt
		 * and bsf but for 0); bsf and bsr of 0 leave the
		 * destination as it was */
		if (in->nop != 2 || dreg == NOREG || d->hi8 ||
		    (d->width != 8 && d->width != 4 && d->width != 2) ||
		    !src_val(s, i, o1, f, &y))
			break;
		y &= mask_of(d->width);
		if (in->id == X86_INS_POPCNT)
			put(s, i, d, (uint64_t)__builtin_popcountll(y));
		else if (y && in->id == X86_INS_BSR)
			put(s, i, d, (uint64_t)(63 - __builtin_clzll(y)));
		else if (y)
			put(s, i, d, (uint64_t)__builtin_ctzll(y));
		break;
	}
	case X86_INS_XCHG:
		if (in->nop == 2 && dreg != NOREG && d->width == 4 &&
		    o1->type == X86_OP_REG && o1->reg != NOREG &&
		    o1->width == 4 && (unsigned)dreg != o1->reg) {
			/* xchg r32, r32: each gets the other's low half,
			 * zero-extended */
			if (kn(s, i, (unsigned)dreg))
				set(s, i + 1, o1->reg,
				    get(s, i, (unsigned)dreg) & 0xffffffffull);
			if (kn(s, i, o1->reg))
				set(s, i + 1, (unsigned)dreg,
				    get(s, i, o1->reg) & 0xffffffffull);
			break;
		}
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
		/* rcx: where it returns (not under QEMU, whose user-mode
		 * syscall leaves rcx and r11 as they were; then not known) */
		if (!s->qemu)
			set(s, i + 1, BTRACE_VREG_RCX, in->ip + in->size);
		/* a signal delivered at its return: the handler starts with
		 * rax 0 (x64_setup_rt_frame(), QEMU's setup_rt_frame()) */
		if (in->away)
			set(s, i + 1, BTRACE_VREG_RAX, 0);
		break;
	case X86_INS_ADC: case X86_INS_SBB: {
		int cf;
		if (in->nop != 2 || dreg == NOREG || d->hi8 ||
		    (d->width != 8 && d->width != 4) ||
		    (cf = cond_at(s, i, CC_B)) < 0)
			break;
		if (in->id == X86_INS_SBB && o1->type == X86_OP_REG &&
		    o1->reg == dreg) {
			/* sbb r, r: 0 or all ones, from the carry alone */
			put(s, i, d, cf ? mask_of(d->width) : 0);
			break;
		}
		if (!src_val(s, i, o1, f, &y) || !reg_val(s, i, d, &x))
			break;
		if (o1->type == X86_OP_IMM)
			y = sext(y, o1->width ? o1->width : 8);
		put(s, i, d, (in->id == X86_INS_ADC ? x + y + (uint64_t)cf :
			      x - y - (uint64_t)cf) & mask_of(d->width));
		break;
	}
	default: {
		unsigned cc;
		int c;
		if (!cc_of(in->id, &cc) || dreg == NOREG)
			break;
		if (in->nop == 1 && d->width == 1) {
			/* setcc */
			if ((c = cond_at(s, i, cc)) >= 0)
				put(s, i, d, (uint64_t)c);
			break;
		}
		if (in->nop != 2 || d->hi8 || (d->width != 8 && d->width != 4))
			break;
		/* cmovcc: the source when the condition holds, else the
		 * destination as it was (a 32-bit one zero-extended) */
		c = cond_at(s, i, cc);
		if (c == 1) {
			if (src_val(s, i, o1, f, &x))
				put(s, i, d, x);
			if (full && o1->type == X86_OP_REG && o1->reg != NOREG &&
			    o1->width == 8 && kn(s, i + 1, dreg))
				set(s, i, o1->reg, get(s, i + 1, dreg));
		} else if (c == 0) {
			if (reg_val(s, i, d, &x))
				put(s, i, d, x);
			if ((full || upper_zero(s, i, dreg)) && kn(s, i + 1, dreg))
				set(s, i, dreg, get(s, i + 1, dreg));
		} else if (src_val(s, i, o1, f, &x) && reg_val(s, i, d, &y) &&
			   x == y) {
			put(s, i, d, x);
		}
		break;
	}
	}

	/* the stack pointer: a constant change, both ways (leave: rbp's) */
	int64_t dsp;
	if (in->id == X86_INS_LEAVE) {
		if (kn(s, i, BTRACE_VREG_RBP))
			set(s, i + 1, rsp, get(s, i, BTRACE_VREG_RBP) + 8);
		if (kn(s, i + 1, rsp))
			set(s, i, BTRACE_VREG_RBP, get(s, i + 1, rsp) - 8);
	} else if (rsp_delta(s, i, &dsp)) {
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

/* --- the stack pointer from the memory at the fault --- */

/*
 * Where the stack pointer is not known (after an `and rsp, -64`, an
 * alloca of a size not known, a longjmp), it is still known relative to
 * itself along a segment of the path (pushes, pops, calls, returns, adds
 * of constants).  The segment's last stores to its stack slots of values
 * that are known (return addresses always are) are still in the memory at
 * the fault when nothing written after them can have touched them: every
 * later write's address known (or relative in the same segment, then seen
 * to miss them).  The stack pointer at the segment's start is then the one
 * base B for which the memory at the fault holds every such value at B
 * plus its offset: searched for in the snapshot's memory, and taken only
 * when exactly one B fits (at least two values, one of them a return
 * address, none of them overwritten at B by a later write of a known
 * address).
 */
struct wrange {
	int rel;             /* 1: offset from the segment's base */
	uint32_t seg;
	uint64_t a;          /* address, or the offset (two's complement) */
	uint64_t size;
};


/* The memory ranges instruction @k writes, into @w (at most 4): their
 * count, -1 when one of them is not known. */
static int write_ranges(const struct vstate *s, size_t k, const uint32_t *seg,
			const int64_t *rel, struct wrange *w)
{
	const struct vinsn *in = &s->in[k];
	uint64_t a;
	int n = 0;

	if (in->clobber == 2) {
		uint64_t len;
		int r = rep_range(s, k, &a, &len);
		if (r > 0)
			w[n++] = (struct wrange){ 0, 0, a, len };
		return r < 0 ? -1 : n;
	}
	if (in->clobber)
		return -1;
	if (in->id == X86_INS_SYSCALL) {
		uint64_t m[2][2];
		int r = syscall_ranges(s, k, m);
		for (int j = 0; j < r; j++)
			w[n++] = (struct wrange){ 0, 0, m[j][0], m[j][1] };
		return r < 0 ? -1 : n;
	}
	if (in->id == X86_INS_PUSH || in->id == X86_INS_CALL ||
	    in->id == X86_INS_PUSHFQ) {
		if (kn(s, k, BTRACE_VREG_RSP))
			w[n++] = (struct wrange){ 0, 0, get(s, k, BTRACE_VREG_RSP) - 8, 8 };
		else
			w[n++] = (struct wrange){ 1, seg[k], (uint64_t)(rel[k] - 8), 8 };
	}
	for (unsigned j = 0; j < in->nop; j++) {
		const struct vop *o = &in->op[j];
		uint64_t size = xsave_area(in->id) ? XSAVE_MAX : o->width;
		if (o->type != X86_OP_MEM || in->id == X86_INS_LEA ||
		    in->id == X86_INS_NOP ||
		    (o->access && !(o->access & CS_AC_WRITE) && !xsave_area(in->id)))
			continue;
		if (!size || n == 4)
			return -1;
		if (addr_of(s, k, o, &a))
			w[n++] = (struct wrange){ 0, 0, a, size };
		else if (!o->bad && !o->rip && o->base == BTRACE_VREG_RSP &&
			 o->index == NOREG)
			w[n++] = (struct wrange){ 1, seg[k], (uint64_t)(rel[k] + o->imm),
						  size };
		else
			return -1;
	}
	return n;
}

static int overlap(uint64_t a, uint64_t as, uint64_t b, uint64_t bs)
{
	return a < b + bs && b < a + as;
}

/* The same for offsets from a segment's stack pointer (signed). */
static int overlap_rel(int64_t a, uint64_t as, int64_t b, uint64_t bs)
{
	return a < b + (int64_t)bs && b < a + (int64_t)as;
}

struct sconstraint {
	size_t k;            /* the store */
	int64_t off;
	uint64_t val;
	int ret;             /* a return address */
};

/* Anchor the segments whose stack pointer is not known: 1 if one was. */
static int anchor_stack(struct vstate *s)
{
	size_t n = s->n;
	const struct btrace_snapshot *sn = s->snap_mem;
	uint32_t *seg = NULL;
	int64_t *rel = NULL;
	struct wrange (*wr)[4] = NULL;
	int *nw = NULL;
	struct sconstraint *cs = NULL;
	int found_any = 0;

	if (!sn || !n)
		return 0;
	seg = calloc(n + 1, sizeof(*seg));
	rel = calloc(n + 1, sizeof(*rel));
	wr = calloc(n, sizeof(*wr));
	nw = calloc(n, sizeof(*nw));
	cs = calloc(n, sizeof(*cs));
	if (!seg || !rel || !wr || !nw || !cs)
		goto out;
	for (size_t i = 0; i < n; i++) {
		int64_t d;
		uint16_t w = s->in[i].id == X86_INS_SYSCALL ? syscall_writes(s, i) :
			     s->in[i].wr;
		if (rsp_delta(s, i, &d)) {
			seg[i + 1] = seg[i];
			rel[i + 1] = rel[i] + d;
		} else if (!((w >> BTRACE_VREG_RSP) & 1)) {
			seg[i + 1] = seg[i];
			rel[i + 1] = rel[i];
		} else {
			seg[i + 1] = seg[i] + 1;
			rel[i + 1] = 0;
		}
	}
	for (size_t i = 0; i < n; i++)
		nw[i] = write_ranges(s, i, seg, rel, wr[i]);

	for (size_t st = 0; st <= n;) {
		size_t en = st;
		while (en + 1 <= n && seg[en + 1] == seg[st])
			en++;
		/* states st..en; its instructions st..en - 1 (en < n) */
		uint32_t sg = seg[st];
		size_t next = en + 1;
		if (kn(s, st, BTRACE_VREG_RSP) || en == st) {
			st = next;
			continue;
		}
		/* writes after which nothing before them can be trusted: one
		 * not known, or relative to another segment */
		size_t first_ok = 0;
		for (size_t k = n; k-- > st;) {
			int bad = nw[k] < 0;
			for (int j = 0; !bad && j < nw[k]; j++)
				bad = wr[k][j].rel && wr[k][j].seg != sg;
			if (bad) {
				first_ok = k + 1;
				break;
			}
		}
		/* the segment's last stores of known values, newest first */
		size_t nc = 0;
		int has_ret = 0;
		size_t last = en < n ? en : n;
		for (size_t k = last; k-- > st && k >= first_ok;) {
			const struct vinsn *in = &s->in[k];
			uint64_t a, v;
			unsigned size;
			int has_v, src;
			if (nw[k] <= 0)
				continue;
			/* a constraint: a store of a known value at a relative
			 * slot no later write in the segment covers */
			int is_st = store_of(s, k, &a, &size, &has_v, &v, &src) == 1;
			int64_t off = 0;
			if (!is_st) {
				/* relative stores of a known value only */
				const struct vop *o0 = &in->op[0], *o1 = &in->op[1];
				if (in->id == X86_INS_MOV && in->nop == 2 &&
				    o0->type == X86_OP_MEM && wr[k][0].rel &&
				    (o0->width == 8 || o0->width == 4)) {
					off = (int64_t)wr[k][0].a;
					size = o0->width;
					has_v = o1->type == X86_OP_IMM ?
						(v = (uint64_t)o1->imm & mask_of(size), 1) :
						reg_val(s, k, o1, &v);
					is_st = 1;
				} else if ((in->id == X86_INS_CALL ||
					    (in->id == X86_INS_PUSH && in->nop == 1)) &&
					   wr[k][0].rel) {
					off = (int64_t)wr[k][0].a;
					size = 8;
					has_v = in->id == X86_INS_CALL ?
						(v = in->ip + in->size, 1) :
						src_val(s, k, &in->op[0], NULL, &v);
					is_st = 1;
				}
			} else {
				is_st = 0;   /* its address is known: not relative */
			}
			int covered = 0;
			for (size_t c = 0; c < nc && is_st; c++)
				covered |= overlap_rel(cs[c].off, 8, off, size);
			/* any later relative write in the segment over it */
			for (size_t k2 = k + 1; is_st && !covered && k2 <= last &&
			     k2 < n; k2++)
				for (int j = 0; j < nw[k2]; j++)
					if (wr[k2][j].rel && wr[k2][j].seg == sg &&
					    overlap_rel((int64_t)wr[k2][j].a,
							wr[k2][j].size, off, size))
						covered = 1;
			if (is_st && has_v && !covered && size == 8) {
				cs[nc++] = (struct sconstraint){ k, off, v,
								 in->id == X86_INS_CALL };
				has_ret |= in->id == X86_INS_CALL;
			}
		}
		if (nc < 2 || !has_ret) {
			st = next;
			continue;
		}
		/* search: the first return address's value in the memory */
		size_t r0 = 0;
		while (!cs[r0].ret)
			r0++;
		uint64_t base = 0;
		unsigned nbase = 0;
		for (size_t m = 0; m < sn->nmemory && nbase < 2; m++) {
			const struct btrace_memory *mm = &sn->memory[m];
			/* the part of it in the thread's stack */
			uint64_t lo = mm->vaddr > s->stk_lo ? mm->vaddr : s->stk_lo;
			uint64_t hi = mm->vaddr + mm->size < s->stk_hi ?
				      mm->vaddr + mm->size : s->stk_hi;
			if (mm->size < 8 || hi < lo + 8)
				continue;
			for (uint64_t o = lo - mm->vaddr; o <= hi - 8 - mm->vaddr &&
			     nbase < 2; o++) {
				if (bt_le64(mm->data + o) != cs[r0].val)
					continue;
				uint64_t b = mm->vaddr + o - (uint64_t)cs[r0].off;
				size_t c;
				for (c = 0; c < nc; c++) {
					uint64_t x, at = b + (uint64_t)cs[c].off;
					if (!mem_read(sn, at, 8, &x) || x != cs[c].val)
						break;
					/* a later write of a known address over
					 * it: the memory says nothing */
					int hit = 0;
					for (size_t k2 = cs[c].k + 1; k2 < n && !hit; k2++)
						for (int j = 0; j < nw[k2]; j++)
							if (!wr[k2][j].rel &&
							    overlap(wr[k2][j].a, wr[k2][j].size,
								    at, 8))
								hit = 1;
					if (hit)
						break;
				}
				if (c == nc && (!nbase || b != base)) {
					base = b;
					nbase++;
				}
			}
		}
		if (nbase == 1) {
			set(s, st, BTRACE_VREG_RSP, base);
			found_any = 1;
		}
		st = next;
	}
out:
	free(seg);
	free(rel);
	free(wr);
	free(nw);
	free(cs);
	return found_any;
}

/* After the last system call of the path that may change the mappings or
 * their protection (mmap with MAP_FIXED or flags not known, mprotect,
 * munmap, brk, mremap, madvise, shmat, shmdt, remap_file_pages,
 * pkey_mprotect, or one whose number is not known).  An mmap without
 * MAP_FIXED (mmap_unfixed()) leaves the mappings a load read from as they
 * were. */
static size_t remap_after(const struct vstate *s)
{
	for (size_t i = s->n; i-- > 0;) {
		if (s->in[i].id != X86_INS_SYSCALL)
			continue;
		if (!kn(s, i, BTRACE_VREG_RAX))
			return i + 1;
		switch (get(s, i, BTRACE_VREG_RAX)) {
		case 9:
			if (mmap_unfixed(s, i))
				break;
			return i + 1;
		case 10: case 11: case 12: case 25: case 28: case 30: case 67:
		case 216: case 329:
			return i + 1;
		}
	}
	return 0;
}

static void solve_passes(struct vstate *s);

/* From the instruction after the last one of the path that may change the
 * fs base (arch_prctl, wrfsbase, a system call whose number is not known):
 * n + 1 when the fs base at the fault is not known. */
static size_t fs_from(const struct vstate *s)
{
	if (!s->fs_base)
		return s->n + 1;
	for (size_t i = s->n; i-- > 0;) {
		if (s->in[i].id == X86_INS_WRFSBASE)
			return i + 1;
		if (s->in[i].id == X86_INS_SYSCALL &&
		    (!kn(s, i, BTRACE_VREG_RAX) || get(s, i, BTRACE_VREG_RAX) == 158))
			return i + 1;
	}
	return 0;
}

/* Forward and backward passes until nothing changes; then the stack
 * pointer from the memory at the fault, and again. */
static void solve(struct vstate *s)
{
	for (int round = 0; round < 8; round++) {
		solve_passes(s);
		if (!anchor_stack(s))
			break;
	}
}

static void solve_passes(struct vstate *s)
{
	for (int pass = 0; pass < 64; pass++) {
		s->changed = 0;
		/* rax of more system calls known: only ever earlier */
		s->remap_after = remap_after(s);
		s->fs_from = fs_from(s);
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

/*
 * The QEMU backend folds the turns of short loops out of the history
 * (docs/qemu-backend.md, "Loops"): at a block that ends in a backward
 * direct jump or branch reaching at most 256 bytes back, the turns it
 * drops lie right before the block.  Metadata qemu.loop_turns says
 * whether it may have: FOLD_NONE (not QEMU, or "kept": every turn is in
 * the history), FOLD_MARKED (each fold is marked in the access log, when
 * the log reaches back to it: align_log()), FOLD_ANY (nothing marks
 * where).
 */
#define LOOP_SPAN 256u
enum { FOLD_NONE, FOLD_ANY, FOLD_MARKED };

static int folds(const struct bt_ctx *c)
{
	const struct btrace_snapshot *sn = c->snap;
	const char *turns = btrace_snapshot_meta(sn, "qemu.loop_turns");

	if (!sn->has_config || sn->config.backend != BTRACE_BACKEND_QEMU ||
	    (turns && !strcmp(turns, "kept")))
		return FOLD_NONE;
	return turns && !strcmp(turns, "marked") ? FOLD_MARKED : FOLD_ANY;
}

/*
 * Across a fold.  Metadata qemu.fold_cycles "direct4" says what a turn the
 * recorder folded out may be: a path of at most FOLD_TBS blocks from the
 * loop block back to it, none of the blocks after the loop block ending in
 * a call, a return, a far transfer or a trap (docs/qemu-backend.md,
 * "Loops").  Each block ends at a jump or branch, or before one, so every
 * such turn is among the paths of the code from the loop block's first
 * instruction with at most FOLD_TBS jumps and branches that come back to
 * it, through no call or return.  What those may write, the turns may
 * have written: fold_effects() makes it one step of the path.
 */
#define FOLD_TBS 4
#define FOLD_INSNS 1024       /* instructions on one path */
#define FOLD_WORK 16384       /* instructions looked at in all */

static int fold_cycles(const struct bt_ctx *c)
{
	const char *v = btrace_snapshot_meta(c->snap, "qemu.fold_cycles");

	return v && !strcmp(v, "direct4");
}

/* Instruction @in may store to memory. */
static int may_store(const struct vinsn *in)
{
	if (in->clobber || stack_access(in->id) == 1 || xsave_area(in->id) ||
	    in->id == X86_INS_SYSCALL)
		return 1;
	for (unsigned k = 0; k < in->nop; k++)
		if (mem_dest(in, &in->op[k]))
			return 1;
	return 0;
}

/* Whether instruction @id changes the direction flag. */
static int sets_df(unsigned id)
{
	return id == X86_INS_CLD || id == X86_INS_STD || pops_flags(id);
}

struct fold_walk {
	struct bt_ctx *c;
	cs_insn *ci;
	uint64_t loop;            /* the loop block's first instruction */
	uint64_t path[FOLD_INSNS];
	size_t work;
	int fail;
	unsigned turns;           /* paths found */
	struct vinsn *out;
};

/* A turn's path back to the loop block: what its instructions may do,
 * into the fold step. */
static void fold_turn(struct fold_walk *w, size_t len)
{
	struct vinsn v;

	w->turns++;
	for (size_t k = 0; k < len && !w->fail; k++) {
		decode_one(w->c, w->ci, w->path[k], &v);
		if (v.id == X86_INS_WRFSBASE) {
			/* the fs base: fs_from() reads it off the path */
			w->fail = 1;
			return;
		}
		w->out->wr |= v.wr;
		if (may_store(&v))
			w->out->clobber = 1;
		if (!v.id || sets_df(v.id))
			w->out->fold_df = 1;
	}
}

/* The paths from @a, @len instructions into one, with @jumps jumps and
 * branches left. */
static void fold_paths(struct fold_walk *w, uint64_t a, size_t len, int jumps)
{
	while (!w->fail) {
		if (len && a == w->loop) {
			fold_turn(w, len);
			return;
		}
		if (len == FOLD_INSNS || ++w->work > FOLD_WORK) {
			w->fail = 1;
			return;
		}
		const struct bt_insn_info *ii = bt_insn_classify(w->c, a);
		unsigned cls = ii->cls, size = ii->size;
		uint64_t to = ii->target;
		if (!size) {
			w->fail = 1;    /* no code: where it goes is not known */
			return;
		}
		w->path[len++] = a;
		switch (cls) {
		case BTRACE_INSN_OTHER:
			a += size;
			continue;
		case BTRACE_INSN_JCC:
		case BTRACE_INSN_JMP:
			if (!jumps)
				return;     /* a turn is not that long */
			if (!to) {
				w->fail = 1;
				return;
			}
			if (cls == BTRACE_INSN_JCC)
				fold_paths(w, a + size, len, jumps - 1);
			a = to;
			jumps--;
			continue;
		case BTRACE_INSN_CALL: case BTRACE_INSN_CALL_IND:
		case BTRACE_INSN_RET:
			return;             /* not on a folded turn */
		default:
			/* an indirect jump (its target is not known), a system
			 * call or another far transfer */
			w->fail = 1;
			return;
		}
	}
}

/* The fold step for the turns folded out before the loop block at @loop:
 * 1 and *@out, 0 when what they may do cannot be told. */
static int fold_effects(struct bt_ctx *c, cs_insn *ci, uint64_t loop,
			struct vinsn *out)
{
	struct fold_walk *w = calloc(1, sizeof(*w));
	int ok = 0;

	memset(out, 0, sizeof(*out));
	if (w && ci) {
		out->ip = loop;
		out->fold = 1;
		*w = (struct fold_walk){ .c = c, .ci = ci, .loop = loop,
					 .out = out };
		fold_paths(w, loop, 0, FOLD_TBS);
		/* no path back: the code is not what ran */
		ok = !w->fail && w->turns;
	}
	free(w);
	if (!ok)
		memset(out, 0, sizeof(*out));
	return ok;
}

/* Where a fold may lie in the first @n instructions of @ip when nothing
 * marks it: the path is used from after the last block the plugin may
 * fold at, the number of instructions to leave out (0 none). */
static size_t folded_from(struct bt_ctx *c, const uint64_t *ip, size_t n)
{
	for (size_t k = n; k-- > 0;) {
		const struct bt_insn_info *ii = bt_insn_classify(c, ip[k]);
		if ((ii->cls == BTRACE_INSN_JMP || ii->cls == BTRACE_INSN_JCC) &&
		    ii->target <= ip[k] && ip[k] - ii->target <= LOOP_SPAN)
			return k + 1;
	}
	return 0;
}

/* With fold marks, where the log reached back only to instruction @from
 * (align_log()): the path from after the last block the plugin may have
 * folded at unmarked, one whose first instruction lies before @from (the
 * block holding instruction @from - 1 ends at the first control transfer
 * from there).  The number of instructions to leave out. */
static size_t marked_cut(struct vstate *s, const uint64_t *ip, size_t from)
{
	size_t e;

	if (!from)
		return 0;
	e = from - 1;
	while (e + 1 < s->n &&
	       bt_insn_classify(s->c, ip[e])->cls == BTRACE_INSN_OTHER)
		e++;
	return folded_from(s->c, ip, e + 1);
}

/* Leave the first @cut instructions of the path out (before solve():
 * only the state at the fault is known yet). */
static void drop_front(struct vstate *s, uint64_t *ip, size_t cut)
{
	size_t n = s->n, m;

	if (cut > n)   /* never past the fault: the whole path at most */
		cut = n;
	m = n + 1 - cut;

	memmove(ip, ip + cut, (n - cut) * sizeof(*ip));
	memmove(s->in, s->in + cut, m * sizeof(*s->in));
	memmove(s->val, s->val + cut * NR, m * NR * sizeof(*s->val));
	memmove(s->kn, s->kn + cut, m * sizeof(*s->kn));
	memmove(s->searched, s->searched + cut, m);
	s->n = n - cut;
}

/* Room for @m fold steps more (before solve()). */
static int fold_room(struct vstate *s, uint64_t **ip, size_t m)
{
	size_t n = s->n + m + 1;
	void *p;

	if (!(p = realloc(*ip, n * sizeof(**ip))))
		return -ENOMEM;
	*ip = p;
	if (!(p = realloc(s->in, n * sizeof(*s->in))))
		return -ENOMEM;
	s->in = p;
	if (!(p = realloc(s->val, n * NR * sizeof(*s->val))))
		return -ENOMEM;
	s->val = p;
	if (!(p = realloc(s->kn, n * sizeof(*s->kn))))
		return -ENOMEM;
	s->kn = p;
	if (!(p = realloc(s->searched, n)))
		return -ENOMEM;
	s->searched = p;
	return 0;
}

/* Fold step @fx right before instruction @p (@p == n: before the fault):
 * the state before it is not known yet, the one after it is the state
 * instruction @p had. */
static void insert_fold(struct vstate *s, uint64_t *ip, size_t p,
			const struct vinsn *fx)
{
	size_t n = s->n;
	int32_t depth = 0;

	if (p < n) {
		depth = s->in[p].depth;
	} else if (n) {
		depth = s->in[n - 1].depth +
			(s->in[n - 1].id == X86_INS_CALL) -
			(s->in[n - 1].id == X86_INS_RET);
	}
	memmove(ip + p + 1, ip + p, (n - p) * sizeof(*ip));
	memmove(s->in + p + 1, s->in + p, (n + 1 - p) * sizeof(*s->in));
	memmove(s->val + (p + 1) * NR, s->val + p * NR,
		(n + 1 - p) * NR * sizeof(*s->val));
	memmove(s->kn + p + 1, s->kn + p, (n + 1 - p) * sizeof(*s->kn));
	memmove(s->searched + p + 1, s->searched + p, n + 1 - p);
	ip[p] = fx->ip;
	s->in[p] = *fx;
	s->in[p].depth = depth;
	memset(s->val + p * NR, 0, NR * sizeof(*s->val));
	s->kn[p] = 0;
	s->searched[p] = 0;
	s->n = n + 1;
}

/*
 * The folds align_log() met, newest first: each whose turns fold_effects()
 * can tell becomes a fold step; the path is cut at the first that cannot
 * (it starts at that loop block, as with no way across), or else where the
 * walk lost step, or else, when the recorder folds and the log did not
 * reach the path's start, where an unmarked fold may lie (marked_cut()).
 */
static int apply_folds(struct vstate *s, uint64_t **ip, int fo, size_t from,
		       size_t stop, cs_insn *ci)
{
	struct vinsn *fx = calloc(s->nfold + 1, sizeof(*fx));
	size_t nf = 0, cut, m = 0;
	int across = fold_cycles(s->c);

	if (!fx)
		return -ENOMEM;
	while (nf < s->nfold && across &&
	       fold_effects(s->c, ci, s->fold_ip[nf], &fx[nf]))
		nf++;
	cut = nf < s->nfold ? s->fold_at[nf] : stop ? stop :
	      fo == FOLD_MARKED ? marked_cut(s, *ip, from) : 0;
	if (cut)
		drop_front(s, *ip, cut);
	for (size_t k = 0; k < nf; k++)
		m += s->fold_at[k] > cut;
	if (m && fold_room(s, ip, m) < 0) {
		free(fx);
		return -ENOMEM;
	}
	/* the newest first: the indices before each stay as they are */
	for (size_t k = 0; k < nf; k++)
		if (s->fold_at[k] > cut)
			insert_fold(s, *ip, s->fold_at[k] - cut, &fx[k]);
	free(fx);
	return 0;
}

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

/* A register the x86-64 ABI has a function preserve for its caller. */
static int callee_saved(unsigned reg)
{
	return reg == BTRACE_VREG_RBX || reg == BTRACE_VREG_RBP ||
	       reg >= BTRACE_VREG_R12;
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
		if (callee_saved(reg) && l->has_value)
			/* restored, not returned: where it came from is the
			 * links that follow */
			snprintf(l->what, sizeof(l->what), "%s = 0x%llx as %s "
				 "returned into %s", vreg_names[reg],
				 (unsigned long long)l->value,
				 fname(s->c, s->in[k].ip), w);
		else if (callee_saved(reg))
			snprintf(l->what, sizeof(l->what), "%s as %s returned "
				 "into %s", vreg_names[reg],
				 fname(s->c, s->in[k].ip), w);
		else if (l->has_value)
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
		if (in->clobber)
			return SIZE_MAX;
		if (in->id == X86_INS_SYSCALL) {
			/* what it may write (syscall_ranges()) misses it */
			uint64_t m[2][2];
			int r = syscall_ranges(s, k, m);
			if (r < 0)
				return SIZE_MAX;
			for (int q = 0; q < r; q++)
				if (a < m[q][0] + m[q][1] && m[q][0] < a + size)
					return SIZE_MAX;
			continue;
		}
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
			if (!mem_dest(in, o))
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

/* snprintf() for a link's words: a long name is cut, never overrun. */
__attribute__((format(printf, 3, 4)))
static void say(char *buf, size_t len, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, len, fmt, ap);
	va_end(ap);
}

static int32_t pid_of(const struct btrace_snapshot *sn, int32_t tid);

/* @a lies in the crashed thread's stack (the mapping holding its stack
 * pointer at the fault, not the brk area). */
static int own_stack(const struct vstate *s, uint64_t a)
{
	return s->stk_hi && !s->stk_heap && a >= s->stk_lo && a < s->stk_hi;
}

/* What memory at @a is, for a link's words: "current (0x4010, a
 * global)", "cfg+0x10 (...)", "[0x7ff0] (the stack of thread 12)",
 * "[0x5000] (the heap)"; a global's name also into @l. */
static void mem_name(const struct vstate *s, uint64_t a,
		     struct btrace_origin_link *l, char *buf, size_t len)
{
	const struct btrace_snapshot *sn = s->c->snap;
	uint64_t off = 0;
	const char *g = bt_syms_data(s->c, a, &off);
	const char *what = NULL;
	char t[48];

	if (g) {
		l->addr_sym = g;
		l->addr_off = off;
		if (off)
			snprintf(buf, len, "%s+0x%llx (0x%llx, a global)", g,
				 (unsigned long long)off, (unsigned long long)a);
		else
			snprintf(buf, len, "%s (0x%llx, a global)", g,
				 (unsigned long long)a);
		return;
	}
	if (own_stack(s, a)) {
		snprintf(t, sizeof(t), "the stack of thread %d", s->tid);
		what = t;
	}
	int32_t pid = sn ? pid_of(sn, s->tid) : -1;

	for (size_t k = 0; !what && sn && k < sn->nmappings; k++) {
		const struct btrace_mapping *m = &sn->mappings[k];
		if (a < m->start || a >= m->end || m->pid != pid)
			continue;
		if (m->path && !strcmp(m->path, "[heap]"))
			what = "the heap";
		else if (m->path && !strncmp(m->path, "[stack", 6))
			what = "a stack";
		else if (m->path && m->path[0] != '[')
			what = "a file's mapping";
		else
			what = "anonymous memory";
	}
	if (what)
		snprintf(buf, len, "[0x%llx] (%s)", (unsigned long long)a, what);
	else
		snprintf(buf, len, "[0x%llx]", (unsigned long long)a);
}

/*
 * Another thread's newest store to [@a, +@size) in its history whose
 * address does not depend on registers (rip-relative or absolute: it is
 * exact): "thread 12 stored 0x0 to it at worker (x.c:16), 1.250 us before
 * the fault" into @buf ("" none).  A fact of that thread's trace, not a
 * proof that it was the last write.
 */
static void other_store(const struct vstate *s, uint64_t a, unsigned size,
			char *buf, size_t len)
{
	const struct btrace_decode_result *res = s->res;
	const struct btrace_block *at = NULL, *fb = NULL;
	uint64_t ip = 0, val = 0;
	int hv = 0;
	int32_t tid = 0;
	struct vinsn in;

	buf[0] = 0;
	if (!res || !s->ci)
		return;
	/* instructions decoded at most, over all threads: a history not
	 * searched to its start may hold a newer store than the one found */
	uint64_t budget = 1u << 20;

	for (size_t t = 0; t < res->nthreads; t++) {
		const struct btrace_thread *th = &res->threads[t];
		if (th->tid == s->tid || th->tid < 0) {
			if (th->tid == s->tid && th->nblocks)
				fb = &th->blocks[th->nblocks - 1];
			continue;
		}
		for (size_t b = th->nblocks; b-- > 0 && budget;) {
			const struct btrace_block *bl = &th->blocks[b];
			uint64_t x = bl->ip, hit = 0;
			if (bl->kind != BTRACE_ITEM_BLOCK)
				continue;
			for (uint32_t q = 0; q < bl->ninsn && budget; q++, budget--) {
				decode_one(s->c, s->ci, x, &in);
				if (!in.id || !in.size)
					break;
				if (in.id == X86_INS_MOV && in.nop == 2 &&
				    in.op[0].type == X86_OP_MEM &&
				    in.op[0].width == size && !in.op[0].bad &&
				    !in.op[0].fs && in.op[0].base == NOREG &&
				    in.op[0].index == NOREG &&
				    (uint64_t)in.op[0].imm == a)
					hit = x;
				x += in.size;
			}
			if (!hit)
				continue;
			/* the newest of all threads, by time when known */
			if (!at || (bl->time_ns && at->time_ns &&
				    bl->time_ns > at->time_ns)) {
				decode_one(s->c, s->ci, hit, &in);
				at = bl;
				ip = hit;
				tid = th->tid;
				hv = in.op[1].type == X86_OP_IMM;
				val = (uint64_t)in.op[1].imm & mask_of(size);
			} else if (!bl->time_ns || !at->time_ns) {
				/* two threads, no order: say nothing */
				return;
			}
			break;
		}
		if (!budget)
			return;
	}
	if (!at)
		return;
	char w[128], v[40] = "", when[64] = "";
	where(s->c, ip, w, sizeof(w));
	if (hv)
		snprintf(v, sizeof(v), " 0x%llx", (unsigned long long)val);
	if (fb && fb->time_ns && at->time_ns && fb->time_ns >= at->time_ns)
		snprintf(when, sizeof(when), ", %s%.3f us before the fault",
			 at->time_flags & BTRACE_TIME_PACKET ? "" : "about ",
			 (double)(fb->time_ns - at->time_ns) / 1000);
	say(buf, len, "thread %d stored%s to it at %s%s", tid, v, w, when);
}

/*
 * Link @l read register @reg's value (or, for @reg NR, the faulting
 * instruction's memory operand) from [@a, +@size) at @j: the store on
 * the path that wrote it becomes the next link.  1: the chain goes on
 * with the register that store stored (*@reg, *@u); 0: it ends here.
 */
static int from_memory(struct bt_values *v, struct vstate *s,
		       struct btrace_origin_link *l, size_t j, uint64_t a,
		       unsigned size, unsigned *reg, size_t *u)
{
	char m[128], lead[96], at[128], other[160] = "";
	uint64_t sa, sv;
	unsigned ss;
	int src, hv;
	size_t k = store_before(s, j, a, size, &src);
	const char *rd = *reg < NR ? "loaded" : "read";

	mem_name(s, a, l, m, sizeof(m));
	l->has_addr = 1;
	l->addr = a;
	if (k != SIZE_MAX && !store_of(s, k, &sa, &ss, &hv, &sv, &src))
		k = SIZE_MAX;
	/* a store of another value than the one loaded is not its writer */
	if (k != SIZE_MAX && s->sole && hv && l->has_value &&
	    (sv & mask_of(size)) != (l->value & mask_of(size)))
		k = SIZE_MAX;
	/* another thread may have written it after this thread's store:
	 * only this thread's stack, and the same value, is taken as its */
	if (k != SIZE_MAX && !s->sole &&
	    (!own_stack(s, a) || !hv || !l->has_value ||
	     (sv & mask_of(size)) != (l->value & mask_of(size)))) {
		where(s->c, s->in[k].ip, at, sizeof(at));
		other_store(s, a, size, other, sizeof(other));
		l->kind = BTRACE_ORIGIN_LOAD;
		describe_value(lead, sizeof(lead), rd, l);
		if (other[0])
			say(l->what, sizeof(l->what), "%s from %s; its writer "
			    "is not known: %s", lead, m, other);
		else
			say(l->what, sizeof(l->what), "%s from %s; not known "
			    "whether another thread wrote it after %s", lead,
			    m, at);
		return 0;
	}
	if (k == SIZE_MAX) {
		if (!s->sole)
			other_store(s, a, size, other, sizeof(other));
		l->kind = BTRACE_ORIGIN_LOAD;
		describe_value(lead, sizeof(lead), rd, l);
		say(l->what, sizeof(l->what), "%s from %s%s%s%s", lead, m,
		    s->sole ? "" : "; other threads ran: its writer is "
		    "not known", other[0] ? ": " : "", other);
		return 0;
	}
	l->kind = BTRACE_ORIGIN_COPY;
	describe_value(lead, sizeof(lead), *reg < NR ? "loaded back" :
		       "read back", l);
	say(l->what, sizeof(l->what), "%s from %s", lead, m);
	struct btrace_origin_link *st = add_link(v, s->c, s->in[k].ip,
						 BTRACE_ORIGIN_STORE);
	if (!st)
		return 0;
	st->has_addr = 1;
	st->addr = a;
	mem_name(s, a, st, m, sizeof(m));
	const struct vinsn *in = &s->in[k];
	/* a dword register stored and read back as a dword: that register
	 * (its low half) */
	if (src < 0 && size == 4 && in->id == X86_INS_MOV && in->nop == 2 &&
	    in->op[1].type == X86_OP_REG && in->op[1].reg != NOREG &&
	    in->op[1].width == 4 && !in->op[1].hi8)
		src = in->op[1].reg;
	if (src >= 0) {
		static const char *const dword[NR] = {
			"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi",
			"r8d", "r9d", "r10d", "r11d", "r12d", "r13d", "r14d",
			"r15d",
		};
		st->reg = src;
		if ((st->has_value = kn(s, k, (unsigned)src)))
			st->value = get(s, k, (unsigned)src);
		say(st->what, sizeof(st->what), "%s stored to %s",
		    size == 4 ? dword[src] : vreg_names[src], m);
		*reg = (unsigned)src;
		*u = k;
		return 1;
	}
	st->has_value = hv;
	st->value = sv;
	if (in->id == X86_INS_CALL) {
		st->kind = BTRACE_ORIGIN_CONSTANT;
		say(st->what, sizeof(st->what), "the return address 0x%llx "
			 "pushed to %s", (unsigned long long)sv, m);
	} else if (in->nop == 2 && in->op[1].type == X86_OP_IMM) {
		st->kind = BTRACE_ORIGIN_CONSTANT;
		describe_value(lead, sizeof(lead), "the constant", st);
		say(st->what, sizeof(st->what), "%s stored to %s", lead, m);
	} else {
		/* a part of a register, or push of an immediate: not
		 * followed further */
		st->kind = BTRACE_ORIGIN_OTHER;
		describe_value(lead, sizeof(lead), "stored:", st);
		say(st->what, sizeof(st->what), "%s to %s (its source "
			 "is not followed)", lead, m);
	}
	return 0;
}

/*
 * @j, before the use @u, loads callee-saved @reg back from the slot its
 * function stored it to, and the function returned before @u: the value
 * is the one the register had before that store (the caller's).  1 and
 * *@from: the store's position.
 */
static int restored(struct vstate *s, size_t j, size_t u, unsigned reg,
		    size_t *from)
{
	uint64_t a;
	unsigned size, dreg;
	int sign, src;
	const struct vop *dst;
	size_t k;
	int32_t low = s->in[j].depth;

	if (!callee_saved(reg) ||
	    !load_of(s, j, &a, &size, &dst, &sign, &dreg) || dreg != reg ||
	    size != 8)
		return 0;
	for (size_t q = j + 1; q <= u && q < s->n; q++)
		if (s->in[q].depth < low)
			low = s->in[q].depth;
	if (u == s->n && s->n && s->in[s->n - 1].id == X86_INS_RET &&
	    s->in[s->n - 1].depth <= low)
		low = s->in[s->n - 1].depth - 1;
	if (low >= s->in[j].depth)
		return 0;
	k = store_before(s, j, a, size, &src);
	if (k == SIZE_MAX || src != (int)reg || s->in[k].depth != s->in[j].depth)
		return 0;
	/* two values known of it that differ: not the same */
	if (kn(s, k, reg) && kn(s, j + 1, reg) &&
	    get(s, k, reg) != get(s, j + 1, reg))
		return 0;
	if (!s->sole && (!own_stack(s, a) || !kn(s, k, reg) ||
			 !kn(s, j + 1, reg)))
		return 0;
	*from = k;
	return 1;
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
		if (restored(s, j, u, reg, &u))
			continue;
		return_links(v, s, j, u, reg);
		const struct vinsn *in = &s->in[j];
		const struct vop *d = &in->op[0], *o1 = &in->op[1];
		struct btrace_origin_link *l;
		uint64_t a;
		unsigned size, dreg;
		int sign;
		const struct vop *dst;
		char lead[96];

		l = add_link(v, s->c, in->ip, BTRACE_ORIGIN_OTHER);
		if (!l)
			return;
		l->reg = (int32_t)reg;
		if ((l->has_value = kn(s, j + 1, reg)))
			l->value = get(s, j + 1, reg);
		if (in->fold) {
			char w[96];
			l->kind = BTRACE_ORIGIN_FOLDED;
			l->insn[0] = 0;     /* no instruction */
			where(s->c, in->ip, w, sizeof(w));
			snprintf(l->what, sizeof(l->what), "%s may have been "
				 "written by loop turns folded out of the history "
				 "(the loop at %s)", vreg_names[reg], w);
			return;
		}
		int dst_reg = in->nop >= 1 && d->type == X86_OP_REG && d->reg == reg;
		if (in->away) {
			/* the kernel went back elsewhere: the register is
			 * not the call's result (sys_away()) */
			snprintf(lead, sizeof(lead), kn(s, j, BTRACE_VREG_RAX) &&
				 get(s, j, BTRACE_VREG_RAX) == 15 ?
				 "%s restored from the signal frame by "
				 "rt_sigreturn:" : "%s set by the kernel for a "
				 "signal handler entered at this call's return:",
				 vreg_names[reg]);
			describe_value(l->what, sizeof(l->what), lead, l);
			return;
		}
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
			if (from_memory(v, s, l, j, a, size, &reg, &u))
				continue;
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
		unsigned cc;
		if (dst_reg && in->nop == 2 && d->width == 8 && !d->hi8 &&
		    o1->type == X86_OP_REG && o1->reg != NOREG &&
		    o1->width == 8 && cc_of(in->id, &cc)) {
			/* cmovcc (of cc_of()'s, the one with two operands)
			 * whose condition the path tells: the source, or the
			 * register as it was */
			int t = cond_at(s, j, cc);
			if (t == 1) {
				l->kind = BTRACE_ORIGIN_COPY;
				describe_value(lead, sizeof(lead), "copied", l);
				snprintf(l->what, sizeof(l->what), "%s from %s (the "
					 "condition held)", lead, vreg_names[o1->reg]);
				reg = o1->reg;
				u = j;
				continue;
			}
			if (t == 0) {
				l->kind = BTRACE_ORIGIN_COPY;
				describe_value(lead, sizeof(lead), "kept", l);
				snprintf(l->what, sizeof(l->what), "%s (the condition "
					 "did not hold)", lead);
				u = j;
				continue;
			}
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

/* @a is in a mapping of the snapshot that can be read. */
static int mapped(const struct vstate *s, uint64_t a)
{
	const struct btrace_snapshot *sn = s->c->snap;
	int32_t pid = sn ? pid_of(sn, s->tid) : -1;

	for (size_t k = 0; sn && k < sn->nmappings; k++)
		if (a >= sn->mappings[k].start && a < sn->mappings[k].end &&
		    sn->mappings[k].pid == pid)
			return (sn->mappings[k].prot & 1) != 0;
	return 0;
}

/* The address of memory operand @op at the fault from the registers
 * there: 1 known. */
static int fault_addr(const struct vstate *s, const struct vop *op,
		      uint64_t *a)
{
	uint64_t x = (uint64_t)op->imm;

	if (op->type != X86_OP_MEM || op->bad || op->fs)
		return 0;
	if (op->base != NOREG) {
		if (!kn(s, s->n, op->base))
			return 0;
		x += get(s, s->n, op->base);
	}
	if (op->index != NOREG) {
		if (!kn(s, s->n, op->index))
			return 0;
		x += get(s, s->n, op->index) * op->scale;
	}
	*a = x;
	return 1;
}

/*
 * A base + index * scale operand whose base (with the displacement) is
 * readable memory and whose address is not: the index put it out, so it
 * is the operand the origin is about.
 */
static int index_is_bad(const struct vstate *s, const struct vop *op)
{
	uint64_t a;

	return op->base != NOREG && op->index != NOREG &&
	       op->base != op->index && kn(s, s->n, op->base) &&
	       mapped(s, get(s, s->n, op->base) + (uint64_t)op->imm) &&
	       fault_addr(s, op, &a) && !mapped(s, a);
}


/* The origin is about the memory operand of the instruction at @ip: its
 * text as disassembled (@dflt when not), in @role. */
static void memory_origin(struct bt_values *v, struct vstate *s, uint64_t ip,
			  const char *dflt, const char *role)
{
	struct btrace_origin *o = &v->pub.origin;
	struct btrace_insn in;
	const char *sp;

	snprintf(v->operand, sizeof(v->operand), "%s", dflt);
	if (bt_insn_disasm(s->c, ip, &in) == 0 && (sp = strchr(in.text, ' ')))
		snprintf(v->operand, sizeof(v->operand), "%s", sp + 1);
	o->found = 1;
	o->reg = -1;
	o->operand = v->operand;
	o->role = role;
	o->chain = v->chain;
}
/* A division's divisor in memory: the chain starts at the faulting
 * instruction's read of it. */
static void divisor_in_memory(struct bt_values *v, struct vstate *s,
			      uint64_t fault_ip, const struct vop *op)
{
	struct btrace_origin *o = &v->pub.origin;
	struct btrace_origin_link *l;
	unsigned reg = NR;
	size_t u = s->n;
	uint64_t a;

	memory_origin(v, s, fault_ip, "the divisor", "divisor");
	if (!fault_addr(s, op, &a) || !(l = add_link(v, s->c, fault_ip,
						     BTRACE_ORIGIN_LOAD)))
		return;
	/* its value: the snapshot's memory at the fault */
	if (op->width <= 8 &&
	    (l->has_value = mem_read(s->snap_mem, a, op->width, &l->value))) {
		o->has_value = 1;
		o->value = l->value;
	}
	if (from_memory(v, s, l, s->n, a, op->width, &reg, &u))
		chain_of(v, s, reg, u);
}

/*
 * No instruction at the fault: the path's last instruction is the
 * indirect call or jump that went there (through a NULL or stale
 * function pointer), and the origin is about its target operand, whose
 * value is the fault's address.  A register is followed as it was read
 * (the call changes only rsp); a memory operand is the load at the call,
 * followed to the store that wrote it.
 */
static void target_origin(struct bt_values *v, struct vstate *s,
			  uint64_t fault_ip)
{
	struct btrace_origin *o = &v->pub.origin;
	const struct vinsn *in = s->n ? &s->in[s->n - 1] : NULL;
	const struct vop *op = in ? &in->op[0] : NULL;
	struct btrace_origin_link *l;
	unsigned reg;
	size_t u;
	uint64_t a;

	if (!in || in->fold || in->nop != 1 ||
	    (in->id != X86_INS_CALL && in->id != X86_INS_JMP))
		return;
	if (op->type == X86_OP_REG) {
		if (op->reg == NOREG || op->reg == BTRACE_VREG_RSP)
			return;
		o->found = 1;
		o->reg = op->reg;
		o->operand = vreg_names[op->reg];
		o->role = "target";
		o->has_value = 1;
		o->value = fault_ip;
		o->chain = v->chain;
		chain_of(v, s, op->reg, s->n - 1);
		return;
	}
	/* a memory operand: its address from registers the call left alone */
	if (op->type != X86_OP_MEM || op->width != 8 ||
	    op->base == BTRACE_VREG_RSP || op->index == BTRACE_VREG_RSP ||
	    !fault_addr(s, op, &a))
		return;
	memory_origin(v, s, in->ip, "the call's target", "target");
	o->has_value = 1;
	o->value = fault_ip;
	o->chain = v->chain;
	if (!(l = add_link(v, s->c, in->ip, BTRACE_ORIGIN_LOAD)))
		return;
	l->has_value = 1;
	l->value = fault_ip;
	if (from_memory(v, s, l, s->n - 1, a, 8, &reg, &u))
		chain_of(v, s, reg, u);
}

/* The operand of the faulting instruction the origin is about: a
 * division's divisor; else the base register of its memory operand, or
 * the index when that put it out of a valid base; else the first
 * register it reads. */
static void find_origin(struct bt_values *v, struct vstate *s,
			uint64_t fault_ip, cs_insn *ci)
{
	struct btrace_origin *o = &v->pub.origin;
	struct vinsn f;
	int reg = -1;

	if (!s->have_fault)
		return;
	decode_one(s->c, ci, fault_ip, &f);
	if (!f.id) {
		size_t avail;

		if (!bt_image_bytes(s->c, fault_ip, &avail))
			target_origin(v, s, fault_ip);
		return;
	}
	if ((f.id == X86_INS_DIV || f.id == X86_INS_IDIV) && f.nop == 1) {
		if (f.op[0].type == X86_OP_MEM) {
			divisor_in_memory(v, s, fault_ip, &f.op[0]);
			return;
		}
		if (f.op[0].type == X86_OP_REG && f.op[0].reg != NOREG) {
			reg = f.op[0].reg;
			o->role = "divisor";
		}
	}
	for (unsigned k = 0; k < f.nop && reg < 0; k++) {
		const struct vop *op = &f.op[k];
		if (op->type != X86_OP_MEM || op->bad || op->rip)
			continue;
		if (index_is_bad(s, op)) {
			reg = op->index;
			o->role = "index";
		} else if (op->base != NOREG && op->base != BTRACE_VREG_RSP) {
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
/* The thread ran on after the fault (a signal handler): blocks after it,
 * a death elsewhere, QEMU's final signal. */
static int ran_after_fault(const struct btrace_snapshot *sn,
			   const struct btrace_thread *t)
{
	return t->fault.after_blocks || t->fault.death_ip ||
	       btrace_snapshot_meta(sn, "qemu.final_signal");
}

static const struct btrace_snapshot *memory_at_fault(struct bt_ctx *c,
	const struct btrace_thread *t, cs_insn *ci, uint64_t fault_ip)
{
	const struct btrace_snapshot *sn = c->snap;
	struct vinsn f;

	if (!sn->nmemory || ran_after_fault(sn, t))
		return NULL;
	/* the thread's stack, or the process's memory (tid 0) */
	for (size_t k = 0; k < sn->nmemory; k++)
		if (sn->memory[k].tid != t->tid && sn->memory[k].tid != 0)
			return NULL;
	/* no code at the fault (a jump or call to where there is none):
	 * nothing ran there */
	size_t avail;
	if (!bt_image_bytes(c, fault_ip, &avail))
		return sn;
	decode_one(c, ci, fault_ip, &f);
	return f.id && !f.rep ? sn : NULL;
}

/* The crashed thread is its process's only thread (of the snapshot's
 * tasks and of the decoded threads). */
/* The process of thread @tid among the snapshot's tasks, -1 none. */
static int32_t pid_of(const struct btrace_snapshot *sn, int32_t tid)
{
	int32_t pid = -1;

	for (size_t k = 0; k < sn->ntasks; k++)
		if (sn->tasks[k].tid == tid)
			pid = sn->tasks[k].pid;
	return pid;
}

static int sole_thread(const struct btrace_decode_result *res,
		       const struct btrace_snapshot *sn,
		       const struct btrace_thread *t)
{
	size_t n = 0;
	int32_t pid;

	if (res->nthreads != 1 || !sn)
		return 0;
	pid = pid_of(sn, t->tid);
	for (size_t k = 0; pid > 0 && k < sn->ntasks; k++)
		n += sn->tasks[k].pid == pid;
	return n == 1;
}

/* Memory the kernel or a device may change while the thread runs: a
 * special mapping ([vvar] and the vDSO's other data, [vsyscall],
 * [uprobes]; [heap], [stack...] and [anon...] are plain memory) or a
 * device's. */
static int volatile_mapping(const struct btrace_mapping *m)
{
	const char *p = m->path;

	if (!p)
		return 0;
	if (p[0] == '[')
		return strncmp(p, "[heap]", 6) && strncmp(p, "[stack", 6) &&
		       strncmp(p, "[anon", 5);
	return !strncmp(p, "/dev/", 5);
}

static int priv_cmp(const void *a, const void *b)
{
	const struct priv *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* The private readable mappings of @t's process (MAP_PRIVATE, not
 * overlapping), sorted, into @s. */
static int own_memory(const struct btrace_snapshot *sn,
		      const struct btrace_thread *t, struct vstate *s)
{
	int32_t pid = pid_of(sn, t->tid);
	size_t n = 0;

	if (pid <= 0 || !sn->nmappings)
		return 0;
	s->priv = calloc(sn->nmappings, sizeof(*s->priv));
	if (!s->priv)
		return -ENOMEM;
	for (size_t k = 0; k < sn->nmappings; k++) {
		const struct btrace_mapping *m = &sn->mappings[k];
		if (m->pid != pid || !(m->prot & 1) || !(m->flags & 2) ||
		    (m->flags & 1) || m->end <= m->start || volatile_mapping(m))
			continue;
		s->priv[n++] = (struct priv){ m->start, m->end, !(m->prot & 2) };
	}
	qsort(s->priv, n, sizeof(*s->priv), priv_cmp);
	/* overlapping ranges (a mapping recorded twice, changed since):
	 * none of them is trusted */
	for (size_t k = 1; k < n; k++)
		if (s->priv[k].lo < s->priv[k - 1].hi) {
			n = 0;
			break;
		}
	s->npriv = n;
	return 0;
}

/* --- the API --- */

static int build(const struct btrace_decode_result *res, size_t thread,
		 uint64_t max_insns, const struct btrace_access_log *log,
		 struct btrace_values **out, struct btrace_error *err);

/* The thread's access log in the snapshot, when it has one. */
int btrace_values_build(const struct btrace_decode_result *res, size_t thread,
			uint64_t max_insns, struct btrace_values **out,
			struct btrace_error *err)
{
	const struct btrace_access_log *log = NULL;
	const struct btrace_snapshot *sn;

	if (res && thread < res->nthreads) {
		sn = bt_result_ctx((struct btrace_decode_result *)(uintptr_t)res)->snap;
		for (size_t k = 0; k < sn->naccess_logs; k++)
			if (sn->access_logs[k].tid == res->threads[thread].tid)
				log = &sn->access_logs[k];
	}
	return build(res, thread, max_insns, log, out, err);
}

static int build(const struct btrace_decode_result *res, size_t thread,
		 uint64_t max_insns, const struct btrace_access_log *log,
		 struct btrace_values **out, struct btrace_error *err)
{
	struct bt_ctx *c;
	const struct btrace_thread *t;
	const struct btrace_signal *sig;
	struct bt_values *v;
	struct vstate s = { .fault_df = -1 };
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
	/* a signal handler ran after the fault: the access log's last
	 * entries (and fold marks) are the handler's, and where the path's
	 * end in it is not told: the log is not used */
	if (log && ran_after_fault(c->snap, t))
		log = NULL;
	if (!max_insns)
		max_insns = 4096;
	v = calloc(1, sizeof(*v));
	if (!v || collect(c, t, max_insns, &ip, &n) < 0)
		goto oom;
	s.c = c;
	s.n = n;
	s.qemu = c->snap->has_config &&
		 c->snap->config.backend == BTRACE_BACKEND_QEMU;
	s.in = calloc(n + 1, sizeof(*s.in));
	s.val = calloc((n + 1) * NR, sizeof(*s.val));
	s.kn = calloc(n + 1, sizeof(*s.kn));
	s.mem = malloc(sizeof(*s.mem));
	s.searched = calloc(n + 1, 1);
	s.fold_at = calloc(n + 1, sizeof(*s.fold_at));
	s.fold_ip = calloc(n + 1, sizeof(*s.fold_ip));
	if (c->cs_ok)
		ci = cs_malloc(c->cs);
	if (!s.in || !s.val || !s.kn || !s.mem || !s.searched || !s.fold_at ||
	    !s.fold_ip || (c->cs_ok && !ci))
		goto oom;
	/* a QEMU history may have loop turns folded out of it: with no
	 * marks, only what follows the last block the plugin may fold at */
	int fo = folds(c);
	size_t cut = fo == FOLD_ANY || (fo == FOLD_MARKED && !log) ?
		     folded_from(c, ip, n) : 0;
	if (cut) {
		memmove(ip, ip + cut, (n - cut) * sizeof(*ip));
		n -= cut;
		s.n = n;
	}
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
	if (t->fault.found && t->fault.exact) {
		fault_ip = t->fault.ip;
		s.have_fault = 1;
	}
	if (s.have_fault && t->crashed && sig && sig->has_regs &&
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
		s.fs_base = sig->regs[BTRACE_REG_FS_BASE];
		s.fault_df = !!(sig->regs[BTRACE_REG_EFLAGS] & 0x400);
		for (unsigned r = 0; r < NR; r++)
			set(&s, n, r, sig->regs[map[r]]);
		for (size_t k = 0; k < c->snap->nmappings; k++) {
			const struct btrace_mapping *m = &c->snap->mappings[k];
			if (sp >= m->start && sp < m->end) {
				s.stk_lo = m->start;
				s.stk_hi = m->end;
				s.stk_heap = m->path && !strcmp(m->path, "[heap]");
			}
		}
		s.snap_mem = memory_at_fault(c, t, ci, fault_ip);
		s.sole = sole_thread(res, c->snap, t);
		s.tid = t->tid;
		if (s.sole && own_memory(c->snap, t, &s) < 0)
			goto oom;
	}
	s.fault_ip = fault_ip;
	if (log) {
		size_t stop, from = align_log(&s, log->entries, log->n,
					      log->flags & BTRACE_ACCESSES_COMPLETE,
					      &stop);
		if (apply_folds(&s, &ip, fo, from, stop, ci) < 0)
			goto oom;
		n = s.n;
	}
	for (size_t i = 0; i < n; i++)
		s.in[i].away = (uint8_t)sys_away(&s, i);
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
	v->fold = calloc(n + 1, 1);
	if (!v->rw || !v->fold)
		goto oom_after;
	for (size_t i = 0; i < n; i++) {
		v->rw[i] = s.in[i].rd;
		v->rw[n + 1 + i] = s.in[i].wr;
		v->fold[i] = s.in[i].fold;
	}
	v->pub.reads = v->rw;
	v->pub.writes = v->rw + n + 1;
	v->pub.folded = v->fold;
	s.res = res;
	s.ci = ci;
	find_origin(v, &s, fault_ip, ci);
	if (ci)
		cs_free(ci, 1);
	free(s.in);
	free(s.mem);
	free(s.priv);
	free(s.searched);
	free(s.fold_at);
	free(s.fold_ip);
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
	free(s.priv);
	free(s.searched);
	free(s.fold_at);
	free(s.fold_ip);
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
	free(v->fold);
	free(v);
}
