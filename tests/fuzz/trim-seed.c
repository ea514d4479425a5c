/* SPDX-License-Identifier: MIT */
/*
 * fuzz-trim-seed: a recorded snapshot made into a small seed for the
 * whole-snapshot fuzz targets (fuzz-snapshot.c): every section kept, but
 * each PT buffer cut to its last PSB that leaves 1 KiB or more, and each
 * code blob cut to the pages the trace runs through in the last 512
 * blocks of each thread, so that an execution copies and checks kilobytes, not the
 * megabytes of libc's code a recording embeds.
 *   fuzz-trim-seed IN OUT
 * Prints the blocks decoded and the code kept.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>

#define PAGE 4096ull

static uint64_t *pages;
static size_t npages, cpages;

static int add_page(uint64_t a)
{
	if (npages == cpages) {
		uint64_t *n = realloc(pages, (cpages = cpages ? 2 * cpages : 256) *
				      sizeof(*n));
		if (!n)
			return -1;
		pages = n;
	}
	pages[npages++] = a & ~(PAGE - 1);
	return 0;
}

static int cmp(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static int has_page(uint64_t p)
{
	return bsearch(&p, pages, npages, sizeof(*pages), cmp) != NULL;
}

/* A PT buffer from its last PSB that leaves at least TAIL bytes (the
 * targets decode the end; the decoder syncs at the PSB): where it starts. */
#define TAIL 1024
static size_t tail_start(const struct btrace_buffer *b)
{
	static const uint8_t psb[16] = { 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82,
					 2, 0x82, 2, 0x82, 2, 0x82, 2, 0x82 };
	size_t best = 0;

	if (b->kind != BTRACE_TRACE_PT || b->size <= TAIL)
		return 0;
	for (size_t o = 0; o + TAIL <= b->size; o++)
		if (!memcmp(b->data + o, psb, sizeof(psb)))
			best = o;
	return best;
}

static int die(const char *what, const struct btrace_error *err)
{
	fprintf(stderr, "fuzz-trim-seed: %s: %s\n", what, err->msg);
	return 1;
}

int main(int argc, char **argv)
{
	struct btrace_decode_opts o = { .sz = sizeof(o) };
	struct btrace_decode_result *r;
	struct btrace_snapshot *s;
	struct btrace_writer *w;
	struct btrace_error err;
	uint64_t kept = 0, total = 0, blocks = 0;
	int rc = 0;

	if (argc != 3) {
		fprintf(stderr, "usage: fuzz-trim-seed IN OUT\n");
		return 2;
	}
	if (btrace_snapshot_read(argv[1], 0, &s, &err))
		return die(argv[1], &err);
	for (size_t i = 0; i < s->nbuffers; i++) {
		struct btrace_buffer *b = (struct btrace_buffer *)&s->buffers[i];
		size_t from = tail_start(b);

		b->data += from;
		b->size -= from;
	}
	o.unit = BTRACE_UNIT_BLOCKS;
	o.last = o.keep = 512;    /* the end, what the targets decode */
	o.flags = BTRACE_DECODE_NO_DISK |
		  BTRACE_DECODE_NO_SYMS;
	if (btrace_decode(s, &o, &r, &err) < 0)
		return die(argv[1], &err);
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct btrace_thread *t = &r->threads[i];

		for (size_t k = 0; k < t->nblocks; k++) {
			for (uint64_t a = t->blocks[k].ip; a <= t->blocks[k].end_ip &&
			     a - t->blocks[k].ip < (1u << 20); a += PAGE)
				if (add_page(a))
					return 1;
			if (add_page(t->blocks[k].end_ip))
				return 1;
		}
		blocks += t->nblocks;
	}
	if (s->signal && (add_page(s->signal->fault_ip) ||
			  add_page(s->signal->regs[BTRACE_REG_RIP])))
		return 1;
	qsort(pages, npages, sizeof(*pages), cmp);
	btrace_decode_result_free(r);

	if (btrace_writer_open(argv[2], BTRACE_WRITE_NO_COMPRESS, &w, &err))
		return die(argv[2], &err);
	if (s->has_config)
		rc = btrace_writer_set_config(w, &s->config, &err);
	for (size_t i = 0; !rc && i < s->nbuffers; i++)
		rc = btrace_writer_add_buffer(w, &s->buffers[i], &err);
	for (size_t i = 0; !rc && i < s->ntasks; i++)
		rc = btrace_writer_add_task(w, &s->tasks[i], &err);
	for (size_t i = 0; !rc && i < s->nmappings; i++)
		rc = btrace_writer_add_mapping(w, &s->mappings[i], &err);
	for (size_t i = 0; !rc && i < s->ncode; i++) {
		const struct btrace_code *c = &s->code[i];
		uint64_t a = 0;

		total += c->size;
		/* runs of wanted pages, each a blob of its own */
		while (!rc && a < c->size) {
			uint64_t b;

			if (!has_page((c->vaddr + a) & ~(PAGE - 1))) {
				a = ((c->vaddr + a) | (PAGE - 1)) + 1 - c->vaddr;
				continue;
			}
			b = a;
			while (b < c->size && has_page((c->vaddr + b) & ~(PAGE - 1)))
				b = ((c->vaddr + b) | (PAGE - 1)) + 1 - c->vaddr;
			if (b > c->size)
				b = c->size;
			struct btrace_code part = *c;

			part.vaddr += a;
			if (c->kind == BTRACE_CODE_FILE)
				part.file_offset += a;
			part.data += a;
			part.size = b - a;
			kept += part.size;
			rc = btrace_writer_add_code(w, &part, &err);
			a = b;
		}
	}
	if (!rc && s->signal)
		rc = btrace_writer_set_signal(w, s->signal, &err);
	for (size_t i = 0; !rc && i < s->nmemory; i++)
		rc = btrace_writer_add_memory(w, &s->memory[i], &err);
	for (size_t i = 0; !rc && i < s->naccess_logs; i++)
		rc = btrace_writer_add_accesses(w, &s->access_logs[i], &err);
	for (size_t i = 0; !rc && i < s->nmeta; i++)
		rc = btrace_writer_add_meta(w, s->meta[i].key, s->meta[i].value, &err);
	if (!rc)
		rc = btrace_writer_commit(w, &err);
	else
		btrace_writer_free(w);
	btrace_snapshot_free(s);
	free(pages);
	if (rc)
		return die(argv[2], &err);
	printf("%s: %llu blocks, code %llu of %llu bytes kept\n", argv[2],
	       (unsigned long long)blocks, (unsigned long long)kept,
	       (unsigned long long)total);
	return 0;
}
