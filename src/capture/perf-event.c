/* SPDX-License-Identifier: MIT */
/*
 * The perf_event_open layer.  This is the only file that calls
 * syscall(__NR_perf_event_open).
 */
#include "perf.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "budget.h"
#include "capture-internal.h"
#include "pmu.h"
#include "aux-ring.h"
#include "util.h"

static long page_size(void)
{
	return sysconf(_SC_PAGESIZE);
}

static void subject(char *buf, size_t len, const struct bt_perf_ctx *ctx)
{
	if (ctx->tid > 0 && ctx->cpu >= 0)
		snprintf(buf, len, "%s event on thread %d, cpu %d", ctx->pmu,
			 (int)ctx->tid, ctx->cpu);
	else if (ctx->tid > 0)
		snprintf(buf, len, "%s event on thread %d", ctx->pmu,
			 (int)ctx->tid);
	else if (ctx->cpu >= 0)
		snprintf(buf, len, "%s event on cpu %d", ctx->pmu, ctx->cpu);
	else
		snprintf(buf, len, "%s event", ctx->pmu);
}

int bt_perf_explain(int e, enum bt_perf_op op, const struct bt_perf_ctx *ctx,
		    struct btrace_error *err)
{
	static const char *const opname[] = {
		[BT_OP_OPEN] = "perf_event_open",
		[BT_OP_MMAP_DATA] = "mmap of the data ring",
		[BT_OP_MMAP_AUX] = "mmap of the AUX ring",
		[BT_OP_SET_OUTPUT] = "PERF_EVENT_IOC_SET_OUTPUT",
		[BT_OP_IOCTL] = "ioctl",
	};
	struct bt_sysinfo si;
	char subj[160];

	subject(subj, sizeof(subj), ctx);
	bt_error(err, -e, "%s: %s failed: %s", subj, opname[op], strerror(e));
	bt_sysinfo_read(NULL, &si);
	switch (e) {
	case ENOENT:
	case ENODEV:
		if (op == BT_OP_OPEN && ctx->aux_pmu)
			bt_hint(err,
				"the kernel has no %s PMU (AMD CPU, a VM without PT pass-through, or PT disabled in firmware): use --backend qemu",
				ctx->pmu);
		break;
	case EOPNOTSUPP:
		if (op == BT_OP_MMAP_AUX)
			bt_hint(err, "%s does not support AUX buffers on this kernel",
				ctx->pmu);
		else if (ctx->aux_pmu)
			bt_hint(err,
				"%s cannot trace this way here (a VM or an old kernel?): use --backend qemu",
				ctx->pmu);
		break;
	case EACCES:
		if (si.paranoid > 2)
			bt_hint(err,
				"kernel.perf_event_paranoid is %d: only CAP_SYS_ADMIN may use perf; run as root or set the sysctl to 2",
				si.paranoid);
		else if (!strcmp(ctx->pmu, "intel_bts") || ctx->kernel)
			bt_hint(err,
				"%s needs kernel.perf_event_paranoid <= 1 (it is %d) or CAP_PERFMON: sysctl -w kernel.perf_event_paranoid=1, or setcap cap_perfmon+ep on btrace",
				!strcmp(ctx->pmu, "intel_bts") ? "intel_bts (it records kernel branches)" : "kernel tracing",
				si.paranoid);
		else if (ctx->tid > 0)
			bt_hint(err,
				"thread %d belongs to another user or is not ptrace-readable by you: run btrace as its user, or with CAP_PERFMON (paranoid is %d)",
				(int)ctx->tid, si.paranoid);
		else
			bt_hint(err,
				"per-CPU events need kernel.perf_event_paranoid <= 0 (it is %d) or CAP_PERFMON",
				si.paranoid);
		break;
	case EPERM:
		if (op == BT_OP_MMAP_DATA || op == BT_OP_MMAP_AUX) {
			struct bt_budget_env env;

			bt_budget_env_current(&env);
			return bt_budget_explain_eperm(&env, ctx->pages, subj,
						       err);
		}
		bt_hint(err,
			"a security policy (seccomp profile of a container, an LSM) forbids perf_event_open here, or kernel tracing needs CAP_PERFMON");
		break;
	case EBUSY:
		bt_hint(err,
			"%s is exclusive and already in use on this thread or system-wide (perf record -e %s, gdb 'record btrace', another btrace): stop the other user, or use btrace record -p to join a btrace owner",
			ctx->pmu, ctx->pmu);
		break;
	case EINVAL:
		if (op == BT_OP_MMAP_AUX || op == BT_OP_MMAP_DATA)
			bt_hint(err,
				"ring sizes must be a power of two pages (btrace rounds them; this is a btrace bug if it did not)");
		else if (op == BT_OP_SET_OUTPUT)
			bt_hint(err,
				"the redirected event must be on the same CPU, use the same clock and PMU, and not be mapped yet");
		else
			bt_hint(err,
				"the kernel rejected the event attributes: check the config against %s/caps (btrace doctor lists them)",
				ctx->pmu);
		break;
	case ENOMEM:
		if (op == BT_OP_MMAP_AUX)
			bt_hint(err,
				"the kernel could not allocate the AUX ring at any size down to one page (btrace halves it on ENOMEM; BTS and PT without multi-entry ToPA need one physically contiguous block, at most 4 MiB): free memory, or retry when the host is less busy");
		break;
	case ESRCH:
		bt_hint(err, "the thread exited before its event could be opened");
		break;
	case EMFILE:
	case ENFILE:
		bt_hint(err, "too many open files: raise ulimit -n (btrace uses one descriptor per thread and CPU)");
		break;
	}
	return -e;
}

int bt_perf_sys_open(struct perf_event_attr *attr, pid_t pid, int cpu,
		     int group_fd, unsigned long flags)
{
	long fd;

	attr->size = sizeof(*attr);
	fd = syscall(__NR_perf_event_open, attr, pid, cpu, group_fd,
		     flags | PERF_FLAG_FD_CLOEXEC);
	return fd < 0 ? -errno : (int)fd;
}

int bt_perf_open(struct perf_event_attr *attr, pid_t pid, int cpu,
		 const struct bt_perf_ctx *ctx, struct btrace_error *err)
{
	int fd = bt_perf_sys_open(attr, pid, cpu, -1, 0);

	if (fd < 0)
		return bt_perf_explain(-fd, BT_OP_OPEN, ctx, err);
	return fd;
}

void bt_perf_ring_init(struct bt_perf_ring *r)
{
	memset(r, 0, sizeof(*r));
	r->fd = -1;
}

int bt_perf_map_data(struct bt_perf_ring *r, int fd, uint64_t data_pages,
		     bool writable, const struct bt_perf_ctx *ctx,
		     struct btrace_error *err)
{
	uint64_t ps = (uint64_t)page_size(), len = (1 + data_pages) * ps;
	void *p;

	if (data_pages & (data_pages - 1))
		return bt_error(err, -EINVAL,
				"%s: data ring of %" PRIu64 " pages failed: not a power of two",
				ctx->pmu, data_pages);
	p = mmap(NULL, len, PROT_READ | (writable ? PROT_WRITE : 0),
		 MAP_SHARED, fd, 0);
	if (p == MAP_FAILED) {
		struct bt_perf_ctx c = *ctx;

		c.pages = 1 + data_pages;
		return bt_perf_explain(errno, BT_OP_MMAP_DATA, &c, err);
	}
	r->fd = fd;
	r->base = p;
	r->data_size = data_pages * ps;
	r->writable = writable;
	r->tail = 0;
	r->charged_pages += 1 + data_pages;
	return 0;
}

struct aux_try {
	struct bt_perf_ring *r;
	bool overwrite;
	void *p;
};

static int aux_try_map(uint64_t len, void *arg)
{
	struct aux_try *a = arg;
	struct perf_event_mmap_page *pc = (void *)a->r->base;

	/* perf_mmap_aux() (kernel/events/core.c) checks the mapping against
	 * aux_offset / aux_size, so both are set for every attempt. */
	pc->aux_offset = (uint64_t)page_size() + a->r->data_size;
	pc->aux_size = len;
	a->p = mmap(NULL, len, PROT_READ | (a->overwrite ? 0 : PROT_WRITE),
		    MAP_SHARED, a->r->fd, (off_t)pc->aux_offset);
	return a->p == MAP_FAILED ? -errno : 0;
}

int bt_perf_map_aux(struct bt_perf_ring *r, uint64_t aux_bytes,
		    bool overwrite, const struct bt_perf_ctx *ctx,
		    struct btrace_error *err)
{
	struct perf_event_mmap_page *pc = (void *)r->base;
	uint64_t ps = (uint64_t)page_size(), pages = aux_bytes / ps, got = 0;
	struct aux_try a = { r, overwrite, MAP_FAILED };
	int ret;

	if (!pc || !r->writable)
		return bt_error(err, -EINVAL,
				"%s: AUX ring failed: the data ring must be mapped writable first (btrace bug)",
				ctx->pmu);
	if (aux_bytes % ps || !pages || (pages & (pages - 1)))
		return bt_error(err, -EINVAL,
				"%s: AUX ring of %" PRIu64 " bytes failed: not a power of two pages",
				ctx->pmu, aux_bytes);
	/* ENOMEM: rb_alloc_aux() found no block big enough (BTS and PT
	 * without multi-entry ToPA need one block for the whole ring);
	 * halve and retry down to one page, like gdb. */
	ret = bt_aux_map_halving(aux_bytes, ps, aux_try_map, &a, &got);
	if (ret < 0) {
		struct bt_perf_ctx c = *ctx;

		c.pages = pages;
		return bt_perf_explain(-ret, BT_OP_MMAP_AUX, &c, err);
	}
	r->aux = a.p;
	r->aux_size = got;
	r->aux_requested = aux_bytes;
	r->charged_pages += got / ps;
	return 0;
}

int bt_perf_set_output(int fd, int target_fd, const struct bt_perf_ctx *ctx,
		       struct btrace_error *err)
{
	if (ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, target_fd) < 0)
		return bt_perf_explain(errno, BT_OP_SET_OUTPUT, ctx, err);
	return 0;
}

int bt_perf_enable(int fd)
{
	return ioctl(fd, PERF_EVENT_IOC_ENABLE, 0) < 0 ? -errno : 0;
}

int bt_perf_disable(int fd)
{
	return ioctl(fd, PERF_EVENT_IOC_DISABLE, 0) < 0 ? -errno : 0;
}

uint64_t bt_perf_data_head(const struct bt_perf_ring *r)
{
	const struct perf_event_mmap_page *pc = (const void *)r->base;

	return __atomic_load_n(&pc->data_head, __ATOMIC_ACQUIRE);
}

void bt_perf_data_set_tail(struct bt_perf_ring *r, uint64_t tail)
{
	struct perf_event_mmap_page *pc = (void *)r->base;

	r->tail = tail;
	if (r->writable)
		__atomic_store_n(&pc->data_tail, tail, __ATOMIC_RELEASE);
}

uint64_t bt_perf_aux_head(const struct bt_perf_ring *r)
{
	const struct perf_event_mmap_page *pc = (const void *)r->base;

	return __atomic_load_n(&pc->aux_head, __ATOMIC_ACQUIRE);
}

void bt_perf_bts_sample_attr(struct perf_event_attr *a)
{
	memset(a, 0, sizeof(*a));
	a->size = sizeof(*a);
	a->type = PERF_TYPE_HARDWARE;
	a->config = PERF_COUNT_HW_BRANCH_INSTRUCTIONS;
	a->sample_period = 1;          /* not freq: intel_pmu_has_bts_period() */
	a->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_ADDR;
	a->exclude_kernel = 1;         /* "BTS is currently only allowed for
					* user-mode" */
	a->exclude_hv = 1;
	a->exclude_idle = 1;
	a->disabled = 1;
}

int bt_perf_bts_sample_probe(bool intel_ds, struct btrace_error *err)
{
	struct perf_event_attr a;
	int fd;

	if (!intel_ds)
		return bt_error(err, -ENODEV,
				"BTS: the branch-instructions event is not a branch trace on this CPU (BTS needs an Intel CPU with the DS area, CPUID.1:EDX[21])");
	bt_perf_bts_sample_attr(&a);
	fd = bt_perf_sys_open(&a, 0, -1, -1, 0);
	if (fd >= 0) {
		close(fd);
		return 0;
	}
	if (fd == -EOPNOTSUPP)
		bt_error(err, fd,
			 "BTS: the branch-instructions event with sample_period 1 was refused (EOPNOTSUPP): the kernel has no usable BTS (x86_pmu.bts_active is off: BTS disabled in IA32_MISC_ENABLE, or its DS buffers could not be allocated)");
	else
		bt_error(err, fd,
			 "BTS: perf_event_open of the branch-instructions event failed: %s",
			 strerror(-fd));
	return fd;
}

int bt_perf_bts_samples_buffer(const struct bt_perf_ring *r,
			       struct btrace_buffer *b, uint8_t **data,
			       struct bt_bts_samples *st)
{
	uint64_t head;

	*data = NULL;
	if (!r->base || !r->data_size)
		return -EINVAL;
	*data = malloc(r->data_size);
	if (!*data)
		return -ENOMEM;
	head = bt_perf_data_head(r);
	bt_bts_samples_read(r->base + page_size(), r->data_size, head, *data, st);
	b->kind = BTRACE_TRACE_BTS;
	b->data = *data;
	b->size = st->records * 24;
	b->ring_size = r->data_size;
	b->head = head & (r->data_size - 1);
	if (st->wrapped)
		b->flags |= BTRACE_BUF_WRAPPED;
	if (st->stopped)
		b->flags |= BTRACE_BUF_LOST;
	return 0;
}

void bt_perf_ring_close(struct bt_perf_ring *r)
{
	long ps = page_size();

	if (r->fd >= 0)
		bt_perf_disable(r->fd);
	if (r->aux)
		munmap(r->aux, r->aux_size);
	if (r->base)
		munmap(r->base, (size_t)(r->data_size + (uint64_t)ps));
	if (r->fd >= 0)
		close(r->fd);
	bt_perf_ring_init(r);
}
