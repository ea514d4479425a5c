/* SPDX-License-Identifier: MIT */
/*
 * The launched program's process group and terminal, as natively
 * (docs/qemu-backend.md, "Process group and terminal").  A shell that runs
 * `btrace record -- PROG` as a job makes btrace the leader of the job's
 * process group, and, on a terminal, that group the foreground one: PROG
 * run the same way would be that leader.  So when btrace leads its group,
 * the emulator (whose pid is the program's) leads a group of its own, takes
 * the terminal's foreground when btrace's group had it, and its stops are
 * btrace's (the shell sees the job stop, `fg` and `bg` go on to it).  When
 * btrace does not lead its group (a script's command), the program stays in
 * it, as it would natively.
 */
#ifndef BT_QEMU_JOB_H
#define BT_QEMU_JOB_H

#include <signal.h>
#include <sys/types.h>

struct bt_jobctl {
	int lead;                 /* the emulator leads its own group */
	int tty;                  /* the controlling terminal, or -1 */
	int fg;                   /* it gets the terminal's foreground */
	int set;                  /* the dispositions below are saved */
	pid_t pgrp;               /* the program's group, once forked */
	struct sigaction ttou, chld;
};

/* Before the fork: what btrace's place says the program's is. */
void bt_jobctl_init(struct bt_jobctl *c);
/* In the forked emulator before execve(): its own group, the terminal. */
void bt_jobctl_child(const struct bt_jobctl *c);
/* In btrace after the fork: the same from this side (no race with the
 * exec), SIGTTOU ignored (btrace, now in a background group, still writes
 * its messages and hands the terminal over), and a SIGCHLD handler so that
 * a stop of the emulator wakes the watch (poll(2) returns EINTR). */
void bt_jobctl_parent(struct bt_jobctl *c, pid_t pid);
/* The emulator @pid stopped (a terminal's ^Z, SIGTTIN, SIGSTOP): btrace
 * stops with the same signal, so its own parent sees the job stop; once
 * continued, the terminal goes back to the program's group when btrace's
 * group has it (`fg`), and the program's group continues.  Nothing when it
 * did not stop. */
void bt_jobctl_check(struct bt_jobctl *c, pid_t pid);
/* The program ended: the terminal back to btrace's group, the
 * dispositions back, the terminal closed. */
void bt_jobctl_end(struct bt_jobctl *c);

#endif
