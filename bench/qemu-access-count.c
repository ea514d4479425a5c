// SPDX-License-Identifier: MIT
/*
 * How many memory accesses a program makes under QEMU, and how many of
 * them the access log leaves out (docs/performance.md, "the cost of the
 * access log"): a QEMU 7.2 plugin with one counting callback per access,
 * printing at exit the accesses, those of a stack operation (a push or pop
 * of a register, a push of an immediate, a call rel32, a ret: told by
 * their bytes as src/qemu/plugin.c tells them) and those of a stack
 * operation right after a push or pop in the same block (the ones the
 * recorder does not log).
 *
 *   cc -O2 -shared -fPIC -Isrc/qemu -o count.so bench/qemu-access-count.c
 *   qemu-x86_64 -plugin ./count.so PROGRAM ARGS...
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "qemu-plugin-abi.h"

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

/* 1 a push or pop of a register (not pop rsp) or a push of an immediate,
 * 2 a call rel32 or a ret, 0 another instruction */
static int stack_op(const uint8_t *p, size_t len)
{
	if (len == 2 && (p[0] == 0x40 || p[0] == 0x41) &&
	    p[1] >= 0x50 && p[1] <= 0x5f)
		return 1;
	if (len == 1 && p[0] >= 0x50 && p[0] <= 0x5f)
		return p[0] == 0x5c ? 0 : 1;
	if ((len == 2 && p[0] == 0x6a) || (len == 5 && p[0] == 0x68))
		return 1;
	if ((len == 5 && p[0] == 0xe8) || (len == 1 && p[0] == 0xc3))
		return 2;
	return 0;
}

static void trans(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);
	int prev = 0;

	(void)id;
	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
		int op = stack_op(qemu_plugin_insn_data(in),
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
