/* SPDX-License-Identifier: MIT */
/*
 * libFuzzer target: the PT or BTS decoder (FUZZ_BTS selects BTS) through
 * the public API, over a snapshot built in memory around the input as the
 * trace buffer, with the fixed image of fuzz-image.c.
 *
 * Input: byte 0 = snapshot variant (vendor, errata model, buffer flags,
 * registers), byte 1 = decode options (unit, history length, full decode),
 * the rest = the trace buffer.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <btrace/decode.h>

#include "fuzz-image.h"

#ifdef FUZZ_BTS
#define FZ_KIND BTRACE_TRACE_BTS
#else
#define FZ_KIND BTRACE_TRACE_PT
#endif

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t fz_sink;

static void touch_symbol(const struct btrace_symbol *s)
{
	if (!s)
		return;
	if (s->module)
		fz_sink += (uint64_t)strlen(s->module);
	if (s->function)
		fz_sink += (uint64_t)strlen(s->function);
	if (s->file)
		fz_sink += (uint64_t)strlen(s->file);
	if (s->outer)
		fz_sink += (uint64_t)strlen(s->outer);
	fz_sink += s->offset + (uint64_t)s->line;
}

static void touch_thread(struct btrace_decode_result *r,
			 const struct btrace_thread *t)
{
	struct btrace_insn insn[8];

	for (size_t i = 0; i < t->nblocks; i++) {
		const struct btrace_block *b = &t->blocks[i];

		fz_sink += b->ip + b->end_ip + b->ninsn;
		if (b->kind == BTRACE_ITEM_GAP && b->gap >= t->ngaps)
			__builtin_trap();   /* dangling gap index */
		touch_symbol(b->sym);
		/* Disassemble the first and the last few blocks. */
		if (b->kind == BTRACE_ITEM_BLOCK && (i < 4 || i + 4 >= t->nblocks))
			fz_sink += (uint64_t)btrace_decode_block_insns(r, b, insn, 8);
	}
	for (size_t i = 0; i < t->ncalls; i++) {
		const struct btrace_call *c = &t->calls[i];

		if (c->nblocks && c->first_block + c->nblocks > t->nblocks)
			__builtin_trap();   /* call entry beyond the blocks */
		touch_symbol(c->sym);
	}
	for (size_t i = 0; i < t->nstack; i++)
		touch_symbol(&t->stack[i].sym);
	for (size_t i = 0; i < t->ngaps; i++)
		if (t->gaps[i].reason)
			fz_sink += (uint64_t)strlen(t->gaps[i].reason);
	if (t->fault.found) {
		touch_symbol(&t->fault.sym);
		fz_sink += (uint64_t)strlen(t->fault.insn);
		if (t->fault.how)
			fz_sink += (uint64_t)strlen(t->fault.how);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint64_t lasts[] = { 0, 1, 16, 1000 };
	struct btrace_decode_opts o = { .sz = sizeof(o) };
	struct btrace_decode_result *r = NULL;
	struct btrace_error err;
	struct btrace_symbol sym;
	struct fz_snapshot f;

	if (size < 2)
		return 0;
	fz_snapshot_init(&f, FZ_KIND, data[0], data + 2, size - 2);
	o.unit = (data[1] & 3) % 3;
	o.last = lasts[(data[1] >> 2) & 3];
	o.flags = BTRACE_DECODE_NO_DISK | BTRACE_DECODE_NO_SYMS;
	if (data[1] & 0x10)
		o.flags |= BTRACE_DECODE_FULL;
	if (data[1] & 0x20)
		o.tid = 100;

	if (btrace_decode(&f.snap, &o, &r, &err) < 0) {
		fz_sink += strlen(err.msg);
		return 0;
	}
	for (size_t i = 0; i < r->nthreads; i++)
		touch_thread(r, &r->threads[i]);
	for (size_t i = 0; i < r->nimage_notes; i++)
		fz_sink += strlen(r->image_notes[i]);
	if (btrace_decode_symbolize(r, FZ_BASE + FZ_F, &sym) == 0)
		touch_symbol(&sym);
	btrace_decode_result_free(r);
	return 0;
}
