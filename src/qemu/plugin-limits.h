/* SPDX-License-Identifier: MIT */
#ifndef BT_QEMU_PLUGIN_LIMITS_H
#define BT_QEMU_PLUGIN_LIMITS_H

#include <stdint.h>

#include "qemu-plugin-abi.h"
#include "ring-file.h"

/*
 * Where QEMU 7.2 does not behave as the kernel and the CPU would, the
 * plugin notes it in the ring file (struct bt_ring_limits) so that btrace
 * can say so (plugin-limits.c).  Each hook takes the current process's
 * header (NULL: nothing is recorded).
 */
/* At translation: instruments the instructions that can unmask
 * floating-point exceptions. */
void bt_limits_tb_trans(struct qemu_plugin_tb *tb);
/* Where notes go (the current process's file; changes at fork). */
void bt_limits_set_hdr(struct bt_ring_hdr *h);
/* A forked child's new file: it inherited its parent's FP control state
 * and (absent) seccomp filter. */
void bt_limits_inherit(struct bt_ring_hdr *child,
		       const struct bt_ring_hdr *parent);
/* At translation of a block at a known signal handler's address: the
 * handler's stack is realigned there when a signal enters it. */
void bt_limits_handler_trans(struct qemu_plugin_tb *tb, uint64_t handler);
/* A handler became known whose first block had been translated (run as
 * ordinary code) already: its entries by signal cannot be realigned. */
void bt_limits_handler_late(uint64_t handler);
void bt_limits_syscall(int64_t num, uint64_t a1, uint64_t a2, uint64_t a3);
void bt_limits_syscall_ret(int64_t num, int64_t ret);

#endif
