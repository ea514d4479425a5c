/* SPDX-License-Identifier: MIT */
/*
 * The fixed image of the decoder fuzz targets: one page of hand-assembled
 * x86-64 code at FZ_BASE (calls, returns, a loop, an indirect jump and call,
 * a syscall, a faulting load), a second executable mapping with no code,
 * and a snapshot built in memory around a trace buffer.
 *
 * Layout of the code (offsets from FZ_BASE):
 *   0x00 mov ecx, 10           0x17 lea rdx, [rip+g]     0x2d f: test ecx, 1
 *   0x05 loop: call f          0x1e call rdx             0x33 jz 0x36
 *   0x0a dec ecx               0x20 syscall              0x35 nop
 *   0x0c jnz loop              0x22 ret                  0x36 ret
 *   0x0e lea rax, [rip+tgt]    0x23 ud2                  0x37 g: xor eax, eax
 *   0x15 jmp rax               0x25 mov eax, [0] (fault) 0x39 ret
 * The rest of the code mapping is int3.  The mapping is FZ_CODE_SIZE bytes,
 * not a page: with a page of int3 every input that walked into the padding
 * had up to 4,000 distinct instructions disassembled, which took most of
 * each execution; 256 bytes keep long straight walks and the padding's
 * far instructions, at a sixteenth of the cost.
 */
#ifndef BT_FUZZ_IMAGE_H
#define BT_FUZZ_IMAGE_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/snapshot.h>

#define FZ_BASE 0x400000ull
#define FZ_PAGE 4096u
#define FZ_CODE_SIZE 256u   /* the code mapping's size */
#define FZ_NOCODE 0x500000ull   /* executable mapping without code */

enum {
	FZ_START = 0x00, FZ_LOOP = 0x05, FZ_CALL_RET = 0x0a, FZ_JNZ = 0x0c,
	FZ_AFTER_LOOP = 0x0e, FZ_JMP_RAX = 0x15, FZ_TGT = 0x17,
	FZ_CALL_RDX = 0x1e, FZ_SYSCALL = 0x20, FZ_AFTER_SYS = 0x22,
	FZ_FAULT = 0x25, FZ_F = 0x2d, FZ_JZ = 0x33, FZ_NOP = 0x35,
	FZ_F_RET = 0x36, FZ_G = 0x37, FZ_G_RET = 0x39,
};

/* A snapshot that points at static storage and at the caller's trace. */
struct fz_snapshot {
	struct btrace_snapshot snap;
	struct btrace_buffer buf;
	struct btrace_mapping maps[2];
	struct btrace_code code;
	struct btrace_task task;
	struct btrace_signal sig;
};

/* @kind: BTRACE_TRACE_PT or BTRACE_TRACE_BTS; @variant picks the CPU vendor,
 * whether the fault registers are known and the buffer flags. */
void fz_snapshot_init(struct fz_snapshot *f, uint32_t kind, uint8_t variant,
		      const uint8_t *trace, size_t size);

#endif /* BT_FUZZ_IMAGE_H */
