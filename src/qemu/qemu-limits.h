/* SPDX-License-Identifier: MIT */
#ifndef BT_QEMU_LIMITS_H
#define BT_QEMU_LIMITS_H

#include <stddef.h>

#include <btrace/btrace.h>

#include "ring-file.h"

/*
 * What QEMU 7.2 does not do as the kernel does (qemu-limits.c): a program
 * it cannot run faithfully is refused before it runs; what the plugin
 * noted while it ran becomes warnings and snapshot metadata
 * "limit.<name>" (one sentence each).
 */

/* Refuses (-ENOTSUP, with a message and a hint) a program built with a
 * sanitizer runtime whose shadow memory QEMU 7.2 cannot emulate. */
int bt_qemu_check_sanitizers(const char *prog, struct btrace_error *err);

struct bt_qemu_limit {
	const char *name;       /* "fpe-traps", "seccomp", "vdso" */
	char text[512];         /* one sentence */
};
#define BT_QEMU_MAX_LIMITS 8
/* The limits the plugin noted in the ring file whose header is @h. */
size_t bt_qemu_limits_get(const struct bt_ring_hdr *h,
			  struct bt_qemu_limit *out);
/* Prints each limit of the ring file at @ring_path on stderr, once. */
void bt_qemu_limits_warn(const char *ring_path, int pid);

/* The host signal that reaches the guest as real-time signal @sig
 * (QEMU 7.2 shifts them by two), 0 for 63 and 64, which QEMU cannot
 * deliver; other signals unchanged.  Async-signal-safe. */
int bt_qemu_host_signal(int sig);
/* The emulator's wait @status as the guest's: a death by host signal
 * N + 2 was the guest's real-time signal N. */
int bt_qemu_guest_status(int status);

/* ",comm=NAME", the plugin argument that names the program as the
 * kernel would (/proc/PID/comm) for a program run as @argv0, in @buf; ""
 * when it cannot be passed. */
const char *bt_qemu_comm_arg(const char *argv0, char *buf, size_t len);

/* The kernel's OOM kills so far (/proc/vmstat), or -1 if unknown. */
long bt_qemu_oom_kills(void);

#endif
