// SPDX-License-Identifier: MIT
/*
 * Packet boundaries of an Intel PT buffer, found with libipt's packet
 * decoder.  perf on 64-bit hosts does not stitch a packet split across two
 * AUXTRACE records (intel_pt_get_split_packet() runs only when
 * BITS_PER_LONG == 32), so every cut must fall between two packets.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <intel-pt.h>

#include "export-internal.h"
#include "util.h"

static int add_cut(struct bt_pt_cuts *c, size_t *cap, uint64_t off)
{
	if (c->ncuts && c->cuts[c->ncuts - 1] >= off)
		return 0;
	if (bt_grow((void **)&c->cuts, cap, c->ncuts + 1, sizeof(*c->cuts)))
		return -ENOMEM;
	c->cuts[c->ncuts++] = off;
	return 0;
}

void bt_export_pt_cuts_free(struct bt_pt_cuts *c)
{
	if (!c)
		return;
	free(c->cuts);
	memset(c, 0, sizeof(*c));
}

int bt_export_pt_cuts(const uint8_t *data, uint64_t size, uint64_t max_chunk,
		      struct bt_pt_cuts *out)
{
	struct pt_config cfg;
	struct pt_packet_decoder *dec;
	struct pt_packet pkt;
	uint64_t start, last = 0, off = 0, sync;
	size_t cap = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	if (!size)
		return -BTRACE_ERR_NOSYNC;
	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.begin = (uint8_t *)data;
	cfg.end = (uint8_t *)data + size;
	dec = pt_pkt_alloc_decoder(&cfg);
	if (!dec)
		return -ENOMEM;
	rc = pt_pkt_sync_forward(dec);
	if (rc < 0 || pt_pkt_get_sync_offset(dec, &sync) < 0) {
		pt_pkt_free_decoder(dec);
		return -BTRACE_ERR_NOSYNC;
	}
	out->first_psb = sync;
	start = last = sync;
	for (;;) {
		if (pt_pkt_get_offset(dec, &off) < 0)
			break;
		/* @off is a packet boundary: the end of the previous one */
		if (off - start > max_chunk && last > start) {
			rc = add_cut(out, &cap, last);
			if (rc)
				goto fail;
			start = last;
		}
		last = off;
		rc = pt_pkt_next(dec, &pkt, sizeof(pkt));
		if (rc == -pte_eos)
			break;
		if (rc < 0) {
			/* A bad or truncated packet: the next boundary we
			 * know is the next PSB; perf resyncs there too. */
			uint64_t before = off;

			if (pt_pkt_sync_forward(dec) < 0 ||
			    pt_pkt_get_sync_offset(dec, &sync) < 0 ||
			    sync <= before) {
				/* no PSB after it: the tail is one piece */
				out->bad_packets++;
				break;
			}
			out->bad_packets++;
			if (sync - start > max_chunk && last > start) {
				rc = add_cut(out, &cap, last);
				if (rc)
					goto fail;
				start = last;
			}
			last = sync;
		}
	}
	rc = add_cut(out, &cap, size);
	if (rc)
		goto fail;
	pt_pkt_free_decoder(dec);
	return 0;
fail:
	pt_pkt_free_decoder(dec);
	bt_export_pt_cuts_free(out);
	return rc;
}
