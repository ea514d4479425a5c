/* SPDX-License-Identifier: MIT */
/*
 * The snapshot builder: what every backend's snapshot file shares.  A
 * backend opens a btrace_writer, adds its buffers, threads, mappings and
 * signal, and takes from here the parts that must not differ between
 * backends: the code copied from the process and its files, the default
 * file name, the standard metadata (host, kernel, btrace version, time,
 * command) and the names of signals (btrace_signal_str(), public).  The
 * lines of /proc/PID/maps are parsed by procmaps.h, build IDs read by
 * elf-buildid.h.
 */
#ifndef BT_SNAPBUILD_H
#define BT_SNAPBUILD_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include <btrace/snapshot.h>

/*
 * The default snapshot file name, "btrace-<comm>-<pid>.btrace", in @buf:
 * '/' and ' ' of @comm become '_' (at most 31 bytes of it are kept), and an
 * empty or NULL @comm is "process".
 */
void bt_snap_default_name(char *buf, size_t len, const char *comm, pid_t pid);

/*
 * The code of the executable mappings @maps of process @pid, into @w: the
 * vDSO (the process's when @alive, else btrace's own: the same kernel
 * gives the same image), anonymous executable memory (only while @alive),
 * and each file segment once (through /proc/PID/map_files while @alive,
 * else the path).  Code that cannot be read is left out: the decoder
 * reports it missing.  At most 64 MiB per mapping.
 */
int bt_snap_add_code(struct btrace_writer *w, pid_t pid,
		     const struct btrace_mapping *maps, size_t nmaps, bool alive,
		     struct btrace_error *err);

/*
 * The standard metadata of every snapshot, in this order: host, kernel
 * (uname), btrace_version, time (UTC, ISO 8601) and command: @argv joined
 * by spaces, or without @argv the command line of process @pid
 * (/proc/PID/cmdline) when it can still be read, else no command.
 */
int bt_snap_std_meta(struct btrace_writer *w, char *const *argv, pid_t pid,
		     struct btrace_error *err);

#endif /* BT_SNAPBUILD_H */
