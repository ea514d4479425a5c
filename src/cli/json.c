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

static void put_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"': fputs("\\\"", f); break;
		case '\\': fputs("\\\\", f); break;
		case '\n': fputs("\\n", f); break;
		case '\r': fputs("\\r", f); break;
		case '\t': fputs("\\t", f); break;
		default:
			if (*p < 0x20 || *p == 0x7f)
				fprintf(f, "\\u%04x", *p);
			else
				fputc(*p, f);
		}
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
