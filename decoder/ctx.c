/* SPDX-License-Identifier: MIT */
/*
 * Services of the decode context every layer uses: strings owned by the
 * context, image notes, huge pages for large arrays, the u64 -> u32 map.  Calls nothing else
 * in the decoder.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "decode-internal.h"
#include "util.h"

void bt_hugepages(void *p, size_t len)
{
	/* Large result arrays: huge pages cut the page-fault cost, which is
	 * most of the time of a whole-buffer decode. */
	uintptr_t a = ((uintptr_t)p + (2u << 20) - 1) & ~(uintptr_t)((2u << 20) - 1);
	uintptr_t e = ((uintptr_t)p + len) & ~(uintptr_t)((2u << 20) - 1);

	if (len >= (8u << 20) && e > a)
		madvise((void *)a, e - a, MADV_HUGEPAGE);
}

const char *bt_ctx_strdup(struct bt_ctx *c, const char *s)
{
	char *d;

	if (!s)
		return NULL;
	if (bt_grow((void **)&c->strs, &c->cstrs, c->nstrs + 1, sizeof(*c->strs)))
		return NULL;
	d = strdup(s);
	if (d)
		c->strs[c->nstrs++] = d;
	return d;
}

const char *bt_ctx_printf(struct bt_ctx *c, const char *fmt, ...)
{
	char buf[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	return bt_ctx_strdup(c, buf);
}

int bt_ctx_note(struct bt_ctx *c, const char *fmt, ...)
{
	char buf[1024], *d;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < c->nnotes; i++)
		if (!strcmp(c->notes[i], buf))
			return 0;
	if (bt_grow((void **)&c->notes, &c->cnotes, c->nnotes + 1,
		    sizeof(*c->notes)))
		return -ENOMEM;
	d = strdup(buf);
	if (!d)
		return -ENOMEM;
	c->notes[c->nnotes++] = d;
	return 0;
}

/* --- u64 -> u32 map (open addressing) --- */

static size_t hash64(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	k ^= k >> 33;
	return (size_t)k;
}

uint32_t bt_map_get(const struct bt_map *m, uint64_t key)
{
	if (!m->cap)
		return UINT32_MAX;
	size_t mask = m->cap - 1;
	for (size_t i = hash64(key) & mask;; i = (i + 1) & mask) {
		if (m->vals[i] == UINT32_MAX)
			return UINT32_MAX;
		if (m->keys[i] == key)
			return m->vals[i];
	}
}

int bt_map_put(struct bt_map *m, uint64_t key, uint32_t val)
{
	if ((m->n + 1) * 2 > m->cap) {
		size_t ncap = m->cap ? m->cap * 2 : 1024;
		uint64_t *nk = malloc(ncap * sizeof(*nk));
		uint32_t *nv = malloc(ncap * sizeof(*nv));
		if (!nk || !nv) {
			free(nk);
			free(nv);
			return -ENOMEM;
		}
		memset(nv, 0xff, ncap * sizeof(*nv));
		for (size_t i = 0; i < m->cap; i++) {
			if (m->vals[i] == UINT32_MAX)
				continue;
			size_t j = hash64(m->keys[i]) & (ncap - 1);
			while (nv[j] != UINT32_MAX)
				j = (j + 1) & (ncap - 1);
			nk[j] = m->keys[i];
			nv[j] = m->vals[i];
		}
		free(m->keys);
		free(m->vals);
		m->keys = nk;
		m->vals = nv;
		m->cap = ncap;
	}
	size_t mask = m->cap - 1;
	for (size_t i = hash64(key) & mask;; i = (i + 1) & mask) {
		if (m->vals[i] == UINT32_MAX) {
			m->keys[i] = key;
			m->vals[i] = val;
			m->n++;
			return 0;
		}
		if (m->keys[i] == key) {
			m->vals[i] = val;
			return 0;
		}
	}
}

void bt_map_free(struct bt_map *m)
{
	free(m->keys);
	free(m->vals);
	memset(m, 0, sizeof(*m));
}

uint64_t bt_time_ns(const struct bt_time_conv *cv, uint64_t tsc)
{
	/* perf_event_mmap_page's rule, without overflow: quot and rem */
	uint64_t quot = tsc >> cv->shift;
	uint64_t rem = tsc & (((uint64_t)1 << cv->shift) - 1);

	return cv->zero + quot * cv->mult + ((rem * cv->mult) >> cv->shift);
}
