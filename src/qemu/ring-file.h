/* SPDX-License-Identifier: MIT */
/*
 * The ring file shared by the btrace QEMU plugin (writer, inside
 * qemu-x86_64) and btrace (reader, after the emulator died).  Host byte
 * order (both sides run on the same machine); every structure has a fixed
 * size and offsets are file offsets, so the file can also be read by a
 * process that did not map it at the same address.
 *
 * One file per emulated process, "<dir>/ring.<pid>", created by the plugin
 * in the directory btrace gives it (plugin argument dir=):
 *
 *   offset 0            struct bt_ring_hdr (BT_RING_HDR_SIZE bytes)
 *   hdr.maps_offset     the guest's memory map as text, /proc/PID/maps
 *                       syntax, hdr.maps_len bytes (capacity maps_cap),
 *                       rewritten after every guest mmap/munmap/mremap/
 *                       mprotect/brk; guarded by hdr.maps_seq (odd while
 *                       being written)
 *   hdr.slot_offset     hdr.nslots slots of hdr.slot_size bytes: a struct
 *                       bt_ring_slot, the staging area (BT_RING_STAGE_ALLOC
 *                       uint32_t: records stage_base, stage_base + 1, ...
 *                       up to the first BT_RING_SENT), then hdr.entries
 *                       uint32_t TB indices (a ring: record i < committed
 *                       at [i & (entries - 1)]), then
 *                       bt_ring_time_entries(entries) struct bt_ring_time
 *                       (the thread's clock samples: a ring, sample i <
 *                       tcount at [i & (time entries - 1)])
 *   hdr.xslot_offset    hdr.nxslots more slots of hdr.xslot_size bytes,
 *                       the same layout with hdr.xentries entries: threads
 *                       beyond the first nslots alive at once
 *   hdr.acc_offset      with an access log (hdr.acc_entries > 0): one ring
 *                       of hdr.acc_entries struct bt_ring_access per slot,
 *                       then at hdr.acc_xoffset one of hdr.acc_xentries
 *                       per second-class slot (the thread's memory
 *                       accesses: record i < acc_count at
 *                       [i & (acc entries - 1)], those below acc_floor
 *                       lost; see struct bt_ring_access)
 *   hdr.tb_offset       the TB table: hdr.tb_max struct bt_tb_info, of which
 *                       hdr.tb_count are used (only in the root process's
 *                       file: a forked child keeps appending to its
 *                       parent's table, named by hdr.tb_pid)
 *   hdr.code_offset     the code log (root file only): each TB's bytes as
 *                       translated, hdr.code_cap bytes of which
 *                       hdr.code_len are used; a TB with BT_TB_F_CODE has
 *                       its bytes at code_offset + its code_off
 *
 * The hot path is one 8-byte store of the TB index and a sentinel into the
 * staging area at a cursor kept in TLS (plugin.c); everything else (from/to/kind of each transition) is
 * rebuilt from the TB table afterwards.  Consecutive executions of a TB that
 * ends in a rep-string instruction are stored once, and so are the
 * repeats of a short loop: a block ending in a backward direct branch that
 * finds itself among the last BT_RING_LOOP records drops the records since
 * (a cycle of the path; see plugin.c).
 */
#ifndef BT_QEMU_RING_FILE_H
#define BT_QEMU_RING_FILE_H

#include <stdint.h>

#define BT_RING_MAGIC "BTQRING1"
#define BT_RING_VERSION 7
/* The payload of the datagram that hands a ring descriptor to btrace
 * (plugin.c bt_file_publish(), qemu-record.c). */
#define BT_RING_SOCK_MAGIC 0x42545152u   /* "BTQR" */
#define BT_RING_HDR_SIZE 4096

/* Ring entry that stands for "a TB the table had no room for". */
#define BT_RING_IDX_GAP 0xffffffffu
/* The staging area's entry after the newest one (never a TB index). */
#define BT_RING_SENT 0xfffffffeu
/* Entries a thread stages before they are copied to its ring, and the
 * staging area's size in entries: one more for the sentinel after the
 * last, padded so the ring after it starts 64-byte aligned. */
#define BT_RING_STAGE 1024u
#define BT_RING_STAGE_ALLOC 1040u

#define BT_RING_MAX_HANDLERS 64
#define BT_RING_MAX_XRANGES 64
#define BT_RING_MAX_UNTRACED 64

/* TB kinds: how the last instruction of a TB leaves it. */
enum bt_tb_kind {
	BT_TB_NONE = 0,      /* no branch (page end, insn limit, ...) */
	BT_TB_COND = 1,      /* jcc, loop, jrcxz */
	BT_TB_JMP = 2,       /* direct jmp */
	BT_TB_CALL = 3,      /* direct call */
	BT_TB_JMP_IND = 4,
	BT_TB_CALL_IND = 5,
	BT_TB_RET = 6,
	BT_TB_SYSCALL = 7,   /* syscall, int n, sysenter: comes back */
	BT_TB_FAR = 8,       /* far call/jmp/ret, iret */
	BT_TB_REP = 9,       /* rep-string: repeats itself, then falls through */
	BT_TB_TRAP = 10,     /* ud2, into, hlt: faults (does not complete) */
	BT_TB_SWINT = 11,    /* int3, int1: a trap that completes; a far
			      * transfer, as libipt and hardware treat it */
};

/* One translated block.  32 bytes. */
struct bt_tb_info {
	uint64_t start;      /* address of the first instruction */
	uint64_t target;     /* direct branch target, 0 if none */
	uint32_t last_off;   /* last instruction's address - start */
	uint16_t ninsn;
	uint8_t last_len;    /* length of the last instruction */
	uint8_t kind;        /* enum bt_tb_kind */
	uint32_t flags;      /* BT_TB_F_* */
	uint32_t code_off;   /* BT_TB_F_CODE: bytes at hdr.code_offset + this */
};
#define BT_TB_F_PAGEFIX 0x1u  /* TB ended before a page-crossing insn */
#define BT_TB_F_CODE 0x2u     /* its bytes (last_off + last_len) are logged */

/* Records a loop-closing block looks back for itself (plugin.c). */
#define BT_RING_LOOP 4

/* Slot states. */
#define BT_SLOT_FREE 0u
#define BT_SLOT_ACTIVE 1u
#define BT_SLOT_EXITED 2u

/* Per-thread slot header; the ring follows it.  128 bytes. */
struct bt_ring_slot {
	int32_t tid;         /* guest thread id (== host tid) */
	uint32_t state;      /* BT_SLOT_* */
	uint64_t committed;  /* records copied to the ring (a multiple of
			      * BT_RING_STAGE); the staged ones follow */
	/* The last host fault (SIGSEGV/SIGBUS with si_code > 0) this thread
	 * took, noted by the plugin's chained handler. */
	uint64_t fault_pos;  /* pos at the fault (the TB is at fault_pos - 1) */
	uint64_t fault_addr; /* si_addr */
	int32_t fault_signo; /* 0: none */
	int32_t fault_code;
	uint32_t nfaults;
	uint32_t reserved0;
	uint64_t seq;        /* attach order, to tell slot generations apart */
	/* The first host fault of the thread (fault_* above is the last):
	 * what a handler that never returns would hide. */
	uint64_t first_fault_pos;
	uint64_t first_fault_addr;
	int32_t first_fault_signo;
	int32_t first_fault_code;
	uint64_t stage_base; /* record number of staging entry 0 */
	/* BT_FAULT_F_* of the last note, and the last note before it (a
	 * note that may be QEMU's own write-protection fault keeps what it
	 * replaced, see plugin.c). */
	uint32_t fault_flags;
	uint32_t prev_nfaults;
	uint64_t prev_fault_pos;
	uint64_t prev_fault_addr;
	int32_t prev_fault_signo;
	int32_t prev_fault_code;
	/* Clock samples taken (the ring after the TB indices; atomic,
	 * release after the sample is written). */
	uint64_t tcount;
	/* The access log (hdr.acc_entries > 0): records written (atomic,
	 * release after the record), and the first one not lost since (a
	 * loop fold took records back after the ring had wrapped: those the
	 * dropped ones overwrote are gone; raised before acc_count is taken
	 * back).  The records kept are [max(acc_floor, acc_count - ring
	 * entries), acc_count). */
	uint64_t acc_count;
	uint64_t acc_floor;
	uint8_t reserved[32];
	/* Never a TB index: what a look-back before the staging area reads. */
	uint32_t guard[BT_RING_LOOP];
};
/* The last note is a write to a page the faulting block lies on: QEMU's own
 * fault when it unprotects a page of translated code, unless the guest got
 * the signal (the next record is a handler's entry) or died (none). */
#define BT_FAULT_F_MAYBE_QEMU 0x1u

/* Take back the last fault note (it was QEMU's own): the note before it
 * comes back, and with no note left the first note goes too.  Used by the
 * plugin and by the reader, which settle such notes the same way. */
static inline void bt_ring_take_back_note(struct bt_ring_slot *s)
{
	s->nfaults = s->prev_nfaults;
	s->fault_pos = s->prev_fault_pos;
	s->fault_addr = s->prev_fault_addr;
	s->fault_signo = s->prev_fault_signo;
	s->fault_code = s->prev_fault_code;
	if (!s->nfaults) {
		s->first_fault_pos = 0;
		s->first_fault_addr = 0;
		s->first_fault_signo = 0;
		s->first_fault_code = 0;
	}
}

struct bt_ring_hdr {
	char magic[8];       /* BT_RING_MAGIC */
	uint32_t version;    /* BT_RING_VERSION */
	uint32_t hdr_size;   /* BT_RING_HDR_SIZE */
	int32_t pid;         /* the emulated process */
	int32_t ppid;        /* its parent (for forked children) */
	int32_t tb_pid;      /* whose file holds the TB table */
	uint32_t nslots;
	uint64_t entries;    /* ring entries per slot, a power of two */
	uint64_t slot_offset;
	uint64_t slot_size;  /* sizeof(struct bt_ring_slot) + 4 * entries */
	uint64_t tb_offset;  /* 0 in a forked child's file */
	uint64_t tb_max;
	uint64_t tb_count;   /* TBs allocated (atomic) */
	uint64_t maps_offset;
	uint64_t maps_cap;
	uint32_t maps_len;
	uint32_t maps_seq;
	uint64_t slot_seq;   /* attach counter */
	uint32_t untraced;   /* threads that found no free slot */
	uint32_t flags;      /* BT_RING_F_* */
	uint32_t nhandlers;  /* guest signal handler addresses seen */
	uint32_t watched;    /* set by btrace once it watches this process
			      * (a forked child waits for it, briefly) */
	uint64_t handlers[BT_RING_MAX_HANDLERS];
	char exe[512];       /* guest program path */
	char cwd[512];       /* guest working directory (for the guest core) */
	char exec_path[512]; /* last execve() the guest attempted */
	/* Anonymous ranges the guest mapped or mprotected with PROT_EXEC
	 * (the host map hides the guest's execute bit), sorted, disjoint;
	 * guarded by maps_seq like the map text. */
	uint32_t nxranges;
	uint32_t xranges_lost; /* ranges that did not fit */
	struct {
		uint64_t start, end;
	} xranges[BT_RING_MAX_XRANGES];
	/* The last signal the process sent itself (kill, tkill, tgkill,
	 * rt_sigqueueinfo, rt_tgsigqueueinfo): its number and the si_code the
	 * receiver gets (SI_USER, SI_TKILL or the queued one). */
	int32_t self_signo;
	int32_t self_code;
	/* The second class of slots (threads beyond nslots alive at once). */
	uint32_t nxslots;
	uint32_t untraced_ntids; /* tids below (<= BT_RING_MAX_UNTRACED) */
	uint32_t xslots_used;    /* second-class slots ever taken: a reader
				  * looks at no more (untouched pages) */
	uint32_t reserved_x;
	uint64_t xentries;
	uint64_t xslot_offset;
	uint64_t xslot_size;
	/* Threads that found no slot at all (untraced counts them): tids. */
	int32_t untraced_tids[BT_RING_MAX_UNTRACED];
	/* The code log (root file). */
	uint64_t code_offset;
	uint64_t code_cap;
	uint64_t code_len;       /* bytes reserved (atomic) */
	/* Forked children of this process that run untraced: their ring
	 * could not be made or handed to btrace (atomic; counted by the
	 * child in its parent's header). */
	uint32_t untraced_children;
	/* Records between two clock samples (plugin argument time=); 0: the
	 * plugin takes none (the slots' tcount stay 0). */
	uint32_t time_every;
	uint32_t reserved_acc;
	/* The access log: records per first-class slot's ring and per
	 * second-class slot's (powers of two; 0: no access log), and where
	 * the rings are (struct bt_ring_access). */
	uint64_t acc_entries;
	uint64_t acc_xentries;
	uint64_t acc_offset;
	uint64_t acc_xoffset;
};
#define BT_RING_F_READY    0x1u  /* the plugin finished initialising */
#define BT_RING_F_EXITED   0x2u  /* normal exit (exit_group seen) */
#define BT_RING_F_EXEC     0x4u  /* an execve() was attempted */
#define BT_RING_F_TB_FULL  0x8u  /* the TB table overflowed */
#define BT_RING_F_FORKED   0x10u /* this file belongs to a forked child */
#define BT_RING_F_CODE_FULL 0x20u /* the code log overflowed */

/* Slot @i < nslots + nxslots: the first class, then the second. */
static inline struct bt_ring_slot *bt_ring_slot_at(void *base,
						   const struct bt_ring_hdr *h,
						   uint32_t i)
{
	if (i >= h->nslots)
		return (struct bt_ring_slot *)((uint8_t *)base +
			h->xslot_offset + (uint64_t)(i - h->nslots) *
			h->xslot_size);
	return (struct bt_ring_slot *)((uint8_t *)base + h->slot_offset +
				       (uint64_t)i * h->slot_size);
}

/* Ring entries of slot @i. */
static inline uint64_t bt_ring_slot_entries(const struct bt_ring_hdr *h,
					    uint32_t i)
{
	return i >= h->nslots ? h->xentries : h->entries;
}

/* The staging area: entries stage_base, stage_base + 1, ... up to the
 * first BT_RING_SENT. */
static inline uint32_t *bt_ring_stage(struct bt_ring_slot *s)
{
	return (uint32_t *)(s + 1);
}

/* The ring: record p at [p & (entries - 1)], for p < committed. */
static inline uint32_t *bt_ring_entries(struct bt_ring_slot *s)
{
	return (uint32_t *)(s + 1) + BT_RING_STAGE_ALLOC;
}

/*
 * A clock sample: the thread's record @pos had not started at @ns
 * (CLOCK_MONOTONIC, nanoseconds; one clock for every thread and process),
 * and every record before @pos had.  The plugin takes one at a thread's
 * first block, every time= records (the staging cursor's checkpoint),
 * before and after every system call, at a thread's exit and at a host
 * fault; two samples at one @pos are the boundary's two sides (a system
 * call's entry and its return).  A loop fold (plugin.c) can move records
 * back under a sample: the sample then keeps the position it had.
 */
struct bt_ring_time {
	uint64_t pos;
	uint64_t ns;
};

/* Clock samples a slot of @entries ring entries keeps: one per 8 records
 * (a sample every time= records needs far fewer; system calls in a tight
 * loop can take two per three records, then the oldest records lose
 * theirs first). */
static inline uint64_t bt_ring_time_entries(uint64_t entries)
{
	return entries / 8;
}

static inline uint64_t bt_ring_slot_size(uint64_t entries)
{
	return sizeof(struct bt_ring_slot) + 4 * (BT_RING_STAGE_ALLOC + entries) +
	       sizeof(struct bt_ring_time) * bt_ring_time_entries(entries);
}

/* The clock samples of slot @s, of @entries ring entries. */
static inline struct bt_ring_time *bt_ring_times(struct bt_ring_slot *s,
						 uint64_t entries)
{
	return (struct bt_ring_time *)(bt_ring_entries(s) + entries);
}

/*
 * One memory access of a thread (the plugin's memory callback, called by
 * QEMU after each access an instrumented instruction makes), 16 bytes:
 *   info  bits 0-2   log2 of the size in bytes (QEMU's size shift)
 *         bit 3      a store (else a load)
 *         bit 4      a fold mark (below): bits 0-3 and addr are zero
 *         bits 5-15  zero
 *         bits 16-63 the instruction's address, its low 48 bits (a
 *                    canonical address is their sign extension)
 *   addr  the guest address of the first byte accessed
 * The log follows the recorded path: when the plugin folds a loop's turn
 * out of the TB records (or stores a rep-string block's repeats once), it
 * takes back the accesses made since the dropped record started.  A fold
 * also leaves a fold mark there, its address the loop block's first
 * instruction: one or more turns of the loop ran between the record
 * before it and the block's execution whose accesses follow it (a turn
 * folded again takes the log back to the same mark).
 */
struct bt_ring_access {
	uint64_t info;
	uint64_t addr;
};
#define BT_ACC_SHIFT_MASK 0x7ull
#define BT_ACC_STORE 0x8ull
#define BT_ACC_FOLD 0x10ull
#define BT_ACC_RESERVED 0xffe0ull
#define BT_ACC_IP_SHIFT 16

/* The instruction address of record @info. */
static inline uint64_t bt_ring_access_ip(uint64_t info)
{
	return (uint64_t)((int64_t)info >> BT_ACC_IP_SHIFT);
}

/* The most records a thread's access log keeps (a snapshot section's
 * most, docs/format.md), and what a second-class slot keeps at most. */
#define BT_RING_ACC_MAX (1ull << 22)
#define BT_RING_ACC_XMAX 4096ull

/* Records a second-class slot keeps when a first-class one keeps @n. */
static inline uint64_t bt_ring_acc_xentries(uint64_t n)
{
	return n < BT_RING_ACC_XMAX ? n : BT_RING_ACC_XMAX;
}

/* The access ring of slot @i < nslots + nxslots (hdr.acc_entries > 0). */
static inline struct bt_ring_access *bt_ring_acc_at(void *base,
						    const struct bt_ring_hdr *h,
						    uint32_t i)
{
	if (i >= h->nslots)
		return (struct bt_ring_access *)((uint8_t *)base +
			h->acc_xoffset + (uint64_t)(i - h->nslots) *
			h->acc_xentries * sizeof(struct bt_ring_access));
	return (struct bt_ring_access *)((uint8_t *)base + h->acc_offset +
		(uint64_t)i * h->acc_entries * sizeof(struct bt_ring_access));
}

static inline uint64_t bt_ring_acc_entries(const struct bt_ring_hdr *h,
					   uint32_t i)
{
	return i >= h->nslots ? h->acc_xentries : h->acc_entries;
}

/* The plugin's defaults for slots=, xslots=, xentries= and tbmax=, the map
 * text's room and the code log's (a sparse file: only what is used costs
 * memory). */
#define BT_RING_DEF_SLOTS 64u
#define BT_RING_DEF_XSLOTS 1024u
#define BT_RING_DEF_XENTRIES 65536u
#define BT_RING_DEF_TBMAX (4u << 20)
/* Records between two clock samples (plugin argument time=). */
#define BT_RING_DEF_TIME 256u
#define BT_RING_MAPS_CAP (1u << 20)
#define BT_RING_CODE_CAP (256ull << 20)

/* Bytes of a ring file (and of its mapping, in the emulator and in
 * btrace): header, map text, @nslots slots of @entries entries, the
 * default second class of slots, their access rings (@acc records per
 * first-class slot), and the TB table of @tb_max entries and the code log
 * (both 0 in a forked child's file), page-rounded. */
static inline uint64_t bt_ring_file_size(uint64_t nslots, uint64_t entries,
					 uint64_t tb_max, uint64_t acc)
{
	uint64_t size = BT_RING_HDR_SIZE + BT_RING_MAPS_CAP +
			nslots * bt_ring_slot_size(entries) +
			BT_RING_DEF_XSLOTS *
			bt_ring_slot_size(BT_RING_DEF_XENTRIES) +
			(nslots * acc + BT_RING_DEF_XSLOTS *
			 bt_ring_acc_xentries(acc)) *
			sizeof(struct bt_ring_access) +
			tb_max * sizeof(struct bt_tb_info) +
			(tb_max ? BT_RING_CODE_CAP : 0);

	return (size + 4095) & ~4095ull;
}

/*
 * What the emulator could not do as the kernel does, noted by the plugin
 * (plugin-limits.c) in the header page's last 128 bytes, apart from struct
 * bt_ring_hdr (which must stay below BT_RING_LIMITS_OFFSET).  btrace turns
 * each flag into a warning and a snapshot metadata key limit.<name>.
 */
#define BT_RING_LIMITS_OFFSET (BT_RING_HDR_SIZE - 128)
#define BT_LIMIT_FPE_TRAPS 0x1u  /* FP exceptions unmasked: no SIGFPE here */
#define BT_LIMIT_SECCOMP   0x2u  /* a seccomp filter was refused */
#define BT_LIMIT_VDSO      0x4u  /* a vDSO call got EFAULT, not SIGSEGV */
#define BT_LIMIT_SIGALIGN  0x8u  /* a handler started off the ABI's stack
				  * alignment, not corrected */
#define BT_LIMIT_ENOSYS    0x10u /* a call Linux has got ENOSYS from QEMU */
#define BT_LIMIT_RTSIG     0x20u /* signal 63 or 64, which QEMU cannot
				  * deliver, was used */
/* enosys_calls bits: which calls got ENOSYS */
#define BT_ENOSYS_CLONE3   0x1u  /* and the program did not fall back to
				  * clone() (glibc does, silently) */
#define BT_ENOSYS_IO_URING 0x2u  /* io_uring_setup, _enter, _register */
#define BT_ENOSYS_PTRACE   0x4u
struct bt_ring_limits {
	uint32_t flags;      /* BT_LIMIT_*, set atomically */
	uint32_t fpe_bits;   /* exceptions unmasked: IE DE ZE OE UE PE as
			      * bits 0..5 (x87 control word order) */
	uint64_t fpe_ip;     /* the first unmasking instruction */
	uint32_t fpe_insn;   /* which unmasked: 1 ldmxcsr (SSE), 2 fldcw (x87) */
	int32_t seccomp_nr;  /* the syscall: seccomp (317) or prctl (157) */
	int64_t seccomp_ret; /* what QEMU returned (-errno) */
	int32_t vdso_nr;     /* the syscall that got EFAULT */
	uint32_t sigalign_fixed; /* handler entries realigned */
	uint64_t sigalign_ip;    /* the first handler left misaligned */
	uint32_t enosys_calls;   /* BT_ENOSYS_* */
	int32_t rtsig_nr;        /* the first call that used 63 or 64 */
	int32_t rtsig;           /* and the signal */
	uint32_t reserved1;
	uint8_t reserved[56];
};

static inline struct bt_ring_limits *bt_ring_limits_of(const void *hdr)
{
	return (struct bt_ring_limits *)((uintptr_t)hdr +
					 BT_RING_LIMITS_OFFSET);
}

#endif /* BT_QEMU_RING_FILE_H */
