/* SPDX-License-Identifier: MIT */
/*
 * The QEMU recorder as the registry owner of its processes (qemu-owner.h):
 * on-demand snapshots of the running program and joins.
 */
#include "qemu-owner.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <btrace/snapshot.h>

#include "../capture/registry.h"
#include "util.h"

/* How long the threads of a process may take to stop (a hang guard: a
 * thread stops on its way back to user mode). */
#define BT_QOWNER_STOP_MS 5000

struct bt_qown {
	pid_t pid;
	struct bt_registry_owner *reg;
};

struct bt_qowner {
	bt_qowner_write_fn write;
	void *ctx;
	int quiet, said;
	unsigned int ondemand;   /* snapshots served, for unique names */
	struct bt_qown *v;
	size_t n, cap;
};

struct bt_qowner *bt_qowner_new(bt_qowner_write_fn fn, void *ctx, int quiet)
{
	struct bt_qowner *q = calloc(1, sizeof(*q));

	if (!q)
		return NULL;
	q->write = fn;
	q->ctx = ctx;
	q->quiet = quiet;
	return q;
}

void bt_qowner_claim(struct bt_qowner *q, pid_t pid, const char *name)
{
	struct btrace_error err = { 0 };
	struct bt_registry_owner *reg = NULL;
	pid_t other = 0;
	int r;

	if (!q)
		return;
	if (q->n == q->cap) {
		size_t cap = q->cap ? q->cap * 2 : 8;
		struct bt_qown *v = realloc(q->v, cap * sizeof(*v));

		if (!v)
			return;
		q->v = v;
		q->cap = cap;
	}
	r = bt_registry_claim(pid, BTRACE_BACKEND_QEMU, &reg, &other, &err);
	if (r == 0) {
		/* the emulator's own name is not the program's */
		bt_registry_set_name(reg, name && strrchr(name, '/') ?
					  strrchr(name, '/') + 1 : name);
		q->v[q->n].pid = pid;
		q->v[q->n++].reg = reg;
		return;
	}
	/* Said once: without the registry the recording goes on, but
	 * `btrace snapshot` and joins do not reach it. */
	if (!q->quiet && !q->said) {
		if (r == 1)
			bt_msg("btrace record: process %d is registered to "
			       "btrace pid %d already: `btrace snapshot %d` "
			       "goes there", (int)pid, (int)other, (int)pid);
		else
			bt_msg("btrace record: single-owner registry "
			       "unavailable (no `btrace snapshot`, no joins): "
			       "%s", err.msg);
	}
	q->said = 1;
}

void bt_qowner_drop(struct bt_qowner *q, pid_t pid)
{
	for (size_t i = 0; q && i < q->n; i++) {
		if (q->v[i].pid != pid)
			continue;
		bt_registry_release(q->v[i].reg);
		q->v[i] = q->v[--q->n];
		return;
	}
}

size_t bt_qowner_nfds(const struct bt_qowner *q)
{
	return q ? q->n : 0;
}

size_t bt_qowner_fill(const struct bt_qowner *q, struct pollfd *pf)
{
	for (size_t i = 0; q && i < q->n; i++) {
		pf[i].fd = bt_registry_owner_fd(q->v[i].reg);
		pf[i].events = POLLIN;
		pf[i].revents = 0;
	}
	return bt_qowner_nfds(q);
}

/* The state letter of a /proc stat file (after the last ')'), or 0;
 * *@ppid (may be NULL) the parent's pid after it, or 0. */
static char bt_stat_read(const char *path, pid_t *ppid)
{
	char buf[512], *c;
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (ppid)
		*ppid = 0;
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	c = strrchr(buf, ')');
	if (!c || c[1] != ' ' || !c[2])
		return 0;
	if (ppid && c[3] == ' ')
		*ppid = (pid_t)atoi(c + 4);   /* "...) S PPID" */
	return c[2];
}

static char bt_stat_state(const char *path)
{
	return bt_stat_read(path, NULL);
}

/* 1 when every thread of @pid is stopped (or exiting), 0 when some run,
 * -ESRCH when the process is gone. */
static int bt_all_stopped(pid_t pid)
{
	char path[300];
	struct dirent *d;
	DIR *dir;
	int all = 1, any = 0;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	dir = opendir(path);
	if (!dir)
		return -ESRCH;
	while ((d = readdir(dir))) {
		char st;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%.20s/stat",
			 (int)pid, d->d_name);
		st = bt_stat_state(path);
		if (!st)
			continue;   /* the thread ended */
		any = 1;
		if (st != 'T' && st != 't' && st != 'Z' && st != 'X')
			all = 0;
	}
	closedir(dir);
	return any ? all : -ESRCH;
}

static void bt_sleep_ms(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * The threads of a process held in ptrace stops for a snapshot.  A
 * SIGSTOP would outlive us: killed (SIGKILL) in the middle, we left the
 * program stopped, and as our death orphaned its process group with a
 * stopped member the kernel sent it SIGHUP and SIGCONT
 * (kill_orphaned_pgrp() in kernel/exit.c), which ends a program that does
 * not handle SIGHUP.  A ptrace stop (PTRACE_SEIZE, PTRACE_INTERRUPT) is no
 * job-control stop (no SIGNAL_STOP_STOPPED, no SIGCHLD to the parent) and
 * ends with us: the kernel detaches the tracees of a tracer that exits
 * (exit_ptrace()) and they run on.  A signal that arrives for a thread
 * during the stop is given back to it at the detach.
 */
struct bt_held {
	pid_t tid;
	int sig;       /* signal to hand back at the detach */
	int stopped;
};

struct bt_hold {
	struct bt_held *t;
	size_t n, cap;
};

static struct bt_held *bt_hold_find(struct bt_hold *h, pid_t tid)
{
	for (size_t i = 0; i < h->n; i++)
		if (h->t[i].tid == tid)
			return &h->t[i];
	return NULL;
}

/* Whether thread @tid of process @pid has ended (gone, or a zombie). */
static int bt_held_gone(pid_t pid, pid_t tid)
{
	char path[96];
	char st;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid,
		 (int)tid);
	st = bt_stat_state(path);
	return st == 0 || st == 'Z' || st == 'X';
}

/*
 * A held thread that ended (the program exited or was killed during the
 * hold) is a zombie that only its tracer may reap: until then its thread
 * group is not empty, so the process's pidfd never polls readable and its
 * parent never sees it end (release_task() waits for the tracer's wait,
 * exit_notify() and wait_task_zombie() in kernel/exit.c).  Reap it, but
 * not a process's leader that is our own child: its exit status is the
 * recording's (bt_watch_tree() waits for it).
 */
static void bt_held_reap(pid_t pid, pid_t tid)
{
	char path[64];

	if (tid == pid) {
		pid_t ppid;

		snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
		if (bt_stat_read(path, &ppid) && ppid == getpid())
			return;
	}
	for (int k = 0; k < 200; k++) {
		siginfo_t si;

		memset(&si, 0, sizeof(si));
		if (waitid(P_PID, (id_t)tid, &si, WEXITED | __WALL |
			   WNOHANG) < 0 || si.si_pid == tid)
			return;
		bt_sleep_ms(1);
	}
}

static void bt_hold_release(struct bt_hold *h, pid_t pid)
{
	for (size_t i = 0; i < h->n; i++) {
		struct bt_held *t = &h->t[i];

		if (!t->stopped) {
			/* not seen stopped yet: wait for the stop the
			 * interrupt asked for (PTRACE_DETACH needs it) */
			siginfo_t si;

			for (int k = 0; k < 5000 && !t->stopped; k++) {
				memset(&si, 0, sizeof(si));
				if (waitid(P_PID, (id_t)t->tid, &si, WSTOPPED |
					   __WALL | WNOHANG) < 0)
					break;
				if (si.si_pid == t->tid)
					t->stopped = 1;
				else if (bt_held_gone(pid, t->tid))
					break;
				else
					bt_sleep_ms(1);
			}
		}
		if (ptrace(PTRACE_DETACH, t->tid, NULL,
			   (void *)(long)t->sig) < 0 && errno == ESRCH &&
		    bt_held_gone(pid, t->tid))
			bt_held_reap(pid, t->tid);
	}
	free(h->t);
	memset(h, 0, sizeof(*h));
}

/* Seize and interrupt every thread of @pid until all are held.  Returns
 * 0, -EPERM (ptrace not permitted: the caller stops it otherwise, nothing
 * is held), -ESRCH or -ETIMEDOUT (everything released). */
static int bt_hold_all(pid_t pid, struct bt_hold *h)
{
	char path[64];

	memset(h, 0, sizeof(*h));
	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	for (int waited = 0; waited < BT_QOWNER_STOP_MS; waited++) {
		struct dirent *d;
		DIR *dir = opendir(path);
		int fresh = 0, all = 1;

		if (!dir) {
			bt_hold_release(h, pid);
			return -ESRCH;
		}
		while ((d = readdir(dir))) {
			pid_t tid = (pid_t)atoi(d->d_name);

			if (tid <= 0 || bt_hold_find(h, tid))
				continue;
			if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) < 0) {
				int e = errno;

				if (e == ESRCH)
					continue;   /* the thread ended */
				closedir(dir);
				bt_hold_release(h, pid);
				return e == EPERM || e == EACCES ? -EPERM : -e;
			}
			if (h->n == h->cap) {
				size_t cap = h->cap ? h->cap * 2 : 16;
				struct bt_held *v = realloc(h->t,
							    cap * sizeof(*v));

				if (!v) {
					ptrace(PTRACE_DETACH, tid, NULL, NULL);
					closedir(dir);
					bt_hold_release(h, pid);
					return -ENOMEM;
				}
				h->t = v;
				h->cap = cap;
			}
			h->t[h->n++] = (struct bt_held){ tid, 0, 0 };
			ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
			fresh = 1;
		}
		closedir(dir);
		/* Collect the stops: the interrupt's, or a signal's on its
		 * way to the thread (kept to give back). */
		for (size_t i = 0; i < h->n; i++) {
			struct bt_held *t = &h->t[i];
			siginfo_t si;

			if (t->stopped)
				continue;
			memset(&si, 0, sizeof(si));
			if (waitid(P_PID, (id_t)t->tid, &si, WSTOPPED | __WALL |
				   WNOHANG) == 0 && si.si_pid == t->tid) {
				int sig = si.si_status & 0xff;

				t->stopped = 1;
				if ((si.si_status >> 8) == 0)
					t->sig = sig;   /* no event: a
							 * signal's stop */
			} else if (bt_held_gone(pid, t->tid)) {
				t->stopped = 1;   /* gone (reaped at the
						   * release) */
			} else {
				all = 0;
			}
		}
		/* Held threads create no new ones: done when a pass over the
		 * task list found none new and all are stopped. */
		if (all && !fresh)
			return 0;
		if (!all)
			bt_sleep_ms(1);
	}
	bt_hold_release(h, pid);
	return -ETIMEDOUT;
}

/*
 * Stop every thread of @pid.  *@was_stopped: it was stopped already (then
 * it stays so afterwards).  With ptrace permitted (root, or a process we
 * may trace) the threads are held in ptrace stops (@h; bt_hold_all()),
 * else it gets SIGSTOP (*@sigstop).  Returns 0 or a negative errno
 * (-ETIMEDOUT: some thread did not stop; the process was continued again).
 */
static int bt_qowner_pause(pid_t pid, int *was_stopped, struct bt_hold *h,
			   int *sigstop)
{
	char path[64];
	char st;
	int r;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	st = bt_stat_state(path);
	*sigstop = 0;
	memset(h, 0, sizeof(*h));
	if (!st || st == 'Z' || st == 'X')
		return -ESRCH;
	*was_stopped = st == 'T';
	if (*was_stopped)
		return 0;
	r = bt_hold_all(pid, h);
	if (r != -EPERM)
		return r;
	*sigstop = 1;
	if (kill(pid, SIGSTOP) < 0)
		return -errno;
	for (int waited = 0; waited < BT_QOWNER_STOP_MS; waited++) {
		r = bt_all_stopped(pid);

		if (r)
			return r < 0 ? r : 0;
		bt_sleep_ms(1);
	}
	kill(pid, SIGCONT);
	return -ETIMEDOUT;
}

/* Let @pid run again after bt_qowner_pause(). */
static void bt_qowner_resume(pid_t pid, int was_stopped, struct bt_hold *h,
			     int sigstop)
{
	if (was_stopped)
		return;
	if (sigstop)
		kill(pid, SIGCONT);
	else
		bt_hold_release(h, pid);
}

/* Answer a `btrace snapshot` request for @o: stop the process, write the
 * snapshot from its rings, continue it, hand the file over. */
static void bt_qowner_snapshot(struct bt_qowner *q, struct bt_qown *o,
			       int client)
{
	struct btrace_error err = { 0 };
	const char *dir = bt_registry_dir();
	char path[512], note[128];
	int fd = -1, was_stopped = 0, sigstop = 0, r;
	struct bt_hold hold;

	if (!dir) {
		bt_registry_reply(client, -1, NULL,
				  "the registry directory is unavailable");
		return;
	}
	/* In our private 0700 registry directory; unlinked once opened. */
	snprintf(path, sizeof(path), "%s/snap-%d-%u.btrace", dir,
		 (int)getpid(), q->ondemand++);
	r = bt_qowner_pause(o->pid, &was_stopped, &hold, &sigstop);
	if (r < 0) {
		bt_error(&err, r, "process %d: stop failed: %s", (int)o->pid,
			 r == -ETIMEDOUT ? "its threads did not stop within "
			 "5 s" : strerror(-r));
	} else {
		r = q->write(q->ctx, o->pid, path, &err);
		bt_qowner_resume(o->pid, was_stopped, &hold, sigstop);
		if (r == 0) {
			fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			unlink(path);
		}
	}
	snprintf(note, sizeof(note), "on demand, process %d (qemu)",
		 (int)o->pid);
	bt_registry_reply(client, fd, note, err.msg[0] ? err.msg :
			  "the snapshot could not be opened");
	if (fd >= 0)
		close(fd);
}

void bt_qowner_serve(struct bt_qowner *q, const struct pollfd *pf, size_t n)
{
	for (size_t i = 0; q && i < n; i++) {
		int client = -1;

		if (!pf[i].revents)
			continue;
		for (size_t k = 0; k < q->n; k++) {
			if (bt_registry_owner_fd(q->v[k].reg) != pf[i].fd)
				continue;
			if (bt_registry_accept(q->v[k].reg, &client) ==
			    BT_REG_SNAPSHOT)
				bt_qowner_snapshot(q, &q->v[k], client);
			break;
		}
	}
}

void bt_qowner_publish(struct bt_qowner *q, pid_t pid, const char *path)
{
	for (size_t i = 0; q && path && *path && i < q->n; i++) {
		char note[128];
		int fd;

		if (q->v[i].pid != pid || !bt_registry_subscribers(q->v[i].reg))
			continue;
		fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		if (fd < 0)
			return;
		snprintf(note, sizeof(note), "process %d ended (qemu)",
			 (int)pid);
		bt_registry_publish(q->v[i].reg, fd, note);
		close(fd);
		return;
	}
}

void bt_qowner_free(struct bt_qowner *q)
{
	if (!q)
		return;
	for (size_t i = 0; i < q->n; i++)
		bt_registry_release(q->v[i].reg);
	free(q->v);
	free(q);
}

int bt_qemu_attach_refused(int pid, const char *why, struct btrace_error *err)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	if (access(path, F_OK) < 0)
		return bt_error(err, -ESRCH, "process %d: attach failed: no "
				"such process", pid);
	bt_error(err, -BTRACE_ERR_UNSUPPORTED, "process %d: attach failed: "
		 "it runs natively%s%s, and the QEMU backend cannot take over "
		 "a running process (it emulates only the programs it starts)",
		 pid, why ? "; " : "", why ? why : "");
	return bt_hint(err, "record the program from its start: btrace "
		       "record -- PROGRAM [ARGS...]; then 'btrace snapshot "
		       "PID' and 'btrace record -p PID' work on it");
}
