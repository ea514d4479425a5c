/* SPDX-License-Identifier: MIT */
/* libFuzzer target: the snapshot reader, strict and salvaging. */
#include <stddef.h>
#include <stdint.h>

#include <btrace/snapshot.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static volatile uint64_t fz_sink;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct btrace_snapshot *s;
	struct btrace_error err;

	for (unsigned flags = 0; flags <= BTRACE_READ_LENIENT; flags++) {
		if (btrace_snapshot_read_mem(data, size, flags, &s, &err))
			continue;
		/* Touch everything the reader handed out. */
		uint64_t sum = 0;
		for (size_t i = 0; i < s->nbuffers; i++)
			for (uint64_t k = 0; k < s->buffers[i].size; k += 64)
				sum += s->buffers[i].data[k];
		for (size_t i = 0; i < s->ncode; i++)
			if (s->code[i].size)
				sum += s->code[i].data[s->code[i].size - 1];
		for (size_t i = 0; i < s->nmeta; i++)
			sum += (uint64_t)btrace_snapshot_meta(s, s->meta[i].key)[0];
		fz_sink += sum;
		btrace_snapshot_free(s);
	}
	return 0;
}
