/* SPDX-License-Identifier: MIT */
#include "sbrings.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "capture-internal.h"
#include "util.h"

int bt_sb_rings_open(struct bt_sb_rings *s, pid_t pid, bool enable_on_exec,
		     uint64_t data_pages, struct btrace_error *err)
{
	struct bt_perf_ctx ctx = { .pmu = "dummy (sideband)", .tid = pid };
	int r;

	memset(s, 0, sizeof(*s));
	s->pid = pid;
	s->data_pages = data_pages;
	s->build_id = true;
	r = bt_online_cpus(&s->cpus);
	if (r < 0)
		return bt_error(err, r, "sideband: listing online CPUs failed: %s",
				strerror(-r));
	s->ncpus = r;
	s->rings = calloc((size_t)s->ncpus, sizeof(*s->rings));
	s->scratch = malloc(65536);
	if (!s->rings || !s->scratch) {
		bt_sb_rings_close(s);
		return bt_error(err, -ENOMEM, "sideband: setup failed: out of memory");
	}
	for (int i = 0; i < s->ncpus; i++)
		bt_perf_ring_init(&s->rings[i]);
	for (int i = 0; i < s->ncpus; i++) {
		struct perf_event_attr a;
		int fd;

		ctx.cpu = s->cpus[i];
		bt_sideband_attr(&a, enable_on_exec, s->build_id);
		fd = bt_perf_sys_open(&a, pid, s->cpus[i], -1, 0);
		if (fd == -EINVAL && s->build_id) {
			/* attr.build_id is 5.12+ */
			s->build_id = false;
			bt_sideband_attr(&a, enable_on_exec, false);
			fd = bt_perf_sys_open(&a, pid, s->cpus[i], -1, 0);
		}
		if (fd < 0) {
			r = bt_perf_explain(-fd, BT_OP_OPEN, &ctx, err);
			bt_sb_rings_close(s);
			return r;
		}
		r = bt_perf_map_data(&s->rings[i], fd, data_pages, true, &ctx, err);
		if (r < 0) {
			close(fd);
			bt_sb_rings_close(s);
			return r;
		}
	}
	return 0;
}

int bt_sb_rings_add_thread(struct bt_sb_rings *s, pid_t tid,
			   struct btrace_error *err)
{
	struct bt_perf_ctx ctx = { .pmu = "dummy (sideband)", .tid = tid };

	for (int i = 0; i < s->ncpus; i++) {
		struct perf_event_attr a;
		int fd, r;

		ctx.cpu = s->cpus[i];
		bt_sideband_attr(&a, false, s->build_id);
		a.disabled = 1;
		fd = bt_perf_open(&a, tid, s->cpus[i], &ctx, err);
		if (fd < 0)
			return fd;
		r = bt_perf_set_output(fd, s->rings[i].fd, &ctx, err);
		if (r < 0 || bt_grow((void **)&s->extra_fds, &s->cextra,
				     s->nextra, sizeof(int)) < 0) {
			close(fd);
			return r < 0 ? r : bt_error(err, -ENOMEM, "sideband: out of memory");
		}
		s->extra_fds[s->nextra++] = fd;
	}
	return 0;
}

int bt_sb_rings_fd(const struct bt_sb_rings *s, int i)
{
	return s->rings[i].fd;
}

/*
 * Records of one process arrive in several per-CPU rings; a thread that
 * migrates can have its FORK in one ring and its EXIT (or an exec COMM and
 * the MMAP2 records after it) in another.  They are applied in time order
 * (sample_id TIME), ties kept in ring order.
 */
struct pending {
	uint64_t time;
	size_t seq;
	uint8_t *rec;
};

struct drain_ctx {
	struct pending *v;
	size_t n, cap;
	int failed;
};

static int collect_one(const struct bt_rec *rec, void *arg)
{
	struct drain_ctx *d = arg;
	struct bt_sb_event ev;
	struct pending *p;

	if (bt_grow((void **)&d->v, &d->cap, d->n, sizeof(*d->v)) < 0) {
		d->failed = 1;
		return 1;
	}
	p = &d->v[d->n];
	p->rec = malloc(rec->size);
	if (!p->rec) {
		d->failed = 1;
		return 1;
	}
	memcpy(p->rec, rec->data, rec->size);
	p->time = bt_sideband_parse(rec, &ev) == 0 ? ev.time : 0;
	p->seq = d->n++;
	return 0;
}

static int by_time(const void *a, const void *b)
{
	const struct pending *x = a, *y = b;

	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->seq < y->seq ? -1 : x->seq > y->seq;
}

int bt_sb_rings_drain(struct bt_sb_rings *s, struct bt_sideband *sb)
{
	struct drain_ctx d = { 0 };
	bool corrupt = false;
	int ret;

	for (int i = 0; i < s->ncpus; i++) {
		struct bt_perf_ring *r = &s->rings[i];
		uint64_t head, tail;

		if (!r->base)
			continue;
		head = bt_perf_data_head(r);
		tail = bt_ring_iterate(r->base + sysconf(_SC_PAGESIZE), r->data_size,
				       r->tail, head, s->scratch, collect_one, &d,
				       &corrupt);
		bt_perf_data_set_tail(r, tail);
		if (corrupt || d.failed)
			break;
	}
	if (d.n)
		qsort(d.v, d.n, sizeof(*d.v), by_time);
	for (size_t i = 0; i < d.n; i++) {
		struct bt_sb_event ev;
		struct bt_rec rec = {
			.type = bt_le32(d.v[i].rec),
			.misc = bt_le16(d.v[i].rec + 4),
			.size = bt_le16(d.v[i].rec + 6),
			.data = d.v[i].rec,
		};

		if (bt_sideband_parse(&rec, &ev) == 0)
			bt_sideband_apply(sb, &ev);
		free(d.v[i].rec);
	}
	free(d.v);
	ret = corrupt ? -EIO : d.failed ? -ENOMEM : (int)d.n;
	return ret;
}

void bt_sb_rings_enable(struct bt_sb_rings *s)
{
	for (int i = 0; i < s->ncpus; i++)
		if (s->rings[i].fd >= 0)
			bt_perf_enable(s->rings[i].fd);
	for (size_t i = 0; i < s->nextra; i++)
		bt_perf_enable(s->extra_fds[i]);
}

void bt_sb_rings_close(struct bt_sb_rings *s)
{
	for (size_t i = 0; i < s->nextra; i++)
		close(s->extra_fds[i]);
	free(s->extra_fds);
	if (s->rings)
		for (int i = 0; i < s->ncpus; i++)
			bt_perf_ring_close(&s->rings[i]);
	free(s->rings);
	free(s->cpus);
	free(s->scratch);
	memset(s, 0, sizeof(*s));
}
