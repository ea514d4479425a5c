/* SPDX-License-Identifier: MIT */
/* A small JSON writer: objects, arrays, escaped strings, no allocation. */
#include "cli.h"

void json_init(struct json *j, FILE *f, bool pretty)
{
	j->f = f;
	j->depth = 0;
	j->need_comma[0] = false;
	j->pretty = pretty;
}

static void indent(struct json *j)
{
	if (!j->pretty)
		return;
	fputc('\n', j->f);
	for (int i = 0; i < j->depth; i++)
		fputs("  ", j->f);
}

/* Length of the valid UTF-8 sequence at @p (1-4), or 0 when the bytes there
 * are not one (overlong, surrogate, past U+10FFFF, cut short). */
size_t cli_utf8_len(const unsigned char *p)
{
	unsigned c = p[0], n, cp;

	if (c < 0x80)
		return 1;
	if (c >= 0xc2 && c <= 0xdf)
		n = 2, cp = c & 0x1f;
	else if (c >= 0xe0 && c <= 0xef)
		n = 3, cp = c & 0x0f;
	else if (c >= 0xf0 && c <= 0xf4)
		n = 4, cp = c & 0x07;
	else
		return 0;
	for (unsigned i = 1; i < n; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (p[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) ||
	    (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return 0;
	return n;
}

/*
 * A JSON string for any byte string: valid UTF-8 passes through; control
 * characters are escaped; a byte that is not part of valid UTF-8 is written
 * as the character of the same value (its Latin-1 reading), \u00XX, so
 * the output is always valid JSON (docs/report.md).
 */
static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		size_t n;

		switch (*p) {
		case '"': fputs("\\\"", f); p++; continue;
		case '\\': fputs("\\\\", f); p++; continue;
		case '\n': fputs("\\n", f); p++; continue;
		case '\r': fputs("\\r", f); p++; continue;
		case '\t': fputs("\\t", f); p++; continue;
		}
		if (*p < 0x20 || *p == 0x7f) {
			fprintf(f, "\\u%04x", *p++);
			continue;
		}
		n = cli_utf8_len(p);
		if (!n) {
			fprintf(f, "\\u%04x", *p++);
			continue;
		}
		fwrite(p, 1, n, f);
		p += n;
	}
	fputc('"', f);
}

static void key(struct json *j, const char *k)
{
	if (j->need_comma[j->depth])
		fputc(',', j->f);
	j->need_comma[j->depth] = true;
	if (j->depth > 0)
		indent(j);
	if (k) {
		put_string(j->f, k);
		fputs(j->pretty ? ": " : ":", j->f);
	}
}

static void open_(struct json *j, const char *k, char c)
{
	key(j, k);
	fputc(c, j->f);
	if (j->depth < 63)
		j->depth++;
	j->need_comma[j->depth] = false;
}

static void close_(struct json *j, char c)
{
	bool had = j->need_comma[j->depth];

	if (j->depth > 0)
		j->depth--;
	if (had)
		indent(j);
	fputc(c, j->f);
}

void json_begin_object(struct json *j, const char *k) { open_(j, k, '{'); }
void json_end_object(struct json *j) { close_(j, '}'); }
void json_begin_array(struct json *j, const char *k) { open_(j, k, '['); }
void json_end_array(struct json *j) { close_(j, ']'); }

void json_str(struct json *j, const char *k, const char *v)
{
	key(j, k);
	if (v)
		put_string(j->f, v);
	else
		fputs("null", j->f);
}

void json_int(struct json *j, const char *k, long long v)
{
	key(j, k);
	fprintf(j->f, "%lld", v);
}

void json_uint(struct json *j, const char *k, unsigned long long v)
{
	key(j, k);
	fprintf(j->f, "%llu", v);
}

void json_hex(struct json *j, const char *k, unsigned long long v)
{
	key(j, k);
	fprintf(j->f, "\"0x%llx\"", v);
}

void json_bool(struct json *j, const char *k, bool v)
{
	key(j, k);
	fputs(v ? "true" : "false", j->f);
}

void json_null(struct json *j, const char *k)
{
	key(j, k);
	fputs("null", j->f);
}

void json_finish(struct json *j)
{
	fputc('\n', j->f);
	fflush(j->f);
}

void json_micros(struct json *j, const char *k, uint64_t ns)
{
	key(j, k);
	fprintf(j->f, "%llu.%03u", (unsigned long long)(ns / 1000),
		(unsigned)(ns % 1000));
}
