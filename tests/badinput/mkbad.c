/* SPDX-License-Identifier: MIT */
/*
 * bt-mkbad: rewrite a snapshot with embedded code (or mappings) that lie.
 *   bt-mkbad MODE IN OUT
 * MODE:
 *   code-shift    every code blob claims to be 0x1000 bytes further on
 *                 (vaddr for vDSO/anonymous code, file offset for files)
 *   code-garbage  the bytes of every blob replaced by pseudo-random bytes
 *   code-int3     the bytes replaced by int3
 *   code-short    every blob cut to its first 16 bytes
 *   code-wrap     code at the top of the address space (vaddr + size wraps)
 *   map-shift     every mapping moved by 1 MiB (the trace points nowhere)
 *   map-overlap   every mapping duplicated over the same range, other code
 *   no-code       no code at all and no mappings
 * bt-mkbad check FILE: exit 0 when the strict reader accepts FILE, else 1
 * (the bad-input tests use it to tell damage the format can see).
 * Only the public API (btrace_snapshot_read and the writer) is used.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/snapshot.h>

static uint64_t rnd = 0x9e3779b97f4a7c15ull;

static uint8_t next_byte(void)
{
	rnd ^= rnd << 13;
	rnd ^= rnd >> 7;
	rnd ^= rnd << 17;
	return (uint8_t)rnd;
}

static int die(const char *what, const struct btrace_error *err)
{
	fprintf(stderr, "bt-mkbad: %s: %s\n", what, err->msg);
	return 1;
}

int main(int argc, char **argv)
{
	struct btrace_snapshot *s;
	struct btrace_writer *w;
	struct btrace_error err;
	const char *mode;
	int rc = 0;

	if (argc == 3 && !strcmp(argv[1], "check")) {
		if (btrace_snapshot_read(argv[2], 0, &s, &err))
			return 1;
		btrace_snapshot_free(s);
		return 0;
	}
	if (argc != 4) {
		fprintf(stderr, "usage: bt-mkbad MODE IN OUT\n");
		return 2;
	}
	mode = argv[1];
	if (btrace_snapshot_read(argv[2], 0, &s, &err))
		return die(argv[2], &err);
	if (btrace_writer_open(argv[3], 0, &w, &err))
		return die(argv[3], &err);
	if (s->has_config)
		rc = btrace_writer_set_config(w, &s->config, &err);
	for (size_t i = 0; !rc && i < s->nbuffers; i++)
		rc = btrace_writer_add_buffer(w, &s->buffers[i], &err);
	for (size_t i = 0; !rc && i < s->ntasks; i++)
		rc = btrace_writer_add_task(w, &s->tasks[i], &err);
	for (size_t i = 0; !rc && i < s->nmappings && strcmp(mode, "no-code"); i++) {
		struct btrace_mapping m = s->mappings[i];

		if (!strcmp(mode, "map-shift")) {
			m.start += 1 << 20;
			m.end += 1 << 20;
		}
		rc = btrace_writer_add_mapping(w, &m, &err);
		if (!rc && !strcmp(mode, "map-overlap")) {
			m.start += 0x10;
			m.pgoff += 0x10;
			m.build_id_size = 0;
			rc = btrace_writer_add_mapping(w, &m, &err);
		}
	}
	for (size_t i = 0; !rc && i < s->ncode && strcmp(mode, "no-code"); i++) {
		struct btrace_code c = s->code[i];
		uint8_t *bytes = malloc(c.size ? c.size : 1);

		if (!bytes) {
			fprintf(stderr, "bt-mkbad: out of memory\n");
			return 1;
		}
		memcpy(bytes, c.data, c.size);
		if (!strcmp(mode, "code-shift")) {
			if (c.kind == BTRACE_CODE_FILE)
				c.file_offset += 0x1000;
			else
				c.vaddr += 0x1000;
		} else if (!strcmp(mode, "code-garbage")) {
			for (uint64_t k = 0; k < c.size; k++)
				bytes[k] = next_byte();
		} else if (!strcmp(mode, "code-int3")) {
			memset(bytes, 0xcc, c.size);
		} else if (!strcmp(mode, "code-short")) {
			c.size = c.size < 16 ? c.size : 16;
		} else if (!strcmp(mode, "code-wrap")) {
			c.kind = BTRACE_CODE_ANON;
			c.vaddr = UINT64_MAX - 15;
		}
		c.data = bytes;
		rc = btrace_writer_add_code(w, &c, &err);
		free(bytes);
	}
	if (!rc && s->signal)
		rc = btrace_writer_set_signal(w, s->signal, &err);
	for (size_t i = 0; !rc && i < s->nmeta; i++)
		rc = btrace_writer_add_meta(w, s->meta[i].key, s->meta[i].value,
					    &err);
	if (rc) {
		btrace_writer_free(w);
		btrace_snapshot_free(s);
		return die(argv[3], &err);
	}
	rc = btrace_writer_commit(w, &err);
	btrace_snapshot_free(s);
	return rc ? die(argv[3], &err) : 0;
}
