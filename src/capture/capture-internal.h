/* SPDX-License-Identifier: MIT */
/* Small helpers shared inside src/capture. */
#ifndef BT_CAPTURE_INTERNAL_H
#define BT_CAPTURE_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#define BT_CAP_SYS_PTRACE 19
#define BT_CAP_IPC_LOCK 14
#define BT_CAP_SYS_ADMIN 21
#define BT_CAP_PERFMON 38

/* Capability @cap as the kernel's capable() sees it: effective (CapEff of
 * /proc/self/status) and held in the initial user namespace. */
bool bt_has_cap(int cap);

/* The rule of bt_has_cap() over given inputs. */
bool bt_cap_effective(uint64_t capeff, bool initial_userns, int cap);

/* The calling process is in the initial user namespace. */
bool bt_in_initial_userns(void);

/* A "Key:  N kB" value of /proc/<pid>/status (pid 0: self); 0 if absent. */
uint64_t bt_proc_status_kb(pid_t pid, const char *key);

/* A numeric field of /proc/<pid>/status such as "TracerPid"; -1 if absent. */
long bt_proc_status_long(pid_t pid, const char *key);

/* Start time of a process (field 22 of /proc/PID/stat), 0 if unknown. */
uint64_t bt_proc_starttime(pid_t pid);

/* The comm of a thread, "" if unknown. */
void bt_proc_comm(pid_t pid, pid_t tid, char *buf, size_t len);

/* Thread ids of @pid (sorted); returns the count or a negative errno.
 * *tids is malloc'ed. */
int bt_proc_tids(pid_t pid, pid_t **tids);

/* Ids of the online CPUs (from /sys/devices/system/cpu/online); returns the
 * count or a negative errno.  *cpus is malloc'ed. */
int bt_online_cpus(int **cpus);

/* Monotonic clock in nanoseconds. */
uint64_t bt_now_ns(void);

#endif /* BT_CAPTURE_INTERNAL_H */
