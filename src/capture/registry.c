/* SPDX-License-Identifier: MIT */
/* The single-owner registry (see registry.h for the protocol). */
#include "registry.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <signal.h>
#include <fcntl.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "capture-internal.h"
#include "../format/format.h"
#include "util.h"

#define MAX_SUBS 64

struct bt_registry_owner {
	pid_t target;
	uint32_t backend;
	int lock_fd;
	int listen_fd;
	char lock_path[256];
	char sock_path[256];
	int subs[MAX_SUBS];
	int nsubs;
};

#define BT_REGISTRY_TIMEOUT_MS 10000

struct bt_registry_sub {
	uid_t owner_uid;
	char name[16];          /* the program's name, as the owner set it */
	int fd;
	char buf[512];
	size_t len;
	int pending_fd;
};

static char reg_dir[300];
static char reg_why[400];

/*
 * Make (or check) @d as a directory private to us: created 0700 without
 * following a link, owned by our effective uid; a directory another user
 * owns is refused (it could hold their sockets and links).
 */
static bool private_dir(const char *d)
{
	uid_t me = geteuid();
	struct stat st;
	int fd;

	if (mkdir(d, 0700) < 0 && errno != EEXIST) {
		snprintf(reg_why, sizeof(reg_why), "%s: create failed: %s", d,
			 strerror(errno));
		return false;
	}
	fd = open(d, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 || fstat(fd, &st) < 0) {
		snprintf(reg_why, sizeof(reg_why), "%s: open failed: %s%s", d,
			 strerror(errno), errno == ELOOP || errno == ENOTDIR ?
			 " (a symbolic link or not a directory: remove it)" : "");
		if (fd >= 0)
			close(fd);
		return false;
	}
	if (st.st_uid != me) {
		snprintf(reg_why, sizeof(reg_why),
			 "%s: refused: owned by uid %u, not by uid %u (remove it)",
			 d, (unsigned)st.st_uid, (unsigned)me);
		close(fd);
		return false;
	}
	/* ours: no one else may enter it */
	if ((st.st_mode & 077) && fchmod(fd, 0700) < 0) {
		snprintf(reg_why, sizeof(reg_why), "%s: chmod 0700 failed: %s", d,
			 strerror(errno));
		close(fd);
		return false;
	}
	close(fd);
	return true;
}

/* /run/btrace, root's, holding one private directory per uid. */
static bool run_parent(void)
{
	struct stat st;

	if (mkdir("/run/btrace", 0755) < 0 && errno != EEXIST)
		return false;
	if (lstat("/run/btrace", &st) < 0 || !S_ISDIR(st.st_mode) || st.st_uid)
		return false;
	if (st.st_mode & 022)
		chmod("/run/btrace", 0755);   /* an older btrace made it 1777 */
	return true;
}

const char *bt_registry_dir(void)
{
	const char *env = getenv("BTRACE_REGISTRY");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	uid_t me = geteuid();

	/* One registry per user: $BTRACE_REGISTRY, else root's
	 * /run/btrace/0, else $XDG_RUNTIME_DIR/btrace, else
	 * /tmp/btrace-<uid>; always a directory we own, mode 0700. */
	reg_why[0] = '\0';
	if (env && *env)
		snprintf(reg_dir, sizeof(reg_dir), "%s", env);
	else if (me == 0 && run_parent())
		snprintf(reg_dir, sizeof(reg_dir), "/run/btrace/0");
	else if (me != 0 && xdg && xdg[0] == '/')
		snprintf(reg_dir, sizeof(reg_dir), "%s/btrace", xdg);
	else
		snprintf(reg_dir, sizeof(reg_dir), "/tmp/btrace-%u", (unsigned)me);
	if (!private_dir(reg_dir))
		return NULL;
	return reg_dir;
}

static int target_paths(pid_t target, char *lock, char *sock, size_t len)
{
	const char *dir = bt_registry_dir();
	uint64_t start = bt_proc_starttime(target);

	if (!dir)
		return -ENOENT;
	if (!start)
		return -ESRCH;
	snprintf(lock, len, "%s/%d-%" PRIu64 ".lock", dir, (int)target, start);
	snprintf(sock, len, "%s/%d-%" PRIu64 ".sock", dir, (int)target, start);
	return 0;
}

static pid_t read_owner(int fd)
{
	char buf[128];
	ssize_t n = pread(fd, buf, sizeof(buf) - 1, 0);
	int pid = 0;

	if (n <= 0)
		return 0;
	buf[n] = '\0';
	sscanf(buf, "owner=%d", &pid);
	return (pid_t)pid;
}

/* Keep only what is safe in a file name and on a terminal. */
static void clean_name(char *dst, size_t len, const char *src)
{
	size_t n = 0;

	for (; src && *src && n + 1 < len; src++)
		if (isalnum((unsigned char)*src) || strchr("._+-", *src))
			dst[n++] = *src;
	dst[n] = '\0';
}

/* The lock file's one line, which a joiner receives after "OK ". */
static void write_lock_line(struct bt_registry_owner *o, const char *name)
{
	char line[96], clean[16];
	int n;

	clean_name(clean, sizeof(clean), name);
	n = snprintf(line, sizeof(line), "owner=%d backend=%u%s%s\n",
		     (int)getpid(), o->backend, clean[0] ? " name=" : "", clean);
	if (ftruncate(o->lock_fd, 0) < 0 ||
	    pwrite(o->lock_fd, line, (size_t)n, 0) != n) {
		/* informational only */
	}
}

void bt_registry_set_name(struct bt_registry_owner *o, const char *name)
{
	if (o)
		write_lock_line(o, name);
}

/*
 * What owners killed with SIGKILL left in registry directory @dir: a
 * PID-START.lock that no process holds any more and its PID-START.sock
 * (50 such pairs piled up in /run/btrace/0).  An owner holds its lock
 * file's flock() for as long as it lives, and the kernel drops it when
 * the owner dies however it dies: so a lock we can take is stale.  Each
 * is taken first (no race with a live owner, or with a new claimer, who
 * finds the file unlinked after its own flock() and retries with a fresh
 * one, as after bt_registry_release()), checked to be a plain file of ours
 * with one link, still the one under that name, then removed with its
 * socket while held.  Only these two names of our own private directory
 * are touched, never through a link.  Once per process.
 */
static void sweep_stale(const char *dir)
{
	static int done;
	struct dirent *d;
	DIR *dp;
	int dfd;

	if (done++)
		return;
	dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (dfd < 0)
		return;
	dp = fdopendir(dfd);
	if (!dp) {
		close(dfd);
		return;
	}
	while ((d = readdir(dp))) {
		char sock[NAME_MAX + 1];
		struct stat a, b;
		int pid, n = 0, fd;
		uint64_t start;

		if (sscanf(d->d_name, "%d-%" SCNu64 ".lock%n", &pid, &start,
			   &n) != 2 || n <= 0 || d->d_name[n] || pid <= 0)
			continue;
		fd = openat(dfd, d->d_name, O_RDWR | O_NOFOLLOW | O_NOCTTY |
			    O_CLOEXEC);
		if (fd < 0)
			continue;
		if (fstat(fd, &a) == 0 && S_ISREG(a.st_mode) &&
		    a.st_uid == geteuid() && a.st_nlink == 1 &&
		    flock(fd, LOCK_EX | LOCK_NB) == 0 &&
		    fstatat(dfd, d->d_name, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev) {
			snprintf(sock, sizeof(sock), "%d-%" PRIu64 ".sock",
				 pid, start);
			if (fstatat(dfd, sock, &b, AT_SYMLINK_NOFOLLOW) == 0 &&
			    S_ISSOCK(b.st_mode) && b.st_uid == geteuid())
				unlinkat(dfd, sock, 0);
			unlinkat(dfd, d->d_name, 0);
		}
		close(fd);
	}
	closedir(dp);
}

int bt_registry_claim(pid_t target, uint32_t backend,
		      struct bt_registry_owner **out, pid_t *owner_pid,
		      struct btrace_error *err)
{
	struct bt_registry_owner *o;
	struct sockaddr_un sa;
	mode_t old;
	int r;

	*out = NULL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return bt_error(err, -ENOMEM, "registry: claim failed: out of memory");
	o->lock_fd = o->listen_fd = -1;
	o->target = target;
	r = target_paths(target, o->lock_path, o->sock_path, sizeof(o->lock_path));
	if (r < 0) {
		free(o);
		return bt_error(err, r, "registry: claim of process %d failed: %s",
				(int)target, r == -ESRCH ? "no such process" :
				reg_why);
	}
	sweep_stale(reg_dir);
	for (int tries = 0;; tries++) {
		struct stat a, b;

		/* never through a link; only a plain file of ours */
		o->lock_fd = open(o->lock_path, O_RDWR | O_CREAT | O_NOFOLLOW |
				  O_NOCTTY | O_CLOEXEC, 0600);
		if (o->lock_fd < 0) {
			r = -errno;
			bt_error(err, r, "registry: opening %s failed: %s",
				 o->lock_path, strerror(errno));
			free(o);
			return r;
		}
		/* (no link at all: a leaving owner just unlinked it; the
		 * check after flock() below retries with a fresh file) */
		if (fstat(o->lock_fd, &a) < 0 || !S_ISREG(a.st_mode) ||
		    a.st_uid != geteuid() || a.st_nlink > 1) {
			close(o->lock_fd);
			bt_error(err, -EPERM,
				 "registry: %s: refused: not a plain file of uid %u (remove it)",
				 o->lock_path, (unsigned)geteuid());
			free(o);
			return -EPERM;
		}
		if (flock(o->lock_fd, LOCK_EX | LOCK_NB) < 0) {
			pid_t p = read_owner(o->lock_fd);

			/* Held by a sweeper (sweep_stale() of another btrace)
			 * or a leaving owner for a moment: an owner that is
			 * not alive holds no lock, look again. */
			if (tries < 10 && p > 0 && kill(p, 0) < 0 &&
			    errno == ESRCH) {
				struct timespec ts = { 0, 2000000 };

				close(o->lock_fd);
				nanosleep(&ts, NULL);
				continue;
			}
			close(o->lock_fd);
			free(o);
			if (owner_pid)
				*owner_pid = p;
			return 1;
		}
		/* The file may have been unlinked by a leaving owner between
		 * our open and our lock: then retry with a fresh file. */
		if (fstat(o->lock_fd, &a) == 0 && stat(o->lock_path, &b) == 0 &&
		    a.st_ino == b.st_ino && a.st_dev == b.st_dev)
			break;
		close(o->lock_fd);
		if (tries > 10) {
			free(o);
			return bt_error(err, -EAGAIN, "registry: claim of process %d failed: lock file keeps changing",
					(int)target);
		}
	}
	/* We hold the lock: any previous owner is gone (stale). */
	o->backend = backend;
	write_lock_line(o, NULL);
	unlink(o->sock_path);
	o->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.107s", o->sock_path);
	old = umask(077);   /* the socket is born 0600 */
	r = o->listen_fd < 0 ||
	    bind(o->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(o->listen_fd, 16) < 0 ? -errno : 0;
	umask(old);
	if (r < 0) {
		bt_error(err, r, "registry: socket %s failed: %s", o->sock_path,
			 strerror(errno));
		bt_registry_release(o);
		return r;
	}
	*out = o;
	return 0;
}

int bt_registry_owner_fd(const struct bt_registry_owner *o)
{
	return o ? o->listen_fd : -1;
}

int bt_registry_subscribers(const struct bt_registry_owner *o)
{
	return o ? o->nsubs : 0;
}

static int send_line_fd(int sock, const char *line, int fd)
{
	struct msghdr mh;
	struct iovec iov = { (void *)line, strlen(line) };
	union {
		char buf[CMSG_SPACE(sizeof(int))];
		struct cmsghdr align;
	} u;

	memset(&mh, 0, sizeof(mh));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	if (fd >= 0) {
		struct cmsghdr *c;

		memset(&u, 0, sizeof(u));
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		c = CMSG_FIRSTHDR(&mh);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof(int));
	}
	return sendmsg(sock, &mh, MSG_NOSIGNAL) < 0 ? -errno : 0;
}

static int64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The peer of a connected socket: its uid and pid; -EPERM unless it is us
 * (same effective uid) or root. */
static int peer_check(int sock, uid_t *uid, pid_t *pid)
{
	struct ucred cr;
	socklen_t l = sizeof(cr);

	if (getsockopt(sock, SOL_SOCKET, SO_PEERCRED, &cr, &l) < 0)
		return -errno;
	if (uid)
		*uid = cr.uid;
	if (pid)
		*pid = cr.pid;
	return cr.uid == geteuid() || cr.uid == 0 ? 0 : -EPERM;
}

/* Keep the first descriptor of an SCM_RIGHTS message in *fd, close any
 * other (a peer may send many). */
static void take_fds(struct msghdr *mh, int *fd)
{
	for (struct cmsghdr *c = CMSG_FIRSTHDR(mh); c; c = CMSG_NXTHDR(mh, c)) {
		size_t n;

		if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
			continue;
		n = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < n; i++) {
			int f;

			memcpy(&f, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
			if (fd && *fd < 0)
				*fd = f;
			else
				close(f);
		}
	}
}

/*
 * Read one line (and an fd riding with it) from a socket, within
 * @timeout_ms in all and @len bytes: a peer that sends slowly or too much
 * gets -ETIMEDOUT or -EMSGSIZE, never a hang.
 */
static int recv_line_fd(int sock, char *line, size_t len, int *fd,
			int timeout_ms)
{
	int64_t deadline = now_ms() + timeout_ms;
	size_t n = 0;

	if (fd)
		*fd = -1;
	while (n + 1 < len) {
		struct msghdr mh;
		struct iovec iov = { line + n, 1 };
		union {
			char buf[CMSG_SPACE(sizeof(int) * 4)];
			struct cmsghdr align;
		} u;
		struct pollfd pfd = { .fd = sock, .events = POLLIN };
		int64_t left = deadline - now_ms();
		ssize_t r;

		if (left <= 0)
			return -ETIMEDOUT;
		r = poll(&pfd, 1, (int)left);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
		if (r < 0) {
			if (errno == EINTR || errno == EAGAIN)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		take_fds(&mh, fd);
		if (line[n] == '\n') {
			line[n] = '\0';
			return (int)n + 1;
		}
		n++;
	}
	line[n] = '\0';
	return n + 1 >= len ? -EMSGSIZE : 0;
}

int bt_registry_accept(struct bt_registry_owner *o, int *client)
{
	char line[128], reply[128];
	int c, pid = 0;
	struct timeval tv = { 2, 0 };

	*client = -1;
	c = accept4(o->listen_fd, NULL, NULL, SOCK_CLOEXEC);
	if (c < 0)
		return BT_REG_NONE;
	setsockopt(c, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	/* only our own uid or root may join or ask for a snapshot */
	if (peer_check(c, NULL, NULL) < 0) {
		send_line_fd(c, "ERR permission denied: this recording belongs to another user\n", -1);
		close(c);
		return BT_REG_NONE;
	}
	if (recv_line_fd(c, line, sizeof(line), NULL, 2000) <= 0) {
		close(c);
		return BT_REG_NONE;
	}
	if (sscanf(line, "JOIN %d", &pid) == 1 && pid == o->target &&
	    o->nsubs < MAX_SUBS) {
		char lk[128];
		ssize_t n = pread(o->lock_fd, lk, sizeof(lk) - 1, 0);

		lk[n > 0 ? n : 0] = '\0';
		lk[strcspn(lk, "\n")] = '\0';
		snprintf(reply, sizeof(reply), "OK %.120s\n", lk);
		if (send_line_fd(c, reply, -1) < 0) {
			close(c);
			return BT_REG_NONE;
		}
		o->subs[o->nsubs++] = c;
		return BT_REG_JOINED;
	}
	if (sscanf(line, "SNAPSHOT %d", &pid) == 1 && pid == o->target) {
		*client = c;
		return BT_REG_SNAPSHOT;
	}
	send_line_fd(c, "ERR not the owner of that process\n", -1);
	close(c);
	return BT_REG_NONE;
}

void bt_registry_reply(int client, int fd, const char *note,
		       const char *errmsg)
{
	char line[600];

	if (client < 0)
		return;
	if (fd >= 0)
		snprintf(line, sizeof(line), "SNAP %s\n", note ? note : "");
	else
		snprintf(line, sizeof(line), "ERR %s\n", errmsg ? errmsg : "failed");
	send_line_fd(client, line, fd);
	close(client);
}

int bt_registry_publish(struct bt_registry_owner *o, int fd, const char *note)
{
	char line[600];
	int sent = 0;

	if (!o)
		return 0;
	snprintf(line, sizeof(line), "SNAP %s\n", note ? note : "");
	for (int i = 0; i < o->nsubs; i++) {
		if (send_line_fd(o->subs[i], line, fd) == 0) {
			sent++;
		} else {
			close(o->subs[i]);
			o->subs[i--] = o->subs[--o->nsubs];
		}
	}
	return sent;
}

void bt_registry_release(struct bt_registry_owner *o)
{
	if (!o)
		return;
	for (int i = 0; i < o->nsubs; i++)
		close(o->subs[i]);
	if (o->listen_fd >= 0) {
		unlink(o->sock_path);
		close(o->listen_fd);
	}
	if (o->lock_fd >= 0) {
		/* Unlink while holding the lock, then drop it. */
		unlink(o->lock_path);
		close(o->lock_fd);
	}
	free(o);
}

/*
 * Connect to the owner of @target: the socket must be ours (or root's) in
 * our own registry, and the process serving it our uid or root.
 * *peer_uid is the owner's uid.
 */
static int connect_owner(pid_t target, uid_t *peer_uid, struct btrace_error *err)
{
	char lock[256], sock[256];
	struct sockaddr_un sa;
	struct stat st;
	uid_t uid = 0;
	pid_t pid = 0;
	int fd, r;

	r = target_paths(target, lock, sock, sizeof(lock));
	if (r < 0)
		return bt_error(err, r, "registry: process %d: lookup failed: %s",
				(int)target, r == -ESRCH ? "no such process" :
				reg_why);
	if (lstat(sock, &st) == 0 &&
	    (!S_ISSOCK(st.st_mode) || (st.st_uid != geteuid() && st.st_uid != 0)))
		return bt_error(err, -EPERM,
				"process %d: contacting its btrace owner failed: %s is not a socket of uid %u or root: refused (remove it)",
				(int)target, sock, (unsigned)geteuid());
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return bt_error(err, -errno, "registry: socket failed: %s",
				strerror(errno));
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.107s", sock);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		r = -errno;
		close(fd);
		bt_error(err, r == -ENOENT || r == -ECONNREFUSED ? -ESRCH : r,
			 "process %d: contacting its btrace owner failed: %s",
			 (int)target, r == -ENOENT || r == -ECONNREFUSED ?
			 "no btrace recording owns this process" : strerror(-r));
		return bt_hint(err, "start one with: btrace record -p %d",
			       (int)target);
	}
	r = peer_check(fd, &uid, &pid);
	if (r < 0) {
		close(fd);
		return bt_error(err, r,
				"process %d: contacting its btrace owner failed: %s is served by process %d of uid %u, neither uid %u nor root: refused",
				(int)target, sock, (int)pid, (unsigned)uid,
				(unsigned)geteuid());
	}
	if (peer_uid)
		*peer_uid = uid;
	return fd;
}

/*
 * A descriptor an owner sent: a regular file of the owner's uid that starts
 * like a snapshot.  Returns 0 or -EPROTO with @why filled.
 */
static int check_snapshot_fd(int fd, uid_t owner_uid, char *why, size_t len)
{
	char magic[8];
	struct stat st;

	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		snprintf(why, len, "the owner sent a descriptor that is not a regular file");
		return -EPROTO;
	}
	if (st.st_uid != owner_uid) {
		snprintf(why, len, "the owner (uid %u) sent a file of uid %u",
			 (unsigned)owner_uid, (unsigned)st.st_uid);
		return -EPROTO;
	}
	if (pread(fd, magic, sizeof(magic), 0) != (ssize_t)sizeof(magic) ||
	    memcmp(magic, BT_FILE_MAGIC, sizeof(magic))) {
		snprintf(why, len, "the owner sent a file that is not a btrace snapshot");
		return -EPROTO;
	}
	return 0;
}

int bt_registry_join(pid_t target, struct bt_registry_sub **out,
		     pid_t *owner_pid, uint32_t *backend,
		     struct btrace_error *err)
{
	struct bt_registry_sub *s;
	char line[256];
	int fd, r, op = 0;
	unsigned be = 0;
	uid_t uid = 0;

	*out = NULL;
	fd = connect_owner(target, &uid, err);
	if (fd < 0)
		return fd;
	snprintf(line, sizeof(line), "JOIN %d\n", (int)target);
	if ((r = send_line_fd(fd, line, -1)) < 0 ||
	    (r = recv_line_fd(fd, line, sizeof(line), NULL,
			      BT_REGISTRY_TIMEOUT_MS)) <= 0 ||
	    sscanf(line, "OK owner=%d backend=%u", &op, &be) != 2) {
		close(fd);
		if (r > 0)
			bt_strip_controls(line);
		return bt_error(err, r < 0 ? r : -EPROTO,
				"process %d: joining its btrace owner failed: %s%s",
				(int)target, r < 0 ? strerror(-r) :
				r == 0 ? "the owner closed the connection" : line,
				r == -ETIMEDOUT ? " (no answer within the time limit)" : "");
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		return bt_error(err, -ENOMEM, "registry: join failed: out of memory");
	}
	s->fd = fd;
	s->pending_fd = -1;
	s->owner_uid = uid;
	if (strstr(line, " name="))
		clean_name(s->name, sizeof(s->name), strstr(line, " name=") + 6);
	fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
	if (owner_pid)
		*owner_pid = op;
	if (backend)
		*backend = be;
	*out = s;
	return 0;
}

int bt_registry_sub_fd(const struct bt_registry_sub *s)
{
	return s->fd;
}

const char *bt_registry_sub_name(const struct bt_registry_sub *s)
{
	return s->name;
}

int bt_registry_sub_recv(struct bt_registry_sub *s, int *fd, char *note,
			 size_t len)
{
	for (;;) {
		char *nl = memchr(s->buf, '\n', s->len);
		struct msghdr mh;
		struct iovec iov;
		union {
			char buf[CMSG_SPACE(sizeof(int) * 4)];
			struct cmsghdr align;
		} u;
		ssize_t r;
		int nfd;

		if (nl) {
			size_t l = (size_t)(nl - s->buf);

			*nl = '\0';
			if (!strncmp(s->buf, "SNAP ", 5) && note) {
				snprintf(note, len, "%s", s->buf + 5);
				bt_strip_controls(note);
			}
			memmove(s->buf, nl + 1, s->len - l - 1);
			s->len -= l + 1;
			*fd = s->pending_fd;
			s->pending_fd = -1;
			if (*fd >= 0) {
				char why[160];

				if (check_snapshot_fd(*fd, s->owner_uid, why,
						      sizeof(why)) < 0) {
					close(*fd);
					*fd = -1;
					if (note)
						snprintf(note, len, "%s", why);
					return -EPROTO;
				}
				return 1;
			}
			continue;
		}
		/* a line longer than the buffer is not the protocol */
		if (s->len >= sizeof(s->buf) - 1)
			return -EMSGSIZE;
		memset(&mh, 0, sizeof(mh));
		iov.iov_base = s->buf + s->len;
		iov.iov_len = sizeof(s->buf) - 1 - s->len;
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		r = recvmsg(s->fd, &mh, MSG_CMSG_CLOEXEC);
		if (r < 0)
			return errno == EAGAIN ? -EAGAIN : -errno;
		if (r == 0)
			return 0;
		nfd = -1;
		take_fds(&mh, &nfd);
		if (nfd >= 0) {      /* a newer descriptor replaces an unclaimed one */
			if (s->pending_fd >= 0)
				close(s->pending_fd);
			s->pending_fd = nfd;
		}
		s->len += (size_t)r;
	}
}

void bt_registry_sub_close(struct bt_registry_sub *s)
{
	if (!s)
		return;
	if (s->pending_fd >= 0)
		close(s->pending_fd);
	close(s->fd);
	free(s);
}

int bt_registry_request_snapshot(pid_t target, int *fd, char *note,
				 size_t len, struct btrace_error *err)
{
	char line[600], why[160];
	uid_t uid = 0;
	int s, r;

	*fd = -1;
	s = connect_owner(target, &uid, err);
	if (s < 0)
		return s;
	snprintf(line, sizeof(line), "SNAPSHOT %d\n", (int)target);
	r = send_line_fd(s, line, -1);
	/* the owner writes the snapshot first: a generous limit */
	if (r == 0)
		r = recv_line_fd(s, line, sizeof(line), fd,
				 6 * BT_REGISTRY_TIMEOUT_MS);
	close(s);
	if (r <= 0) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return bt_error(err, r < 0 ? r : -EPROTO,
				"process %d: snapshot request failed: %s",
				(int)target, r == -ETIMEDOUT ?
				"the owner did not answer within the time limit" :
				r < 0 ? strerror(-r) :
				"the owner closed the connection");
	}
	bt_strip_controls(line);
	if (!strncmp(line, "ERR ", 4) || *fd < 0) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return bt_error(err, -EIO, "process %d: snapshot failed: %s",
				(int)target, line + (strncmp(line, "ERR ", 4) ? 0 : 4));
	}
	if (check_snapshot_fd(*fd, uid, why, sizeof(why)) < 0) {
		close(*fd);
		*fd = -1;
		return bt_error(err, -EPROTO,
				"process %d: snapshot refused: %s", (int)target, why);
	}
	if (note)
		snprintf(note, len, "%s", line + 5);
	return 0;
}

int bt_registry_save(int fd, const char *path, struct btrace_error *err)
{
	const size_t bufsize = 1u << 16;
	char tmp[4200], *buf;
	struct stat st;
	off_t off = 0, size;
	int out, r = 0;

	/* only the size the file had when it was checked: a file that grows
	 * under us is not copied without end */
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode))
		return bt_error(err, -EINVAL, "%s: write failed: the snapshot is not a regular file",
				path);
	size = st.st_size;
	buf = malloc(bufsize);   /* not on the stack: btrace runs under small stacks */
	if (!buf)
		return bt_error(err, -ENOMEM, "%s: write failed: out of memory", path);
	out = bt_tmp_create(path, tmp, sizeof(tmp), 0600);
	if (out < 0) {
		free(buf);
		return bt_error(err, out, "%s: create failed: %s", path,
				strerror(-out));
	}
	while (off < size) {
		size_t want = (size_t)(size - off) < bufsize ?
			      (size_t)(size - off) : bufsize;
		ssize_t n = pread(fd, buf, want, off);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		r = bt_write_full(out, buf, (size_t)n, -1);
		if (r)
			break;
		off += n;
	}
	free(buf);
	r = bt_tmp_commit(out, tmp, path, r);
	if (r) {
		bt_error(err, r, "%s: write failed: %s", path, strerror(-r));
		if (r == -ENOSPC || r == -EDQUOT)
			bt_hint(err, "free space on the file system of %s, or "
				"write the snapshot elsewhere with -o", path);
		return r;
	}
	return 0;
}
