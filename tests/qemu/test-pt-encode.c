// SPDX-License-Identifier: MIT
/*
 * Encoder round trip: run a small hand-assembled x86-64 program in a
 * simulated walk (random branch decisions, recursion deeper than the return
 * stack, mismatched returns, syscalls, signal-like asynchronous transfers),
 * encode the walk with the software PT encoder, decode the stream back with
 * libipt's block decoder over an image of the same bytes, and compare the
 * executed instruction sequence exactly.  BTS records are checked against
 * the taken branches of the same walk.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <intel-pt.h>

#include "bt-test.h"
#include "encode.h"

#define BT_ARRAY_SIZE_(a) (sizeof(a) / sizeof((a)[0]))

/* ---- the code image ---- */

#define BASE 0x401000ull        /* main, f1, f2, f3, handler */
#define FAR_BASE 0x7f1234560000ull   /* f4, far away: sext_48 IPs */

enum ik { I_PLAIN, I_COND, I_JMP, I_CALL, I_JMPI, I_CALLI, I_RET, I_SYS };

struct insn {
	uint64_t addr;
	uint8_t len;
	uint8_t kind;
	uint64_t target;     /* direct branches */
	uint8_t bytes[8];    /* rel32 filled in by build_image() */
};

#define M(off) (BASE + (off))
static struct insn prog[] = {
	/* main */
	{ M(0x00), 2, I_PLAIN, 0, { 0x31, 0xc0 } },          /* xor eax,eax */
	{ M(0x02), 5, I_CALL, M(0x100), { 0xe8 } },          /* call f1 */
	{ M(0x07), 2, I_PLAIN, 0, { 0x85, 0xc0 } },          /* test eax,eax */
	{ M(0x09), 2, I_COND, M(0x12), { 0x74, 0x07 } },     /* je 0x12 */
	{ M(0x0b), 2, I_CALLI, 0, { 0xff, 0xd3 } },          /* call *rbx */
	{ M(0x0d), 1, I_PLAIN, 0, { 0x90 } },                /* nop */
	{ M(0x0e), 2, I_SYS, 0, { 0x0f, 0x05 } },            /* syscall */
	{ M(0x10), 2, I_JMP, M(0x00), { 0xeb, 0xee } },      /* jmp main */
	{ M(0x12), 2, I_JMPI, 0, { 0xff, 0xe1 } },           /* jmp *rcx */
	{ M(0x14), 5, I_CALL, M(0x19), { 0xe8 } },           /* call next */
	{ M(0x19), 1, I_PLAIN, 0, { 0x58 } },                /* pop rax */
	{ M(0x1a), 2, I_JMP, M(0x00), { 0xeb, 0xe4 } },      /* jmp main */
	{ M(0x20), 3, I_PLAIN, 0, { 0x48, 0x89, 0xc2 } },    /* mov rdx,rax */
	{ M(0x23), 3, I_PLAIN, 0, { 0x83, 0xc0, 0x01 } },    /* add eax,1 */
	{ M(0x26), 5, I_JMP, M(0x00), { 0xe9 } },            /* jmp main */
	{ M(0x30), 5, I_CALL, M(0x35), { 0xe8 } },           /* call next */
	{ M(0x35), 1, I_RET, 0, { 0xc3 } },                  /* ret (to itself) */
	/* f1 */
	{ M(0x100), 3, I_PLAIN, 0, { 0x83, 0xc0, 0x01 } },   /* add eax,1 */
	{ M(0x103), 2, I_COND, M(0x106), { 0x75, 0x01 } },   /* jne +1 */
	{ M(0x105), 1, I_PLAIN, 0, { 0x90 } },
	{ M(0x106), 1, I_RET, 0, { 0xc3 } },
	/* f2 */
	{ M(0x200), 3, I_PLAIN, 0, { 0x48, 0x89, 0xc2 } },
	{ M(0x203), 5, I_CALL, M(0x100), { 0xe8 } },         /* call f1 */
	{ M(0x208), 1, I_RET, 0, { 0xc3 } },
	/* f3: recursion */
	{ M(0x300), 2, I_PLAIN, 0, { 0x85, 0xc0 } },
	{ M(0x302), 2, I_COND, M(0x309), { 0x74, 0x05 } },   /* je ret */
	{ M(0x304), 5, I_CALL, M(0x300), { 0xe8 } },         /* call f3 */
	{ M(0x309), 1, I_RET, 0, { 0xc3 } },
	/* signal handler, returns with a syscall (sigreturn) */
	{ M(0x400), 1, I_PLAIN, 0, { 0x90 } },
	{ M(0x401), 2, I_SYS, 0, { 0x0f, 0x05 } },
	/* f4, far away */
	{ FAR_BASE + 0, 1, I_PLAIN, 0, { 0x90 } },
	{ FAR_BASE + 1, 1, I_RET, 0, { 0xc3 } },
};

#define IMG_SIZE 0x500
static uint8_t image[IMG_SIZE];
static uint8_t far_image[16];

static const struct insn *find_insn(uint64_t ip)
{
	for (size_t i = 0; i < BT_ARRAY_SIZE_(prog); i++)
		if (prog[i].addr == ip)
			return &prog[i];
	return NULL;
}

static void build_image(void)
{
	memset(image, 0xcc, sizeof(image));
	memset(far_image, 0xcc, sizeof(far_image));
	for (size_t i = 0; i < BT_ARRAY_SIZE_(prog); i++) {
		struct insn *in = &prog[i];
		uint8_t *dst;

		if (in->bytes[0] == 0xe8 || in->bytes[0] == 0xe9) {
			int32_t rel = (int32_t)(in->target - (in->addr + in->len));

			memcpy(&in->bytes[1], &rel, 4);
		}
		dst = in->addr >= FAR_BASE ? far_image + (in->addr - FAR_BASE) :
					     image + (in->addr - BASE);
		memcpy(dst, in->bytes, in->len);
	}
}

/* ---- the walk ---- */

struct walk {
	uint64_t *truth;        /* executed instructions */
	size_t ntruth;
	struct bt_branch *br;   /* control transfers, in order */
	size_t *br_at;          /* truth index of br[i].to */
	size_t nbr;
	uint64_t end_ip;        /* next instruction, not executed */
	uint64_t *async_at;     /* interrupted instructions */
	size_t nasync;
};

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33) % n;
}

static void add_branch(struct walk *w, uint8_t kind, const struct insn *in,
		       uint64_t from, uint64_t to, int taken)
{
	struct bt_branch *b = &w->br[w->nbr];

	memset(b, 0, sizeof(*b));
	b->kind = kind;
	b->from = from;
	b->to = to;
	b->taken = (uint8_t)taken;
	b->len = in ? in->len : 0;
	w->br_at[w->nbr] = w->ntruth;
	w->nbr++;
}

/* Walk @n instructions from main; deterministic for a seed. */
static void walk_run(struct walk *w, size_t n, uint64_t seed)
{
	uint64_t stack[4096];
	size_t sp = 0, depth = 0, target_depth = 0;
	uint64_t ip = M(0x00), saved_ip = 0;
	int in_handler = 0;

	memset(w, 0, sizeof(*w));
	rng_state = seed;
	w->truth = calloc(n, sizeof(*w->truth));
	w->br = calloc(2 * n, sizeof(*w->br));
	w->br_at = calloc(2 * n, sizeof(*w->br_at));
	w->async_at = calloc(n, sizeof(*w->async_at));

	while (w->ntruth < n) {
		const struct insn *in = find_insn(ip);
		uint64_t next = ip + in->len;

		if (!in_handler && rnd(211) == 0) {
			/* A signal arrives before @ip executes. */
			add_branch(w, BT_BR_ASYNC, NULL, ip, M(0x400), 0);
			w->async_at[w->nasync++] = ip;
			saved_ip = ip;
			in_handler = 1;
			ip = M(0x400);
			continue;
		}
		w->truth[w->ntruth++] = ip;
		switch (in->kind) {
		case I_PLAIN:
			if (rnd(17) == 0)   /* a block ending without a branch */
				add_branch(w, BT_BR_NONE, in, ip, next, 0);
			ip = next;
			break;
		case I_COND: {
			int taken;

			if (ip == M(0x302))
				taken = depth >= target_depth;
			else
				taken = rnd(3) != 0;
			ip = taken ? in->target : next;
			add_branch(w, BT_BR_COND, in, in->addr, ip, taken);
			break;
		}
		case I_JMP:
			ip = in->target;
			add_branch(w, BT_BR_JMP, in, in->addr, ip, 1);
			break;
		case I_CALL:
		case I_CALLI: {
			static const uint64_t callees[] = {
				M(0x200), M(0x300), FAR_BASE, M(0x200),
			};

			ip = in->kind == I_CALL ? in->target : callees[rnd(4)];
			if (ip == M(0x300) && in->addr != M(0x304)) {
				depth = 0;
				target_depth = rnd(4) ? rnd(8) : 60 + rnd(40);
			}
			if (ip == M(0x300) && in->addr == M(0x304))
				depth++;
			if (sp < BT_ARRAY_SIZE_(stack))
				stack[sp++] = next;
			add_branch(w, in->kind == I_CALL ? BT_BR_CALL :
				   BT_BR_CALL_IND, in, in->addr, ip, 1);
			break;
		}
		case I_JMPI: {
			static const uint64_t targets[] = {
				M(0x00), M(0x14), M(0x20), M(0x30),
			};

			ip = targets[rnd(4)];
			add_branch(w, BT_BR_JMP_IND, in, in->addr, ip, 1);
			break;
		}
		case I_RET:
			if (sp >= 2 && rnd(40) == 0)
				sp--;   /* longjmp-like: skip a frame */
			ip = sp ? stack[--sp] : M(0x00);
			if (depth)
				depth--;
			add_branch(w, BT_BR_RET, in, in->addr, ip, 1);
			break;
		case I_SYS:
			if (in_handler && in->addr == M(0x401)) {
				ip = saved_ip;
				in_handler = 0;
			} else {
				ip = next;
			}
			add_branch(w, BT_BR_FAR, in, in->addr, ip, 1);
			break;
		}
	}
	w->end_ip = ip;
}

static void walk_free(struct walk *w)
{
	free(w->truth);
	free(w->br);
	free(w->br_at);
	free(w->async_at);
}

/* ---- encode ---- */

/* The time given before the first branch; @tsc_every > 0: TSC_BASE + k
 * after the k-th multiple of @tsc_every branches too (encode_walk). */
#define TSC_BASE 1000000u

static int encode_walk(const struct walk *w, const struct bt_pt_enc_opts *o,
		       size_t drop_from, size_t drop_to, unsigned tsc_every,
		       struct bt_pt_enc **out)
{
	struct bt_pt_enc *e;
	int rc;

	rc = bt_pt_enc_new(o, &e);
	if (rc)
		return rc;
	rc = tsc_every ? bt_pt_enc_tsc(e, TSC_BASE) : 0;
	if (!rc)
		rc = bt_pt_enc_begin(e, M(0x00));
	for (size_t i = 0; !rc && i < w->nbr; i++) {
		if (i >= drop_from && i < drop_to) {
			if (i + 1 == drop_to)
				rc = bt_pt_enc_overflow(e, w->br[i].to);
			continue;
		}
		rc = bt_pt_enc_branch(e, &w->br[i]);
		if (!rc && tsc_every && (i + 1) % tsc_every == 0)
			rc = bt_pt_enc_tsc(e, TSC_BASE + (i + 1) / tsc_every);
	}
	if (!rc)
		rc = bt_pt_enc_end(e, w->end_ip);
	if (rc) {
		bt_pt_enc_free(e);
		return rc;
	}
	*out = e;
	return 0;
}

/* ---- decode ---- */

struct decoded {
	uint64_t *ip;
	size_t n, cap;
	uint64_t *async_at;
	size_t nasync, async_cap;
	uint64_t ovf_ip;
	size_t ovf_at;          /* instructions decoded before the overflow */
	int novf;
	int error;              /* a decode error other than end of stream */
	size_t nsync;
	uint64_t *tsc;          /* pt_blk_time() after each block */
	size_t ntsc, tsc_cap;
};

static void push_u64(uint64_t **a, size_t *n, size_t *cap, uint64_t v)
{
	if (*n == *cap) {
		*cap = *cap ? *cap * 2 : 1024;
		*a = realloc(*a, *cap * sizeof(**a));
	}
	(*a)[(*n)++] = v;
}

static char img_path[] = "/tmp/bt-test-img-XXXXXX";

static int write_image_file(void)
{
	int fd = mkstemp(img_path);

	if (fd < 0)
		return -errno;
	if (write(fd, image, sizeof(image)) != (ssize_t)sizeof(image) ||
	    write(fd, far_image, sizeof(far_image)) !=
		    (ssize_t)sizeof(far_image)) {
		close(fd);
		return -EIO;
	}
	close(fd);
	return 0;
}

static int expand_block(struct decoded *d, const struct pt_block *b)
{
	uint64_t ip = b->ip;

	for (unsigned int i = 0; i < b->ninsn; i++) {
		const struct insn *in = find_insn(ip);

		if (!in) {
			bt_test_diag("block ip 0x%" PRIx64 " ninsn %u: no insn at 0x%" PRIx64 " (decoded %zu)",
				     b->ip, b->ninsn, ip, d->n);
			return -1;
		}
		push_u64(&d->ip, &d->n, &d->cap, ip);
		if (i + 1 == b->ninsn)
			break;
		/* Blocks go on through direct jumps and calls. */
		if (in->kind == I_JMP || in->kind == I_CALL)
			ip = in->target;
		else
			ip += in->len;
	}
	if (b->ninsn && ip != b->end_ip) {
		bt_test_diag("block ip 0x%" PRIx64 " ninsn %u end 0x%" PRIx64 " != 0x%" PRIx64 " (decoded %zu)",
			     b->ip, b->ninsn, b->end_ip, ip, d->n);
		return -1;
	}
	return 0;
}

/*
 * Decode @buf with the block decoder; @sync_off < 0: sync forward from the
 * start (and resync after errors), else sync at that PSB offset.
 */
static void decode(const uint8_t *buf, size_t size, long sync_off,
		   struct decoded *d)
{
	struct pt_config cfg;
	struct pt_block_decoder *dec;
	int status;

	memset(d, 0, sizeof(*d));
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)buf;
	cfg.end = (uint8_t *)buf + size;
	dec = pt_blk_alloc_decoder(&cfg);
	if (!dec) {
		d->error = -1;
		return;
	}
	pt_image_add_file(pt_blk_get_image(dec), img_path, 0, IMG_SIZE, NULL,
			  BASE);
	pt_image_add_file(pt_blk_get_image(dec), img_path, IMG_SIZE,
			  sizeof(far_image), NULL, FAR_BASE);

	for (;;) {
		if (sync_off >= 0)
			status = d->nsync ? -pte_eos :
					    pt_blk_sync_set(dec, (uint64_t)sync_off);
		else
			status = pt_blk_sync_forward(dec);
		if (status < 0) {
			if (status != -pte_eos)
				d->error = status;
			break;
		}
		d->nsync++;
		for (;;) {
			struct pt_block blk;

			while (status & pts_event_pending) {
				struct pt_event ev;

				status = pt_blk_event(dec, &ev, sizeof(ev));
				if (status < 0)
					break;
				if (ev.type == ptev_async_disabled)
					push_u64(&d->async_at, &d->nasync,
						 &d->async_cap,
						 ev.variant.async_disabled.at);
				if (ev.type == ptev_overflow) {
					d->novf++;
					d->ovf_ip = ev.variant.overflow.ip;
					d->ovf_at = d->n;
				}
			}
			if (status < 0 || (status & pts_eos))
				break;
			memset(&blk, 0, sizeof(blk));
			status = pt_blk_next(dec, &blk, sizeof(blk));
			if (expand_block(d, &blk) < 0)
				d->error = -1000;
			if (blk.ninsn) {
				uint64_t tsc = 0;
				uint32_t lm, lc;

				pt_blk_time(dec, &tsc, &lm, &lc);
				push_u64(&d->tsc, &d->ntsc, &d->tsc_cap, tsc);
			}
			if (status < 0)
				break;
		}
		if (status < 0 && status != -pte_eos) {
			d->error = status;
			break;
		}
		if (sync_off >= 0 || status == -pte_eos || (status & pts_eos))
			break;
	}
	pt_blk_free_decoder(dec);
}

static void decoded_free(struct decoded *d)
{
	free(d->ip);
	free(d->async_at);
	free(d->tsc);
}

static int is_suffix(const uint64_t *s, size_t ns, const uint64_t *t,
		     size_t nt)
{
	return ns <= nt && !memcmp(s, t + (nt - ns), ns * sizeof(*s));
}

/* The offsets of every PSB in @data (libipt's packet decoder): *@out, a
 * malloc'd array; returns how many, -1 on failure. */
static int psb_offsets(const uint8_t *data, uint64_t size, uint64_t **out)
{
	struct pt_config cfg;
	struct pt_packet_decoder *pkt;
	size_t n = 0, cap = 0;
	uint64_t off;

	*out = NULL;
	pt_config_init(&cfg);
	cfg.begin = (uint8_t *)data;
	cfg.end = (uint8_t *)data + size;
	pkt = pt_pkt_alloc_decoder(&cfg);
	if (!pkt)
		return -1;
	while (pt_pkt_sync_forward(pkt) >= 0 &&
	       pt_pkt_get_sync_offset(pkt, &off) >= 0)
		push_u64(out, &n, &cap, off);
	pt_pkt_free_decoder(pkt);
	return (int)n;
}

/* ---- tests ---- */

static void roundtrip(struct bt_test *t, int retcomp, int tnt64,
		      uint32_t psb, uint64_t seed, size_t n)
{
	struct bt_pt_enc_opts o = { .retcomp = retcomp, .tnt64 = tnt64,
				    .psb_period = psb };
	struct bt_pt_enc *e = NULL;
	struct decoded d;
	struct walk w;
	const uint8_t *data;
	uint64_t size;
	int wrapped = -1;

	walk_run(&w, n, seed);
	BT_REQUIRE(t, encode_walk(&w, &o, SIZE_MAX, SIZE_MAX, 0, &e) == 0);
	data = bt_pt_enc_data(e, &size, &wrapped);
	BT_EQ_INT(t, 0, wrapped);
	BT_CHECK(t, size > 0);
	decode(data, size, -1, &d);
	BT_EQ_INT(t, 0, d.error);
	BT_EQ_INT(t, 1, d.nsync);
	BT_EQ_U64(t, w.ntruth, d.n);
	BT_CHECK(t, d.n == w.ntruth &&
		 !memcmp(d.ip, w.truth, d.n * sizeof(*d.ip)));
	/* Every signal plus the final stop, each at its exact address. */
	BT_EQ_U64(t, w.nasync + 1, d.nasync);
	if (d.nasync == w.nasync + 1) {
		BT_CHECK(t, !memcmp(d.async_at, w.async_at,
				    w.nasync * sizeof(uint64_t)));
		BT_EQ_U64(t, w.end_ip, d.async_at[w.nasync]);
	}
	BT_CHECK(t, w.nasync > 0);
	decoded_free(&d);
	bt_pt_enc_free(e);
	walk_free(&w);
}

static void test_plain_tnt8(struct bt_test *t)
{
	roundtrip(t, 0, 0, 0, 1, 20000);
}

static void test_retcomp_tnt8(struct bt_test *t)
{
	roundtrip(t, 1, 0, 0, 2, 20000);
}

static void test_plain_tnt64(struct bt_test *t)
{
	roundtrip(t, 0, 1, 0, 3, 20000);
}

static void test_retcomp_tnt64(struct bt_test *t)
{
	roundtrip(t, 1, 1, 0, 4, 20000);
}

static void test_psb_small_periods(struct bt_test *t)
{
	static const uint32_t periods[] = { 16, 64, 256, 1000 };

	for (size_t i = 0; i < BT_ARRAY_SIZE_(periods); i++) {
		roundtrip(t, 1, (int)(i & 1), periods[i], 10 + i, 5000);
		roundtrip(t, 0, (int)!(i & 1), periods[i], 20 + i, 5000);
	}
}

static void test_many_seeds(struct bt_test *t)
{
	for (uint64_t s = 100; s < 120; s++)
		roundtrip(t, (int)(s & 1), (int)((s >> 1) & 1), 128, s, 3000);
}

/* Decoding may start at any PSB: each gives an exact suffix. */
static void test_sync_at_every_psb(struct bt_test *t)
{
	struct bt_pt_enc_opts o = { .retcomp = 1, .psb_period = 200 };
	struct bt_pt_enc *e;
	struct walk w;
	const uint8_t *data;
	uint64_t size, *psb;
	int npsb, good = 0;

	walk_run(&w, 8000, 77);
	BT_REQUIRE(t, encode_walk(&w, &o, SIZE_MAX, SIZE_MAX, 0, &e) == 0);
	data = bt_pt_enc_data(e, &size, NULL);
	npsb = psb_offsets(data, size, &psb);
	for (int i = 0; i < npsb; i++) {
		struct decoded d;

		decode(data, size, (long)psb[i], &d);
		if (!d.error && d.n > 0 && is_suffix(d.ip, d.n, w.truth,
						     w.ntruth))
			good++;
		else
			bt_test_diag("PSB at %" PRIu64 ": error %d, %zu insns",
				     psb[i], d.error, d.n);
		decoded_free(&d);
	}
	BT_CHECK(t, npsb > 20);
	BT_EQ_INT(t, npsb, good);
	free(psb);
	bt_pt_enc_free(e);
	walk_free(&w);
}

/*
 * TSC packets (bt_pt_enc_tsc): libipt decodes the same path, reads every
 * time given, in order, and a decode that starts at any PSB has a time at
 * once (each PSB+ carries the latest, as hardware's does).
 */
static void test_time_packets(struct bt_test *t)
{
	struct bt_pt_enc_opts o = { .retcomp = 1, .psb_period = 300 };
	struct bt_pt_enc *e;
	struct decoded d;
	struct walk w;
	const uint8_t *data;
	uint64_t size, last = 0, given, *psb;
	size_t distinct = 0, back = 0;
	int npsb, timed = 0;

	walk_run(&w, 6000, 31);
	BT_REQUIRE(t, encode_walk(&w, &o, SIZE_MAX, SIZE_MAX, 7, &e) == 0);
	data = bt_pt_enc_data(e, &size, NULL);
	decode(data, size, -1, &d);
	BT_EQ_INT(t, 0, d.error);
	BT_CHECK(t, d.n == w.ntruth &&
		 !memcmp(d.ip, w.truth, d.n * sizeof(*d.ip)));
	for (size_t i = 0; i < d.ntsc; i++) {
		if (d.tsc[i] < last)
			back++;
		if (d.tsc[i] != last)
			distinct++;
		last = d.tsc[i];
	}
	given = 1 + w.nbr / 7;
	BT_EQ_U64(t, 0, back);
	BT_EQ_U64(t, TSC_BASE, d.ntsc ? d.tsc[0] : 0);   /* from the PSB+ */
	BT_EQ_U64(t, given, distinct);
	BT_EQ_U64(t, TSC_BASE + given - 1, last);
	decoded_free(&d);
	/* every PSB: a time before the first block's branch is read */
	npsb = psb_offsets(data, size, &psb);
	for (int i = 0; i < npsb; i++) {
		decode(data, size, (long)psb[i], &d);
		if (!d.error && d.ntsc && d.tsc[0] >= TSC_BASE)
			timed++;
		decoded_free(&d);
	}
	BT_CHECK(t, npsb > 20);
	BT_EQ_INT(t, npsb, timed);
	free(psb);
	bt_pt_enc_free(e);
	walk_free(&w);
}

/* A small ring keeps the newest bytes; the tail decodes exactly. */
static void test_ring_wrap(struct bt_test *t)
{
	static const uint64_t rings[] = { 512, 2048, 4099 };

	for (size_t i = 0; i < BT_ARRAY_SIZE_(rings); i++) {
		struct bt_pt_enc_opts o = { .retcomp = 1, .tnt64 = (int)(i & 1),
					    .psb_period = 256,
					    .ring_size = rings[i] };
		struct bt_pt_enc *e;
		struct decoded d;
		struct walk w;
		const uint8_t *data;
		uint64_t size;
		int wrapped = 0;

		walk_run(&w, 30000, 300 + i);
		BT_REQUIRE(t, encode_walk(&w, &o, SIZE_MAX, SIZE_MAX, 0, &e) == 0);
		data = bt_pt_enc_data(e, &size, &wrapped);
		BT_EQ_INT(t, 1, wrapped);
		BT_EQ_U64(t, rings[i], size);
		decode(data, size, -1, &d);
		BT_EQ_INT(t, 0, d.error);
		BT_CHECK(t, d.n > 100 && d.n < w.ntruth);
		BT_CHECK(t, is_suffix(d.ip, d.n, w.truth, w.ntruth));
		BT_CHECK(t, d.nasync >= 1 &&
			 d.async_at[d.nasync - 1] == w.end_ip);
		decoded_free(&d);
		bt_pt_enc_free(e);
		walk_free(&w);
	}
}

/* Lost trace: OVF + FUP, the decoder resumes exactly there. */
static void test_overflow(struct bt_test *t)
{
	for (int v = 0; v < 4; v++) {
		struct bt_pt_enc_opts o = { .retcomp = v & 1, .tnt64 = v >> 1 };
		struct bt_pt_enc *e;
		struct decoded d;
		struct walk w;
		const uint8_t *data;
		uint64_t size;
		size_t j1, j2, t1, t2, lastuse = 0;

		walk_run(&w, 6000, 500 + v);
		j1 = w.nbr / 3;
		j2 = j1 + 40;
		t1 = w.br_at[j1 - 1];
		t2 = w.br_at[j2 - 1];
		for (size_t i = 0; i < j1; i++)
			if (w.br[i].kind != BT_BR_NONE &&
			    w.br[i].kind != BT_BR_JMP &&
			    w.br[i].kind != BT_BR_CALL)
				lastuse = w.br_at[i];
		BT_REQUIRE(t, encode_walk(&w, &o, j1, j2, 0, &e) == 0);
		data = bt_pt_enc_data(e, &size, NULL);
		decode(data, size, -1, &d);
		BT_EQ_INT(t, 0, d.error);
		BT_EQ_INT(t, 1, d.novf);
		BT_EQ_U64(t, w.truth[t2], d.ovf_ip);
		/* Before: a prefix of the truth, cut somewhere after the
		 * last branch that used trace. */
		BT_CHECK(t, d.ovf_at >= lastuse && d.ovf_at <= t1);
		BT_CHECK(t, d.ovf_at <= d.n &&
			 !memcmp(d.ip, w.truth, d.ovf_at * sizeof(uint64_t)));
		/* After: exactly the truth from the resume point. */
		BT_EQ_U64(t, w.ntruth - t2, d.n - d.ovf_at);
		BT_CHECK(t, d.n - d.ovf_at == w.ntruth - t2 &&
			 !memcmp(d.ip + d.ovf_at, w.truth + t2,
				 (w.ntruth - t2) * sizeof(uint64_t)));
		decoded_free(&d);
		bt_pt_enc_free(e);
		walk_free(&w);
	}
}

/* Tracing paused and resumed with begin(): the gap is skipped. */
static void test_begin_after_end(struct bt_test *t)
{
	struct bt_pt_enc *e;
	struct bt_branch b = { .from = M(0x02), .to = M(0x100), .kind = BT_BR_CALL,
			       .len = 5 };
	struct decoded d;
	const uint8_t *data;
	uint64_t size;
	static const uint64_t expect[] = { M(0x00), M(0x02), M(0x100),
					   M(0x200) };

	BT_REQUIRE(t, bt_pt_enc_new(NULL, &e) == 0);
	BT_EQ_INT(t, 0, bt_pt_enc_begin(e, M(0x00)));
	BT_EQ_INT(t, 0, bt_pt_enc_branch(e, &b));
	BT_EQ_INT(t, 0, bt_pt_enc_end(e, M(0x103)));
	BT_EQ_INT(t, 0, bt_pt_enc_begin(e, M(0x200)));
	BT_EQ_INT(t, 0, bt_pt_enc_end(e, M(0x203)));
	/* A branch while tracing is off is refused. */
	BT_EQ_INT(t, -EINVAL, bt_pt_enc_branch(e, &b));
	data = bt_pt_enc_data(e, &size, NULL);
	decode(data, size, -1, &d);
	BT_EQ_INT(t, 0, d.error);
	BT_EQ_U64(t, BT_ARRAY_SIZE_(expect), d.n);
	BT_CHECK(t, d.n == BT_ARRAY_SIZE_(expect) &&
		 !memcmp(d.ip, expect, sizeof(expect)));
	BT_EQ_U64(t, 2, d.nasync);
	decoded_free(&d);
	bt_pt_enc_free(e);
}

/* BTS: one record per taken branch; a ring keeps the newest records. */
static void test_bts(struct bt_test *t)
{
	struct bt_bts_enc *all, *ring;
	struct walk w;
	const uint8_t *a, *r;
	uint64_t na, nr;
	size_t taken = 0;
	int wa = -1, wr = -1;
	int ok = 1;

	walk_run(&w, 5000, 900);
	BT_REQUIRE(t, bt_bts_enc_new(0, &all) == 0);
	BT_REQUIRE(t, bt_bts_enc_new(24 * 100 + 7, &ring) == 0);
	for (size_t i = 0; i < w.nbr; i++) {
		bt_bts_enc_branch(all, &w.br[i]);
		bt_bts_enc_branch(ring, &w.br[i]);
	}
	a = bt_bts_enc_data(all, &na, &wa);
	r = bt_bts_enc_data(ring, &nr, &wr);
	BT_EQ_INT(t, 0, wa);
	BT_EQ_INT(t, 1, wr);
	BT_EQ_U64(t, 2400, nr);
	for (size_t i = 0, k = 0; i < w.nbr; i++) {
		const struct bt_branch *b = &w.br[i];
		uint64_t from, to, fl;

		if (b->kind == BT_BR_NONE || (b->kind == BT_BR_COND && !b->taken))
			continue;
		taken++;
		memcpy(&from, a + k * 24, 8);
		memcpy(&to, a + k * 24 + 8, 8);
		memcpy(&fl, a + k * 24 + 16, 8);
		if (k * 24 >= na || from != b->from || to != b->to || fl != 0x10)
			ok = 0;
		k++;
	}
	BT_CHECK(t, ok);
	BT_EQ_U64(t, taken * 24, na);
	/* The ring holds the newest 100 records. */
	BT_CHECK(t, na >= nr && !memcmp(r, a + (na - nr), nr));
	bt_bts_enc_free(all);
	bt_bts_enc_free(ring);
	/* A ring smaller than one record is refused. */
	BT_EQ_INT(t, -EINVAL, bt_bts_enc_new(10, &ring));
	BT_CHECK(t, ring == NULL);
	walk_free(&w);
}

static void test_setup(struct bt_test *t)
{
	build_image();
	BT_EQ_INT(t, 0, write_image_file());
	/* The assembled bytes decode to the lengths of the table. */
	for (size_t i = 0; i < BT_ARRAY_SIZE_(prog); i++)
		BT_CHECK(t, prog[i].len > 0);
	BT_EQ_INT(t, 0xe8, image[0x02]);
	BT_EQ_INT(t, 0xf9, image[0x03]);   /* call f1: 0x100 - 0x07 = 0xf9 */
}

static void test_cleanup(struct bt_test *t)
{
	BT_EQ_INT(t, 0, unlink(img_path));
}

BT_TESTS(test_setup, test_time_packets, test_plain_tnt8, test_retcomp_tnt8,
	 test_plain_tnt64, test_retcomp_tnt64, test_psb_small_periods, test_many_seeds,
	 test_sync_at_every_psb, test_ring_wrap, test_overflow,
	 test_begin_after_end, test_bts, test_cleanup)
