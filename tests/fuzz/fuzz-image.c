/* SPDX-License-Identifier: MIT */
/* The fixed image of the decoder fuzz targets (see fuzz-image.h). */
#include <string.h>

#include "fuzz-image.h"

static const uint8_t fz_code_head[] = {
	0xb9, 0x0a, 0x00, 0x00, 0x00, 0xe8, 0x23, 0x00, 0x00, 0x00, 0xff, 0xc9,
	0x75, 0xf7, 0x48, 0x8d, 0x05, 0x02, 0x00, 0x00, 0x00, 0xff, 0xe0, 0x48,
	0x8d, 0x15, 0x19, 0x00, 0x00, 0x00, 0xff, 0xd2, 0x0f, 0x05, 0xc3, 0x0f,
	0x0b, 0x8b, 0x04, 0x25, 0x00, 0x00, 0x00, 0x00, 0xf4, 0xf7, 0xc1, 0x01,
	0x00, 0x00, 0x00, 0x74, 0x01, 0x90, 0xc3, 0x31, 0xc0, 0xc3, 0xcc,
};

static uint8_t fz_code[FZ_CODE_SIZE];
static char fz_anon[] = "//anon";
static char fz_nocode[] = "/nonexistent/fuzz-nocode.so";
static char fz_comm[] = "fuzzee";

void fz_snapshot_init(struct fz_snapshot *f, uint32_t kind, uint8_t variant,
		      const uint8_t *trace, size_t size)
{
	if (!fz_code[0]) {
		memset(fz_code, 0xcc, sizeof(fz_code));
		memcpy(fz_code, fz_code_head, sizeof(fz_code_head));
	}
	memset(f, 0, sizeof(*f));

	f->snap.format_major = BTRACE_FORMAT_MAJOR;
	f->snap.word_size = 8;
	f->snap.pointer_size = 8;
	f->snap.has_config = 1;
	f->snap.config.backend = kind == BTRACE_TRACE_BTS ? BTRACE_BACKEND_BTS :
				 BTRACE_BACKEND_QEMU;
	f->snap.config.trace_kind = kind;
	f->snap.config.cpu_vendor = variant & 1 ? BTRACE_CPU_INTEL :
				    BTRACE_CPU_AMD;
	f->snap.config.cpu_family = 6;
	f->snap.config.cpu_model = variant & 2 ? 0x3d : 0x55;  /* Broadwell errata */
	f->snap.config.user_only = 1;
	f->snap.config.requested_size = size;
	f->snap.config.crash_mode = BTRACE_CRASH_PRECISE;

	f->buf.kind = kind;
	f->buf.flags = (variant >> 2) & 0xf;   /* WRAPPED/TRUNCATED/LOST/PARTIAL */
	f->buf.tid = 100;
	f->buf.cpu = -1;
	f->buf.requested_size = size;
	f->buf.ring_size = size;
	f->buf.head = 0;
	f->buf.lost = f->buf.flags & BTRACE_BUF_LOST ? 1 : 0;
	f->buf.data = trace;
	f->buf.size = size;
	f->snap.buffers = &f->buf;
	f->snap.nbuffers = 1;

	f->maps[0].pid = 100;
	f->maps[0].prot = 5;   /* r-x */
	f->maps[0].flags = 2;
	f->maps[0].start = FZ_BASE;
	f->maps[0].end = FZ_BASE + FZ_CODE_SIZE;
	f->maps[0].path = fz_anon;
	f->maps[1].pid = 100;
	f->maps[1].prot = 5;
	f->maps[1].flags = 2;
	f->maps[1].start = FZ_NOCODE;
	f->maps[1].end = FZ_NOCODE + FZ_PAGE;
	f->maps[1].path = fz_nocode;
	f->snap.mappings = f->maps;
	f->snap.nmappings = 2;

	f->code.kind = BTRACE_CODE_ANON;
	f->code.vaddr = FZ_BASE;
	f->code.data = fz_code;
	f->code.size = sizeof(fz_code);
	f->code.path = fz_anon;
	f->snap.code = &f->code;
	f->snap.ncode = 1;

	f->task.pid = f->task.tid = 100;
	f->task.ppid = 1;
	f->task.flags = BTRACE_TASK_CRASHED;
	f->task.comm = fz_comm;
	f->snap.tasks = &f->task;
	f->snap.ntasks = 1;

	f->sig.tid = 100;
	f->sig.signo = 11;
	f->sig.code = 1;
	f->sig.exit_status = -1;
	if (variant & 0x40) {
		f->sig.fault_source = BTRACE_FAULT_REGS;
		f->sig.fault_ip = FZ_BASE + FZ_FAULT;
		f->sig.has_regs = 1;
		f->sig.regs[BTRACE_REG_RIP] = FZ_BASE + FZ_FAULT;
	}
	f->snap.signal = &f->sig;
	f->snap.complete = 1;
}
