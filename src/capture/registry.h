/* SPDX-License-Identifier: MIT */
/*
 * The single-owner registry: one btrace process owns the trace of a target
 * process; others join it.
 *
 * Layout: a directory (BTRACE_REGISTRY, else /run/btrace when writable,
 * else /tmp/btrace-registry; mode 1777) holding per target, named by pid and
 * start time (so a reused pid is another target):
 *   <pid>-<start>.lock   flock(LOCK_EX) held by the owner for its lifetime;
 *                        text "owner=<pid> backend=<n>".  A lock file nobody
 *                        holds is a stale owner (it died): the next claimer
 *                        takes it over.
 *   <pid>-<start>.sock   the owner's AF_UNIX stream socket (mode 0666).
 *
 * Protocol (one text line per request, answers may carry one fd with
 * SCM_RIGHTS):
 *   "JOIN <pid>\n"     -> "OK owner=<pid> backend=<n>\n"; then, for every
 *                         snapshot the owner writes, "SNAP <note>\n" + fd of
 *                         the snapshot file (read-only, already unlinked).
 *                         EOF means the owner left: try bt_registry_claim()
 *                         to take over, or join the new owner.
 *   "SNAPSHOT <pid>\n" -> "SNAP <note>\n" + fd, or "ERR <message>\n".
 *
 * Use from another backend (the QEMU one): after the target exists call
 * bt_registry_claim(); poll bt_registry_owner_fd() in the event loop and
 * call bt_registry_accept() when readable; answer a SNAPSHOT request with
 * bt_registry_reply() (or an error); after writing a crash snapshot call
 * bt_registry_publish() with a read-only fd of the file; at the end
 * bt_registry_release().
 */
#ifndef BT_CAPTURE_REGISTRY_H
#define BT_CAPTURE_REGISTRY_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include <btrace/btrace.h>

struct bt_registry_owner;
struct bt_registry_sub;

/* The registry directory (created if needed); NULL on failure. */
const char *bt_registry_dir(void);

/*
 * Claim ownership of @target.  Returns 0 and *@out when we are the owner
 * now, 1 when another live owner holds it (*@owner_pid set), or a negative
 * code with @err filled.
 */
int bt_registry_claim(pid_t target, uint32_t backend,
		      struct bt_registry_owner **out, pid_t *owner_pid,
		      struct btrace_error *err);

/* Name the recorded program for joiners (their default file name) when the
 * target's own name is not the program's (an emulator).  Only letters,
 * digits and "._+-" are kept, at most 15. */
void bt_registry_set_name(struct bt_registry_owner *o, const char *name);

/* The listening socket (poll for POLLIN). */
int bt_registry_owner_fd(const struct bt_registry_owner *o);

enum bt_registry_req {
	BT_REG_NONE = 0,
	BT_REG_JOINED = 1,      /* a subscriber joined (kept by the owner) */
	BT_REG_SNAPSHOT = 2,    /* answer with bt_registry_reply() */
};

/* Accept one connection.  Returns enum bt_registry_req; for
 * BT_REG_SNAPSHOT *client is the connection to answer. */
int bt_registry_accept(struct bt_registry_owner *o, int *client);

/* Answer a SNAPSHOT request: @fd of the file, or @fd < 0 and @errmsg.
 * Closes @client. */
void bt_registry_reply(int client, int fd, const char *note,
		       const char *errmsg);

/* Send a snapshot to every subscriber; returns how many received it. */
int bt_registry_publish(struct bt_registry_owner *o, int fd, const char *note);

/* Subscribers currently joined. */
int bt_registry_subscribers(const struct bt_registry_owner *o);

/* Give up ownership (remove the socket and the lock file). NULL allowed. */
void bt_registry_release(struct bt_registry_owner *o);

/* Join the owner of @target.  Fills *owner_pid and *backend. */
int bt_registry_join(pid_t target, struct bt_registry_sub **out,
		     pid_t *owner_pid, uint32_t *backend,
		     struct btrace_error *err);

int bt_registry_sub_fd(const struct bt_registry_sub *s);

/* The program name the owner set with bt_registry_set_name(), or "". */
const char *bt_registry_sub_name(const struct bt_registry_sub *s);

/* Read what the owner sent: 1 and *fd (caller closes) for a snapshot,
 * 0 when the owner left, -EAGAIN when nothing complete arrived yet, or a
 * negative error. */
int bt_registry_sub_recv(struct bt_registry_sub *s, int *fd, char *note,
			 size_t len);

void bt_registry_sub_close(struct bt_registry_sub *s);

/* Ask the owner of @target for a snapshot now; *fd is the file. */
int bt_registry_request_snapshot(pid_t target, int *fd, char *note,
				 size_t len, struct btrace_error *err);

/* Copy the snapshot in @fd to @path atomically (temp, fsync, rename, 0600). */
int bt_registry_save(int fd, const char *path, struct btrace_error *err);

#endif /* BT_CAPTURE_REGISTRY_H */
