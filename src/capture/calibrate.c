/* SPDX-License-Identifier: MIT */
/*
 * btrace_calibrate(): measure the pad, the trace bytes written after the
 * fault, with a known crasher.  The crasher is a forked child that spins a
 * little and writes through a null pointer (plainly, or with a SIGSEGV
 * handler that re-raises).  btrace seizes it; at the signal-delivery stop of
 * the first SIGSEGV it disables the event and reads aux_head (A), re-enables
 * it and lets the signal through; after the death aux_head is read again
 * (B).  The pad is B - A: what the kernel's signal delivery and exit (with
 * kernel tracing) or the handler (user space) wrote.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <btrace/capture.h>
#include <btrace/snapshot.h>

#include "perf-backend.h"
#include "perf.h"
#include "pmu.h"
#include "util.h"

static volatile int spin_sink;

static void reraise(int sig)
{
	signal(sig, SIG_DFL);
	raise(sig);
}

static _Noreturn void crasher(int rfd, bool handler)
{
	char c;

	if (read(rfd, &c, 1) != 1)
		_exit(1);
	if (handler)
		signal(SIGSEGV, reraise);
	for (int i = 0; i < 10000; i++)
		spin_sink += i;
	*(volatile int *)(uintptr_t)(spin_sink & 0) = 1;
	_exit(2);
}

static int measure(const struct bt_pmu *pmu, uint64_t config, bool handler,
		   uint64_t *pad, struct btrace_error *err)
{
	struct bt_perf_ctx cx = { .pmu = pmu->name, .cpu = -1, .aux_pmu = true };
	struct perf_event_attr a;
	struct bt_perf_ring ring;
	uint64_t at_stop = 0, at_end;
	int go[2], fd, r, status, stops = 0;
	pid_t pid;

	if (pipe(go) < 0)
		return bt_error(err, -errno, "calibrate: pipe failed: %s", strerror(errno));
	pid = fork();
	if (pid == 0) {
		close(go[1]);
		crasher(go[0], handler);
	}
	close(go[0]);
	cx.tid = pid;
	bt_perf_ring_init(&ring);
	if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) < 0) {
		r = bt_error(err, -errno, "calibrate: PTRACE_SEIZE failed: %s",
			     strerror(errno));
		goto out;
	}
	memset(&a, 0, sizeof(a));
	a.type = (uint32_t)pmu->type;
	a.config = config;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = bt_perf_open(&a, pid, -1, &cx, err);
	if (fd < 0) {
		r = fd;
		goto out;
	}
	r = bt_perf_map_data(&ring, fd, 8, true, &cx, err);
	if (r == 0)
		r = bt_perf_map_aux(&ring, 4u << 20, true, &cx, err);
	if (r < 0) {
		if (ring.fd < 0)
			close(fd);
		goto out;
	}
	if (write(go[1], "g", 1) != 1) {
		r = bt_error(err, -EIO, "calibrate: starting the crasher failed");
		goto out;
	}
	while (waitpid(pid, &status, __WALL) == pid) {
		if (WIFEXITED(status) || WIFSIGNALED(status))
			break;
		if (WSTOPSIG(status) == SIGSEGV && (status >> 16) == 0) {
			if (stops++ == 0) {
				bt_perf_disable(ring.fd);
				at_stop = bt_perf_aux_head(&ring);
				bt_perf_enable(ring.fd);
			}
			ptrace(PTRACE_CONT, pid, NULL, (void *)(long)SIGSEGV);
			continue;
		}
		ptrace(PTRACE_CONT, pid, NULL, NULL);
	}
	at_end = bt_perf_aux_head(&ring);
	if (!stops || at_end < at_stop) {
		r = bt_error(err, -EIO,
			     "calibrate: measurement failed: %s",
			     stops ? "the ring wrapped" : "no SIGSEGV stop seen");
		goto out;
	}
	*pad = at_end - at_stop;
	r = 0;
out:
	close(go[1]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, __WALL);
	bt_perf_ring_close(&ring);
	return r;
}

static void save(uint32_t backend, uint64_t pad, char *where, size_t len)
{
	const char *home = getenv("XDG_CACHE_HOME");
	char dir[400], tmp[600];
	FILE *f;
	int fd;

	where[0] = '\0';
	if (home && *home)
		snprintf(dir, sizeof(dir), "%s/btrace", home);
	else if ((home = getenv("HOME")) && *home)
		snprintf(dir, sizeof(dir), "%s/.cache/btrace", home);
	else
		return;
	mkdir(dir, 0755);
	mkdir(dir, 0700);
	snprintf(where, len, "%s/pad-%s", dir,
		 backend == BTRACE_BACKEND_BTS ? "bts" : "pt");
	/* a new file under an unpredictable name, renamed over the old one */
	fd = bt_tmp_create(where, tmp, sizeof(tmp), 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		if (fd >= 0)
			bt_tmp_commit(fd, tmp, where, -EIO);
		where[0] = '\0';
		return;
	}
	fprintf(f, "%llu\n", (unsigned long long)pad);
	if (fflush(f) || bt_tmp_commit(dup(fd), tmp, where, 0))
		where[0] = '\0';
	fclose(f);
}

int bt_calibrate(uint32_t backend, unsigned runs, const char *sysfs_root,
		 struct btrace_calibration *out, struct btrace_error *err)
{
	struct bt_pt_config ptc = { 0 };
	struct bt_pmu pmu;
	struct bt_cpu cpu;
	int r;

	memset(out, 0, sizeof(out[0]));
	if (!runs)
		runs = 5;
	r = bt_perf_probe(backend, sysfs_root, err);
	if (r < 0) {
		/* The probe's hint points at --backend qemu, which has
		 * nothing to calibrate: say what calibrate needs instead. */
		bt_hint(err, "calibrate measures what Intel PT or BTS "
			"hardware writes after a fault (kernel signal delivery "
			"and exit); it needs one of them");
		return r;
	}
	r = bt_pmu_read(sysfs_root, backend == BTRACE_BACKEND_BTS ? "intel_bts" :
			"intel_pt", &pmu, err);
	if (r < 0)
		return r;
	bt_cpu_identify(&cpu);
	if (backend == BTRACE_BACKEND_PT &&
	    (r = bt_pt_default_config(&pmu, &cpu, &ptc, err)) < 0)
		return r;
	out->backend = backend;
	for (unsigned i = 0; i < runs; i++) {
		uint64_t plain, handler;

		r = measure(&pmu, ptc.config, false, &plain, err);
		if (r == 0)
			r = measure(&pmu, ptc.config, true, &handler, err);
		if (r < 0)
			return r;
		if (plain > out->pad_plain)
			out->pad_plain = plain;
		if (handler > out->pad_handler)
			out->pad_handler = handler;
		out->runs++;
	}
	out->pad_max = out->pad_plain > out->pad_handler ? out->pad_plain :
		       out->pad_handler;
	/* half again for safety, whole KiB, at least 4 KiB */
	out->recommended = ((out->pad_max * 3 / 2 + 1023) / 1024) * 1024;
	if (out->recommended < 4096)
		out->recommended = 4096;
	save(backend, out->recommended, out->saved_to, sizeof(out->saved_to));
	return 0;
}
