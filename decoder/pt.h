/* SPDX-License-Identifier: MIT */
/* PT helpers shared by the tail-only driver and the benchmark. */
#ifndef BT_DECODE_PT_H
#define BT_DECODE_PT_H

#include <stdint.h>

#include "decode-internal.h"

int64_t bt_pt_psb_before(const uint8_t *d, uint64_t size, uint64_t before);
int64_t bt_pt_psb_after(const uint8_t *d, uint64_t size, uint64_t from);
/* Decode from the PSB at @start to the end of the buffer. */
int bt_pt_decode_from(struct bt_ctx *c, const struct btrace_buffer *buf,
		      struct bt_thread_build *b, uint64_t start);

#endif /* BT_DECODE_PT_H */
