/* SPDX-License-Identifier: MIT */
/* Sideband: records of dummy events and /proc synthesis. */
#include "sideband.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "capture-internal.h"
#include "elf-buildid.h"
#include "procmaps.h"
#include "util.h"

#define SAMPLE_ID_SIZE 16  /* TID (pid, tid) + TIME */

#ifndef PERF_RECORD_MISC_MMAP_BUILD_ID
#define PERF_RECORD_MISC_MMAP_BUILD_ID (1 << 14)
#endif

void bt_sideband_attr(struct perf_event_attr *a, bool enable_on_exec,
		      bool build_id)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_SOFTWARE;
	a->config = PERF_COUNT_SW_DUMMY;
	a->sample_type = PERF_SAMPLE_TID | PERF_SAMPLE_TIME;
	a->sample_id_all = 1;
	a->mmap = 1;
	a->mmap2 = 1;
	a->comm = 1;
	a->comm_exec = 1;
	a->task = 1;
	a->inherit = 1;
	a->exclude_kernel = 1;
	a->exclude_hv = 1;
	a->build_id = build_id ? 1 : 0;
	a->disabled = enable_on_exec ? 1 : 0;
	a->enable_on_exec = enable_on_exec ? 1 : 0;
	a->watermark = 1;
	a->wakeup_watermark = 1;
}

int bt_sideband_parse(const struct bt_rec *rec, struct bt_sb_event *ev)
{
	const uint8_t *p = rec->data;
	uint16_t size = rec->size;

	memset(ev, 0, sizeof(*ev));
	ev->type = rec->type;
	ev->misc = rec->misc;
	switch (rec->type) {
	case PERF_RECORD_MMAP2: {
		size_t fn_max;

		if (size < 72 + SAMPLE_ID_SIZE)
			return -EINVAL;
		ev->pid = (int32_t)bt_le32(p + 8);
		ev->tid = (int32_t)bt_le32(p + 12);
		ev->addr = bt_le64(p + 16);
		ev->len = bt_le64(p + 24);
		ev->pgoff = bt_le64(p + 32);
		if (rec->misc & PERF_RECORD_MISC_MMAP_BUILD_ID) {
			ev->build_id_size = p[40] > 20 ? 20 : p[40];
			memcpy(ev->build_id, p + 44, 20);
		} else {
			ev->maj = bt_le32(p + 40);
			ev->min = bt_le32(p + 44);
			ev->ino = bt_le64(p + 48);
		}
		ev->prot = bt_le32(p + 64);
		ev->flags = bt_le32(p + 68);
		fn_max = (size_t)size - 72 - SAMPLE_ID_SIZE;
		if (!memchr(p + 72, '\0', fn_max))
			return -EINVAL;
		ev->filename = (const char *)p + 72;
		break;
	}
	case PERF_RECORD_COMM:
		if (size < 16 + 8 + SAMPLE_ID_SIZE)
			return -EINVAL;
		ev->pid = (int32_t)bt_le32(p + 8);
		ev->tid = (int32_t)bt_le32(p + 12);
		if (!memchr(p + 16, '\0', (size_t)size - 16 - SAMPLE_ID_SIZE))
			return -EINVAL;
		ev->comm = (const char *)p + 16;
		break;
	case PERF_RECORD_FORK:
	case PERF_RECORD_EXIT:
		if (size < 32)
			return -EINVAL;
		ev->pid = (int32_t)bt_le32(p + 8);
		ev->ppid = (int32_t)bt_le32(p + 12);
		ev->tid = (int32_t)bt_le32(p + 16);
		ev->ptid = (int32_t)bt_le32(p + 20);
		ev->time = bt_le64(p + 24);
		return 0;
	case PERF_RECORD_LOST:
		if (size < 24)
			return -EINVAL;
		ev->lost = bt_le64(p + 16);
		return 0;
	case PERF_RECORD_AUX:
		if (size < 32)
			return -EINVAL;
		ev->aux_offset = bt_le64(p + 8);
		ev->aux_size = bt_le64(p + 16);
		ev->aux_flags = bt_le64(p + 24);
		break;
	case PERF_RECORD_ITRACE_START:
		if (size < 16)
			return -EINVAL;
		ev->pid = (int32_t)bt_le32(p + 8);
		ev->tid = (int32_t)bt_le32(p + 12);
		break;
	default:
		return 0;
	}
	if (size >= 8 + SAMPLE_ID_SIZE)
		ev->time = bt_le64(p + size - 8);
	return 0;
}

void bt_sideband_init(struct bt_sideband *sb, pid_t pid)
{
	memset(sb, 0, sizeof(*sb));
	sb->pid = pid;
}

void bt_sideband_fini(struct bt_sideband *sb)
{
	for (size_t i = 0; i < sb->nmaps; i++)
		free(sb->maps[i].path);
	free(sb->maps);
	free(sb->tasks);
	free(sb->new_tids);
	for (size_t i = 0; i < sb->nreplaced; i++) {
		free(sb->replaced[i].path);
		free(sb->replaced[i].by);
	}
	memset(sb, 0, sizeof(*sb));
}

struct bt_sb_task *bt_sideband_task(struct bt_sideband *sb, int32_t tid,
				    bool create)
{
	for (size_t i = 0; i < sb->ntasks; i++)
		if (sb->tasks[i].tid == tid)
			return &sb->tasks[i];
	if (!create || bt_grow((void **)&sb->tasks, &sb->ctasks, sb->ntasks,
			       sizeof(*sb->tasks)) < 0)
		return NULL;
	memset(&sb->tasks[sb->ntasks], 0, sizeof(sb->tasks[0]));
	sb->tasks[sb->ntasks].tid = tid;
	sb->tasks[sb->ntasks].pid = sb->pid;
	return &sb->tasks[sb->ntasks++];
}

/* Remove [start, end) from every existing mapping, splitting if needed. */
static int punch(struct bt_sideband *sb, uint64_t start, uint64_t end)
{
	for (size_t i = 0; i < sb->nmaps; i++) {
		struct btrace_mapping *m = &sb->maps[i];

		if (m->end <= start || m->start >= end)
			continue;
		if (m->start >= start && m->end <= end) {
			free(m->path);
			sb->maps[i] = sb->maps[--sb->nmaps];
			i--;
			continue;
		}
		if (m->start < start && m->end > end) {
			struct btrace_mapping tail = *m;

			if (bt_grow((void **)&sb->maps, &sb->cmaps, sb->nmaps,
				    sizeof(*sb->maps)) < 0)
				return -ENOMEM;
			m = &sb->maps[i];
			tail.pgoff += end - m->start;
			tail.start = end;
			tail.path = m->path ? strdup(m->path) : NULL;
			m->end = start;
			sb->maps[sb->nmaps++] = tail;
			continue;
		}
		if (m->start < start) {
			m->end = start;
		} else {
			m->pgoff += end - m->start;
			m->start = end;
		}
	}
	return 0;
}

static bool same_str(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Note the parts of existing mappings that @m maps other code over. */
static void note_replaced(struct bt_sideband *sb, const struct btrace_mapping *m)
{
	for (size_t i = 0; i < sb->nmaps; i++) {
		const struct btrace_mapping *o = &sb->maps[i];
		uint64_t s = o->start > m->start ? o->start : m->start;
		uint64_t e = o->end < m->end ? o->end : m->end;
		struct bt_sb_replaced *r;

		if (s >= e)
			continue;
		/* the same bytes of the same file again: no replacement */
		if (same_str(o->path, m->path) &&
		    o->pgoff + (s - o->start) == m->pgoff + (s - m->start) &&
		    (!o->build_id_size || !m->build_id_size ||
		     (o->build_id_size == m->build_id_size &&
		      !memcmp(o->build_id, m->build_id, o->build_id_size))))
			continue;
		sb->replaced_total++;
		if (sb->nreplaced >= BT_SB_REPLACED_MAX)
			continue;
		r = &sb->replaced[sb->nreplaced++];
		r->start = s;
		r->end = e;
		r->pgoff = o->pgoff + (s - o->start);
		r->time = sb->now;
		r->path = o->path ? strdup(o->path) : NULL;
		r->by = m->path ? strdup(m->path) : NULL;
		r->by_pgoff = m->pgoff + (s - m->start);
	}
}

int bt_sideband_add_map(struct bt_sideband *sb, const struct btrace_mapping *m)
{
	int r;

	note_replaced(sb, m);
	r = punch(sb, m->start, m->end);

	if (r < 0)
		return r;
	if (bt_grow((void **)&sb->maps, &sb->cmaps, sb->nmaps,
		    sizeof(*sb->maps)) < 0)
		return -ENOMEM;
	sb->maps[sb->nmaps] = *m;
	sb->maps[sb->nmaps].path = m->path ? strdup(m->path) : NULL;
	sb->nmaps++;
	return 0;
}

int bt_sideband_apply(struct bt_sideband *sb, const struct bt_sb_event *ev)
{
	struct bt_sb_task *t;

	sb->records++;
	sb->now = ev->time;
	switch (ev->type) {
	case PERF_RECORD_MMAP2: {
		struct btrace_mapping m;

		if (ev->pid != sb->pid || !(ev->prot & PROT_EXEC))
			return 0;
		memset(&m, 0, sizeof(m));
		m.pid = ev->pid;
		m.prot = ev->prot;
		m.flags = ev->flags;
		m.start = ev->addr;
		m.end = ev->addr + ev->len;
		m.pgoff = ev->pgoff;
		if (ev->build_id_size) {
			m.build_id_size = ev->build_id_size;
			memcpy(m.build_id, ev->build_id, ev->build_id_size);
		} else {
			m.dev = makedev(ev->maj, ev->min);
			m.ino = ev->ino;
			/* The note page was not resident: read it ourselves. */
			if (ev->filename[0] == '/') {
				int n = bt_elf_build_id(ev->filename, m.build_id,
							 sizeof(m.build_id));

				if (n > 0)
					m.build_id_size = (uint32_t)n;
			}
		}
		m.path = (char *)ev->filename;
		return bt_sideband_add_map(sb, &m);
	}
	case PERF_RECORD_COMM:
		if (ev->pid != sb->pid)
			return 0;
		t = bt_sideband_task(sb, ev->tid, true);
		if (!t)
			return -ENOMEM;
		snprintf(t->comm, sizeof(t->comm), "%s", ev->comm);
		if (ev->misc & PERF_RECORD_MISC_COMM_EXEC)
			sb->comm_execs++;
		if ((ev->misc & PERF_RECORD_MISC_COMM_EXEC) && ev->pid == ev->tid) {
			/* exec replaced the address space */
			for (size_t i = 0; i < sb->nmaps; i++)
				free(sb->maps[i].path);
			sb->nmaps = 0;
		}
		return 0;
	case PERF_RECORD_FORK:
		if (ev->pid != sb->pid)
			return 0;
		t = bt_sideband_task(sb, ev->tid, true);
		if (!t)
			return -ENOMEM;
		t->ppid = ev->ppid;
		if (t->exited && ev->time > t->exit_time)
			t->exited = false;     /* a reused tid */
		if (!t->exited && (ev->tid != ev->ptid || ev->pid != ev->ppid)) {
			if (bt_grow((void **)&sb->new_tids, &sb->cnew, sb->nnew,
				    sizeof(*sb->new_tids)) < 0)
				return -ENOMEM;
			sb->new_tids[sb->nnew++] = ev->tid;
		}
		return 0;
	case PERF_RECORD_EXIT:
		if (ev->pid != sb->pid)
			return 0;
		t = bt_sideband_task(sb, ev->tid, true);
		if (t) {
			t->exited = true;
			t->exit_time = ev->time;
		}
		return 0;
	case PERF_RECORD_LOST:
		sb->lost += ev->lost;
		return 0;
	}
	return 0;
}

/* --- /proc synthesis --- */

int bt_sideband_synthesize(struct bt_sideband *sb, pid_t pid,
			   struct btrace_error *err)
{
	char path[64], *buf, *line, *save = NULL;
	pid_t *tids = NULL;
	int n, r;

	sb->now = 0;   /* synthesized records have no time */
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	r = bt_read_file(path, &buf, NULL, 64 << 20);
	if (r < 0)
		return bt_error(err, r, "process %d: reading %s failed: %s",
				(int)pid, path, strerror(-r));
	for (line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		struct bt_maps_line ml;
		struct btrace_mapping m;
		const char *name;

		if (bt_maps_parse(line, strlen(line), &ml) < BT_MAPS_ALL)
			continue;
		if (ml.perms[2] != 'x')
			continue;
		name = ml.path;   /* the rest of the line (strtok ended it) */
		memset(&m, 0, sizeof(m));
		m.pid = pid;
		m.start = ml.start;
		m.end = ml.end;
		m.pgoff = ml.pgoff;
		m.prot = (ml.perms[0] == 'r' ? PROT_READ : 0) |
			 (ml.perms[1] == 'w' ? PROT_WRITE : 0) | PROT_EXEC;
		m.flags = ml.perms[3] == 's' ? MAP_SHARED : MAP_PRIVATE;
		m.dev = makedev(ml.maj, ml.min);
		m.ino = ml.ino;
		m.path = (char *)(*name ? name : "//anon");
		if (*name == '/') {
			char alt[128];
			int b;

			/* Through the target's root, so containers work. */
			snprintf(alt, sizeof(alt), "/proc/%d/map_files/%" PRIx64 "-%" PRIx64,
				 (int)pid, ml.start, ml.end);
			b = bt_elf_build_id(alt, m.build_id, sizeof(m.build_id));
			if (b <= 0)
				b = bt_elf_build_id(name, m.build_id,
						     sizeof(m.build_id));
			if (b > 0)
				m.build_id_size = (uint32_t)b;
		}
		r = bt_sideband_add_map(sb, &m);
		if (r < 0) {
			free(buf);
			return bt_error(err, r, "process %d: sideband failed: %s",
					(int)pid, strerror(-r));
		}
	}
	free(buf);

	n = bt_proc_tids(pid, &tids);
	for (int i = 0; i < n; i++) {
		struct bt_sb_task *t = bt_sideband_task(sb, tids[i], true);

		if (!t)
			break;
		t->ppid = 0;
		bt_proc_comm(pid, tids[i], t->comm, sizeof(t->comm));
	}
	free(tids);
	return 0;
}
