/* SPDX-License-Identifier: MIT */
/* libbtrace-decode internals: shared between the decoder's modules only. */
#ifndef BT_DECODE_INTERNAL_H
#define BT_DECODE_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/decode.h>

struct pt_image;
struct Dwfl;

#define BT_KERNEL_START 0xffff800000000000ull
static inline int bt_is_kernel(uint64_t ip)
{
	return ip >= BT_KERNEL_START;
}

/* u64 -> u32 open-addressing hash map (value UINT32_MAX = absent). */
struct bt_map {
	uint64_t *keys;
	uint32_t *vals;
	size_t cap;    /* power of two */
	size_t n;
};
uint32_t bt_map_get(const struct bt_map *m, uint64_t key);
int bt_map_put(struct bt_map *m, uint64_t key, uint32_t val);
void bt_map_free(struct bt_map *m);

/* Bytes of code at an address. */
struct bt_region {
	uint64_t start;
	uint64_t end;
	const uint8_t *data;
	int module;          /* index in ctx modules, -1 none */
};

struct bt_module {
	char *path;          /* as mapped */
	char *elf;           /* file used for symbols (matching build ID), NULL */
	uint64_t lo, hi;     /* lowest/highest mapped address */
	uint64_t bias;       /* load bias (ET_DYN base), 0 for ET_EXEC */
	int have_bias;
	uint8_t build_id[BTRACE_BUILD_ID_MAX];
	uint32_t build_id_size;
	void *dwmod;         /* Dwfl_Module *, NULL when none */
	int dw_tried;
	void *map;           /* mmap of the disk file when code comes from it */
	size_t map_size;
};

struct bt_insn_info {
	uint8_t cls;         /* enum btrace_insn_class */
	uint8_t size;        /* 0: unknown */
	uint64_t target;     /* direct branch target, 0 if none */
};

struct bt_ctx {
	const struct btrace_snapshot *snap;
	struct btrace_decode_opts opts;
	struct btrace_error *err;

	struct pt_image *image;
	int memfd;
	uint64_t memfd_size;

	struct bt_region *regions;   /* sorted by start */
	size_t nregions, cregions;
	struct bt_module *modules;
	size_t nmodules, cmodules;

	char **notes;
	size_t nnotes, cnotes;

	/* capstone */
	size_t cs;
	int cs_ok;
	struct bt_map insn_map;
	struct bt_insn_info *insns;
	size_t ninsns, cinsns;

	/* symbols */
	struct Dwfl *dwfl;
	int dwfl_ok;
	struct bt_map sym_map;
	struct btrace_symbol **sym_chunks;   /* stable: never moved */
	size_t nsyms, csym_chunks;

	/* string arena */
	char **strs;
	size_t nstrs, cstrs;
};

void bt_hugepages(void *p, size_t len);

/* strings owned by the context */
const char *bt_ctx_strdup(struct bt_ctx *c, const char *s);
const char *bt_ctx_printf(struct bt_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
int bt_ctx_note(struct bt_ctx *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* image.c */
int bt_image_build(struct bt_ctx *c);
void bt_image_free(struct bt_ctx *c);
/* Code bytes at @ip: pointer and bytes available, NULL when unmapped. */
const uint8_t *bt_image_bytes(const struct bt_ctx *c, uint64_t ip,
			      size_t *avail);
const struct bt_region *bt_image_region(const struct bt_ctx *c, uint64_t ip);
/* Module (mapped file) holding @ip, -1 if none, even when code is missing. */
int bt_image_module_of(const struct bt_ctx *c, uint64_t ip);
/* Why there is no code at @ip (a note line). */
const char *bt_image_why_missing(struct bt_ctx *c, uint64_t ip);
int bt_elf_build_id(const char *path, uint8_t *id, uint32_t *size);

/* insn.c */
int bt_insn_init(struct bt_ctx *c);
void bt_insn_fini(struct bt_ctx *c);
/* Classify the instruction at @ip (cached). */
const struct bt_insn_info *bt_insn_classify(struct bt_ctx *c, uint64_t ip);
/* Disassemble at @ip into @out. 0 ok, negative if no code. */
int bt_insn_disasm(struct bt_ctx *c, uint64_t ip, struct btrace_insn *out);
/* Walk @n instructions from @ip; stores the IP of the last one. */
int bt_insn_walk(struct bt_ctx *c, uint64_t ip, uint64_t end_ip,
		 uint64_t *count);

/* symbols.c */
int bt_syms_init(struct bt_ctx *c);
void bt_syms_fini(struct bt_ctx *c);
/* Symbol of @ip (cached; the returned record lives as long as @c). */
const struct btrace_symbol *bt_syms_lookup(struct bt_ctx *c, uint64_t ip);
/* Start address of the (outer) function containing @ip, 0 unknown. */
uint64_t bt_syms_func_start(struct bt_ctx *c, uint64_t ip);
/* Inline chain at @ip: up to @n symbols, innermost first; returns count. */
int bt_syms_inline_chain(struct bt_ctx *c, uint64_t ip,
			 struct btrace_symbol *out, int n);

/* A growing thread result under construction. */
struct bt_thread_build {
	struct btrace_thread *t;
	size_t cblocks, cgaps, ccalls, cstack;
	/* events seen by the decoders to locate the fault */
	uint64_t last_async_ip;      /* last async disable/branch from user */
	int64_t last_async_block;    /* index of its ITEM_ASYNC entry */
	int ended_async;             /* trace ends right at an async disable */
};

int bt_thread_add_block(struct bt_ctx *c, struct bt_thread_build *b,
			const struct btrace_block *blk);
int bt_thread_add_gap(struct bt_ctx *c, struct bt_thread_build *b,
		      uint32_t kind, int error, uint64_t offset, uint64_t ip,
		      uint64_t bytes, const char *reason);

/* pt.c / bts.c: decode one buffer into @b (blocks and gaps). */
int bt_pt_decode(struct bt_ctx *c, const struct btrace_buffer *buf,
		 struct bt_thread_build *b);
int bt_bts_decode(struct bt_ctx *c, const struct btrace_buffer *buf,
		  struct bt_thread_build *b);

/* analyze.c: fault, stack, call history, symbols of a decoded thread. */
int bt_analyze_thread(struct bt_ctx *c, struct bt_thread_build *b);

#endif /* BT_DECODE_INTERNAL_H */
