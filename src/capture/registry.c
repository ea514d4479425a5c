/* SPDX-License-Identifier: MIT */
/* The single-owner registry (see registry.h for the protocol). */
#include "registry.h"

#include <errno.h>
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
#include <unistd.h>

#include "capture-internal.h"
#include "util.h"

#define MAX_SUBS 64

struct bt_registry_owner {
	pid_t target;
	int lock_fd;
	int listen_fd;
	char lock_path[256];
	char sock_path[256];
	int subs[MAX_SUBS];
	int nsubs;
};

struct bt_registry_sub {
	int fd;
	char buf[512];
	size_t len;
	int pending_fd;
};

static char reg_dir[200];

static bool usable_dir(const char *d)
{
	struct stat st;

	return stat(d, &st) == 0 && S_ISDIR(st.st_mode) && access(d, W_OK | X_OK) == 0;
}

static bool make_dir(const char *d)
{
	if (mkdir(d, 01777) == 0)
		chmod(d, 01777);   /* umask-proof: every user may own a target */
	return usable_dir(d);
}

const char *bt_registry_dir(void)
{
	const char *env = getenv("BTRACE_REGISTRY");

	/* The same directory for every user, so that owners and joiners of
	 * different uids find each other: /run/btrace when it exists or can
	 * be created, else /tmp/btrace-registry. */
	if (env && *env)
		snprintf(reg_dir, sizeof(reg_dir), "%s", env);
	else if (usable_dir("/run/btrace") || make_dir("/run/btrace"))
		snprintf(reg_dir, sizeof(reg_dir), "/run/btrace");
	else
		snprintf(reg_dir, sizeof(reg_dir), "/tmp/btrace-registry");
	if (!usable_dir(reg_dir) && !make_dir(reg_dir))
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

int bt_registry_claim(pid_t target, uint32_t backend,
		      struct bt_registry_owner **out, pid_t *owner_pid,
		      struct btrace_error *err)
{
	struct bt_registry_owner *o;
	struct sockaddr_un sa;
	char line[96];
	int r, n;

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
				"no registry directory");
	}
	for (int tries = 0;; tries++) {
		struct stat a, b;
		mode_t old = umask(0);

		o->lock_fd = open(o->lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
		umask(old);
		if (o->lock_fd < 0) {
			r = -errno;
			bt_error(err, r, "registry: opening %s failed: %s",
				 o->lock_path, strerror(errno));
			free(o);
			return r;
		}
		if (flock(o->lock_fd, LOCK_EX | LOCK_NB) < 0) {
			pid_t p = read_owner(o->lock_fd);

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
	n = snprintf(line, sizeof(line), "owner=%d backend=%u\n", (int)getpid(),
		     backend);
	if (ftruncate(o->lock_fd, 0) < 0 || pwrite(o->lock_fd, line, (size_t)n, 0) != n) {
		/* informational only */
	}
	unlink(o->sock_path);
	o->listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	memset(&sa, 0, sizeof(sa));
	sa.sun_family = AF_UNIX;
	snprintf(sa.sun_path, sizeof(sa.sun_path), "%.107s", o->sock_path);
	if (o->listen_fd < 0 ||
	    bind(o->listen_fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
	    listen(o->listen_fd, 16) < 0) {
		r = -errno;
		bt_error(err, r, "registry: socket %s failed: %s", o->sock_path,
			 strerror(errno));
		bt_registry_release(o);
		return r;
	}
	chmod(o->sock_path, 0666);
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

/* Read one line (and an fd riding with it) from a blocking socket. */
static int recv_line_fd(int sock, char *line, size_t len, int *fd)
{
	size_t n = 0;

	if (fd)
		*fd = -1;
	while (n + 1 < len) {
		struct msghdr mh;
		struct iovec iov = { line + n, 1 };
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} u;
		struct cmsghdr *c;
		ssize_t r;

		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = u.buf;
		mh.msg_controllen = sizeof(u.buf);
		r = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC);
		if (r < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (r == 0)
			break;
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_type == SCM_RIGHTS && fd)
				memcpy(fd, CMSG_DATA(c), sizeof(int));
		if (line[n] == '\n') {
			line[n] = '\0';
			return (int)n + 1;
		}
		n++;
	}
	line[n] = '\0';
	return 0;
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
	setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (recv_line_fd(c, line, sizeof(line), NULL) <= 0) {
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

static int connect_owner(pid_t target, struct btrace_error *err)
{
	char lock[256], sock[256];
	struct sockaddr_un sa;
	int fd, r;

	r = target_paths(target, lock, sock, sizeof(lock));
	if (r < 0)
		return bt_error(err, r, "registry: process %d: lookup failed: %s",
				(int)target, r == -ESRCH ? "no such process" :
				"no registry directory");
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
	return fd;
}

int bt_registry_join(pid_t target, struct bt_registry_sub **out,
		     pid_t *owner_pid, uint32_t *backend,
		     struct btrace_error *err)
{
	struct bt_registry_sub *s;
	char line[256];
	int fd, r, op = 0;
	unsigned be = 0;

	*out = NULL;
	fd = connect_owner(target, err);
	if (fd < 0)
		return fd;
	snprintf(line, sizeof(line), "JOIN %d\n", (int)target);
	if ((r = send_line_fd(fd, line, -1)) < 0 ||
	    (r = recv_line_fd(fd, line, sizeof(line), NULL)) <= 0 ||
	    sscanf(line, "OK owner=%d backend=%u", &op, &be) != 2) {
		close(fd);
		return bt_error(err, r < 0 ? r : -EPROTO,
				"process %d: joining its btrace owner failed: %s",
				(int)target, r < 0 ? strerror(-r) : line);
	}
	s = calloc(1, sizeof(*s));
	if (!s) {
		close(fd);
		return bt_error(err, -ENOMEM, "registry: join failed: out of memory");
	}
	s->fd = fd;
	s->pending_fd = -1;
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

int bt_registry_sub_recv(struct bt_registry_sub *s, int *fd, char *note,
			 size_t len)
{
	for (;;) {
		char *nl = memchr(s->buf, '\n', s->len);
		struct msghdr mh;
		struct iovec iov;
		union {
			char buf[CMSG_SPACE(sizeof(int))];
			struct cmsghdr align;
		} u;
		struct cmsghdr *c;
		ssize_t r;

		if (nl) {
			size_t l = (size_t)(nl - s->buf);

			*nl = '\0';
			if (!strncmp(s->buf, "SNAP ", 5) && note)
				snprintf(note, len, "%s", s->buf + 5);
			memmove(s->buf, nl + 1, s->len - l - 1);
			s->len -= l + 1;
			*fd = s->pending_fd;
			s->pending_fd = -1;
			if (*fd >= 0)
				return 1;
			continue;
		}
		if (s->len >= sizeof(s->buf) - 1)
			s->len = 0;
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
		for (c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c))
			if (c->cmsg_type == SCM_RIGHTS) {
				if (s->pending_fd >= 0)
					close(s->pending_fd);
				memcpy(&s->pending_fd, CMSG_DATA(c), sizeof(int));
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
	char line[600];
	struct timeval tv = { 30, 0 };
	int s, r;

	*fd = -1;
	s = connect_owner(target, err);
	if (s < 0)
		return s;
	setsockopt(s, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	snprintf(line, sizeof(line), "SNAPSHOT %d\n", (int)target);
	r = send_line_fd(s, line, -1);
	if (r == 0)
		r = recv_line_fd(s, line, sizeof(line), fd);
	close(s);
	if (r <= 0)
		return bt_error(err, r < 0 ? r : -EPROTO,
				"process %d: snapshot request failed: %s",
				(int)target, r < 0 ? strerror(-r) :
				"the owner closed the connection");
	if (!strncmp(line, "ERR ", 4) || *fd < 0) {
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		return bt_error(err, -EIO, "process %d: snapshot failed: %s",
				(int)target, line + (strncmp(line, "ERR ", 4) ? 0 : 4));
	}
	if (note)
		snprintf(note, len, "%s", line + 5);
	return 0;
}

int bt_registry_save(int fd, const char *path, struct btrace_error *err)
{
	char tmp[4200], buf[65536];
	off_t off = 0;
	int out, r = 0;

	snprintf(tmp, sizeof(tmp), "%s.tmp%d", path, (int)getpid());
	out = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (out < 0)
		return bt_error(err, -errno, "%s: create failed: %s", tmp,
				strerror(errno));
	for (;;) {
		ssize_t n = pread(fd, buf, sizeof(buf), off);

		if (n < 0) {
			r = -errno;
			break;
		}
		if (n == 0)
			break;
		if (write(out, buf, (size_t)n) != n) {
			r = -EIO;
			break;
		}
		off += n;
	}
	if (!r && fsync(out) < 0)
		r = -errno;
	close(out);
	if (!r && rename(tmp, path) < 0)
		r = -errno;
	if (r) {
		unlink(tmp);
		return bt_error(err, r, "%s: write failed: %s", path, strerror(-r));
	}
	return 0;
}
