/* SPDX-License-Identifier: MIT */
/* Instruction classification and disassembly (capstone), cached by IP. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <capstone/capstone.h>
#include <intel-pt.h>

#include "decode-internal.h"
#include "util.h"

/* --- u64 -> u32 hash map --- */

/* --- capstone --- */

int bt_insn_init(struct bt_ctx *c)
{
	csh h;

	if (cs_open(CS_ARCH_X86, CS_MODE_64, &h) != CS_ERR_OK)
		return bt_error(c->err, -BTRACE_ERR_INTERNAL,
				"capstone: opening x86-64 failed");
	cs_option(h, CS_OPT_DETAIL, CS_OPT_ON);
	c->cs = h;
	c->cs_ok = 1;
	/* One instruction (with its detail) for every disassembly: cs_disasm
	 * would allocate and free one per call, and classify_slow runs once
	 * per distinct instruction of the trace. */
	c->csi = cs_malloc(h);
	if (!c->csi)
		return bt_error(c->err, -ENOMEM, "decode: out of memory");
	c->icache = malloc(BT_CACHE_SLOTS * sizeof(*c->icache));
	c->fcache = malloc(BT_CACHE_SLOTS * sizeof(*c->fcache));
	if (!c->icache || !c->fcache)
		return bt_error(c->err, -ENOMEM, "decode: out of memory");
	/* no code lives at the last address (all ones): an empty slot; a
	 * memset, not a loop of 4096 stores (the fuzz targets decode once per
	 * input, instrumented: the loop was a tenth of their time) */
	memset(c->icache, 0xff, BT_CACHE_SLOTS * sizeof(*c->icache));
	memset(c->fcache, 0xff, BT_CACHE_SLOTS * sizeof(*c->fcache));
	return 0;
}

void bt_insn_fini(struct bt_ctx *c)
{
	if (c->csi)
		cs_free(c->csi, 1);
	c->csi = NULL;
	if (c->cs_ok) {
		csh h = c->cs;
		cs_close(&h);
	}
	c->cs_ok = 0;
	bt_map_free(&c->insn_map);
	free(c->insns);
	c->insns = NULL;
	free(c->icache);
	free(c->fcache);
	c->icache = NULL;
	c->fcache = NULL;
}

static int is_far(unsigned id)
{
	switch (id) {
	case X86_INS_SYSCALL: case X86_INS_SYSENTER: case X86_INS_SYSEXIT:
	case X86_INS_SYSRET: case X86_INS_INT: case X86_INS_INT1:
	case X86_INS_INT3: case X86_INS_INTO: case X86_INS_IRET:
	case X86_INS_IRETD: case X86_INS_IRETQ: case X86_INS_RETF:
	case X86_INS_RETFQ: case X86_INS_LCALL: case X86_INS_LJMP:
	case X86_INS_UD2: case X86_INS_HLT:
		return 1;
	}
	return 0;
}

static void classify(const cs_insn *in, struct bt_insn_info *out)
{
	const cs_x86 *x = &in->detail->x86;
	int imm = x->op_count >= 1 && x->operands[0].type == X86_OP_IMM;

	out->size = (uint8_t)in->size;
	out->target = 0;
	out->cls = BTRACE_INSN_OTHER;
	if (in->id == X86_INS_CALL) {
		out->cls = imm ? BTRACE_INSN_CALL : BTRACE_INSN_CALL_IND;
	} else if (in->id == X86_INS_JMP) {
		out->cls = imm ? BTRACE_INSN_JMP : BTRACE_INSN_JMP_IND;
	} else if (in->id == X86_INS_RET) {
		out->cls = BTRACE_INSN_RET;
	} else if (is_far(in->id)) {
		out->cls = BTRACE_INSN_FAR;
	} else {
		for (int i = 0; i < in->detail->groups_count; i++)
			if (in->detail->groups[i] == CS_GRP_JUMP)
				out->cls = BTRACE_INSN_JCC;
	}
	if (imm && out->cls != BTRACE_INSN_OTHER && out->cls != BTRACE_INSN_FAR)
		out->target = (uint64_t)x->operands[0].imm;
}

/* --- libipt as the instruction length decoder ---
 *
 * capstone 4 does not know every encoding libipt's decoder runs through
 * (some EVEX instructions, e.g. in glibc's *_evex string functions).  For
 * those the size comes from libipt: a four-packet trace (PSB, PSBEND,
 * MODE.Exec 64-bit, TIP.PGE at @ip) makes its instruction decoder decode the
 * one instruction at @ip from the same bytes. */

struct probe {
	const uint8_t *p;
	size_t avail;
	uint64_t ip;
};

static int probe_read(uint8_t *buffer, size_t size, const struct pt_asid *asid,
		      uint64_t ip, void *context)
{
	const struct probe *pr = context;
	size_t n;

	(void)asid;
	if (ip < pr->ip || ip - pr->ip >= pr->avail)
		return -pte_nomap;
	n = pr->avail - (size_t)(ip - pr->ip);
	if (n > size)
		n = size;
	memcpy(buffer, pr->p + (ip - pr->ip), n);
	return (int)n;
}

static int probe_stream(uint8_t *buf, size_t len, uint64_t ip)
{
	struct pt_config cfg;
	struct pt_encoder *enc;
	struct pt_packet pkt;
	int ret = 0;

	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + len;
	enc = pt_alloc_encoder(&cfg);
	if (!enc)
		return -ENOMEM;
	memset(&pkt, 0, sizeof(pkt));
	pkt.type = ppt_psb;
	ret = pt_enc_next(enc, &pkt);
	if (ret >= 0) {
		pkt.type = ppt_psbend;
		ret = pt_enc_next(enc, &pkt);
	}
	if (ret >= 0) {
		pkt.type = ppt_mode;
		pkt.payload.mode.leaf = pt_mol_exec;
		pkt.payload.mode.bits.exec = pt_set_exec_mode(ptem_64bit);
		ret = pt_enc_next(enc, &pkt);
	}
	if (ret >= 0) {
		memset(&pkt, 0, sizeof(pkt));
		pkt.type = ppt_tip_pge;
		pkt.payload.ip.ipc = pt_ipc_full;
		pkt.payload.ip.ip = ip;
		ret = pt_enc_next(enc, &pkt);
	}
	uint64_t off = 0;
	if (ret >= 0)
		ret = pt_enc_get_offset(enc, &off);
	pt_free_encoder(enc);
	return ret < 0 ? ret : (int)off;
}

/* Size of the instruction at @ip per libipt, 0 unknown. */
static unsigned ipt_insn_size(const uint8_t *p, size_t avail, uint64_t ip)
{
	uint8_t buf[64];
	struct probe pr = { p, avail, ip };
	struct pt_config cfg;
	struct pt_insn_decoder *dec;
	struct pt_image *img;
	struct pt_insn insn;
	unsigned size = 0;
	int n, st;

	n = probe_stream(buf, sizeof(buf), ip);
	if (n <= 0)
		return 0;
	pt_config_init(&cfg);
	cfg.begin = buf;
	cfg.end = buf + n;
	dec = pt_insn_alloc_decoder(&cfg);
	if (!dec)
		return 0;
	img = pt_insn_get_image(dec);
	if (!img || pt_image_set_callback(img, probe_read, &pr) < 0)
		goto out;
	st = pt_insn_sync_forward(dec);
	while (st >= 0 && (st & pts_event_pending)) {
		struct pt_event ev;
		st = pt_insn_event(dec, &ev, sizeof(ev));
	}
	if (st < 0)
		goto out;
	memset(&insn, 0, sizeof(insn));
	pt_insn_next(dec, &insn, sizeof(insn));
	/* a size is all that is wanted: errors past it (end of the trace)
	 * do not matter */
	if (insn.ip == ip && insn.iclass != ptic_error && insn.size &&
	    insn.size <= avail)
		size = insn.size;
out:
	pt_insn_free_decoder(dec);
	return size;
}

static const struct bt_insn_info *classify_slow(struct bt_ctx *c, uint64_t ip);

/* Disassemble the one instruction at @p (@avail bytes, address @ip) into
 * c->csi; 1 if capstone knows it. */
static int disasm1(struct bt_ctx *c, const uint8_t *p, size_t avail,
		   uint64_t ip)
{
	const uint8_t *code = p;
	uint64_t addr = ip;

	return c->csi && cs_disasm_iter(c->cs, &code, &avail, &addr, c->csi);
}

const struct bt_insn_info *bt_insn_classify_miss(struct bt_ctx *c, uint64_t ip)
{
	struct bt_icache *e;

	/* all ones marks an empty slot: never cached (a hostile trace can
	 * name that address) */
	if (!c->icache || ip == UINT64_MAX)
		return classify_slow(c, ip);
	e = &c->icache[bt_cache_slot(ip)];
	if (e->ip != ip) {
		e->info = *classify_slow(c, ip);
		e->ip = ip;
	}
	return &e->info;
}

static const struct bt_insn_info *classify_slow(struct bt_ctx *c, uint64_t ip)
{
	static const struct bt_insn_info unknown = { BTRACE_INSN_UNKNOWN, 0, 0 };
	uint32_t v = bt_map_get(&c->insn_map, ip);
	struct bt_insn_info info;
	size_t avail;
	const uint8_t *p;

	if (v != UINT32_MAX)
		return &c->insns[v];
	p = bt_image_bytes(c, ip, &avail);
	if (!p || !c->cs_ok)
		return &unknown;
	if (avail > 16)
		avail = 16;
	if (disasm1(c, p, avail, ip)) {
		classify(c->csi, &info);
	} else {
		/* capstone cannot disassemble it: libipt gives the size; every
		 * branch is known to capstone, so it is not one */
		info.size = (uint8_t)ipt_insn_size(p, avail, ip);
		if (!info.size)
			return &unknown;
		info.cls = BTRACE_INSN_OTHER;
		info.target = 0;
	}
	if (bt_grow((void **)&c->insns, &c->cinsns, c->ninsns + 1,
		    sizeof(*c->insns)))
		return &unknown;
	c->insns[c->ninsns] = info;
	if (bt_map_put(&c->insn_map, ip, (uint32_t)c->ninsns) < 0)
		return &unknown;
	return &c->insns[c->ninsns++];
}

int bt_insn_disasm(struct bt_ctx *c, uint64_t ip, struct btrace_insn *out)
{
	size_t avail;
	const uint8_t *p = bt_image_bytes(c, ip, &avail);
	cs_insn *in;

	memset(out, 0, sizeof(*out));
	out->ip = ip;
	if (!p || !c->cs_ok)
		return -BTRACE_ERR_NOMAP;
	if (avail > 16)
		avail = 16;
	if (!disasm1(c, p, avail, ip)) {
		/* not known to capstone: "(bad)" and the bytes, the size from
		 * libipt's length decoder */
		const struct bt_insn_info *ii = bt_insn_classify(c, ip);
		int k = snprintf(out->text, sizeof(out->text), "(bad)");
		if (!ii->size)
			return -BTRACE_ERR_BAD_PACKET;
		out->size = ii->size;
		memcpy(out->bytes, p, ii->size);
		for (unsigned i = 0; i < ii->size && k + 4 < (int)sizeof(out->text); i++)
			k += snprintf(out->text + k, sizeof(out->text) - (size_t)k,
				      " %02x", p[i]);
		return 0;
	}
	in = c->csi;
	out->size = in->size;
	memcpy(out->bytes, in->bytes, in->size < 16 ? in->size : 16);
	if (in->op_str[0])
		snprintf(out->text, sizeof(out->text), "%.31s %.62s", in->mnemonic,
			 in->op_str);
	else
		snprintf(out->text, sizeof(out->text), "%.31s", in->mnemonic);
	return 0;
}

int bt_insn_walk(struct bt_ctx *c, uint64_t ip, uint64_t end_ip,
		 uint64_t *count)
{
	uint64_t n = 0;

	while (ip <= end_ip) {
		const struct bt_insn_info *ii = bt_insn_classify(c, ip);
		if (!ii->size) {
			*count = n;
			return -BTRACE_ERR_NOMAP;
		}
		n++;
		if (ip == end_ip)
			break;
		ip += ii->size;
		if (n > (1u << 20))
			break;
	}
	*count = n;
	return ip == end_ip ? 0 : -BTRACE_ERR_BAD_PACKET;
}
