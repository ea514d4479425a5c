/* SPDX-License-Identifier: MIT */
/*
 * Multi-threaded single-step truth: run a real program under ptrace and
 * single-step EVERY thread (PTRACE_O_TRACECLONE: threads created on the
 * way are traced from their first instruction) from main() until one
 * thread dies of a signal, one instruction at a time, scheduling the
 * threads on @ncpus simulated CPUs: each CPU runs one thread for a quantum
 * (a pseudo-random number of steps from @seed), then the next runnable
 * thread, so threads outnumber CPUs, migrate, and run "at once" (the CPUs
 * take turns step by step).  The result is each thread's true instruction
 * sequence (rep iterations counted once, as trace decoders count them),
 * cut into the slices it ran on each CPU, and the order of the sched-ins
 * and sched-outs.  The process is left stopped at the fatal signal (the
 * moment btrace's precise mode writes its snapshot); mt_finish() lets it
 * die.
 */
#ifndef BT_TEST_MTSTEP_H
#define BT_TEST_MTSTEP_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#define MT_MAX_THREADS 16
#define MT_MAX_CPUS 4

struct mt_slice {
	int th;                 /* index into mt_run.th */
	int cpu;
	uint64_t a, b;          /* the thread's instructions [a, b) */
	uint64_t start_ip;      /* where it resumed (== ip[a] if a < b) */
	uint64_t next_ip;       /* where it was stopped (not executed) */
	uint64_t t_in, t_out;   /* time (global step count) */
	bool open;              /* still running at the crash */
};

/* A sched-in or sched-out, in the order they happened. */
struct mt_event {
	size_t slice;
	bool out;
};

struct mt_thread {
	pid_t tid;
	uint64_t *ip;           /* instructions that completed, in order */
	uint64_t n, cap;
	uint64_t final_ip;      /* where it stood at the end (the crashed
				 * thread: the faulting instruction) */
	bool crashed;
	uint64_t created_at;    /* global step count when it appeared */
};

struct mt_run {
	pid_t pid;
	int ncpus;
	struct mt_thread th[MT_MAX_THREADS];
	int nth;
	struct mt_slice *sl;
	size_t nsl, csl;
	struct mt_event *ev;
	size_t nev, cev;
	int crashed;            /* index of the thread that died */
	siginfo_t si;
	struct user_regs_struct regs;
	uint64_t steps;
	void *priv;             /* instruction classifier */
};

/* Run @argv to its death as described above.  0, or -1 with @eb set. */
int mt_run(char *const argv[], int ncpus, uint32_t seed, uint32_t qmin,
	   uint32_t qmax, struct mt_run *r, char *eb, size_t el);

/* The class of the instruction at @ip (enum btrace_insn_class) and its
 * size, read from the (stopped) process. */
int mt_classify(struct mt_run *r, uint64_t ip, uint8_t *size);

/* Deliver the fatal signal, reap the process, free everything. */
void mt_finish(struct mt_run *r);

#endif
