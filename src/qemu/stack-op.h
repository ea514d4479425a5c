/* SPDX-License-Identifier: MIT */
/* What the access log can leave out, told by an instruction's bytes:
 * shared by the plugin (plugin.c) and bench/qemu-access-count.c. */
#ifndef BT_QEMU_STACK_OP_H
#define BT_QEMU_STACK_OP_H

#include <stddef.h>
#include <stdint.h>

/* The stack operations whose one access is the stack slot: 1 a push or
 * pop of a register (pop rsp excepted: it loads rsp) or a push of an
 * immediate, which move rsp by 8; 2 a near call (rel32) or a ret; 0
 * another instruction (one with any other prefix too). */
static inline int bt_stack_op(const uint8_t *p, size_t len)
{
	if (len == 2 && (p[0] == 0x40 || p[0] == 0x41) &&
	    p[1] >= 0x50 && p[1] <= 0x5f)
		return 1;   /* REX (.B: r8-r15; pop r12 is not pop rsp) */
	if (len == 1 && p[0] >= 0x50 && p[0] <= 0x5f)
		return p[0] == 0x5c ? 0 : 1;
	if ((len == 2 && p[0] == 0x6a) || (len == 5 && p[0] == 0x68))
		return 1;
	if ((len == 5 && p[0] == 0xe8) || (len == 1 && p[0] == 0xc3))
		return 2;
	return 0;
}

#endif
