/* SPDX-License-Identifier: MIT */
/*
 * libbtrace-decode: data values along the crashed thread's path, and the
 * origin of the faulting instruction's operand (docs/report.md, "Values and
 * the origin").
 *
 * From the registers at the fault and the instructions of the decoded path
 * before it, the value of every general-purpose register before each
 * instruction is recovered where it can be proven: values known at the
 * fault flow back through instructions that do not write them or that can
 * be inverted (add, sub, xor, inc, dec, neg, not, lea, push, pop, call,
 * ret, moves), constants and known inputs flow forward, stack spills and
 * reloads carry values through memory stored along the path.  A value that
 * cannot be proven is unknown: never a guess.
 *
 * Usage:
 *
 *	struct btrace_values *v;
 *	if (btrace_values_build(res, res->crashed_thread, 0, &v, &err) < 0) ...
 *	for (size_t i = 0; i < v->ninsn; i++)
 *		if (btrace_values_get(v, i, BTRACE_VREG_RAX, &x)) ...
 *	... v->origin.chain[k] ...
 *	btrace_values_free(v);
 *
 * @res must outlive the values (symbols point into it).
 */
#ifndef BTRACE_VALUES_H
#define BTRACE_VALUES_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/btrace.h>
#include <btrace/decode.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The 16 general-purpose registers, in the x86 encoding order. */
enum btrace_vreg {
	BTRACE_VREG_RAX, BTRACE_VREG_RCX, BTRACE_VREG_RDX, BTRACE_VREG_RBX,
	BTRACE_VREG_RSP, BTRACE_VREG_RBP, BTRACE_VREG_RSI, BTRACE_VREG_RDI,
	BTRACE_VREG_R8, BTRACE_VREG_R9, BTRACE_VREG_R10, BTRACE_VREG_R11,
	BTRACE_VREG_R12, BTRACE_VREG_R13, BTRACE_VREG_R14, BTRACE_VREG_R15,
	BTRACE_NVREGS
};

/* What a link of the origin chain did to the value. */
enum btrace_origin_kind {
	BTRACE_ORIGIN_CONSTANT = 1,   /* the source: an immediate (mov eax, 0;
				       * xor eax, eax; one stored to memory
				       * a later load read back: @addr) */
	BTRACE_ORIGIN_LOAD = 2,       /* the source: a load from memory (@addr
				       * when known, @addr_sym a global) */
	BTRACE_ORIGIN_SYSCALL = 3,    /* the source: a system call's result */
	BTRACE_ORIGIN_START = 4,      /* the source: the start of the
				       * history (no writer on the path) */
	BTRACE_ORIGIN_OTHER = 5,      /* the source: an instruction whose
				       * result is not followed further */
	BTRACE_ORIGIN_COPY = 6,       /* a move from another register */
	BTRACE_ORIGIN_COMPUTE = 7,    /* arithmetic on the value */
	BTRACE_ORIGIN_RETURN = 8,     /* the function returned it (@what names
				       * where to) */
	BTRACE_ORIGIN_STORE = 9,      /* a store of a register to memory a
				       * later load read it back from */
	BTRACE_ORIGIN_FOLDED = 10,    /* the source, as far as it is known:
				       * loop turns the recorder folded out
				       * of the history may have written it
				       * (@ip: the loop block) */
};

/* One link of the origin chain, the newest first. */
struct btrace_origin_link {
	uint64_t ip;
	uint32_t kind;             /* enum btrace_origin_kind */
	uint32_t has_value;        /* @value is the register's value after
				    * the instruction */
	uint64_t value;
	int32_t reg;               /* enum btrace_vreg the value is in after
				    * it, -1: memory */
	uint32_t has_addr;         /* LOAD/STORE: @addr is known */
	uint64_t addr;
	const char *addr_sym;      /* LOAD/STORE/COPY: a named global
				    * holding @addr, NULL none */
	uint64_t addr_off;         /* @addr - the global's start */
	struct btrace_symbol sym;  /* of @ip */
	char insn[96];             /* disassembly */
	char what[192];            /* one line: "find_user returned 0x0 into
				    * greet (crashdemo.c:38)" */
};

struct btrace_origin {
	int found;                 /* 0: no origin (no fault, no registers,
				    * no register operand); the rest is 0 */
	int32_t reg;               /* enum btrace_vreg of the operand, -1:
				    * memory (a divisor) */
	const char *operand;       /* "rax", "dword ptr [rbp - 4]" */
	const char *role;          /* "base", "index", "operand",
				    * "divisor" */
	int has_value;             /* its value at the fault is known */
	uint64_t value;
	struct btrace_origin_link *chain;  /* newest first: the last link is
				    * the source */
	size_t nchain;
};

struct btrace_values {
	size_t sz;                 /* sizeof(struct btrace_values) */
	const struct btrace_thread *thread;
	size_t ninsn;              /* instructions on the path, before the
				    * fault (oldest first), with its folds
				    * (@folded) */
	const uint64_t *ip;        /* ip[i] of each instruction; ip[ninsn]:
				    * the faulting one (0: none) */
	const uint64_t *regs;      /* regs[i * BTRACE_NVREGS + r]: register
				    * r before instruction i (i == ninsn: at
				    * the fault), when known */
	const uint16_t *known;     /* known[i] bit r: regs[..r] is known */
	const uint16_t *reads;     /* reads[i] bit r: instruction i reads
				    * register r (any part of it) */
	const uint16_t *writes;    /* writes[i] bit r: it may write it */
	uint64_t conflicts;        /* internal check: two derivations that
				    * disagreed (the later one dropped); 0
				    * expected */
	struct btrace_origin origin;
	const uint8_t *folded;     /* folded[i] 1: entry i is no instruction
				    * but the turns of a loop the recorder
				    * folded out of the history (the QEMU
				    * backend) right before the loop block at
				    * ip[i] (the next entry's instruction, or
				    * the faulting one): regs[i] before them,
				    * regs[i + 1] after, writes[i] what they
				    * may write */
	size_t :0;
};

/**
 * @brief Recover register values along thread @thread of @res (an index
 * into res->threads; the crashed thread for the origin), over at most
 * @max_insns instructions before the end of its history before the fault
 * (0: 4096).  The path is the straight run of the thread's history
 * before the fault back to the first gap or signal.
 * @res is not changed (its caches of code and symbols are filled).
 * @return 0 and *@out (free it with btrace_values_free()), or a negative
 * error code with @err filled.  A thread without a path gives values with
 * ninsn 0.
 */
BTRACE_API int btrace_values_build(const struct btrace_decode_result *res,
				   size_t thread, uint64_t max_insns,
				   struct btrace_values **out,
				   struct btrace_error *err);

/** @brief Register @reg before instruction @i (@i == ninsn: at the
 * fault): 1 and *@val when known, 0 unknown. */
BTRACE_API int btrace_values_get(const struct btrace_values *v, size_t i,
				 unsigned reg, uint64_t *val);

/** @brief "rax" for BTRACE_VREG_RAX; NULL out of range. */
BTRACE_API const char *btrace_vreg_name(unsigned reg);

/** @brief Free values; NULL is allowed. */
BTRACE_API void btrace_values_free(struct btrace_values *v);

#ifdef __cplusplus
}
#endif

#endif /* BTRACE_VALUES_H */
