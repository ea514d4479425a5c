/* SPDX-License-Identifier: MIT */
/*
 * The QEMU recorder as the registry owner of its program's processes
 * (src/capture/registry.h): `btrace snapshot PID` gets a snapshot of the
 * running program, `btrace record -p PID` joins the recording and receives
 * its crash snapshots, as with the hardware backends.
 *
 * Consistency of an on-demand snapshot: the emulated process is stopped
 * (SIGSTOP, every thread; see bt_qowner_pause()) while its rings are read
 * and the snapshot is written, then continued (SIGCONT) unless it was
 * already stopped.  A stopped thread is between two guest blocks or inside
 * a system call: the ring protocol (ring-file.h) leaves each record once, in the
 * staging area or in the ring, at any such point, exactly as at a death.
 */
#ifndef BT_QEMU_OWNER_H
#define BT_QEMU_OWNER_H

#include <poll.h>
#include <stddef.h>
#include <sys/types.h>

#include <btrace/btrace.h>

struct bt_qowner;

/* Write an on-demand snapshot of process @pid (stopped) to @path. */
typedef int (*bt_qowner_write_fn)(void *ctx, pid_t pid, const char *path,
				  struct btrace_error *err);

/* A recording's owner set; @quiet: no stderr line when the registry is
 * unavailable.  NULL when out of memory (the recording goes on). */
struct bt_qowner *bt_qowner_new(bt_qowner_write_fn fn, void *ctx, int quiet);

/* Register as the owner of @pid (the launched process or a forked child);
 * joiners name their files after @name (the program's path).  A failure is said once on stderr and the recording goes on. */
void bt_qowner_claim(struct bt_qowner *q, pid_t pid, const char *name);

/* Give up @pid (it died; its snapshot, if any, was published). */
void bt_qowner_drop(struct bt_qowner *q, pid_t pid);

/* How many pollfds bt_qowner_fill() adds. */
size_t bt_qowner_nfds(const struct bt_qowner *q);
/* Fill @pf with the listening sockets (POLLIN); returns how many. */
size_t bt_qowner_fill(const struct bt_qowner *q, struct pollfd *pf);
/* Serve the sockets of @pf (as filled) that are readable. */
void bt_qowner_serve(struct bt_qowner *q, const struct pollfd *pf, size_t n);

/* A crash or exit snapshot of @pid was written at @path: hand it to the
 * processes that joined (read-only descriptor). */
void bt_qowner_publish(struct bt_qowner *q, pid_t pid, const char *path);

/* Release every registration. NULL allowed. */
void bt_qowner_free(struct bt_qowner *q);

/*
 * The one message for `btrace record -p PID` without hardware tracing: a
 * process that already runs natively cannot be moved under the emulator.
 * @why: why Intel PT and BTS are unavailable (NULL: the QEMU backend was
 * asked for).  Returns the error code.
 */
int bt_qemu_attach_refused(int pid, const char *why, struct btrace_error *err);

#endif /* BT_QEMU_OWNER_H */
