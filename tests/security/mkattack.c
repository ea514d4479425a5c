/* SPDX-License-Identifier: MIT */
/*
 * bt-mkattack: a snapshot rewritten (public reader and writer only) into a
 * hostile one, for the regression tests of tests/security.
 *   bt-mkattack MODE IN OUT
 * MODE:
 *   esc         names, paths and metadata carry terminal escapes (OSC
 *               title, clear screen), CR/LF forged report lines, C1
 *               controls and bytes that are not UTF-8
 *   code-wrap   file code whose file_offset + size wraps past 2^64
 *   code-8g     file code at file offset 8 GiB
 *   bomb        a metadata value of 96 MiB that compresses to a few KiB
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/snapshot.h>

#define EVIL "\x1b]0;owned\x07\x1b[2J\x1b[H\rsignal    FORGED\nfault     FORGED \xff\xfe\xc2\x9b" "1m"

static int die(const char *what, const struct btrace_error *err)
{
	fprintf(stderr, "bt-mkattack: %s: %s\n", what, err->msg);
	return 1;
}

int main(int argc, char **argv)
{
	struct btrace_snapshot *s;
	struct btrace_writer *w;
	struct btrace_error err;
	const char *mode;
	char *big = NULL;
	int rc = 0;

	if (argc != 4) {
		fprintf(stderr, "usage: bt-mkattack MODE IN OUT\n");
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
	for (size_t i = 0; !rc && i < s->ntasks; i++) {
		struct btrace_task t = s->tasks[i];

		if (!strcmp(mode, "esc")) {
			t.comm = EVIL;
			t.exe = "/tmp/" EVIL;
		}
		rc = btrace_writer_add_task(w, &t, &err);
	}
	for (size_t i = 0; !rc && i < s->nmappings; i++) {
		struct btrace_mapping m = s->mappings[i];

		if (!strcmp(mode, "esc") && m.path && m.path[0] == '/')
			m.path = "/lib/" EVIL;
		rc = btrace_writer_add_mapping(w, &m, &err);
	}
	for (size_t i = 0; !rc && i < s->ncode; i++) {
		struct btrace_code c = s->code[i];

		if (c.kind == BTRACE_CODE_FILE && !strcmp(mode, "code-wrap"))
			c.file_offset = UINT64_MAX - c.size / 2;
		if (c.kind == BTRACE_CODE_FILE && !strcmp(mode, "code-8g"))
			c.file_offset = 8ull << 30;
		if (!strcmp(mode, "esc") && c.path)
			c.path = "/lib/" EVIL;
		rc = btrace_writer_add_code(w, &c, &err);
	}
	if (!rc && s->signal)
		rc = btrace_writer_set_signal(w, s->signal, &err);
	for (size_t i = 0; !rc && i < s->nmeta; i++)
		rc = btrace_writer_add_meta(w, s->meta[i].key,
					    !strcmp(mode, "esc") ? EVIL :
					    s->meta[i].value, &err);
	if (!rc && !strcmp(mode, "esc"))
		rc = btrace_writer_add_meta(w, "evil." EVIL, EVIL, &err);
	if (!rc && !strcmp(mode, "bomb")) {
		size_t n = 96u << 20;

		big = malloc(n + 1);
		if (!big) {
			fprintf(stderr, "bt-mkattack: out of memory\n");
			return 1;
		}
		memset(big, 'A', n);
		big[n] = 0;
		rc = btrace_writer_add_meta(w, "bomb", big, &err);
	}
	if (rc) {
		btrace_writer_free(w);
		btrace_snapshot_free(s);
		return die(argv[3], &err);
	}
	rc = btrace_writer_commit(w, &err);
	free(big);
	btrace_snapshot_free(s);
	return rc ? die(argv[3], &err) : 0;
}
