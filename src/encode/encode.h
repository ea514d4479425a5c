/* SPDX-License-Identifier: MIT */
/*
 * Software trace encoding: turn a sequence of executed branches into the
 * Intel PT packet stream (through libipt's encoder) or the BTS records that
 * hardware would have written.  Used by the QEMU backend and by the
 * synthetic-fixture generator in tests/.
 */
#ifndef BT_ENCODE_H
#define BT_ENCODE_H

#include <stddef.h>
#include <stdint.h>

enum bt_branch_kind {
	BT_BR_NONE = 0,       /* block ended without a branch: @to is the fall-through */
	BT_BR_COND,           /* jcc/loop/jrcxz: @taken says which way */
	BT_BR_JMP,            /* direct jmp */
	BT_BR_CALL,           /* direct call */
	BT_BR_JMP_IND,        /* indirect jmp */
	BT_BR_CALL_IND,       /* indirect call */
	BT_BR_RET,            /* near ret */
	BT_BR_FAR,            /* syscall/sysenter/int/iret: leaves user space and
			       * comes back at @to (PT: TIP.PGD, TIP.PGE) */
	BT_BR_ASYNC,          /* asynchronous transfer (signal delivery, sigreturn):
			       * the instruction at @from did not complete;
			       * PT: FUP(@from) TIP.PGD, then TIP.PGE(@to) */
};

/*
 * One executed control transfer.  @from is the address of the branch
 * instruction (for BT_BR_ASYNC the address of the interrupted instruction),
 * @len its length in bytes, @to the next instruction executed.
 */
struct bt_branch {
	uint64_t from;
	uint64_t to;
	uint8_t kind;         /* enum bt_branch_kind */
	uint8_t taken;        /* BT_BR_COND: 1 if taken */
	uint8_t len;
	uint8_t reserved[5];
};

struct bt_pt_enc_opts {
	int retcomp;             /* compress returns (RET as a TNT bit) */
	int tnt64;               /* use TNT-64 packets instead of TNT-8 */
	uint32_t psb_period;     /* bytes between PSB+ (0: 4096) */
	uint64_t ring_size;      /* keep only the newest @ring_size bytes, as a
				  * hardware ring would (0: keep everything) */
};

struct bt_pt_enc;

int bt_pt_enc_new(const struct bt_pt_enc_opts *opts, struct bt_pt_enc **out);
void bt_pt_enc_free(struct bt_pt_enc *enc);
/* Tracing starts (or resumes after a gap) at @ip. */
int bt_pt_enc_begin(struct bt_pt_enc *enc, uint64_t ip);
int bt_pt_enc_branch(struct bt_pt_enc *enc, const struct bt_branch *br);
/* The time stamp counter reads @tsc here (a TSC packet, after the
 * branches so far: their TNT bits are flushed before it).  Before the
 * first PSB it goes into that PSB+; every later PSB+ carries the latest
 * value too. */
int bt_pt_enc_tsc(struct bt_pt_enc *enc, uint64_t tsc);
/* Trace was lost; execution continues at @ip (OVF + FUP). */
int bt_pt_enc_overflow(struct bt_pt_enc *enc, uint64_t ip);
/* Tracing ends before @ip executes (a fault at @ip, or a stop): FUP + TIP.PGD. */
int bt_pt_enc_end(struct bt_pt_enc *enc, uint64_t ip);
/*
 * The stream: with a ring, the ring's bytes linearised oldest first and
 * *@wrapped set if bytes were overwritten; otherwise everything.  Valid until
 * the next call on @enc.
 */
const uint8_t *bt_pt_enc_data(struct bt_pt_enc *enc, uint64_t *size,
			      int *wrapped);

/* BTS: 24-byte {from, to, flags} records, flags 0x10 = predicted. */
struct bt_bts_enc;
int bt_bts_enc_new(uint64_t ring_size, struct bt_bts_enc **out);
void bt_bts_enc_free(struct bt_bts_enc *enc);
/* Records taken branches only (not-taken conditionals and BT_BR_NONE are
 * not branches for BTS). */
int bt_bts_enc_branch(struct bt_bts_enc *enc, const struct bt_branch *br);
const uint8_t *bt_bts_enc_data(struct bt_bts_enc *enc, uint64_t *size,
			       int *wrapped);

#endif /* BT_ENCODE_H */
