/* SPDX-License-Identifier: MIT */
/* The QEMU software backend, host side (built into libbtrace). */
#ifndef BT_QEMU_RECORD_H
#define BT_QEMU_RECORD_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/btrace.h>
#include <btrace/record.h>
#include <btrace/snapshot.h>

#include "encode/encode.h"
#include "ring-file.h"

/* Launch opts->argv under qemu-x86_64 with the btrace plugin, wait, and
 * write a snapshot on a selected death (see docs/qemu-backend.md). */
int bt_qemu_record(const struct btrace_record_opts *opts,
		   struct btrace_record_result *res, struct btrace_error *err);

/* Locate qemu-x86_64 (env BTRACE_QEMU, then PATH) and check that it can
 * load plugins.  @out gets the path. */
int bt_qemu_find_emulator(char *out, size_t len, struct btrace_error *err);
/* Locate the plugin: env BTRACE_QEMU_PLUGIN, then <libdir>/btrace relative
 * to the running program's directory (an installed btrace, wherever its
 * prefix is), then the build tree's plugin only for a program inside the
 * build directory recorded at configure time, then the configured install
 * directory.  @out gets an absolute path. */
int bt_qemu_find_plugin(char *out, size_t len, struct btrace_error *err);
/* Locate libbtrace-qemu-preload.so (env BTRACE_QEMU_PRELOAD, else next to
 * @plugin); @out gets its absolute path. */
int bt_qemu_find_preload(const char *plugin, char *out, size_t len,
			 struct btrace_error *err);
/* Resolve @prog through PATH and check it is an x86-64 ELF executable. */
struct bt_qemu_launch;
/* @argv[0] found and checked, "#!" scripts resolved into *@launch (free it
 * with bt_qemu_launch_free() whatever the result); @out: the program QEMU
 * loads. */
int bt_qemu_check_program(char *const *argv, char *out, size_t len,
			  struct bt_qemu_launch *launch,
			  struct btrace_error *err);

/* ---- ring files ---- */

struct bt_qemu_ring {
	uint8_t *base;                 /* the file, mapped read-only */
	size_t size;
	const struct bt_ring_hdr *hdr;
	const struct bt_tb_info *tbs;  /* the TB table (maybe another file's) */
	uint64_t ntbs;
	char *maps;                    /* copy of the guest map text */
	struct bt_qemu_view *views;    /* per slot, read once at open */
	uint32_t nslots;               /* both classes of slots */
	const uint8_t *code;           /* the code log (maybe another file's) */
	uint64_t code_len;
};

/* A slot's records: [pos - entries, pos) when it wrapped, else [0, pos);
 * those in [base, base + n) are in the staging area, the rest in the
 * ring. */
struct bt_qemu_view {
	uint64_t pos, base, n;
	uint64_t entries;              /* the slot's ring size */
	/* Its clock samples: [tfirst, tcount) at [i & tmask] of @times. */
	const struct bt_ring_time *times;
	uint64_t tfirst, tcount, tmask;
};

/* The number of records the thread of slot @s wrote. */
uint64_t bt_qemu_slot_pos(const struct bt_qemu_ring *r,
			  const struct bt_ring_slot *s);
/* Its ring's size in records. */
uint64_t bt_qemu_slot_entries(const struct bt_qemu_ring *r,
			      const struct bt_ring_slot *s);

int bt_qemu_ring_open(const char *path, struct bt_qemu_ring *r,
		      struct btrace_error *err);
void bt_qemu_ring_close(struct bt_qemu_ring *r);
/* Slot @i < bt_qemu_nslots(): both classes (ring-file.h). */
struct bt_ring_slot *bt_qemu_ring_slot(const struct bt_qemu_ring *r,
				       uint32_t i);
uint32_t bt_qemu_nslots(const struct bt_qemu_ring *r);
/* The bytes TB @t had when it was translated (*@len of them, from its
 * start), or NULL when they were not logged. */
const uint8_t *bt_qemu_tb_code(const struct bt_qemu_ring *r,
			       const struct bt_tb_info *t, uint64_t *len);

/*
 * The access log of slot @s (ring-file.h, struct bt_ring_access), oldest
 * first, in *@out (free out->e): 0, and out->n records (maybe none);
 * 1 when the file has no access log for the slot; -BTRACE_ERR_FORMAT when
 * the file's rings or counts are not what the plugin writes, or a record
 * is not (nothing of the log is kept), -ENOMEM; @why says why.
 */
struct bt_qemu_accesses {
	struct btrace_access *e;
	uint64_t n;
	uint64_t total;       /* the slot's count: records kept since the
			       * thread started */
	uint64_t cap;         /* the slot's ring */
	int complete;         /* none lost (the ring never wrapped) */
	int tid;
};
int bt_qemu_slot_accesses(const struct bt_qemu_ring *r,
			  const struct bt_ring_slot *s,
			  struct bt_qemu_accesses *out, char *why, size_t len);

/* How the thread's history ends. */
struct bt_qemu_end {
	int have_ip;          /* @ip is the exact next (not executed) insn */
	uint64_t ip;
};

/* Pseudo-kinds passed to the rebuild callback besides enum bt_branch_kind:
 * the history starts at @to, and trace was lost before @to; the clock
 * read @to nanoseconds (CLOCK_MONOTONIC) here, between the branch before
 * and the one after. */
#define BT_QEMU_MARK_TIME 0xfd
#define BT_QEMU_MARK_BEGIN 0xfe
#define BT_QEMU_MARK_GAP 0xff

/*
 * Rebuild one thread's branches from its ring and feed them to @cb (in
 * order), ending per @end.  Returns the number of branches, or < 0.
 * *@end_ip gets the address the trace ends at.
 */
typedef int (*bt_qemu_branch_cb)(void *ctx, const struct bt_branch *br);
struct bt_qemu_rebuild {
	uint64_t first_ip;    /* where the retained history starts */
	uint64_t end_ip;      /* where it stops (not executed) */
	uint64_t ntb;         /* TB records used */
	uint64_t nasync;      /* asynchronous edges found */
	uint64_t ngaps;       /* unknown TBs (table full) */
	int end_exact;        /* end_ip is the exact faulting instruction */
	uint64_t last_tb_start;
	uint64_t ntimes;      /* clock samples passed on (BT_QEMU_MARK_TIME) */
};
int bt_qemu_rebuild(const struct bt_qemu_ring *r,
		    const struct bt_ring_slot *s, const struct bt_qemu_end *end,
		    bt_qemu_branch_cb cb, void *ctx,
		    struct bt_qemu_rebuild *out);
/* The TB record at ring position @pos of @s, NULL if gone or unknown. */
const struct bt_tb_info *bt_qemu_tb_at(const struct bt_qemu_ring *r,
				       const struct bt_ring_slot *s,
				       uint64_t pos);

/* ---- ELF ---- */

struct bt_qemu_elf_seg {
	uint64_t offset;      /* p_offset */
	uint64_t vaddr;       /* p_vaddr */
	uint64_t filesz;
	uint32_t flags;       /* PF_* */
};

struct bt_qemu_elf {
	int is_elf64;
	uint16_t machine;
	uint16_t type;
	int has_interp;
	uint8_t build_id[BTRACE_BUILD_ID_MAX];
	uint32_t build_id_size;
	struct bt_qemu_elf_seg seg[16];
	size_t nseg;
};

int bt_qemu_elf_read(const char *path, struct bt_qemu_elf *e);

/* A memory segment of a guest core. */
struct bt_qemu_core_load {
	uint64_t vaddr;
	uint64_t offset;      /* in the core file */
	uint64_t filesz;
	uint32_t flags;       /* p_flags: PF_R, PF_W, PF_X */
};

/* A guest mapping as the core has it (every PT_LOAD, also those with no
 * bytes in the file): QEMU's own view of the guest's pages. */
struct bt_qemu_core_vma {
	uint64_t start, end;
	uint32_t flags;       /* p_flags: PF_R, PF_W, PF_X */
};

/* A guest core: the crashing thread's signal and registers, and where the
 * guest's memory is in the file.  Free with bt_qemu_core_free(). */
struct bt_qemu_core {
	int found;
	int signo;
	int tid;
	uint64_t regs[BTRACE_NREGS];
	int nthreads;
	/* An address on the initial (main thread's) stack: the NT_AUXV
	 * note's AT_RANDOM, else AT_EXECFN; 0 if neither. */
	uint64_t initial_stack;
	struct bt_qemu_core_load *loads;
	size_t nloads;
	struct bt_qemu_core_vma *vmas;   /* sorted by address */
	size_t nvmas;
};
int bt_qemu_core_read(const char *path, struct bt_qemu_core *c);
/* All @len bytes of @fd at @off: 0, or -EIO (short file, error). */
int bt_qemu_pread_all(int fd, void *buf, size_t len, uint64_t off);
void bt_qemu_core_free(struct bt_qemu_core *c);

#endif /* BT_QEMU_RECORD_H */
