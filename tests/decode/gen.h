/* SPDX-License-Identifier: MIT */
/*
 * Synthetic fixtures: run a small real program under ptrace single-step
 * from main() to its death, keep the true instruction sequence, encode it
 * as Intel PT (src/encode) or BTS, and write a .btrace snapshot with the
 * mappings, embedded code and the signal.
 */
#ifndef BT_TEST_GEN_H
#define BT_TEST_GEN_H

#include <stddef.h>
#include <stdint.h>

struct gen_opts {
	char *const *argv;      /* program and its arguments */
	const char *out;        /* .btrace path, NULL: none */
	int bts;                /* BTS records instead of PT */
	int retcomp;
	int tnt64;
	uint32_t psb_period;
	uint64_t ring_size;     /* 0: keep everything */
	uint64_t ovf_from, ovf_to;  /* drop truth[from, to) as an overflow */
	int no_code;            /* do not embed code */
	int no_regs;            /* do not record the fault registers */
	int first_siginfo;      /* record the siginfo of the first signal (a
				 * fault a handler re-raised: what the QEMU
				 * backend records), registers at the death */
	int qemu;               /* label the snapshot as the QEMU backend's
				 * and place faults as it does: at the start
				 * of the faulting block (the first
				 * instruction after a branch), and, with
				 * @no_regs, the signal's fault_ip at that
				 * block (fault_source BLOCK) */
	int empty_trace;        /* the buffer holds no trace (pad bytes) */
	const char *meta[4];    /* "key=value" metadata to write, NULL ends */
	uint64_t max_steps;     /* 0: 2,000,000 */
	const char *repeat_sym; /* with @repeat: replay the steps between the
				 * 8th and 12th arrival at this IP @repeat
				 * more times (big traces without stepping);
				 * the truth then holds no IPs, only the count */
	uint64_t repeat;
	uint64_t stack;         /* store up to this many bytes of the
				 * crashed thread's stack at the fatal signal
				 * (a quarter below rsp), 0: none */
	uint64_t memory;        /* store up to this many bytes of the
				 * process's other memory at the fatal
				 * signal, the rule of the recorders
				 * (bt_snap_proc_data(), src/snapbuild.h),
				 * tid 0; 0: none */
	int accesses;           /* with @regs: an access log (accesses
				 * section) of the crashed thread's memory
				 * accesses in the instructions the truth has
				 * registers for, computed from those */
	int regs;               /* record the true registers before each of
				 * the last instructions (gen_truth.regs);
				 * not with @repeat */
};

#define GEN_NREGS 27        /* BTRACE_NREGS: struct user_regs_struct */
#define GEN_REGS_RING 4096  /* registers kept for the last steps */

struct gen_truth {
	uint64_t *ip;           /* every instruction that completed, in order
				 * (NULL with gen_opts.repeat) */
	uint64_t n;
	uint64_t fault_ip;      /* the instruction that faulted (did not complete) */
	int signo;              /* the fatal signal */
	int code;               /* its si_code */
	uint64_t handler_fault; /* first SIGSEGV fault when a handler ran, else 0 */
	uint64_t fault_block;   /* start of the block of fault_ip (after the
				 * last branch before it) */
	uint64_t handler_block; /* ... of handler_fault */
	uint64_t ovf_keep;      /* PT overflow: first truth index after the hole */
	int pid;
	/* gen_opts.regs: regs[k * GEN_NREGS + r] (BTRACE_REG_* order) before
	 * the instruction ip[n - nregs + k], for k < nregs; then (k = nregs)
	 * before the faulting instruction (fault_ip) */
	uint64_t *regs;
	uint64_t nregs;
};

int gen_run(const struct gen_opts *o, struct gen_truth *t, char *errbuf,
	    size_t errlen);
void gen_truth_free(struct gen_truth *t);

#endif /* BT_TEST_GEN_H */
