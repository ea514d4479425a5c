/* SPDX-License-Identifier: MIT */
/*
 * Sideband rings: one dummy event per online CPU on the traced process
 * (pid=PID, cpu=N, inherit: new threads write into the same rings), plus
 * redirected events for threads that existed before the recording started.
 * Drained continuously so that no record is lost.
 */
#ifndef BT_CAPTURE_SBRINGS_H
#define BT_CAPTURE_SBRINGS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <btrace/btrace.h>

#include "perf.h"
#include "sideband.h"

struct bt_sb_rings {
	pid_t pid;
	int ncpus;
	int *cpus;
	struct bt_perf_ring *rings;   /* one per CPU */
	int *extra_fds;               /* redirected per-thread events */
	size_t nextra, cextra;
	uint8_t *scratch;
	uint64_t data_pages;
	bool build_id;                /* attr.build_id was accepted */
};

/* Open the per-CPU rings on @pid (@data_pages a power of two). */
int bt_sb_rings_open(struct bt_sb_rings *s, pid_t pid, bool enable_on_exec,
		     uint64_t data_pages, struct btrace_error *err);

/* Also follow existing thread @tid (attach mode). */
int bt_sb_rings_add_thread(struct bt_sb_rings *s, pid_t tid,
			   struct btrace_error *err);

/* Poll fds (one per CPU ring). */
int bt_sb_rings_fd(const struct bt_sb_rings *s, int i);

/* Drain every ring into @sb; returns the number of records or -errno
 * (-EIO for a corrupt ring). */
int bt_sb_rings_drain(struct bt_sb_rings *s, struct bt_sideband *sb);

/* Enable the events (attach mode, after synthesizing). */
void bt_sb_rings_enable(struct bt_sb_rings *s);

void bt_sb_rings_close(struct bt_sb_rings *s);

#endif /* BT_CAPTURE_SBRINGS_H */
