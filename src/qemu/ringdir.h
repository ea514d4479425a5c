/* SPDX-License-Identifier: MIT */
/*
 * The QEMU backend's private ring directory $TMPDIR/btrace-qemu-XXXXXX:
 * whether TMPDIR is a place no other user can change, removing the
 * directory without following anything planted, and the sweep of
 * directories left by a btrace and a janitor that were both killed
 * (docs/security.md, "The QEMU backend's rings").
 */
#ifndef BT_QEMU_RINGDIR_H
#define BT_QEMU_RINGDIR_H

#include <sys/types.h>

#include <btrace/btrace.h>

#define BT_RINGDIR_PREFIX "btrace-qemu-"

/* Whether every directory of the absolute, resolved path @dir (no
 * symbolic links) is one no other user can change: owned by root or the
 * effective uid, and writable by no one else unless sticky.  Returns 0, or
 * -EPERM (-errno) said in @err naming the directory and its owner. */
int bt_ringdir_parent_check(const char *dir, struct btrace_error *err);

/* Remove ring directory @dir and its entries (files, links, the socket:
 * never followed) if it is still the directory @dev/@ino; a directory put
 * in its place is left alone.  Returns 0 or -errno (-ENOENT: gone). */
int bt_ringdir_remove(const char *dir, dev_t dev, ino_t ino);

/* Remove the provably stale ring directories in @parent (checked with
 * bt_ringdir_parent_check()): ours (effective uid, mode 0700, not a link),
 * holding our socket "sock" that no process has bound any more (a connect
 * is refused: its btrace is gone, its janitor did not clean up).  A
 * directory without a socket (kept rings, one being made) is left alone.
 * Returns how many were removed. */
int bt_ringdir_sweep(const char *parent);

#endif /* BT_QEMU_RINGDIR_H */
