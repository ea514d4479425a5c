/* SPDX-License-Identifier: MIT */
/* Lines of /proc/PID/maps (procmaps.h). */
#include <string.h>

#include "procmaps.h"

struct cur {
	const char *p, *end;
};

static int hexval(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int blank(char c)
{
	return c == ' ' || c == '\t';
}

static void skip_blanks(struct cur *c)
{
	while (c->p < c->end && blank(*c->p))
		c->p++;
}

/* A number of base 16 or 10 (at least one digit); 0 or -1. */
static int number(struct cur *c, unsigned base, uint64_t *out)
{
	uint64_t v = 0;
	const char *start = c->p;

	for (; c->p < c->end; c->p++) {
		int d = base == 16 ? hexval(*c->p) :
			(*c->p >= '0' && *c->p <= '9' ? *c->p - '0' : -1);

		if (d < 0)
			break;
		v = v * base + (unsigned)d;
	}
	*out = v;
	return c->p > start ? 0 : -1;
}

static int expect(struct cur *c, char ch)
{
	if (c->p >= c->end || *c->p != ch)
		return -1;
	c->p++;
	return 0;
}

int bt_maps_parse(const char *line, size_t len, struct bt_maps_line *m)
{
	struct cur c = { line, line + len };
	uint64_t v;
	size_t n = 0;

	memset(m, 0, sizeof(*m));
	m->path = "";
	skip_blanks(&c);
	if (number(&c, 16, &m->start) < 0)
		return 0;
	if (expect(&c, '-') < 0 || number(&c, 16, &m->end) < 0)
		return 1;
	skip_blanks(&c);
	while (c.p < c.end && !blank(*c.p) && n < sizeof(m->perms) - 1)
		m->perms[n++] = *c.p++;
	if (!n)
		return 2;
	skip_blanks(&c);
	if (number(&c, 16, &m->pgoff) < 0)
		return 3;
	skip_blanks(&c);
	if (number(&c, 16, &v) < 0 || v > 0xffffffffu)
		return 4;
	m->maj = (unsigned)v;
	if (expect(&c, ':') < 0 || number(&c, 16, &v) < 0 || v > 0xffffffffu)
		return 5;
	m->min = (unsigned)v;
	skip_blanks(&c);
	if (number(&c, 10, &m->ino) < 0)
		return 6;
	skip_blanks(&c);
	m->path = c.p;
	m->path_len = (size_t)(c.end - c.p);
	return BT_MAPS_ALL;
}

const char *bt_maps_next(const char **cursor, size_t *len)
{
	const char *l = *cursor, *nl;

	if (!l || !*l)
		return NULL;
	nl = strchr(l, '\n');
	*len = nl ? (size_t)(nl - l) : strlen(l);
	*cursor = nl ? nl + 1 : l + *len;
	return l;
}
