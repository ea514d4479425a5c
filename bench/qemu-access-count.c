// SPDX-License-Identifier: MIT
/*
 * How many memory accesses a program makes under QEMU, and how many of
 * them the access log leaves out (docs/performance.md, "the cost of the
 * access log"): a QEMU 7.2 plugin with one counting callback per access,
 * printing at exit the accesses, those of a stack operation (a push or pop
 * of a register, a push of an immediate, a call rel32, a ret: told by
 * their bytes by src/qemu/stack-op.h, as the recorder tells them) and
 * those of a stack operation right after a push or pop in the same block
 * (the ones the recorder does not log).
 *
 *   cc -O2 -shared -fPIC -Isrc/qemu -o count.so bench/qemu-access-count.c
 *   qemu-x86_64 -plugin ./count.so PROGRAM ARGS...
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "qemu-plugin-abi.h"
#include "stack-op.h"

int qemu_plugin_version = 1;

static uint64_t n_all, n_stack, n_after_run;

static void count(unsigned int vcpu, qemu_plugin_meminfo_t info,
		  uint64_t vaddr, void *udata)
{
	uintptr_t k = (uintptr_t)udata;

	(void)vcpu;
	(void)info;
	(void)vaddr;
	n_all++;
	n_stack += k & 1;
	n_after_run += (k >> 1) & 1;
}

static void trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	int prev = 0;

	(void)id;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		int op = bt_stack_op(qemu_plugin_insn_data(in),
				  qemu_plugin_insn_size(in));
		uintptr_t k = (op ? 1u : 0u) | (op && prev == 1 ? 2u : 0u);

		prev = op;
		qemu_plugin_register_vcpu_mem_cb(in, count,
			QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW, (void *)k);
	}
}

static void done(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
	fprintf(stderr, "accesses %llu, stack operations %llu, right after "
		"a push or pop %llu\n", (unsigned long long)n_all,
		(unsigned long long)n_stack, (unsigned long long)n_after_run);
}

int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info,
			int argc, char **argv)
{
	(void)info;
	(void)argc;
	(void)argv;
	qemu_plugin_register_vcpu_tb_trans_cb(id, trans);
	qemu_plugin_register_atexit_cb(id, done, NULL);
	return 0;
}
