// SPDX-License-Identifier: MIT
/*
 * The QEMU backend, host side: run the program under qemu-x86_64 with the
 * btrace plugin, wait for it, and when it dies of a selected signal (or
 * exits, with BTRACE_ON_EXIT) turn the plugin's rings into a snapshot: one
 * Intel PT (or BTS) buffer per thread, tasks, mappings with build IDs, the
 * code of every mapped executable file, and the signal with the exact fault
 * registers from QEMU's guest core.
 */
#include "config.h"

#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <stddef.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "qemu/qemu-config.h"
#include "plugin-exec.h"
#include "procmaps.h"
#include "qemu-job.h"
#include "qemu-launch.h"
#include "qemu-limits.h"
#include "qemu-owner.h"
#include "qemu-record.h"
#include "ringdir.h"
#include "snapbuild.h"
#include "util.h"

#define BT_QEMU_DEFAULT_SIZE (4ull << 20)
#define BT_QEMU_DEFAULT_PAD 4096ull
#define BT_QEMU_PSB_PERIOD 4096u   /* bytes; field value 1 (2^(1+11)) */

/* The guest CPU model QEMU 7.2 emulates with -cpu max under TCG. */
#define BT_QEMU_CPU_VENDOR BTRACE_CPU_AMD
#define BT_QEMU_CPU_FAMILY 15
#define BT_QEMU_CPU_MODEL 107
#define BT_QEMU_CPU_STEPPING 1

/* ---- finding things ---- */

static int bt_is_exec_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK);
}

static int bt_path_search(const char *name, char *out, size_t len)
{
	const char *path = getenv("PATH");
	const char *p, *e;

	if (strchr(name, '/')) {
		snprintf(out, len, "%s", name);
		return bt_is_exec_file(out) ? 0 : -ENOENT;
	}
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		snprintf(out, len, "%.*s/%s", (int)(e - p), e > p ? p : ".",
			 name);
		if (bt_is_exec_file(out))
			return 0;
	}
	return -ENOENT;
}

int bt_qemu_find_emulator(char *out, size_t len, struct btrace_error *err)
{
	const char *env = getenv("BTRACE_QEMU");
	struct bt_qemu_elf e;
	int rc;

	rc = bt_path_search(env && *env ? env : "qemu-x86_64", out, len);
	if (rc) {
		bt_error(err, -ENOENT, "qemu-x86_64: find emulator failed: %s",
			 env && *env ? "BTRACE_QEMU names no executable file" :
				       "not found in PATH");
		return bt_hint(err, "install the qemu-user package "
			       "(apt install qemu-user), which provides "
			       "qemu-x86_64 with plugin support");
	}
	rc = bt_qemu_elf_read(out, &e);
	if (rc == 0 && e.is_elf64 && !e.has_interp) {
		bt_error(err, -BTRACE_ERR_UNSUPPORTED,
			 "%s: load plugin failed: this qemu-x86_64 is statically "
			 "linked and cannot load TCG plugins", out);
		return bt_hint(err, "install the qemu-user package (the "
			       "dynamic build; qemu-user-static has no plugin "
			       "support) or set BTRACE_QEMU to it");
	}
	return 0;
}

static int bt_try_plugin(char *out, size_t len, const char *dir,
			 const char *rel)
{
	snprintf(out, len, "%s/%s", dir, rel);
	return access(out, R_OK) == 0;
}

/* Whether the running program is one of this build tree's (decided from
 * where it is, against the build directory recorded at configure time): an
 * installed btrace never uses a build tree's files, wherever it runs. */
static int bt_exe_in_build_tree(const char *exe)
{
	char root[PATH_MAX];
	size_t n;

	if (!realpath(BTRACE_QEMU_BUILD_ROOT, root))
		return 0;
	n = strlen(root);
	return n > 1 && !strncmp(exe, root, n) && exe[n] == '/';
}

int bt_qemu_find_plugin(char *out, size_t len, struct btrace_error *err)
{
	const char *env = getenv("BTRACE_QEMU_PLUGIN");
	char exe[PATH_MAX], *slash;
	const char *rel = BTRACE_QEMU_PLUGIN_RELDIR "/libbtrace-qemu.so";

	if (env && *env) {
		snprintf(out, len, "%s", env);
		if (access(out, R_OK) == 0)
			return 0;
		bt_error(err, -ENOENT, "%s: find plugin failed: %s", env,
			 strerror(errno));
		return bt_hint(err, "BTRACE_QEMU_PLUGIN must name "
			       "libbtrace-qemu.so");
	}
	/* An installed btrace: <prefix>/<bindir>/btrace ->
	 * <prefix>/<libdir>/btrace/, relative to the program itself, so a
	 * copied or moved prefix finds its own plugin. */
	if (realpath("/proc/self/exe", exe) && (slash = strrchr(exe, '/'))) {
		*slash = 0;
		if (rel[0] != '/' &&
		    bt_try_plugin(out, len, exe, rel))
			goto found;
		*slash = '/';
		/* A program of this build tree (src/cli/btrace, the tests):
		 * the build tree's plugin, never searched for elsewhere. */
		if (bt_exe_in_build_tree(exe) &&
		    bt_try_plugin(out, len, BTRACE_QEMU_BUILD_PLUGIN_DIR,
				  "libbtrace-qemu.so"))
			goto found;
	}
	/* The configured install directory (libbtrace used by a program
	 * installed elsewhere, or libdir outside the prefix). */
	if (bt_try_plugin(out, len, BTRACE_QEMU_PLUGIN_DIR, "libbtrace-qemu.so"))
		goto found;
	bt_error(err, -ENOENT, "libbtrace-qemu.so: find plugin failed: not in "
		 "%s relative to the program, nor in %s",
		 BTRACE_QEMU_PLUGIN_RELDIR,
		 BTRACE_QEMU_PLUGIN_DIR);
	return bt_hint(err, "reinstall btrace (the plugin is installed with "
		       "it) or set BTRACE_QEMU_PLUGIN to the plugin's path");
found:
	/* QEMU resolves the path itself: hand it an absolute, clean one. */
	if (realpath(out, exe))
		snprintf(out, len, "%s", exe);
	return 0;
}

int bt_qemu_find_preload(const char *plugin, char *out, size_t len,
			 struct btrace_error *err)
{
	const char *env = getenv("BTRACE_QEMU_PRELOAD");
	const char *slash = strrchr(plugin, '/');

	if (env && *env) {
		snprintf(out, len, "%s", env);
		if (env[0] == '/' && access(out, R_OK) == 0)
			return 0;
		bt_error(err, -ENOENT, "%s: find preload library failed: %s", env,
			 env[0] == '/' ? strerror(errno) : "not an absolute path");
		return bt_hint(err, "BTRACE_QEMU_PRELOAD must be the absolute "
			       "path of libbtrace-qemu-preload.so");
	}
	/* Built and installed next to the plugin. */
	snprintf(out, len, "%.*s/libbtrace-qemu-preload.so",
		 slash ? (int)(slash - plugin) : 1, slash ? plugin : ".");
	if (out[0] == '/' && access(out, R_OK) == 0)
		return 0;
	bt_error(err, -ENOENT, "%s: find preload library failed: not next to "
		 "the plugin %s", out, plugin);
	return bt_hint(err, "reinstall btrace (the library keeps QEMU's guest "
		       "core private) or set BTRACE_QEMU_PRELOAD to its path");
}

int bt_qemu_check_program(char *const *argv, char *out, size_t len,
			  struct bt_qemu_launch *launch,
			  struct btrace_error *err)
{
	const char *prog = argv[0];
	struct bt_qemu_elf e;
	int rc;

	if (bt_path_search(prog, out, len)) {
		bt_error(err, -ENOENT, "%s: find program failed: %s", prog,
			 strchr(prog, '/') ? "no such executable file" :
					     "not found in PATH");
		return bt_hint(err, "check the program name and that it is "
			       "executable");
	}
	/* A "#!" script runs through its interpreter, as the kernel runs
	 * it (qemu-launch.c); @out becomes the program QEMU loads. */
	rc = bt_qemu_launch_resolve(argv, out, launch, err);
	if (rc)
		return rc;
	snprintf(out, len, "%s", launch->prog);
	rc = bt_qemu_elf_read(out, &e);
	if (rc == -ENOEXEC) {
		bt_error(err, -ENOEXEC, "%s: load program failed: not an ELF "
			 "executable or a #! script", out);
		return bt_hint(err, "record the program that runs it, e.g. "
			       "btrace record -- /bin/sh FILE");
	}
	if (rc)
		return bt_error(err, rc, "%s: read program failed: %s", out,
				strerror(-rc));
	if (!e.is_elf64 || e.machine != EM_X86_64) {
		bt_error(err, -ENOEXEC, "%s: load program failed: not an x86-64 "
			 "program (ELF machine %u)", out, e.machine);
		return bt_hint(err, "the QEMU backend emulates x86-64 user "
			       "programs only");
	}
	return 0;
}

/* ---- running ---- */

/*
 * Signals sent to btrace alone go on to the program, as if btrace were not
 * there: every signal a user or a supervisor sends to stop, reload, wake or
 * poke a process.  Not forwarded: SIGKILL and SIGSTOP (cannot be caught),
 * the job-control signals SIGTSTP, SIGTTIN, SIGTTOU and SIGCONT (the
 * terminal and the shell send them to the whole process group, which holds
 * the emulator too), SIGCHLD (ours), and the synchronous ones SIGSEGV,
 * SIGBUS, SIGILL, SIGFPE, SIGTRAP, SIGABRT and SIGSYS (btrace's own).
 * Signals from the kernel (si_code > 0: a terminal's ^C or ^\ reaches the
 * whole foreground process group already) and those btrace raised itself
 * (SIGPIPE of a write to a closed pipe) are not sent a second time, nor
 * are signals sent to the whole process group (bt_fwd_group()).  The
 * emulator starts with the dispositions btrace was given (a background
 * job's ignored SIGINT and SIGQUIT stay ignored unless the program installs
 * handlers, as natively); btrace forwards even those, since the program
 * decides what it ignores.
 */
static const int bt_fwd_sigs[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM,
	SIGPIPE, SIGWINCH, SIGURG, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ,
	SIGPWR, SIGSTKFLT,
};
#define BT_FWD_MAX 64

static volatile sig_atomic_t bt_child_pid;
/* The emulator leads its own process group (qemu-job.h): a signal to
 * btrace's group (the job's) goes on to the program's group. */
static volatile sig_atomic_t bt_child_lead;
/* Signals that came before the emulator's pid was known (bit per signal). */
static volatile sig_atomic_t bt_fwd_pending[BT_FWD_MAX + 1];

/* The janitor (bt_janitor_start()), a witness in our process group with
 * every signal blocked, and the write end of its pipe. */
static volatile sig_atomic_t bt_wit_pid;
static volatile sig_atomic_t bt_wit_fd = -1;

/*
 * Whether signal @sig just came to the whole process group (kill -SIG
 * -PGID, kill(-1), a terminal's ^C), not to btrace alone: then the
 * emulator, in the same group, got it directly, and forwarding it would
 * deliver it twice.  The janitor, in our group with the signal blocked,
 * then has it pending (its ShdPnd in /proc/PID/status), and we take that
 * instance away.  The kernel signals a group's members under tasklist_lock
 * (__kill_pgrp_info(), kernel/signal.c) newest member first (attach_pid()
 * adds at the head of the group's list, kernel/pid.c): the janitor, forked
 * after we joined our group, has it queued before we do.  Async-signal-
 * safe (open, read, write).
 */
static int bt_fwd_group(int sig)
{
	static const char key[] = "\nShdPnd:\t";
	char path[48] = "/proc/", buf[4096];
	unsigned long long mask = 0;
	pid_t w = bt_wit_pid;
	size_t len = 6, got = 0;
	char digits[12];
	int fd, nd = 0;
	ssize_t n;

	if (w <= 0 || sig < 1 || sig > 64)
		return 0;
	do
		digits[nd++] = (char)('0' + w % 10);
	while ((w /= 10) && nd < 11);
	while (nd)
		path[len++] = digits[--nd];
	memcpy(path + len, "/status", 8);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	while (got < sizeof(buf) - 1 &&
	       (n = read(fd, buf + got, sizeof(buf) - 1 - got)) > 0)
		got += (size_t)n;
	close(fd);
	buf[got] = 0;
	for (size_t i = 0; i + sizeof(key) - 1 < got; i++) {
		if (memcmp(buf + i, key, sizeof(key) - 1))
			continue;
		for (const char *h = buf + i + sizeof(key) - 1;; h++) {
			int v = *h >= '0' && *h <= '9' ? *h - '0' :
				*h >= 'a' && *h <= 'f' ? *h - 'a' + 10 : -1;

			if (v < 0)
				break;
			mask = mask << 4 | (unsigned)v;
		}
		break;
	}
	if (!(mask >> (sig - 1) & 1))
		return 0;
	{
		unsigned char b = (unsigned char)sig;
		int wfd = bt_wit_fd;

		if (wfd >= 0 && write(wfd, &b, 1) != 1)
			b = 0;   /* the janitor is gone: nothing to take */
	}
	return 1;
}

/* Real-time signals 63 and 64 sent to btrace, which QEMU cannot deliver
 * (said when the program ends). */
static volatile sig_atomic_t bt_fwd_lost;

/* @sig to the emulator as the guest's @sig: a real-time signal is shifted
 * as QEMU maps them (bt_qemu_host_signal()).  Async-signal-safe. */
static void bt_fwd_send(pid_t pid, int sig)
{
	int host = bt_qemu_host_signal(sig);

	if (host)
		kill(pid, host);
	else if (!bt_fwd_lost)
		bt_fwd_lost = sig;
}

static void bt_forward(int sig, siginfo_t *si, void *uc)
{
	int e = errno;

	(void)uc;
	/* A group's signal (the kernel's too) is taken from the witness
	 * first, whatever else is decided.  When the program leads a group
	 * of its own, natively the job's group would be its group: the
	 * signal goes there. */
	if (bt_fwd_group(sig)) {
		if (bt_child_lead && bt_child_pid > 0)
			bt_fwd_send(-bt_child_pid, sig);
		errno = e;
		return;
	}
	if (si->si_code > 0 ||
	    (si->si_code == SI_USER && si->si_pid == getpid())) {
		errno = e;
		return;
	}
	if (bt_child_pid > 0)
		bt_fwd_send(bt_child_pid, sig);
	else if (sig > 0 && sig <= BT_FWD_MAX)
		bt_fwd_pending[sig] = 1;
	errno = e;
}

struct bt_fwd {
	struct sigaction old[BT_FWD_MAX + 1];
	unsigned char set[BT_FWD_MAX + 1];
	struct sigaction chld;   /* the caller's SIGCHLD, when chld_set */
	int chld_set;
};

static int bt_fwd_wanted(int sig)
{
	if (sig >= SIGRTMIN && sig <= SIGRTMAX)
		return 1;
	for (size_t i = 0; i < sizeof(bt_fwd_sigs) / sizeof(bt_fwd_sigs[0]); i++)
		if (bt_fwd_sigs[i] == sig)
			return 1;
	return 0;
}

/* Install the forwarding handler (before the emulator starts, so nothing
 * sent meanwhile is lost or kills btrace). */
static void bt_fwd_install(struct bt_fwd *f)
{
	struct sigaction sa;

	memset(f, 0, sizeof(*f));
	bt_fwd_lost = 0;
	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = bt_forward;
	sa.sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa.sa_mask);
	for (int sig = 1; sig <= BT_FWD_MAX && sig < NSIG; sig++) {
		bt_fwd_pending[sig] = 0;
		if (!bt_fwd_wanted(sig) || sigaction(sig, NULL, &f->old[sig]))
			continue;
		if (!sigaction(sig, &sa, NULL))
			f->set[sig] = 1;
	}
	/* An ignored SIGCHLD (or SA_NOCLDWAIT) inherited from whoever
	 * started btrace (a daemon, `trap '' CHLD`) makes the kernel reap
	 * our children: the emulator's wait status would be lost.  Ours is
	 * the default while the program runs; the emulator gets the
	 * caller's back before its execve() (bt_fwd_restore()), so the
	 * program starts with SIGCHLD ignored as it would natively (QEMU
	 * hands an ignored host disposition to the guest, signal_init() in
	 * linux-user/signal.c). */
	if (!sigaction(SIGCHLD, NULL, &f->chld) &&
	    (f->chld.sa_handler == SIG_IGN ||
	     (f->chld.sa_flags & SA_NOCLDWAIT))) {
		struct sigaction dfl;

		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		sigemptyset(&dfl.sa_mask);
		if (!sigaction(SIGCHLD, &dfl, NULL))
			f->chld_set = 1;
	}
}

/* The caller's dispositions back (in btrace, and in the emulator before
 * its execve(): what was ignored stays ignored for the program). */
static void bt_fwd_restore(struct bt_fwd *f)
{
	for (int sig = 1; sig <= BT_FWD_MAX && sig < NSIG; sig++)
		if (f->set[sig])
			sigaction(sig, &f->old[sig], NULL);
	if (f->chld_set)
		sigaction(SIGCHLD, &f->chld, NULL);
}

/* Say which signals came to btrace after the program ended (held while
 * its snapshot was written: the program they were for is gone, as it
 * would be natively). */
static void bt_fwd_said(void)
{
	char names[256] = "";
	size_t len = 0;

	for (int sig = 1; sig <= BT_FWD_MAX && sig < NSIG; sig++) {
		char name[32];

		if (!bt_fwd_pending[sig])
			continue;
		bt_fwd_pending[sig] = 0;
		if (!btrace_signal_str(sig, name, sizeof(name)))
			snprintf(name, sizeof(name), "signal %d", sig);
		len += (size_t)snprintf(names + len, sizeof(names) - len,
					"%s%s", len ? ", " : "", name);
		if (len >= sizeof(names))
			len = sizeof(names) - 1;
	}
	if (len)
		bt_msg("btrace record: %s came after the program ended, while "
		       "its snapshot was written: the snapshot was finished "
		       "first, and the program's status passes through",
		       names);
}

/* The emulator runs: forward what came before, from now on directly. */
static void bt_fwd_start(pid_t pid)
{
	bt_child_pid = pid;
	for (int sig = 1; sig <= BT_FWD_MAX && sig < NSIG; sig++)
		if (bt_fwd_pending[sig]) {
			bt_fwd_pending[sig] = 0;
			bt_fwd_send(pid, sig);
		}
}

/*
 * Every process's ring is a memfd (shmem pages): the launched process's is
 * created here and inherited by QEMU (plugin argument fd=); every other
 * (a forked child, a re-executed emulator) is created by the plugin and
 * handed to us as a descriptor over the socket "sock" in the private ring
 * directory (bt_rings_recv()).  Nothing the rings write goes to TMPDIR, so
 * a full or read-only TMPDIR cannot make a ring write fail: a sparse file
 * there killed the guest with SIGBUS at the first page the disk had no room
 * for.  The pages cost no disk page cache, no block allocation at the first
 * write of each page and no writeback (docs/performance.md).  We keep our
 * own descriptor of each, so a ring outlives the emulator whatever kills it;
 * the rest of the backend reads rings by path: <dir>/ring.<pid> is a
 * symlink to our /proc/self/fd/N.
 *
 * The directory holds only those links, the socket and QEMU's guest cores.
 * A janitor process (bt_janitor_start()) removes it when we are gone,
 * however we went (SIGKILL included).
 */
struct bt_ringfd {
	pid_t pid;
	int fd;
};

struct bt_rings {
	char dir[PATH_MAX];
	int sock;              /* <dir>/sock, SO_PASSCRED, non-blocking */
	int janitor_fd;        /* write end: EOF tells the janitor to clean */
	pid_t janitor;
	dev_t dev;             /* the directory mkdtemp() made: only it is */
	ino_t ino;             /* ever removed (ringdir.c) */
	struct bt_ringfd *r;
	size_t n, cap;
};

/* Whether @fd of a ring belongs to process @pid: a regular file (a memfd)
 * with the ring's magic and that pid. */
static int bt_ring_fd_ok(int fd, pid_t pid)
{
	struct bt_ring_hdr h;
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) &&
	       pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	       !memcmp(h.magic, BT_RING_MAGIC, 8) &&
	       h.version == BT_RING_VERSION && h.pid == pid;
}

/* Make <dir>/ring.<pid> reach ring descriptor @fd (replacing what it
 * reached), and keep @fd as that process's.  Returns 0 or -errno. */
static int bt_rings_add(struct bt_rings *rs, pid_t pid, int fd)
{
	char tmp[PATH_MAX + 48], path[PATH_MAX + 32], target[64];
	size_t i;

	snprintf(tmp, sizeof(tmp), "%s/.ring.%d.lnk", rs->dir, (int)pid);
	snprintf(path, sizeof(path), "%s/ring.%d", rs->dir, (int)pid);
	snprintf(target, sizeof(target), "/proc/self/fd/%d", fd);
	unlink(tmp);
	if (symlink(target, tmp) || rename(tmp, path)) {
		int e = errno;

		unlink(tmp);
		return -e;
	}
	for (i = 0; i < rs->n && rs->r[i].pid != pid; i++)
		;
	if (i == rs->n) {
		if (bt_grow((void **)&rs->r, &rs->cap, rs->n, sizeof(*rs->r))) {
			unlink(path);
			return -ENOMEM;
		}
		rs->n++;
	} else {
		close(rs->r[i].fd);
	}
	rs->r[i].pid = pid;
	rs->r[i].fd = fd;
	return 0;
}

/* The ring descriptor of process @pid, or -1. */
static int bt_rings_fd(const struct bt_rings *rs, pid_t pid)
{
	for (size_t i = 0; i < rs->n; i++)
		if (rs->r[i].pid == pid)
			return rs->r[i].fd;
	return -1;
}

/* Forget process @pid's ring: its pages are freed once no emulator maps
 * it. */
static void bt_rings_drop(struct bt_rings *rs, pid_t pid)
{
	char path[PATH_MAX + 32];

	for (size_t i = 0; i < rs->n; i++) {
		if (rs->r[i].pid != pid)
			continue;
		close(rs->r[i].fd);
		rs->r[i] = rs->r[--rs->n];
		snprintf(path, sizeof(path), "%s/ring.%d", rs->dir, (int)pid);
		unlink(path);
		return;
	}
}

/*
 * One ring handed over by the plugin: *@pid (the sender's, from the
 * kernel's SCM_CREDENTIALS, not from the message) and its descriptor,
 * linked as <dir>/ring.<pid>; *@ack: the socket a forked child waits on
 * until we watch it (bt_watch_ack()), or -1.  Returns 1 for one, 0 when
 * the queue is empty.  Anything else in the queue (not a ring of the
 * sending process) is dropped; a ring that could not be received (no
 * descriptor left: the kernel drops it, MSG_CTRUNC) is said.
 */
static int bt_rings_recv(struct bt_rings *rs, pid_t *pid, int *ack)
{
	for (;;) {
		union {
			char buf[CMSG_SPACE(sizeof(struct ucred)) +
				 CMSG_SPACE(4 * sizeof(int))];
			struct cmsghdr align;
		} c;
		uint32_t magic = 0;
		struct iovec iov = { &magic, sizeof(magic) };
		struct msghdr m;
		struct ucred cr = { 0, (uid_t)-1, (gid_t)-1 };
		int fds[4], nfd = 0, have_cr = 0;
		ssize_t n;

		*ack = -1;
		if (rs->sock < 0)
			return 0;
		memset(&m, 0, sizeof(m));
		m.msg_iov = &iov;
		m.msg_iovlen = 1;
		m.msg_control = c.buf;
		m.msg_controllen = sizeof(c.buf);
		n = recvmsg(rs->sock, &m, MSG_DONTWAIT | MSG_CMSG_CLOEXEC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return 0;
		for (struct cmsghdr *cm = CMSG_FIRSTHDR(&m); cm;
		     cm = CMSG_NXTHDR(&m, cm)) {
			if (cm->cmsg_level != SOL_SOCKET)
				continue;
			if (cm->cmsg_type == SCM_RIGHTS) {
				size_t k = (cm->cmsg_len - CMSG_LEN(0)) /
					   sizeof(int);

				for (size_t i = 0; i < k && nfd < 4; i++)
					memcpy(&fds[nfd++], CMSG_DATA(cm) +
					       i * sizeof(int), sizeof(int));
			} else if (cm->cmsg_type == SCM_CREDENTIALS &&
				   cm->cmsg_len >= CMSG_LEN(sizeof(cr))) {
				memcpy(&cr, CMSG_DATA(cm), sizeof(cr));
				have_cr = 1;
			}
		}
		if ((m.msg_flags & MSG_CTRUNC) && have_cr &&
		    magic == BT_RING_SOCK_MAGIC)
			bt_msg("btrace: warning: process %d: receive ring "
			       "failed: no descriptor left (ulimit -n); it "
			       "runs untraced", (int)cr.pid);
		if (n == (ssize_t)sizeof(magic) && magic == BT_RING_SOCK_MAGIC &&
		    have_cr && cr.pid > 0 && (nfd == 1 || nfd == 2) &&
		    !(m.msg_flags & MSG_CTRUNC) &&
		    bt_ring_fd_ok(fds[0], cr.pid) &&
		    bt_rings_add(rs, cr.pid, fds[0]) == 0) {
			*pid = cr.pid;
			*ack = nfd == 2 ? fds[1] : -1;
			return 1;
		}
		for (int i = 0; i < nfd; i++)
			close(fds[i]);
	}
}

/* A process that removes the ring directory once its pipe (the read end
 * of a pipe only we hold) reads EOF, i.e. once we are gone, whatever ended
 * us; a byte 'k' first means keep it.  It holds no other descriptor (no
 * ring, no pipe of the program's).  It stays in our process group with
 * every signal blocked (never run, never ignored: a blocked signal stays
 * pending), so that it witnesses which signals were sent to the whole
 * group (bt_fwd_group()); a byte 1..64 takes one pending instance of that
 * signal away.  Returns its pid, or -errno. */
static pid_t bt_janitor_start(const struct bt_rings *rs, int *wfd)
{
	int p[2];
	pid_t pid;

	if (pipe2(p, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0) {
		int e = errno;

		close(p[0]);
		close(p[1]);
		return -e;
	}
	if (pid == 0) {
		struct sigaction dfl;
		sigset_t all;
		unsigned char c = 0;
		int nul;
		ssize_t n;

		close(p[1]);   /* only btrace holds the write end */

		sigfillset(&all);
		sigprocmask(SIG_BLOCK, &all, NULL);
		memset(&dfl, 0, sizeof(dfl));
		dfl.sa_handler = SIG_DFL;
		for (int sig = 1; sig < NSIG; sig++)
			if (sig != SIGKILL && sig != SIGSTOP)
				sigaction(sig, &dfl, NULL);
		prctl(PR_SET_NAME, (unsigned long)"btrace-janitor", 0, 0, 0);
		if (p[0] != 3 && dup2(p[0], 3) < 0)
			_exit(1);
		nul = open("/dev/null", O_RDWR | O_CLOEXEC);
		for (int fd = 0; fd < 3 && nul >= 0; fd++)
			if (fd != nul)
				dup2(nul, fd);
		syscall(SYS_close_range, 4u, ~0u, 0u);
		if (nul > 3)
			close(nul);
		for (;;) {
			n = read(3, &c, 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n == 1 && c >= 1 && c <= 64) {
				struct timespec zero = { 0, 0 };
				sigset_t one;

				sigemptyset(&one);
				sigaddset(&one, c);
				sigtimedwait(&one, NULL, &zero);
				continue;
			}
			break;
		}
		if (n == 1 && c == 'k')
			_exit(0);
		/* A guest core may still be being written: retry a while. */
		for (int i = 0; i < 100; i++) {
			struct timespec ts = { 0, 50 * 1000 * 1000 };
			int rc = bt_ringdir_remove(rs->dir, rs->dev, rs->ino);

			if (!rc || rc == -ENOENT || rc == -ESTALE)
				break;
			nanosleep(&ts, NULL);
		}
		_exit(0);
	}
	close(p[0]);
	/* Never blocks a signal handler (bt_fwd_group()), even with a
	 * janitor stopped and its pipe full. */
	fcntl(p[1], F_SETFL, O_NONBLOCK);
	*wfd = p[1];
	return pid;
}

/*
 * The private ring directory $TMPDIR/btrace-qemu-XXXXXX, its socket and its
 * janitor.  Every failure is said here, before the program runs: a TMPDIR
 * we cannot use fails the recording, it never changes the program.
 */
static int bt_rings_init(struct bt_rings *rs, struct btrace_error *err)
{
	const char *tmp = getenv("TMPDIR");
	struct sockaddr_un a;
	struct stat st;
	char *abs;
	int dfd, one = 1, e, rc;

	memset(rs, 0, sizeof(*rs));
	rs->sock = rs->janitor_fd = -1;
	if (!tmp || !*tmp)
		tmp = "/tmp";
	/* Absolute and resolved: the emulator reaches it from the guest's
	 * working directory, which the guest may change, and every directory
	 * on the way must be one no other user can change (a TMPDIR another
	 * user can write lets them swap the ring directory for a link, and
	 * make root remove or write what it points to). */
	abs = realpath(tmp, NULL);
	if (!abs || strlen(abs) + sizeof("/" BT_RINGDIR_PREFIX "XXXXXX") >
		    sizeof(rs->dir)) {
		e = abs ? ENAMETOOLONG : errno;
		free(abs);
		bt_error(err, -e, "%s: create ring directory failed: %s", tmp,
			 strerror(e));
		return bt_hint(err, "set TMPDIR to a writable directory with a "
			       "little free space (the rings are memory; the "
			       "directory holds QEMU's guest core of a "
			       "crashing program)");
	}
	rc = bt_ringdir_parent_check(abs, err);
	if (rc) {
		free(abs);
		return rc;
	}
	/* What a btrace and its janitor, both killed, left. */
	bt_ringdir_sweep(abs);
	snprintf(rs->dir, sizeof(rs->dir), "%s/" BT_RINGDIR_PREFIX "XXXXXX",
		 abs);
	free(abs);
	if (!mkdtemp(rs->dir)) {
		e = errno;
		bt_error(err, -e, "%s: create ring directory failed: %s",
			 rs->dir, strerror(e));
		rs->dir[0] = 0;
		return bt_hint(err, "set TMPDIR to a writable directory with a "
			       "little free space (the rings are memory; the "
			       "directory holds QEMU's guest core of a "
			       "crashing program)");
	}
	if (lstat(rs->dir, &st) || !S_ISDIR(st.st_mode) ||
	    st.st_uid != geteuid()) {
		rs->dir[0] = 0;
		return bt_error(err, -EPERM, "%s: create ring directory failed: "
				"replaced while made", rs->dir);
	}
	rs->dev = st.st_dev;
	rs->ino = st.st_ino;
	rs->janitor = bt_janitor_start(rs, &rs->janitor_fd);
	if (rs->janitor < 0) {
		e = (int)-rs->janitor;
		rs->janitor = 0;
		bt_ringdir_remove(rs->dir, rs->dev, rs->ino);
		return bt_error(err, -e, "%s: start cleanup process failed: %s",
				rs->dir, strerror(e));
	}
	bt_wit_fd = rs->janitor_fd;
	bt_wit_pid = rs->janitor;
	rs->sock = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	dfd = open(rs->dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	memset(&a, 0, sizeof(a));
	a.sun_family = AF_UNIX;
	snprintf(a.sun_path, sizeof(a.sun_path), "/proc/self/fd/%d/sock", dfd);
	if (rs->sock < 0 || dfd < 0 ||
	    setsockopt(rs->sock, SOL_SOCKET, SO_PASSCRED, &one, sizeof(one)) ||
	    bind(rs->sock, (struct sockaddr *)&a, sizeof(a))) {
		e = errno;
		if (dfd >= 0)
			close(dfd);
		bt_error(err, -e, "%s/sock: create ring socket failed: %s",
			 rs->dir, strerror(e));
		return bt_hint(err, e == ENOSPC || e == EDQUOT ?
			       "free space (or inodes) in TMPDIR, or set "
			       "TMPDIR to another directory" :
			       "btrace needs /proc and Unix sockets in TMPDIR; "
			       "set TMPDIR to a local directory");
	}
	close(dfd);
	return 0;
}

/*
 * The launched process's ring: a memfd that QEMU inherits (fd=), linked as
 * <dir>/ring.<pid> once the pid is known.  Returns the descriptor, or
 * -errno (said in @err).
 */
static int bt_ring_memfd(const struct bt_rings *rs, struct btrace_error *err)
{
	char link[PATH_MAX + 32], target[64];
	struct stat a, b;
	int fd, lfd, e;

	fd = memfd_create("btrace-ring", MFD_CLOEXEC);
	if (fd < 0) {
		e = errno;
		bt_error(err, -e, "ring memfd: create failed: %s", strerror(e));
		return bt_hint(err, e == EMFILE || e == ENFILE ?
			       "raise the open-file limit (ulimit -n)" :
			       "btrace's QEMU backend needs memfd_create() "
			       "(Linux 3.17+)");
	}
	/* Readers find rings through /proc/self/fd: check it works. */
	snprintf(link, sizeof(link), "%s/.ring.memfd", rs->dir);
	snprintf(target, sizeof(target), "/proc/self/fd/%d", fd);
	lfd = symlink(target, link) ? -1 : open(link, O_RDONLY | O_CLOEXEC);
	e = errno;
	unlink(link);
	if (lfd < 0 || fstat(lfd, &a) || fstat(fd, &b) || a.st_ino != b.st_ino ||
	    a.st_dev != b.st_dev) {
		if (lfd >= 0)
			close(lfd);
		close(fd);
		bt_error(err, lfd < 0 ? -e : -EIO, "%s: ring memfd: not "
			 "reachable through /proc/self/fd: %s", rs->dir,
			 lfd < 0 ? strerror(e) : "another file");
		return bt_hint(err, "mount /proc (QEMU needs it too) and set "
			       "TMPDIR to a local directory");
	}
	close(lfd);
	return fd;
}

/* Whether the plugin started: the ring exists and has its magic (the
 * memfd exists from the start, empty). */
static int bt_ring_present(const char *path)
{
	char magic[8];
	int fd = open(path, O_RDONLY | O_CLOEXEC), ok;

	if (fd < 0)
		return 0;
	ok = pread(fd, magic, sizeof(magic), 0) == (ssize_t)sizeof(magic) &&
	     !memcmp(magic, BT_RING_MAGIC, sizeof(magic));
	close(fd);
	return ok;
}

/* The janitor's end: @keep tells it to leave the directory. */
static void bt_janitor_stop(struct bt_rings *rs, int keep)
{
	bt_wit_pid = 0;
	bt_wit_fd = -1;
	if (rs->janitor_fd >= 0) {
		if (keep && write(rs->janitor_fd, "k", 1) != 1)
			keep = 0;
		close(rs->janitor_fd);
		rs->janitor_fd = -1;
	}
	if (rs->janitor > 0)
		while (waitpid(rs->janitor, NULL, 0) < 0 && errno == EINTR)
			;
	rs->janitor = 0;
}

/* Remove the ring directory and drop every ring. */
static void bt_drop_rings(struct bt_rings *rs)
{
	if (rs->sock >= 0)
		close(rs->sock);
	rs->sock = -1;
	for (size_t i = 0; i < rs->n; i++)
		close(rs->r[i].fd);
	free(rs->r);
	rs->r = NULL;
	rs->n = rs->cap = 0;
	if (rs->dir[0])
		bt_ringdir_remove(rs->dir, rs->dev, rs->ino);
	bt_janitor_stop(rs, 0);
}

/* Copy ring descriptor @fd into the new file @path, skipping holes. */
static int bt_copy_sparse(int fd, const char *path)
{
	static char buf[1 << 16];
	off_t end = lseek(fd, 0, SEEK_END), pos = 0;
	int out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW |
		       O_CLOEXEC, 0600), rc = 0;

	if (out < 0)
		return -errno;
	if (end < 0 || ftruncate(out, end))
		rc = -errno;
	while (!rc && pos < end) {
		off_t d = lseek(fd, pos, SEEK_DATA), h;

		if (d < 0)
			break;   /* ENXIO: only a hole is left */
		h = lseek(fd, d, SEEK_HOLE);
		if (h < 0)
			h = end;
		for (pos = d; !rc && pos < h;) {
			size_t want = (size_t)(h - pos) < sizeof(buf) ?
				      (size_t)(h - pos) : sizeof(buf);
			ssize_t n = pread(fd, buf, want, pos);

			if (n <= 0)
				rc = n < 0 ? -errno : -EIO;
			else if (!(rc = bt_write_full(out, buf, (size_t)n,
						      (int64_t)pos)))
				pos += n;
		}
	}
	if (close(out) && !rc)
		rc = -errno;
	if (rc)
		unlink(path);
	return rc;
}

/* BTRACE_QEMU_KEEP_RINGS: every ring becomes a file ring.<pid> (a sparse
 * copy of its memfd) in the directory, which is kept. */
static void bt_keep_rings(struct bt_rings *rs)
{
	char tmp[PATH_MAX + 48], path[PATH_MAX + 32];

	for (size_t i = 0; i < rs->n; i++) {
		int rc;

		snprintf(tmp, sizeof(tmp), "%s/.ring.%d.copy", rs->dir,
			 (int)rs->r[i].pid);
		snprintf(path, sizeof(path), "%s/ring.%d", rs->dir,
			 (int)rs->r[i].pid);
		rc = bt_copy_sparse(rs->r[i].fd, tmp);
		if (!rc && rename(tmp, path))
			rc = -errno;
		if (rc) {
			unlink(tmp);
			bt_msg("btrace: %s: keep ring failed: %s",
				path, strerror(-rc));
		}
		close(rs->r[i].fd);
	}
	free(rs->r);
	rs->r = NULL;
	rs->n = rs->cap = 0;
	if (rs->sock >= 0)
		close(rs->sock);
	rs->sock = -1;
	{
		char sp[PATH_MAX + 8];

		snprintf(sp, sizeof(sp), "%s/sock", rs->dir);
		unlink(sp);
	}
	bt_janitor_stop(rs, 1);
}

/* ---- the snapshot ---- */

static void bt_untraced_children_text(uint32_t n, char *out, size_t len)
{
	snprintf(out, len, "%u forked child process%s of this process ran "
		 "untraced: %s ring could not be made or handed to btrace, so "
		 "%s no trace and no snapshot", n, n == 1 ? "" : "es",
		 n == 1 ? "its" : "their", n == 1 ? "it has" : "they have");
}


struct bt_enc_ctx {
	struct bt_pt_enc *pt;
	struct bt_bts_enc *bts;
};

static int bt_enc_cb(void *ctx, const struct bt_branch *br)
{
	struct bt_enc_ctx *c = ctx;
	static FILE *dbg;
	static int dbg_checked;

	if (!dbg_checked) {
		const char *d = getenv("BTRACE_QEMU_DUMP");

		dbg_checked = 1;
		if (d && *d)
			dbg = fopen(d, "w");
	}
	if (dbg)
		fprintf(dbg, "%u %d %#llx -> %#llx len %u\n", br->kind, br->taken,
			(unsigned long long)br->from,
			(unsigned long long)br->to, br->len);
	if (c->bts)
		return br->kind >= BT_QEMU_MARK_TIME ? 0 :
		       bt_bts_enc_branch(c->bts, br);
	if (br->kind == BT_QEMU_MARK_TIME)
		return bt_pt_enc_tsc(c->pt, br->to);
	if (br->kind == BT_QEMU_MARK_BEGIN)
		return bt_pt_enc_begin(c->pt, br->to);
	if (br->kind == BT_QEMU_MARK_GAP)
		return bt_pt_enc_overflow(c->pt, br->to);
	return bt_pt_enc_branch(c->pt, br);
}

struct bt_job {
	const struct btrace_record_opts *opts;
	const char *prog;               /* resolved program path */
	const char *dir;                /* ring directory */
	struct bt_rings *rs;            /* every process's ring descriptor */
	const char *start_cwd;
	int pid;
	int status;
	int child;                      /* a forked child, not the root */
	char core_path[PATH_MAX];       /* the guest core being used */
	const struct bt_qemu_core *core;
	uint64_t size, pad;
	uint32_t kind;
	uint64_t on;
	struct timespec died;           /* when the death was seen */
	struct timespec started;        /* CLOCK_REALTIME_COARSE at the start:
					 * a snapshot file changed since is
					 * another crash's, kept */
	struct bt_snapbuild *sb;        /* the snapshot being built */
	struct btrace_error *err;
	struct bt_qowner *owner;        /* registry owner (qemu-owner.h) */
	struct bt_jobctl *jc;           /* process group, terminal */
	const char *ondemand_out;       /* an on-demand snapshot's path:
					 * the process runs (stopped) */
};

/*
 * The guest core of process @pid: "core.<pid>" in the private ring
 * directory, where libbtrace-qemu-preload.so makes QEMU write it (never in
 * the guest's working directory).  @out is "" when there is none.
 */
static void bt_core_path(const struct bt_job *j, int pid, char *out,
			 size_t len)
{
	struct stat st;

	snprintf(out, len, "%s/core.%d", j->dir, pid);
	if (lstat(out, &st) || !S_ISREG(st.st_mode))
		out[0] = 0;
}

/*
 * --keep-core: the guest core becomes <snapshot>.core, mode 0600 like the
 * file the preload library created.  A rename when the snapshot is on the
 * ring directory's file system; else a copy into a new file of a random
 * name next to the snapshot (O_EXCL), renamed over the final name: no
 * predictable name is opened, and a planted link is replaced, not
 * followed.  Returns 0 or a negative errno; the core is gone either way.
 */
static int bt_keep_core(const char *core, const char *kp)
{
	char tmp[PATH_MAX + 16];
	int in, out, rc = 0;
	struct stat st;

	if (!rename(core, kp))
		return 0;
	if (errno != EXDEV) {
		rc = -errno;
		unlink(core);
		return rc;
	}
	snprintf(tmp, sizeof(tmp), "%s.XXXXXX", kp);
	in = open(core, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	out = in < 0 ? -1 : mkostemp(tmp, O_CLOEXEC);
	if (in < 0 || out < 0 || fstat(in, &st)) {
		rc = -errno;
	} else {
		off_t left = st.st_size;

		while (left > 0 && !rc) {
			ssize_t n = copy_file_range(in, NULL, out, NULL,
						    (size_t)left, 0);

			if (n <= 0) {
				char buf[65536];

				n = read(in, buf, sizeof(buf));
				if (n > 0 && (rc = bt_write_full(out, buf,
								 (size_t)n, -1)))
					break;
			}
			if (n < 0 && errno != EINTR)
				rc = -errno;
			else if (n == 0)
				rc = -EIO;
			else if (n > 0)
				left -= n;
		}
		if (!rc && (fchmod(out, 0600) || rename(tmp, kp)))
			rc = -errno;
	}
	if (out >= 0) {
		close(out);
		if (rc)
			unlink(tmp);
	}
	if (in >= 0)
		close(in);
	unlink(core);
	return rc;
}

static const char *bt_basename(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

struct bt_file_info {
	char *path;
	struct bt_qemu_elf elf;
	int ok;
	int stale;   /* the path no longer names the mapped file */
	unsigned int maj, min;     /* the mapped file: its code is read only */
	unsigned long long ino;    /* from that file */
};

struct bt_span {
	uint64_t s, e;
	uint8_t *buf;
};

static int bt_span_cmp(const void *a, const void *b)
{
	const struct bt_span *x = a, *y = b;

	return x->s < y->s ? -1 : x->s > y->s;
}

/* The span of sorted, disjoint @v (n) that holds @a, or NULL. */
static struct bt_span *bt_span_find(struct bt_span *v, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a < v[mid].s)
			hi = mid;
		else if (a >= v[mid].e)
			lo = mid + 1;
		else
			return &v[mid];
	}
	return NULL;
}

/* Whether the file at @path is still the one mapped with @maj:@min @ino
 * (not deleted, replaced, or a memfd). */
static int bt_same_file(const char *path, unsigned int maj, unsigned int min,
			unsigned long long ino)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) &&
	       (unsigned long long)st.st_ino == ino &&
	       major(st.st_dev) == maj && minor(st.st_dev) == min;
}

/* Whether descriptor @fd is the file @maj:@min inode @ino (the one the
 * program mapped, not one swapped in at its path since). */
static int bt_fd_is(int fd, unsigned int maj, unsigned int min,
		    unsigned long long ino)
{
	struct stat st;

	return !fstat(fd, &st) && (unsigned long long)st.st_ino == ino &&
	       major(st.st_dev) == maj && minor(st.st_dev) == min;
}

/* Whether a logged TB starts in [s, e). */
static int bt_tb_in(const struct bt_qemu_ring *r, uint64_t s, uint64_t e)
{
	for (uint64_t i = 0; i < r->ntbs; i++)
		if (r->tbs[i].start >= s && r->tbs[i].start < e &&
		    (r->tbs[i].flags & BT_TB_F_CODE))
			return 1;
	return 0;
}

/*
 * Code from the plugin's code log: the bytes of every translated block
 * that is not in a file segment embedded from its (unchanged) file: JIT
 * code, memfd code, files deleted or replaced since they were mapped.
 * Blocks are painted in translation order, so where code was rewritten
 * the newest translation's bytes win (the code that ran last); blocks
 * whose bytes differ from that image are counted in *@rewritten.  Each
 * run of contiguous code becomes one BTRACE_CODE_ANON section.
 */
static int bt_write_logged_code(struct bt_job *j, const struct bt_qemu_ring *r,
				struct bt_span *good, size_t ngood,
				uint64_t *rewritten, uint64_t *nbytes)
{
	struct bt_span *iv = NULL, *ext;
	size_t n = 0, cap = 0, next = 0;
	int rc = 0;

	*rewritten = 0;
	*nbytes = 0;
	if (!r->code)
		return 0;
	if (ngood)   /* qsort(NULL, 0, ...) is undefined */
		qsort(good, ngood, sizeof(*good), bt_span_cmp);
	for (uint64_t i = 0; i < r->ntbs; i++) {
		const struct bt_tb_info *t = &r->tbs[i];
		uint64_t len;

		if (!bt_qemu_tb_code(r, t, &len) ||
		    bt_span_find(good, ngood, t->start))
			continue;
		if (bt_grow((void **)&iv, &cap, n, sizeof(*iv))) {
			free(iv);
			return bt_error(j->err, -ENOMEM, "snapshot: logged code "
					"failed: out of memory");
		}
		iv[n].s = t->start;
		iv[n].e = t->start + len;
		iv[n++].buf = NULL;
	}
	if (!n)
		return 0;
	qsort(iv, n, sizeof(*iv), bt_span_cmp);
	/* Merge overlapping and adjacent blocks into extents (in place). */
	for (size_t i = 1; i < n; i++) {
		if (iv[i].s <= iv[next].e) {
			if (iv[i].e > iv[next].e)
				iv[next].e = iv[i].e;
		} else {
			iv[++next] = iv[i];
		}
	}
	next++;
	for (size_t i = 0; i < next && !rc; i++) {
		iv[i].buf = calloc(1, iv[i].e - iv[i].s);
		if (!iv[i].buf)
			rc = bt_error(j->err, -ENOMEM, "snapshot: logged code "
				      "failed: out of memory");
	}
	/* Paint in translation order, then count what was painted over. */
	for (int pass = 0; pass < 2 && !rc; pass++) {
		for (uint64_t i = 0; i < r->ntbs; i++) {
			const struct bt_tb_info *t = &r->tbs[i];
			uint64_t len;
			const uint8_t *code = bt_qemu_tb_code(r, t, &len);

			if (!code || bt_span_find(good, ngood, t->start))
				continue;
			ext = bt_span_find(iv, next, t->start);
			if (!ext || t->start + len > ext->e)
				continue;
			if (!pass)
				memcpy(ext->buf + (t->start - ext->s), code, len);
			else if (memcmp(ext->buf + (t->start - ext->s), code, len))
				(*rewritten)++;
		}
	}
	for (size_t i = 0; i < next && !rc; i++) {
		struct btrace_code c;

		memset(&c, 0, sizeof(c));
		c.kind = BTRACE_CODE_ANON;
		c.vaddr = iv[i].s;
		c.data = iv[i].buf;
		c.size = iv[i].e - iv[i].s;
		*nbytes += c.size;
		rc = bt_snapbuild_add_code(j->sb, &c);
	}
	for (size_t i = 0; i < next; i++)
		free(iv[i].buf);
	free(iv);
	return rc;
}

/* Add the core's bytes of [s, e) as anonymous code. */
static int bt_add_anon(struct bt_job *j, int fd, uint64_t s, uint64_t e)
{
	const struct bt_qemu_core *c = j->core;
	int rc = 0;

	for (size_t i = 0; i < c->nloads && !rc; i++) {
		const struct bt_qemu_core_load *l = &c->loads[i];
		uint64_t a = s > l->vaddr ? s : l->vaddr;
		uint64_t b = e < l->vaddr + l->filesz ? e : l->vaddr + l->filesz;
		struct btrace_code code;
		uint8_t *buf;

		if (a >= b || b - a > (256u << 20))
			continue;
		buf = malloc(b - a);
		if (!buf)
			return bt_error(j->err, -ENOMEM, "snapshot: anonymous "
					"code failed: out of memory");
		if (pread(fd, buf, b - a, (off_t)(l->offset + (a - l->vaddr))) !=
		    (ssize_t)(b - a)) {
			free(buf);
			continue;
		}
		memset(&code, 0, sizeof(code));
		code.kind = BTRACE_CODE_ANON;
		code.vaddr = a;
		code.data = buf;
		code.size = b - a;
		rc = bt_snapbuild_add_code(j->sb, &code);
		free(buf);
	}
	return rc;
}

/*
 * The process's other memory at the death, from the guest core's PT_LOADs
 * (their p_flags: read, write, execute), up to --memory: the rule of
 * bt_snap_data_select() (docs/format.md, "memory"), after the stack.  A
 * guest core names no mapping: QEMU dumps no [vvar] and shared mappings
 * are not told apart (a read-only one is stored as a private one).
 */
static int bt_write_data(struct bt_job *j)
{
	const struct bt_qemu_core *c = j->core;
	uint64_t budget = j->opts->memory ? j->opts->memory :
			  BTRACE_MEMORY_DEFAULT;
	struct bt_snap_region *reg;
	struct bt_snap_range *rg = NULL;
	long n;
	int fd, rc = 0;

	if (!c || !c->nloads || (j->opts->flags & BTRACE_RECORD_NO_MEMORY))
		return 0;
	reg = calloc(c->nloads, sizeof(*reg));
	if (!reg)
		return bt_error(j->err, -ENOMEM, "snapshot: the process's "
				"memory failed: out of memory");
	for (size_t i = 0; i < c->nloads; i++) {
		reg[i].start = c->loads[i].vaddr;
		reg[i].end = c->loads[i].vaddr + c->loads[i].filesz;
		reg[i].prot = (c->loads[i].flags & PF_R ? 1u : 0) |
			      (c->loads[i].flags & PF_W ? 2u : 0) |
			      (c->loads[i].flags & PF_X ? 4u : 0);
	}
	n = bt_snap_data_select(reg, c->nloads, j->sb->stack_lo,
				j->sb->stack_hi, budget, &rg);
	free(reg);
	if (n < 0)
		return bt_error(j->err, -ENOMEM, "snapshot: the process's "
				"memory failed: out of memory");
	fd = n ? open(j->core_path, O_RDONLY | O_CLOEXEC) : -1;
	for (long i = 0; fd >= 0 && i < n && !rc; i++) {
		struct btrace_memory m = { .tid = BTRACE_MEMORY_PROCESS,
					   .vaddr = rg[i].start,
					   .size = rg[i].size };
		const struct bt_qemu_core_load *l = NULL;
		uint8_t *buf;

		for (size_t k = 0; k < c->nloads && !l; k++)
			if (rg[i].start >= c->loads[k].vaddr &&
			    rg[i].start - c->loads[k].vaddr < c->loads[k].filesz)
				l = &c->loads[k];
		if (!l)
			continue;
		buf = malloc(rg[i].size);
		if (!buf) {
			rc = bt_error(j->err, -ENOMEM, "snapshot: the "
				      "process's memory failed: out of memory");
			break;
		}
		if (bt_qemu_pread_all(fd, buf, rg[i].size, (off_t)(l->offset +
				 (rg[i].start - l->vaddr))) == 0) {
			m.data = buf;
			rc = bt_snapbuild_add_memory(j->sb, &m);
			if (!rc)
				j->sb->data_bytes += m.size;
		}
		free(buf);
	}
	if (fd >= 0)
		close(fd);
	free(rg);
	return rc;
}

/*
 * The crashed thread's stack at the death, from the guest core (its
 * PT_LOAD holding the stack pointer of the registers recorded): the window
 * of bt_snap_stack_window() (docs/format.md, "memory").  Nothing without a
 * core or registers.
 */
static int bt_write_stack(struct bt_job *j, const struct btrace_signal *sig)
{
	const struct bt_qemu_core *c = j->core;
	uint64_t sp = sig->regs[BTRACE_REG_RSP], lo, hi;
	int fd, rc = 0;

	if (!c || !sig->has_regs)
		return 0;
	for (size_t i = 0; i < c->nloads; i++) {
		const struct bt_qemu_core_load *l = &c->loads[i];
		struct btrace_memory m = { .tid = sig->tid };
		uint8_t *buf;

		if (sp < l->vaddr || sp - l->vaddr >= l->filesz)
			continue;
		bt_snap_stack_window(sp, l->vaddr, l->vaddr + l->filesz, &lo, &hi);
		fd = open(j->core_path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return 0;
		buf = malloc(hi - lo);
		if (!buf) {
			close(fd);
			return bt_error(j->err, -ENOMEM, "snapshot: the stack "
					"failed: out of memory");
		}
		if (pread(fd, buf, hi - lo, (off_t)(l->offset + (lo - l->vaddr))) ==
		    (ssize_t)(hi - lo)) {
			m.vaddr = lo;
			m.data = buf;
			m.size = hi - lo;
			rc = bt_snapbuild_add_memory(j->sb, &m);
			if (!rc) {
				j->sb->stack_lo = lo;
				j->sb->stack_hi = hi;
			}
		}
		free(buf);
		close(fd);
		return rc;
	}
	return 0;
}

/*
 * Anonymous executable memory (JIT code): the plugin marks the map lines
 * the guest made executable and keeps the exact ranges; the bytes come
 * from the guest core, which holds every such page.
 */
static int bt_write_anon_code(struct bt_job *j, const struct bt_qemu_ring *r)
{
	const struct bt_ring_hdr *h = r->hdr;
	uint32_t nx = h->nxranges < BT_RING_MAX_XRANGES ? h->nxranges :
			BT_RING_MAX_XRANGES;
	int fd, rc = 0;

	if (!j->core || !j->core->nloads || !nx)
		return 0;
	fd = open(j->core_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	for (uint32_t i = 0; i < nx && !rc; i++)
		rc = bt_add_anon(j, fd, h->xranges[i].start, h->xranges[i].end);
	close(fd);
	return rc;
}

/* Where the file segment at @offset of @path is mapped in the guest map
 * text @maps: its address in *@vaddr (1), or 0 when it is not mapped. */
static int bt_segment_vaddr(const char *maps, const char *path,
			    uint64_t offset, uint64_t *vaddr)
{
	size_t plen = strlen(path), len;
	const char *l;

	while ((l = bt_maps_next(&maps, &len))) {
		struct bt_maps_line m;

		if (bt_maps_parse(l, len, &m) == BT_MAPS_ALL &&
		    m.path_len == plen && !memcmp(m.path, path, plen) &&
		    offset >= m.pgoff && offset < m.pgoff + (m.end - m.start)) {
			*vaddr = m.start + (offset - m.pgoff);
			return 1;
		}
	}
	return 0;
}

/* The mapped files of a snapshot, each read once. */
struct bt_files {
	struct bt_file_info *v;
	size_t n, cap;
};

/* The file of mapping @ml (a path), added when new: NULL when out of
 * memory. */
static struct bt_file_info *bt_file_of(struct bt_files *f,
				       const struct bt_maps_line *ml)
{
	const char *path = ml->path;
	struct bt_file_info *fi = NULL;

	for (size_t i = 0; i < f->n; i++)
		if (!strcmp(f->v[i].path, path))
			fi = &f->v[i];
	if (fi || bt_grow((void **)&f->v, &f->cap, f->n, sizeof(*f->v)))
		return fi;
	fi = &f->v[f->n++];
	memset(fi, 0, sizeof(*fi));
	fi->path = strdup(path);
	/* A file deleted or replaced since it was mapped (or a memfd) is
	 * not read: its code comes from the code log. */
	fi->stale = !bt_same_file(path, ml->maj, ml->min, ml->ino);
	fi->maj = ml->maj;
	fi->min = ml->min;
	fi->ino = ml->ino;
	fi->ok = fi->path && !fi->stale && !bt_qemu_elf_read(path, &fi->elf) &&
		 fi->elf.is_elf64;
	return fi;
}

/* Whether file @fi has an executable segment in [@off, @off + @len). */
static int bt_elf_x(const struct bt_file_info *fi, uint64_t off, uint64_t len)
{
	for (size_t k = 0; fi && fi->ok && k < fi->elf.nseg; k++) {
		const struct bt_qemu_elf_seg *sg = &fi->elf.seg[k];

		if ((sg->flags & PF_X) && sg->offset < off + len &&
		    sg->offset + sg->filesz > off)
			return 1;
	}
	return 0;
}

/* Mapping @m, [@m->start, @m->end), with the guest core's protections
 * where the core has the guest's pages (QEMU's view of them: the map
 * text is the host's, read when code was mapped last, so a later mmap or
 * mprotect of data, such as the loader's of a library's writable
 * segment inside the range it reserved read-only, is not in it), in
 * pieces at the core's mapping boundaries. */
static int bt_add_mapping_core(struct bt_job *j, struct btrace_mapping *m,
			       const struct bt_file_info *fi)
{
	const struct bt_qemu_core *c = j->core;
	uint64_t s = m->start, e = m->end, at = s;
	uint32_t prot = m->prot;
	size_t k = 0;
	int rc = 0;

	if (!c || !c->nvmas)
		return bt_snapbuild_add_mapping(j->sb, m);
	while (at < e && !rc) {
		uint64_t to = e;

		while (k < c->nvmas && c->vmas[k].end <= at)
			k++;
		m->start = at;
		m->pgoff += at - s;
		if (k < c->nvmas && c->vmas[k].start <= at) {
			uint32_t f = c->vmas[k].flags;

			to = c->vmas[k].end < e ? c->vmas[k].end : e;
			m->prot = (f & PF_R ? 1u : 0) | (f & PF_W ? 2u : 0) |
				  (f & PF_X ? 4u : 0);
			if ((prot & 4) && (!fi || !fi->ok ||
					   bt_elf_x(fi, m->pgoff, to - at)))
				m->prot |= 4;
		} else {
			if (k < c->nvmas && c->vmas[k].start < e)
				to = c->vmas[k].start;
			m->prot = prot;
		}
		m->end = to;
		rc = bt_snapbuild_add_mapping(j->sb, m);
		m->pgoff -= at - s;
		at = to;
	}
	return rc;
}

/* One line of the guest map text as a mapping (its file in @f). */
static int bt_write_mapping(struct bt_job *j, const struct bt_qemu_ring *r,
			    const struct bt_maps_line *ml, struct bt_files *f)
{
	uint64_t s = ml->start, e = ml->end, off = ml->pgoff;
	const char *perms = ml->perms, *path = ml->path;
	struct bt_file_info *fi = NULL;
	struct btrace_mapping m;

	memset(&m, 0, sizeof(m));
	m.pid = j->pid;
	m.start = s;
	m.end = e;
	m.pgoff = off;
	m.dev = ((uint64_t)ml->maj << 8) | ml->min;
	m.ino = ml->ino;
	m.prot = (perms[0] == 'r' ? 1 : 0) | (perms[1] == 'w' ? 2 : 0) |
		 (perms[2] == 'x' ? 4 : 0);
	m.flags = perms[3] == 's' ? 1 : 2;
	m.path = (char *)(*path ? path : "//anon");
	if (*path == '/')
		fi = bt_file_of(f, ml);
	if (fi && fi->stale && !(m.prot & 4) && bt_tb_in(r, s, e))
		m.prot |= 4;   /* it ran code */
	if (fi && fi->ok) {
		/* QEMU maps guest code read-only on the host: take the
		 * execute bit from the ELF segments. */
		if (bt_elf_x(fi, off, e - s))
			m.prot |= 4;
		m.build_id_size = fi->elf.build_id_size;
		memcpy(m.build_id, fi->elf.build_id, sizeof(m.build_id));
	}
	return bt_add_mapping_core(j, &m, fi);
}

/* Code: every executable segment of mapped ELF file @fi, read from the
 * file (the ranges written are added to @good). */
static int bt_write_file_code(struct bt_job *j, const struct bt_qemu_ring *r,
			      const struct bt_file_info *fi,
			      struct bt_span **goodp, size_t *ngoodp,
			      size_t *capgoodp)
{
	struct bt_span *good = *goodp;
	size_t ngood = *ngoodp, capgood = *capgoodp;
	int rc = 0;

	for (size_t k = 0; k < fi->elf.nseg && !rc; k++) {
		const struct bt_qemu_elf_seg *sg = &fi->elf.seg[k];
		struct btrace_code c;
		uint64_t vaddr = 0;
		int fd, found = 0;
		void *map;

		if (!(sg->flags & PF_X) || !sg->filesz)
			continue;
		/* Where the segment is mapped. */
		found = bt_segment_vaddr(r->maps, fi->path, sg->offset,
					 &vaddr);
		if (!found)
			continue;
		/* Read, not mapped: a file its owner truncates
		 * meanwhile must not kill us with SIGBUS; and only a
		 * regular file (a FIFO put there would block). */
		fd = bt_open_regular(fi->path);
		if (fd < 0)
			continue;
		map = sg->filesz <= SIZE_MAX &&
		      bt_fd_is(fd, fi->maj, fi->min, fi->ino) ?
		      malloc(sg->filesz) : NULL;
		if (!map || pread(fd, map, sg->filesz, (off_t)sg->offset) !=
			    (ssize_t)sg->filesz) {
			free(map);
			close(fd);
			continue;
		}
		close(fd);
		memset(&c, 0, sizeof(c));
		c.kind = BTRACE_CODE_FILE;
		c.build_id_size = fi->elf.build_id_size;
		memcpy(c.build_id, fi->elf.build_id, sizeof(c.build_id));
		c.vaddr = vaddr;
		c.file_offset = sg->offset;
		c.data = map;
		c.size = sg->filesz;
		c.path = fi->path;
		rc = bt_snapbuild_add_code(j->sb, &c);
		free(map);
		if (!rc && !bt_grow((void **)&good, &capgood, ngood,
				    sizeof(*good))) {
			good[ngood].s = vaddr;
			good[ngood].e = vaddr + sg->filesz;
			good[ngood++].buf = NULL;
		}
	}
	*goodp = good;
	*ngoodp = ngood;
	*capgoodp = capgood;
	return rc;
}

/* Mappings from the guest map text; code of mapped files. */
static int bt_write_maps(struct bt_job *j, const struct bt_qemu_ring *r)
{
	struct bt_files files = { 0 };
	struct bt_span *good = NULL;
	size_t ngood = 0, capgood = 0;
	uint64_t rewritten = 0, logged = 0;
	char *text = strdup(r->maps), *line, *save = NULL;
	int rc = 0;

	if (!text)
		return bt_error(j->err, -ENOMEM, "snapshot: mappings failed: "
				"out of memory");
	for (line = strtok_r(text, "\n", &save); line && !rc;
	     line = strtok_r(NULL, "\n", &save)) {
		struct bt_maps_line ml;

		/* the path is the rest of the line (strtok ended it) */
		if (bt_maps_parse(line, strlen(line), &ml) < BT_MAPS_ALL)
			continue;
		rc = bt_write_mapping(j, r, &ml, &files);
	}

	/* Code: every executable segment of every mapped ELF file. */
	for (size_t i = 0; i < files.n && !rc; i++) {
		if (!files.v[i].ok || (j->opts->flags & BTRACE_RECORD_NO_CODE))
			continue;
		rc = bt_write_file_code(j, r, &files.v[i], &good, &ngood,
					&capgood);
	}
	/* Everything else that ran: from the code log; from the guest core
	 * only when there is no log or it overflowed. */
	if (!rc && !(j->opts->flags & BTRACE_RECORD_NO_CODE))
		rc = bt_write_logged_code(j, r, good, ngood, &rewritten, &logged);
	if (!rc && !(j->opts->flags & BTRACE_RECORD_NO_CODE) &&
	    (!r->code || (r->hdr->flags & BT_RING_F_CODE_FULL)))
		rc = bt_write_anon_code(j, r);
	if (!rc && rewritten) {
		char v[160];

		snprintf(v, sizeof(v), "%llu blocks ran with bytes that were "
			 "rewritten later; the snapshot holds the newest",
			 (unsigned long long)rewritten);
		rc = bt_snapbuild_meta(j->sb, "qemu.code_rewritten", v);
	}
	if (!rc && r->hdr->flags & BT_RING_F_CODE_FULL)
		rc = bt_snapbuild_meta(j->sb, "qemu.code_log",
				       "full: later blocks' bytes are "
				       "from the files or the guest core");
	free(good);
	for (size_t i = 0; i < files.n; i++)
		free(files.v[i].path);
	free(files.v);
	free(text);
	return rc;
}

/* The standard metadata (snapbuild.h), then the backend's own. */
static int bt_write_meta(struct bt_job *j)
{
	int rc = bt_snapbuild_std_meta(j->sb, j->opts->argv, j->pid);

	if (!rc)
		rc = bt_snapbuild_meta(j->sb, "backend",
				       "qemu-x86_64 TCG plugin (software)");
	if (!rc)
		rc = bt_snapbuild_meta(j->sb, "guest_cpu", "qemu -cpu max (TCG)");
	/* the plugin folds loop turns unless BTRACE_QEMU_LOOPS=0 in the
	 * environment it inherits (docs/qemu-backend.md, "Loops"), and marks
	 * each fold in the access log when it keeps one; the value recovery
	 * needs to know (docs/report.md, "Folded loops") */
	const char *l = getenv("BTRACE_QEMU_LOOPS");
	int kept = l && !strcmp(l, "0");
	if (!rc)
		rc = bt_snapbuild_meta(j->sb, "qemu.loop_turns", kept ? "kept" :
				       j->opts->flags & BTRACE_RECORD_NO_ACCESSES ?
				       "folded" : "marked");
	/* what a folded turn may hold: a path of at most four blocks from
	 * the loop block back to it, none of them ending in a call, a
	 * return, a far transfer or a trap (the plugin's bt_foldable()) */
	if (!rc && !kept)
		rc = bt_snapbuild_meta(j->sb, "qemu.fold_cycles", "direct4");
	return rc;
}

static const char *bt_signame(int sig)
{
	static char buf[16];

	if (!btrace_signal_str(sig, buf, sizeof(buf)))
		snprintf(buf, sizeof(buf), "signal %d", sig);
	return buf;
}

/* Whether @ip is inside a mapping of the guest's map text @maps. */
static int bt_guest_mapped(const char *maps, uint64_t ip)
{
	const char *l;
	size_t len;

	while ((l = bt_maps_next(&maps, &len))) {
		struct bt_maps_line m;

		if (bt_maps_parse(l, len, &m) >= BT_MAPS_RANGE &&
		    ip >= m.start && ip < m.end)
			return 1;
	}
	return 0;
}

/*
 * The si_code of a fatal signal for which the plugin noted no host fault.
 * A signal the process sent itself (kill, tkill, tgkill, rt_*sigqueueinfo,
 * noted by the plugin) has its sender's code, and we are the sender.
 * Otherwise QEMU raised it for a CPU exception of the guest, with the code
 * the kernel gives a native process (QEMU's x86 cpu_loop): #DE is
 * FPE_INTDIV, #UD ILL_ILLOPN, int3 SI_KERNEL, and an instruction fetch
 * outside every mapping SEGV_MAPERR at that address (the core's rip).  Any
 * other case is left BTRACE_SIGCODE_UNKNOWN: a SIGSEGV at a mapped rip may
 * be a #GP (SI_KERNEL) or a fetch from a non-executable page (SEGV_ACCERR),
 * and a signal another process sent looks like neither.
 */
static void bt_infer_code(const struct bt_qemu_ring *r,
			  const struct bt_qemu_core *core, int pid,
			  struct btrace_signal *sig)
{
	uint64_t rip = core->regs[BTRACE_REG_RIP];

	sig->code = BTRACE_SIGCODE_UNKNOWN;
	if (r->hdr->self_signo == sig->signo) {
		sig->code = r->hdr->self_code;
		sig->sender_pid = pid;
		return;
	}
	if (!core->found)
		return;
	switch (sig->signo) {
	case SIGFPE:
		sig->code = FPE_INTDIV;
		sig->addr = rip;
		break;
	case SIGILL:
		sig->code = ILL_ILLOPN;
		sig->addr = rip;
		break;
	case SIGTRAP:
		sig->code = SI_KERNEL;
		break;
	case SIGSEGV:
		if (!bt_guest_mapped(r->maps, rip)) {
			sig->code = SEGV_MAPERR;
			sig->addr = rip;
		}
		break;
	}
}

/*
 * Whether @addr is in QEMU's guard page of the initial stack: the
 * inaccessible anonymous mapping right below the anonymous mappings that
 * hold @sp (an address on that stack).  QEMU 7.2 maps the main thread's
 * stack at a fixed size with a PROT_NONE page below it, so an overflow
 * faults there with SEGV_ACCERR; a native process has no mapping there (the
 * kernel's stack guard gap), and gets SEGV_MAPERR at the same address.
 * Thread stacks are not concerned: their guard pages are mappings natively
 * too.
 */
static int bt_in_stack_guard(const char *maps, uint64_t sp, uint64_t addr)
{
	uint64_t low = 0;
	int found = 0, steps = 0;

	if (!sp || !maps)
		return 0;
	for (;;) {
		const char *cur = maps, *l;
		struct bt_maps_line m;
		size_t len;
		int hit = 0;

		while (!hit && (l = bt_maps_next(&cur, &len)))
			hit = bt_maps_parse(l, len, &m) == BT_MAPS_ALL &&
			      (!found ? sp >= m.start && sp < m.end :
					m.end == low);
		if (!hit || m.ino || ++steps > 64)
			return 0;
		/* Anonymous only: no path, or a [bracketed] name. */
		if (m.path_len && *m.path != '[')
			return 0;
		if (found && !strncmp(m.perms, "---", 3))
			return addr >= m.start && addr < m.end;
		found = 1;
		low = m.start;
	}
}

/*
 * Threads that found no slot (more alive at once than both classes of
 * slots): metadata qemu.threads_untraced = "COUNT: TID TID ..." (the
 * first BT_RING_MAX_UNTRACED tids), and a limits line.
 */
static int bt_write_untraced(struct bt_job *j, const struct bt_qemu_ring *r,
			     int crashed_tid, int crashed_untraced)
{
	const struct bt_ring_hdr *h = r->hdr;
	uint32_t n = h->untraced_ntids < BT_RING_MAX_UNTRACED ?
		     h->untraced_ntids : BT_RING_MAX_UNTRACED;
	char v[64 + 12 * BT_RING_MAX_UNTRACED], t[sizeof(v) + 256];
	size_t len;
	int rc;

	len = (size_t)snprintf(v, sizeof(v), "%u:", h->untraced);
	for (uint32_t i = 0; i < n && len < sizeof(v); i++)
		len += (size_t)snprintf(v + len, sizeof(v) - len, " %d",
					(int)h->untraced_tids[i]);
	if (h->untraced > n && len < sizeof(v))
		snprintf(v + len, sizeof(v) - len, " ...");
	rc = bt_snapbuild_meta(j->sb, "qemu.threads_untraced", v);
	if (rc)
		return rc;
	snprintf(t, sizeof(t), "%u thread%s had no history (more threads alive "
		 "at once than the %u trace slots)%s; tids: %s",
		 h->untraced, h->untraced == 1 ? "" : "s",
		 h->nslots + h->nxslots,
		 crashed_untraced && crashed_tid ? ", among them the thread that "
		 "died: its fault comes from the registers alone" :
		 !crashed_tid && !j->ondemand_out ?
		 ", so the thread that died is not known" : "",
		 strchr(v, ':') ? strchr(v, ':') + 2 : v);
	return bt_snapbuild_meta(j->sb, "limit.untraced-threads", t);
}

/* Whether @tid may be one of the threads that had no slot. */
static int bt_untraced_tid(const struct bt_qemu_ring *r, int tid)
{
	const struct bt_ring_hdr *h = r->hdr;
	uint32_t n = h->untraced_ntids < BT_RING_MAX_UNTRACED ?
		     h->untraced_ntids : BT_RING_MAX_UNTRACED;

	for (uint32_t i = 0; i < n; i++)
		if (h->untraced_tids[i] == tid)
			return 1;
	return h->untraced > n;   /* not all tids kept: maybe */
}

/* What bt_write_snapshot() learns of a death, step by step. */
struct bt_death {
	struct bt_qemu_ring r;
	struct bt_qemu_core core;
	struct btrace_signal sig;
	char core_path[PATH_MAX], out[PATH_MAX], exe[PATH_MAX];
	int ondemand, signo;          /* signo: the one that ended it, or 0 */
	int crashed_tid, reraise, noted, untraced_died, guard_hit;
	const struct bt_ring_slot *lost_fault;
	const struct bt_ring_slot *crashed;
	uint64_t kept;                /* trace bytes of the thread that died */
};

/* The guest core: kept next to the snapshot (--keep-core), else removed. */
static void bt_death_keep_core(struct bt_job *j, const struct bt_death *d,
			       int rc)
{
	const struct btrace_record_opts *o = j->opts;

	if (!d->core_path[0])
		return;
	if (!rc && (o->flags & BTRACE_RECORD_KEEP_CORE)) {
		char kp[PATH_MAX + 8];
		int rc2;

		snprintf(kp, sizeof(kp), "%s.core", d->out);
		rc2 = bt_keep_core(d->core_path, kp);
		if (rc2 && !(o->flags & BTRACE_RECORD_QUIET))
			bt_msg("btrace record: %s: keep guest "
				"core failed: %s", kp, strerror(-rc2));
	} else {
		unlink(d->core_path);
	}
}

/* The fault that started it happened before the history kept (a handler
 * that ran long, e.g. a JVM writing hs_err): say what the plugin noted of
 * it, and how to keep it. */
static int bt_death_lost_fault(struct bt_job *j, const struct bt_ring_slot *s)
{
	char txt[400];
	int rc;

	snprintf(txt, sizeof(txt),
		 "Thread %d took %s (si_code %d, address %#llx) before "
		 "the history kept: what ran after it (a signal handler) "
		 "filled the buffer, so where it happened is not in the "
		 "snapshot; record again with a larger --size.",
		 (int)s->tid, bt_signame(s->fault_signo),
		 (int)s->fault_code, (unsigned long long)s->fault_addr);
	rc = bt_snapbuild_meta(j->sb, "limit.fault-left-history", txt);
	if (!rc && !(j->opts->flags & BTRACE_RECORD_QUIET))
		bt_msg("btrace record: %s", txt);
	return rc;
}

/* A main-stack overflow with signal handlers installed: a handler that
 * tells an overflow from the stack's bounds (Rust's, the JVM's) reads the
 * bounds glibc derives from the mappings, which QEMU lays out otherwise
 * than the kernel, and may not recognise it. */
static int bt_death_stack_layout(struct bt_job *j)
{
	static const char txt[] =
		"The main thread overflowed its stack while signal "
		"handlers were installed; QEMU lays out the stack and "
		"its guard otherwise than the kernel, so a handler that "
		"recognises an overflow from the stack's bounds (Rust's "
		"runtime, a JVM) may not have recognised it here, and "
		"the program may have died otherwise than natively; "
		"record with a hardware backend (pt or bts) to see the "
		"native behaviour.";
	int rc = bt_snapbuild_meta(j->sb, "limit.stack-layout", txt);

	if (!rc && !(j->opts->flags & BTRACE_RECORD_QUIET))
		bt_msg("btrace record: %s", txt);
	return rc;
}

/*
 * Open the ring of the process that died; d->exe is the program that died:
 * the one the plugin ran last (an execve() re-entered the emulator with the
 * new program), else the one we launched.  Without a ring that the plugin
 * made ready, no snapshot: the guest core is of no use either.
 */
static int bt_death_open(struct bt_job *j, const char *ring_path,
			 struct bt_death *d)
{
	int rc = bt_qemu_ring_open(ring_path, &d->r, j->err);

	if (!rc && d->r.hdr->exe[0] &&
	    memchr(d->r.hdr->exe, 0, sizeof(d->r.hdr->exe)))
		snprintf(d->exe, sizeof(d->exe), "%s", d->r.hdr->exe);
	else
		snprintf(d->exe, sizeof(d->exe), "%s", j->prog);
	if (!rc && !(d->r.hdr->flags & BT_RING_F_READY)) {
		bt_qemu_ring_close(&d->r);
		rc = bt_error(j->err, -BTRACE_ERR_UNSUPPORTED, "process %d: "
			      "record failed: the plugin did not start tracing "
			      "(its message is above)", j->pid);
	}
	if (rc) {
		bt_core_path(j, j->pid, d->core_path, sizeof(d->core_path));
		if (d->core_path[0])
			unlink(d->core_path);
	}
	return rc;
}

/* The guest core: exact registers of the thread that died. */
static void bt_death_core(struct bt_job *j, struct bt_death *d)
{
	memset(&d->core, 0, sizeof(d->core));
	d->core_path[0] = 0;
	if (!d->signo)
		return;
	bt_core_path(j, j->pid, d->core_path, sizeof(d->core_path));
	if (d->core_path[0] && !bt_qemu_core_read(d->core_path, &d->core)) {
		j->core = &d->core;
		snprintf(j->core_path, sizeof(j->core_path), "%s", d->core_path);
	}
}

/* The thread that died: d->crashed (its slot, NULL when it had none or no
 * thread died) and d->crashed_tid (0 when unknown). */
static void bt_death_thread(struct bt_job *j, struct bt_death *d)
{
	const struct bt_qemu_ring *r = &d->r;
	const struct bt_ring_slot *crashed = NULL;
	int signo = d->signo;

	if (d->core.found)
		d->crashed_tid = d->core.tid;
	for (uint32_t i = 0; i < bt_qemu_nslots(r); i++) {
		const struct bt_ring_slot *s = bt_qemu_ring_slot(r, i);

		if (s->state == BT_SLOT_FREE || !bt_qemu_slot_pos(r, s))
			continue;
		if (d->crashed_tid && s->tid == d->crashed_tid)
			crashed = s;
		/* No core: the thread with the (latest) noted fault of this
		 * signal; after an exit, any thread that faulted. */
		if (!d->crashed_tid && s->nfaults &&
		    (!signo || s->fault_signo == signo) &&
		    (!crashed || s->seq > crashed->seq))
			crashed = s;
	}
	/* The main thread, as a last resort: never when the core names a
	 * thread that had no slot, nor without a core when some threads
	 * went untraced (the one that died may be among them).  (The core of
	 * a forked child names its parent's thread: QEMU keeps that tid.) */
	if (d->core.found && !crashed && bt_untraced_tid(r, d->core.tid))
		d->untraced_died = 1;
	if (!crashed && !d->untraced_died && (d->core.found || !r->hdr->untraced)) {
		for (uint32_t i = 0; i < bt_qemu_nslots(r); i++) {
			const struct bt_ring_slot *s = bt_qemu_ring_slot(r, i);

			if (s->state != BT_SLOT_FREE && s->tid == j->pid)
				crashed = s;
		}
	}
	if (d->ondemand) {
		/* No thread died: none is the crashed one. */
		crashed = NULL;
		d->untraced_died = 0;
	}
	if (crashed)
		d->crashed_tid = crashed->tid;
	else if (!d->untraced_died)
		d->crashed_tid = 0;   /* unknown */
	d->crashed = crashed;
}

/* The output path: the one asked for (a forked child's gets its pid
 * inserted), else "" and in @comm the name the builder makes the default
 * file name of (snapbuild.h). */
static void bt_death_output(const struct bt_job *j, struct bt_death *d,
			    char *comm, size_t commlen)
{
	const struct btrace_record_opts *o = j->opts;

	if (d->ondemand) {
		snprintf(d->out, sizeof(d->out), "%s", j->ondemand_out);
	} else if (o->output && *o->output && j->child) {
		const char *base = bt_basename(o->output);
		const char *dot = strrchr(base, '.');
		int pre = dot && dot != base ? (int)(dot - o->output) :
					       (int)strlen(o->output);

		snprintf(d->out, sizeof(d->out), "%.*s-%d%s", pre, o->output,
			 j->pid, o->output + pre);
	} else if (o->output && *o->output) {
		snprintf(d->out, sizeof(d->out), "%s", o->output);
	} else {
		d->out[0] = '\0';
		snprintf(comm, commlen, "%.15s", bt_basename(d->exe));
	}
}

static void bt_death_config(const struct bt_job *j, const struct bt_death *d,
			    struct btrace_config *c)
{
	struct btrace_config cfg;

	memset(&cfg, 0, sizeof(cfg));
	cfg.backend = BTRACE_BACKEND_QEMU;
	cfg.trace_kind = j->kind;
	cfg.cpu_vendor = BT_QEMU_CPU_VENDOR;
	cfg.cpu_family = BT_QEMU_CPU_FAMILY;
	cfg.cpu_model = BT_QEMU_CPU_MODEL;
	cfg.cpu_stepping = BT_QEMU_CPU_STEPPING;
	cfg.psb_period = 1;
	cfg.user_only = 1;
	/* TSC packets (perf's intel_pt "tsc" field, config bit 10): the
	 * plugin's clock samples */
	if (j->kind == BTRACE_TRACE_PT && d->r.hdr->time_every) {
		cfg.tsc_bit = 1ull << 10;
		cfg.pt_config = 0x2001 | cfg.tsc_bit;   /* pt, branch_en, tsc */
	}
	cfg.requested_size = j->size;
	cfg.pad = j->pad;
	cfg.crash_mode = d->ondemand ? BTRACE_CRASH_ONDEMAND :
			 d->signo ? BTRACE_CRASH_PASSIVE : BTRACE_CRASH_EXIT;
	*c = cfg;
}

/*
 * The signal of a thread that died of signal d->signo after noted host
 * faults.  Faults a handler took before and went on from (a probe that
 * siglongjmp'd out, a runtime's own faults) are not the death: the one
 * that matters is the LAST noted fault, or none.
 * - The core is at the last noted fault's block, of its signal: the
 *   thread died there (no handler, a handler that returned to it, a fault
 *   inside a handler): exact from the core.
 * - The death is a fault the CPU raised that the plugin does not note
 *   (SIGFPE, SIGILL, SIGTRAP; the process did not send it itself): that
 *   new fault, from the core (bt_infer_code()); the noted ones went on.
 * - Otherwise the thread went on after its last noted fault and something
 *   else ended the process (a handler that re-raised, called abort(), or
 *   faulted elsewhere): that fault is the signal, to the block; what ended
 *   the process is kept as metadata (qemu.final_*).
 */
static void bt_death_noted_fault(struct bt_death *d)
{
	const struct bt_ring_slot *crashed = d->crashed;
	struct btrace_signal *sig = &d->sig;
	const struct bt_tb_info *lt =
		bt_qemu_tb_at(&d->r, crashed, crashed->fault_pos - 1);
	uint64_t rip = d->core.regs[BTRACE_REG_RIP];
	int at_last = d->core.found && lt && d->signo == crashed->fault_signo &&
		      rip >= lt->start && rip <= lt->start + lt->last_off;
	int cpu_fault = d->core.found && d->r.hdr->self_signo != d->signo &&
			d->signo != crashed->fault_signo &&
			(d->signo == SIGFPE || d->signo == SIGILL ||
			 d->signo == SIGTRAP);

	if (cpu_fault)
		return;
	if (at_last) {
		sig->addr = crashed->fault_addr;
		sig->code = crashed->fault_code;
		d->noted = 1;
	} else if (lt) {
		d->reraise = 1;
		sig->signo = crashed->fault_signo;
		sig->addr = crashed->fault_addr;
		sig->code = crashed->fault_code;
		sig->fault_source = BTRACE_FAULT_BLOCK;
		sig->fault_ip = lt->start;
		d->noted = 1;
	} else {
		/* The fault's block left the ring: the signal is the
		 * fault's, and unless it is the thread's one fault taken
		 * again (a handler returned to it), where it happened is
		 * not in the history: say so. */
		int sent = d->r.hdr->self_signo == d->signo;

		if (d->signo == crashed->fault_signo) {
			sig->addr = crashed->fault_addr;
			sig->code = crashed->fault_code;
			d->noted = 1;
		}
		if (!d->noted || sent ||
		    crashed->first_fault_signo != crashed->fault_signo ||
		    crashed->first_fault_addr != crashed->fault_addr)
			d->lost_fault = crashed;
		/* re-raised: the registers are the handler's, not the
		 * fault's */
		if (d->noted && sent) {
			d->reraise = 1;
			sig->fault_source = BTRACE_FAULT_NONE;
			sig->fault_ip = 0;
		}
	}
}

/* The signal of the snapshot, with the registers of the core. */
static void bt_death_signal(struct bt_job *j, struct bt_death *d)
{
	struct btrace_signal *sig = &d->sig;

	memset(sig, 0, sizeof(*sig));
	sig->exit_status = j->status;
	sig->tid = d->crashed_tid;
	sig->signo = d->signo;
	if (d->signo && d->crashed && d->crashed->nfaults)
		bt_death_noted_fault(d);
	if (!d->noted && d->signo)
		bt_infer_code(&d->r, &d->core, j->pid, sig);
	if (sig->signo == SIGSEGV && sig->code == SEGV_ACCERR &&
	    bt_in_stack_guard(d->r.maps, d->core.initial_stack, sig->addr)) {
		sig->code = SEGV_MAPERR;
		d->guard_hit = 1;
	}
	if (!d->reraise && d->core.found) {
		sig->fault_source = BTRACE_FAULT_CORE;
		sig->fault_ip = d->core.regs[BTRACE_REG_RIP];
		sig->has_regs = 1;
		memcpy(sig->regs, d->core.regs, sizeof(sig->regs));
	}
	/* A general-protection fault (SIGSEGV with SI_KERNEL, or a code QEMU
	 * did not tell) after a handler started misaligned (limit.sigalign):
	 * in all likelihood the emulator's, not the program's (a movaps to
	 * the handler's stack).  The registers stay for the stack; the fault
	 * is not called exact. */
	if (sig->signo == SIGSEGV && (sig->code == SI_KERNEL ||
				      sig->code == BTRACE_SIGCODE_UNKNOWN) &&
	    (__atomic_load_n(&bt_ring_limits_of(d->r.hdr)->flags,
			     __ATOMIC_ACQUIRE) & BT_LIMIT_SIGALIGN) &&
	    sig->fault_source == BTRACE_FAULT_CORE) {
		sig->fault_source = BTRACE_FAULT_NONE;
		sig->fault_ip = 0;
	}
}

/* The trace of slot @s re-encoded as a PT or BTS buffer, and its task. */
static int bt_death_slot(struct bt_job *j, struct bt_death *d,
			 const struct bt_ring_slot *s)
{
	const struct bt_qemu_ring *r = &d->r;
	struct bt_pt_enc_opts po = { .retcomp = 1,
				     .psb_period = BT_QEMU_PSB_PERIOD,
				     .ring_size = j->size + j->pad };
	struct bt_enc_ctx ec = { 0 };
	struct bt_qemu_end end = { 0 };
	struct bt_qemu_rebuild rb;
	struct btrace_buffer b;
	struct btrace_task t;
	int wrapped = 0, rc;

	if (s == d->crashed && d->core.found) {
		end.have_ip = 1;
		end.ip = d->core.regs[BTRACE_REG_RIP];
	}
	if (j->kind == BTRACE_TRACE_BTS)
		rc = bt_bts_enc_new(j->size + j->pad, &ec.bts);
	else
		rc = bt_pt_enc_new(&po, &ec.pt);
	if (rc)
		return bt_error(j->err, rc, "thread %d: encode failed: %s",
				s->tid, strerror(-rc));
	rc = bt_qemu_rebuild(r, s, &end, bt_enc_cb, &ec, &rb);
	if (!rc && ec.pt)
		rc = bt_pt_enc_end(ec.pt, rb.end_ip);
	if (rc) {
		bt_error(j->err, rc < 0 ? rc : -BTRACE_ERR_INTERNAL,
			 "thread %d: encode failed: invalid branch "
			 "sequence", s->tid);
		bt_pt_enc_free(ec.pt);
		bt_bts_enc_free(ec.bts);
		return rc;
	}
	/* (registers of the core with rip 0, a call through a NULL pointer,
	 * stay the fault's) */
	if (s == d->crashed && !d->sig.fault_ip && !d->reraise &&
	    d->sig.fault_source != BTRACE_FAULT_CORE) {
		d->sig.fault_source = BTRACE_FAULT_BLOCK;
		d->sig.fault_ip = rb.end_ip;
	}
	memset(&b, 0, sizeof(b));
	b.kind = j->kind;
	b.data = ec.pt ? bt_pt_enc_data(ec.pt, &b.size, &wrapped) :
			 bt_bts_enc_data(ec.bts, &b.size, &wrapped);
	b.flags = wrapped || bt_qemu_slot_pos(r, s) > bt_qemu_slot_entries(r, s) ?
		  BTRACE_BUF_WRAPPED : 0;
	if (rb.ngaps)
		b.flags |= BTRACE_BUF_LOST;
	b.lost = rb.ngaps;
	b.tid = s->tid;
	b.cpu = -1;
	b.requested_size = j->size;
	b.pad = j->pad;
	b.ring_size = j->size + j->pad;
	b.head = b.size;
	rc = bt_snapbuild_add_buffer(j->sb, &b);
	if (s == d->crashed)
		d->kept = b.size;
	bt_pt_enc_free(ec.pt);
	bt_bts_enc_free(ec.bts);

	memset(&t, 0, sizeof(t));
	t.pid = j->pid;
	t.tid = s->tid;
	t.ppid = r->hdr->ppid;
	t.flags = (s == d->crashed && d->signo ? BTRACE_TASK_CRASHED : 0) |
		  (s->state == BT_SLOT_EXITED ? BTRACE_TASK_EXITED : 0);
	t.comm = (char *)bt_basename(d->exe);
	t.exe = d->exe;
	if (!rc)
		rc = bt_snapbuild_add_task(j->sb, &t);
	return rc;
}

/*
 * The access log of the thread that died (docs/format.md, "accesses"),
 * and metadata qemu.accesses saying what it holds.  A log the file does
 * not hold as the plugin writes it is left out, and the metadata and
 * standard error say why: the rest of the snapshot does not need it.
 */
static int bt_death_accesses(struct bt_job *j, struct bt_death *d)
{
	struct bt_qemu_accesses a;
	struct btrace_access_log log;
	char why[256], v[512];
	int rc;

	if (!d->crashed)
		return 0;
	why[0] = 0;
	rc = bt_qemu_slot_accesses(&d->r, d->crashed, &a, why, sizeof(why));
	if (rc == 1)
		return 0;   /* no access log */
	if (rc < 0) {
		snprintf(v, sizeof(v), "thread %d: left out: %s",
			 (int)d->crashed->tid, why);
		if (!(j->opts->flags & BTRACE_RECORD_QUIET))
			bt_msg("btrace record: access log of %s", v);
		return bt_snapbuild_meta(j->sb, "qemu.accesses", v);
	}
	memset(&log, 0, sizeof(log));
	log.tid = a.tid;
	log.flags = a.complete ? BTRACE_ACCESSES_COMPLETE : 0;
	log.entries = a.e;
	log.n = a.n;
	rc = bt_snapbuild_add_accesses(j->sb, &log);
	free(a.e);
	if (a.complete)
		snprintf(v, sizeof(v), "thread %d: %llu accesses, every one "
			 "since the thread started (a ring of %llu)", a.tid,
			 (unsigned long long)a.n, (unsigned long long)a.cap);
	else
		snprintf(v, sizeof(v), "thread %d: the last %llu accesses (a "
			 "ring of %llu, which wrapped)", a.tid,
			 (unsigned long long)a.n, (unsigned long long)a.cap);
	return rc ? rc : bt_snapbuild_meta(j->sb, "qemu.accesses", v);
}

/* One buffer and one task per thread with a slot; a task without a trace
 * for a thread that died without one. */
static int bt_death_threads(struct bt_job *j, struct bt_death *d)
{
	int rc = 0;

	for (uint32_t i = 0; i < bt_qemu_nslots(&d->r) && !rc; i++) {
		const struct bt_ring_slot *s = bt_qemu_ring_slot(&d->r, i);

		if (s->state == BT_SLOT_FREE || !bt_qemu_slot_pos(&d->r, s))
			continue;
		rc = bt_death_slot(j, d, s);
	}
	if (!rc && d->untraced_died && d->signo) {
		struct btrace_task t;

		memset(&t, 0, sizeof(t));
		t.pid = j->pid;
		t.tid = d->crashed_tid;
		t.ppid = d->r.hdr->ppid;
		t.flags = BTRACE_TASK_CRASHED;
		t.comm = (char *)bt_basename(d->exe);
		t.exe = d->exe;
		rc = bt_snapbuild_add_task(j->sb, &t);
	}
	return rc;
}

/* How the process ended, for an exit snapshot (--on exit) and for a
 * signal that came after the fault of the snapshot (qemu.final_*). */
/*
 * Time (docs/format.md, "Time"): the plugin's clock samples became TSC
 * packets whose value is CLOCK_MONOTONIC in nanoseconds, so the conversion
 * to the snapshot's clock is the identity in perf's formula.
 */
static int bt_death_time_meta(struct bt_job *j, const struct bt_death *d)
{
	char v[256];
	int rc;

	if (j->kind != BTRACE_TRACE_PT || !d->r.hdr->time_every)
		return 0;
	rc = bt_snapbuild_meta(j->sb, "time.clock", "CLOCK_MONOTONIC");
	if (!rc)
		rc = bt_snapbuild_meta(j->sb, "time.tsc",
				       "zero=0 mult=1 shift=0");
	snprintf(v, sizeof(v), "a TSC packet (CLOCK_MONOTONIC, ns) every %u "
		 "blocks at most, at each system call's entry and return, a "
		 "thread's first block and a fault", d->r.hdr->time_every);
	if (!rc)
		rc = bt_snapbuild_meta(j->sb, "time.steps", v);
	return rc;
}

static int bt_death_end_meta(struct bt_job *j, const struct bt_death *d)
{
	char v[64];
	int rc;

	if (!d->sig.signo && !d->ondemand && j->status >= 0) {
		if (WIFEXITED(j->status))
			snprintf(v, sizeof(v), "%d", WEXITSTATUS(j->status));
		else
			snprintf(v, sizeof(v), "killed by %s",
				 bt_signame(WTERMSIG(j->status)));
		rc = bt_snapbuild_meta(j->sb, "exit_status", v);
		if (rc)
			return rc;
	}
	rc = bt_write_meta(j);
	if (!rc)
		rc = bt_death_time_meta(j, d);
	if (rc || !d->reraise)
		return rc;
	if (d->signo)
		snprintf(v, sizeof(v), "%s", bt_signame(d->signo));
	else
		snprintf(v, sizeof(v), "exit %d", WEXITSTATUS(j->status));
	rc = bt_snapbuild_meta(j->sb, "qemu.final_signal", v);
	snprintf(v, sizeof(v), "%u", d->crashed->nfaults);
	if (!rc)
		rc = bt_snapbuild_meta(j->sb, "qemu.faults", v);
	if (!rc && d->core.found) {
		snprintf(v, sizeof(v), "0x%llx",
			 (unsigned long long)d->core.regs[BTRACE_REG_RIP]);
		rc = bt_snapbuild_meta(j->sb, "qemu.reraise_ip", v);
	}
	return rc;
}

/* Where this run differed from a native one: untraced children, an
 * exec, the plugin's notes (limit.<name> = one sentence), a fault that
 * left the history, a main-stack overflow under signal handlers. */
static int bt_death_limits(struct bt_job *j, const struct bt_death *d)
{
	const struct bt_ring_hdr *h = d->r.hdr;
	struct bt_qemu_limit lim[BT_QEMU_MAX_LIMITS];
	size_t nlim;
	char key[64];
	int rc = 0;

	if (h->untraced_children) {
		char text[256];

		bt_untraced_children_text(h->untraced_children, text,
					  sizeof(text));
		rc = bt_snapbuild_meta(j->sb, "limit.untraced-children", text);
	}
	if (!rc && (h->flags & BT_RING_F_EXEC))
		rc = bt_snapbuild_meta(j->sb, "qemu.exec", h->exec_path);
	nlim = rc ? 0 : bt_qemu_limits_get(h, lim);
	for (size_t i = 0; i < nlim && !rc; i++) {
		snprintf(key, sizeof(key), "limit.%s", lim[i].name);
		rc = bt_snapbuild_meta(j->sb, key, lim[i].text);
	}
	if (!rc && d->lost_fault)
		rc = bt_death_lost_fault(j, d->lost_fault);
	if (!rc && d->guard_hit && h->nhandlers)
		rc = bt_death_stack_layout(j);
	return rc;
}

/*
 * The snapshot of a death (or of a stopped process, on demand), fed to the
 * snapshot builder (snapbuild.h): the threads' buffers and tasks, the
 * untraced ones, the mappings and code, the signal, then the metadata.
 */
static int bt_write_snapshot(struct bt_job *j, const char *ring_path,
		       struct btrace_record_result *res)
{
	const struct btrace_record_opts *o = j->opts;
	struct bt_death *d = calloc(1, sizeof(*d));
	struct bt_snapbuild sb;
	struct btrace_config cfg;
	char comm[16] = "", line[PATH_MAX + 256];
	int rc;

	if (!d)
		return bt_error(j->err, -ENOMEM, "process %d: snapshot failed: "
				"out of memory", j->pid);
	d->ondemand = j->ondemand_out != NULL;
	d->signo = !d->ondemand && WIFSIGNALED(j->status) ?
		   WTERMSIG(j->status) : 0;
	rc = bt_death_open(j, ring_path, d);
	if (rc) {
		free(d);
		return rc;
	}
	bt_death_core(j, d);
	bt_death_thread(j, d);
	bt_death_output(j, d, comm, sizeof(comm));
	bt_death_config(j, d, &cfg);
	rc = bt_snapbuild_begin(&sb, d->out, comm, j->pid, &cfg, j->err);
	snprintf(d->out, sizeof(d->out), "%s", sb.path);
	if (rc)
		goto done;
	j->sb = &sb;
	bt_death_signal(j, d);
	rc = bt_death_threads(j, d);
	if (!rc)
		rc = bt_death_accesses(j, d);
	if (!rc && d->r.hdr->untraced)
		rc = bt_write_untraced(j, &d->r, d->crashed_tid, d->untraced_died);
	if (!rc)
		rc = bt_write_maps(j, &d->r);
	if (!rc && d->sig.signo)
		rc = bt_snapbuild_set_signal(&sb, &d->sig);
	if (!rc && d->sig.signo)
		rc = bt_write_stack(j, &d->sig);
	if (!rc && d->sig.signo)
		rc = bt_write_data(j);
	if (!rc)
		rc = bt_death_end_meta(j, d);
	if (!rc)
		rc = bt_death_limits(j, d);
	/* a crash: never over another crash of this recording, or of
	 * another one, written to the same name meanwhile */
	sb.keep = !d->ondemand;
	sb.since = j->started;
	if (!rc)
		rc = bt_snapbuild_finish(&sb);
	else
		bt_snapbuild_abort(&sb);
	j->sb = NULL;
	if (rc || d->ondemand)
		goto done;
	snprintf(d->out, sizeof(d->out), "%s", sb.path);
	if (strcmp(sb.asked, sb.path))
		bt_msg("btrace record: %s was written during this recording "
		       "(another crash into the same file): it is kept, and "
		       "this crash of process %d is %s", sb.asked, j->pid,
		       sb.path);
	res->snapshots++;
	snprintf(res->snapshot_path, sizeof(res->snapshot_path), "%s", d->out);
	if (!(o->flags & BTRACE_RECORD_QUIET)) {
		struct bt_snap_summary sum = {
			.style = BT_SNAP_SUMMARY_QEMU, .sig = &d->sig,
			.tid = d->crashed_tid, .kept = d->kept, .asked = j->size,
		};

		bt_snapbuild_summary(&sb, &sum, line, sizeof(line));
		bt_msg("%s", line);
	}
done:
	bt_death_keep_core(j, d, rc);
	bt_qemu_core_free(&d->core);
	j->core = NULL;
	bt_qemu_ring_close(&d->r);
	free(d);
	return rc;
}

/* ---- watching the process tree ---- */

/* PIDFD_GET_INFO (Linux 6.15): a pidfd's exit status, even once reaped.
 * Our own declaration of the ioctl's ABI (not in bookworm's headers). */
struct bt_pidfd_info {
	uint64_t mask;
	uint64_t cgroupid;
	uint32_t ids[11];   /* pid, tgid, ppid, ruid, ... fsgid */
	int32_t exit_code;
};
#define BT_PIDFD_INFO_EXIT (1ull << 3)
#define BT_PIDFD_GET_INFO _IOWR(0xFF, 11, struct bt_pidfd_info)

static int bt_pidfd_open(pid_t pid)
{
#ifdef SYS_pidfd_open
	return (int)syscall(SYS_pidfd_open, pid, 0);
#else
	errno = ENOSYS;
	return -1;
#endif
}

struct bt_proc {
	pid_t pid;
	int pidfd;
	int done;
};

struct bt_tree {
	struct bt_job *j;
	struct btrace_record_result *res;
	int ino;                        /* the ring socket */
	struct bt_proc *p;
	size_t n, cap;
};

/* Whether process @ring_path's death (j->status) asks for a snapshot: a
 * selected signal, or --on exit.  A fault a handler took is not a crash
 * when the process then exits (a probe that siglongjmp'd out, a runtime
 * that catches its own faults), as with the hardware backends. */
static int bt_wants(struct bt_job *j, const char *ring_path)
{
	int st = j->status;

	(void)ring_path;
	if (WIFSIGNALED(st))
		return WTERMSIG(st) < 63 &&
		       (j->on & BTRACE_ON_SIGNAL(WTERMSIG(st)));
	return (j->on & BTRACE_ON_EXIT) != 0;
}

static double bt_cpu_ms(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static double bt_ms_since(const struct timespec *t)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t->tv_sec) * 1e3 +
	       (double)(now.tv_nsec - t->tv_nsec) / 1e6;
}

/* bt_write_snapshot(), and with BTRACE_QEMU_TIMING set, how long it took from
 * the death being seen to the file renamed into place. */
static int bt_write_snapshot_timed(struct bt_job *j, const char *ring_path,
			     struct btrace_record_result *res)
{
	double cpu = bt_cpu_ms();
	int rc = bt_write_snapshot(j, ring_path, res);

	/* The processes that joined the recording get it too. */
	if (!rc)
		bt_qowner_publish(j->owner, j->pid, res->snapshot_path);
	if (!rc && getenv("BTRACE_QEMU_TIMING"))
		/* for bench scripts; through the log callback, as every
		 * message of the library */
		bt_msg("btrace: snapshot of pid %d written %.1f ms "
		       "after its death (%.1f ms of CPU)", j->pid,
		       bt_ms_since(&j->died), bt_cpu_ms() - cpu);
	return rc;
}

/*
 * `btrace snapshot PID` (qemu-owner.c): process @pid is stopped; its ring
 * is read as at a death, and the snapshot written to @path with the crash
 * mode "on demand".  @ctx is the launched process's job.
 */
static int bt_snapshot_ondemand(void *ctx, pid_t pid, const char *path,
				struct btrace_error *err)
{
	const struct bt_job *root = ctx;
	struct bt_job cj = *root;
	char ring_path[PATH_MAX + 32];

	snprintf(ring_path, sizeof(ring_path), "%s/ring.%d", cj.dir, (int)pid);
	cj.pid = pid;
	cj.child = pid != root->pid;
	cj.status = -1;
	cj.sb = NULL;
	cj.core = NULL;
	cj.err = err;
	cj.ondemand_out = path;
	return bt_write_snapshot(&cj, ring_path, NULL);
}

/* The wait status of a forked child that is not ours (its parent is the
 * emulated parent), or -1: one look. */
static int bt_child_status_1(struct bt_proc *p)
{
	struct bt_pidfd_info info;
	char path[64], buf[1024], *c;
	int st = -1, fd;
	ssize_t n;

	/* Reparented to us (its parent died first). */
	if (waitpid(p->pid, &st, WNOHANG) == p->pid)
		return st;
	memset(&info, 0, sizeof(info));
	info.mask = BT_PIDFD_INFO_EXIT;
	if (p->pidfd >= 0 && ioctl(p->pidfd, BT_PIDFD_GET_INFO, &info) == 0 &&
	    (info.mask & BT_PIDFD_INFO_EXIT))
		return info.exit_code;
	/* Older kernels: a zombie's exit_code, field 52 of its stat. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)p->pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	c = strrchr(buf, ')');
	if (!c || c[1] != ' ' || c[2] != 'Z')
		return -1;
	for (int f = 2; c && f < 52; f++)
		c = strchr(c + 1, ' ');
	return c ? atoi(c + 1) : -1;
}

/* The wait status of a forked child that died, or -1.  Each way of
 * reading it has a moment where it fails: the pidfd's exit information
 * is there once the parent reaped the child, its stat's exit code while
 * it is a zombie, and the parent may reap it between the two looks (or
 * it may not be a zombie yet).  So, with a pidfd, look again for up to
 * a second (a full TMPDIR, where no guest core says how it died, lost
 * the snapshot of a crashed child about 1 run in 4). */
static int bt_child_status(struct bt_proc *p)
{
	int st = -1;

	/* without a pidfd, a reaped child's status is gone: one look */
	for (int i = 0; i < (p->pidfd >= 0 ? 200 : 1) && st == -1; i++) {
		if (i) {
			struct timespec ts = { 0, 5 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
		st = bt_child_status_1(p);
	}
	return st;
}

/* The forked children of the process whose ring is @ring_path that ran
 * untraced (their ring could not be made or handed to us), or 0. */
static uint32_t bt_untraced_children(const char *ring_path)
{
	struct bt_ring_hdr h;
	int fd = open(ring_path, O_RDONLY | O_CLOEXEC);
	uint32_t n = 0;

	if (fd < 0)
		return 0;
	if (pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	    !memcmp(h.magic, BT_RING_MAGIC, 8))
		n = h.untraced_children;
	close(fd);
	return n;
}

/* Says through the log callback (bt_msg()), once per process, that some
 * of its children went untraced. */
static void bt_untraced_children_warn(const char *ring_path, int pid)
{
	uint32_t n = bt_untraced_children(ring_path);
	char text[256];

	if (!n)
		return;
	bt_untraced_children_text(n, text, sizeof(text));
	bt_msg("btrace: warning: process %d (limit.untraced-children): "
		"%s", pid, text);
}

/*
 * Whether the emulator of process @pid failed by itself: the preload
 * library leaves "qemu-fail.<pid>" in the ring directory when QEMU calls
 * abort() or fails an assertion (the guest never calls the host's libc).
 * Then the program did not fault and gets no crash report; this is said
 * (limit.qemu-failure) and the note removed.  Returns 1 then, else 0.
 */
static int bt_qemu_failure(const char *dir, pid_t pid)
{
	char path[PATH_MAX + 32], text[512];
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/qemu-fail.%d", dir, (int)pid);
	fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, text, sizeof(text) - 1);
	close(fd);
	unlink(path);
	text[n > 0 ? n : 0] = 0;
	for (char *c = text; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	bt_msg("btrace: warning: process %d (limit.qemu-failure): the "
	       "emulator failed by itself (%s), not the program: no crash "
	       "report for it", (int)pid, text[0] ? text : "no reason given");
	return 1;
}

/* The notes of bt_qemu_failure() left in @dir: processes btrace never
 * watched (an emulator that failed in a fork before it handed its ring
 * over). */
static void bt_qemu_failures_rest(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		int pid = 0, k = 0;

		if (sscanf(e->d_name, "qemu-fail.%d%n", &pid, &k) == 1 &&
		    pid > 0 && !e->d_name[k])
			bt_qemu_failure(dir, pid);
	}
	if (d)
		closedir(d);
}

static void bt_child_died_1(struct bt_tree *t, struct bt_proc *p);

/* A forked child died: its own snapshot, when its death asks for one.
 * Then its pidfd and its ring go (the ring's pages with it), unless the
 * ring holds a TB table (a re-executed child's) that its own children
 * still use: a program that forks thousands of children does not run
 * btrace out of descriptors or memory. */
static void bt_child_died(struct bt_tree *t, struct bt_proc *p)
{
	struct bt_ring_hdr h;
	int fd;

	bt_child_died_1(t, p);
	bt_qowner_drop(t->j->owner, p->pid);
	if (p->pidfd >= 0)
		close(p->pidfd);
	p->pidfd = -1;
	fd = bt_rings_fd(t->j->rs, p->pid);
	if (fd >= 0 && pread(fd, &h, sizeof(h), 0) == (ssize_t)sizeof(h) &&
	    !h.tb_offset)
		bt_rings_drop(t->j->rs, p->pid);
}

static void bt_child_died_1(struct bt_tree *t, struct bt_proc *p)
{
	struct bt_job cj = *t->j;
	struct btrace_error e;
	char ring_path[PATH_MAX + 32];
	int st;

	clock_gettime(CLOCK_MONOTONIC, &cj.died);
	p->done = 1;
	st = bt_child_status(p);
	snprintf(ring_path, sizeof(ring_path), "%s/ring.%d", cj.dir,
		 (int)p->pid);
	if (st == -1) {
		/* Unknown status: a guest core means a fatal signal. */
		struct bt_qemu_ring r;
		struct bt_qemu_core core;
		char core_path[PATH_MAX];

		if (bt_qemu_ring_open(ring_path, &r, NULL))
			return;
		bt_core_path(&cj, p->pid, core_path, sizeof(core_path));
		bt_qemu_ring_close(&r);
		if (!core_path[0] || bt_qemu_core_read(core_path, &core))
			return;
		st = (core.signo & 0x7f) | 0x80;
		bt_qemu_core_free(&core);
	}
	cj.pid = p->pid;
	cj.status = st;
	cj.child = 1;
	cj.sb = NULL;
	memset(&e, 0, sizeof(e));
	cj.err = &e;
	bt_qemu_limits_warn(ring_path, p->pid);
	bt_untraced_children_warn(ring_path, p->pid);
	if (bt_qemu_failure(cj.dir, p->pid) || !bt_wants(&cj, ring_path)) {
		/* No snapshot: its guest core goes now, not at the end. */
		char core_path[PATH_MAX];

		bt_core_path(&cj, p->pid, core_path, sizeof(core_path));
		if (core_path[0])
			unlink(core_path);
	} else if (bt_write_snapshot_timed(&cj, ring_path, t->res)) {
		bt_msg("btrace record: forked child %d: %s", (int)p->pid,
			e.msg[0] ? e.msg : "snapshot failed");
	}
}

/* Tell a forked child waiting in the plugin (bt_wait_watched()) whether
 * we watch it (@yes) and close its socket. */
static void bt_watch_ack(int ack, int yes)
{
	char b = (char)!!yes;

	if (ack < 0)
		return;
	if (send(ack, &b, 1, MSG_NOSIGNAL | MSG_DONTWAIT) < 0)
		b = 0;   /* the child is gone: nothing to tell */
	close(ack);
}

/* Rings handed over by the plugin: forked children to watch (and
 * re-executed emulators, whose new ring replaces the old one). */
static void bt_tree_scan(struct bt_tree *t)
{
	pid_t pid;
	int ack;

	while (bt_rings_recv(t->j->rs, &pid, &ack)) {
		struct bt_proc *p;
		size_t i;
		int e = 0;

		if (pid == t->j->pid) {
			bt_watch_ack(ack, 1);
			continue;   /* the launched process re-executed */
		}
		for (i = 0; i < t->n && t->p[i].pid != pid; i++)
			;
		if (i < t->n && !t->p[i].done) {
			p = NULL;   /* a child re-executed: same process */
		} else if (i < t->n) {
			p = &t->p[i];   /* a new process with a reused pid */
			if (p->pidfd >= 0)
				close(p->pidfd);
			p->pidfd = -1;
		} else if (bt_grow((void **)&t->p, &t->cap, t->n,
				   sizeof(*t->p))) {
			bt_msg("btrace: warning: process %d: watch failed: "
			       "out of memory; it runs untraced", (int)pid);
			bt_rings_drop(t->j->rs, pid);
			bt_watch_ack(ack, 0);
			continue;
		} else {
			p = &t->p[t->n++];
		}
		if (p) {
			p->pid = pid;
			p->done = 0;
			p->pidfd = bt_pidfd_open(pid);
			e = p->pidfd < 0 ? errno : 0;
		}
		if (p && e && e != ESRCH) {
			/* Alive, but nothing to see its death with: said,
			 * and the plugin counts it untraced. */
			bt_msg("btrace: warning: process %d: watch failed: "
			       "pidfd_open: %s; it runs untraced", (int)pid,
			       strerror(e));
			p->done = 1;
			bt_rings_drop(t->j->rs, pid);
			bt_watch_ack(ack, 0);
			continue;
		}
		/* `btrace snapshot` and joins reach it too */
		if (p && p->pidfd >= 0)
			bt_qowner_claim(t->j->owner, pid, t->j->prog);
		/* Let the child run: it waits for this. */
		bt_watch_ack(ack, 1);
		if (p && p->pidfd < 0)
			bt_child_died(t, p);   /* already gone */
	}
}

static void bt_tree_free(struct bt_tree *t)
{
	for (size_t i = 0; i < t->n; i++)
		if (t->p[i].pidfd >= 0)
			close(t->p[i].pidfd);
	free(t->p);
	t->p = NULL;
	t->n = t->cap = 0;
}

/*
 * Wait for the launched emulator; meanwhile watch every forked child (the
 * plugin gives each its own ring file, and waits until we hold a pidfd on
 * it) and write a snapshot for each that dies of a selected signal.
 */
static int bt_watch_tree(struct bt_job *j, struct btrace_record_result *res)
{
	struct bt_tree t = { .j = j, .res = res, .ino = -1 };
	struct pollfd *pf = NULL;
	int rootfd = bt_pidfd_open(j->pid);
	pid_t w;

	if (rootfd < 0) {
		/* No pidfd (Linux < 5.3): the launched process only.  Rings
		 * handed over are taken (their senders would wait otherwise),
		 * and a re-executed launched process's replaces its own. */
		for (;;) {
			struct pollfd q = { .fd = j->rs->sock, .events = POLLIN };
			int e;

			w = waitpid(j->pid, &j->status, WNOHANG);
			e = errno;
			bt_tree_scan(&t);
			if (w == j->pid) {
				j->status = bt_qemu_guest_status(j->status);
				break;
			}
			if (w < 0 && e != EINTR) {
				/* reaped elsewhere: its status is gone */
				j->status = -1;
				bt_error(j->err, -e, "process %d: wait failed: "
					 "%s (its exit status is unknown)",
					 (int)j->pid, strerror(e));
				break;
			}
			if (j->jc)
				bt_jobctl_check(j->jc, j->pid);
			poll(&q, 1, 50);
		}
		bt_tree_scan(&t);
		clock_gettime(CLOCK_MONOTONIC, &j->died);
		bt_tree_free(&t);
		return j->status == -1 ? -ECHILD : 0;
	}
	t.ino = j->rs->sock;
	for (;;) {
		size_t k = 2, ko, no;
		int r;

		free(pf);
		pf = calloc(t.n + 2 + bt_qowner_nfds(j->owner), sizeof(*pf));
		if (!pf)
			break;
		pf[0].fd = t.ino;
		pf[0].events = POLLIN;
		pf[1].fd = rootfd;
		pf[1].events = POLLIN;
		for (size_t i = 0; i < t.n; i++) {
			pf[k].fd = t.p[i].done ? -1 : t.p[i].pidfd;
			pf[k++].events = POLLIN;
		}
		/* the registry's sockets last: snapshot requests, joins */
		ko = k;
		no = bt_qowner_fill(j->owner, pf + ko);
		r = poll(pf, ko + no, -1);
		if (r < 0 && errno != EINTR)
			break;
		if (j->jc)
			bt_jobctl_check(j->jc, j->pid);
		if (r <= 0)
			continue;
		/* New children first: each waits for us before it runs
		 * (bt_tree_scan()), a snapshot request can wait. */
		if (pf[0].revents)
			bt_tree_scan(&t);
		if (pf[1].revents == 0)
			bt_qowner_serve(j->owner, pf + ko, no);
		for (size_t i = 0; i < t.n && 2 + i < k; i++)
			if (pf[2 + i].revents && !t.p[i].done)
				bt_child_died(&t, &t.p[i]);
		if (pf[1].revents)
			break;
	}
	free(pf);
	while ((w = waitpid(j->pid, &j->status, 0)) < 0 && errno == EINTR)
		;
	if (w != j->pid) {
		/* Not ours to wait for (the kernel reaped it, or a thread of
		 * a program using the library did): the pidfd's exit status
		 * (Linux 6.15), never a made-up 0. */
		struct bt_proc p = { .pid = j->pid, .pidfd = rootfd };
		int e = errno;

		j->status = bt_child_status(&p);
		if (j->status == -1)
			bt_error(j->err, -e, "process %d: wait failed: %s "
				 "(its exit status is unknown)", (int)j->pid,
				 strerror(e));
	}
	/* a real-time signal's death as the guest's signal */
	if (j->status != -1)
		j->status = bt_qemu_guest_status(j->status);
	clock_gettime(CLOCK_MONOTONIC, &j->died);
	close(rootfd);
	/* Children that died with the root; the living ones are left.  The
	 * queue also holds the root's own ring if it re-executed just
	 * before it died. */
	bt_tree_scan(&t);
	for (size_t i = 0; i < t.n; i++) {
		struct pollfd q = { .fd = t.p[i].pidfd, .events = POLLIN };

		if (!t.p[i].done && t.p[i].pidfd >= 0 && poll(&q, 1, 0) == 1)
			bt_child_died(&t, &t.p[i]);
	}
	bt_tree_free(&t);
	return j->status == -1 ? -ECHILD : 0;
}

/*
 * The emulator maps the launched process's whole ring file, and btrace maps
 * it again to read it: under an address-space limit (ulimit -v) too small
 * for that, say so before running the program rather than after it ran
 * untraced.
 */
static int bt_check_address_space(uint64_t entries, uint64_t acc,
				  struct btrace_error *err)
{
	uint64_t need = bt_ring_file_size(BT_RING_DEF_SLOTS, entries,
					  BT_RING_DEF_TBMAX,
					  acc ? bt_pow2_roundup(acc) : 0);
	struct rlimit rl;
	char nbuf[32], lbuf[32];

	if (getrlimit(RLIMIT_AS, &rl) || rl.rlim_cur == RLIM_INFINITY ||
	    need < rl.rlim_cur)
		return 0;
	bt_error(err, -ENOMEM, "qemu backend: record failed: the rings need "
		 "%s of address space (%u thread slots of %llu entries, "
		 "their access logs and the block table), but the "
		 "address-space limit is %s",
		 bt_fmt_size(nbuf, sizeof(nbuf), need), BT_RING_DEF_SLOTS,
		 (unsigned long long)entries,
		 bt_fmt_size(lbuf, sizeof(lbuf), rl.rlim_cur));
	return bt_hint(err, "raise the limit (ulimit -v) or ask for less "
		       "history with --size or --accesses");
}

/* A launched process killed by SIGKILL that btrace did not send: say
 * whether the kernel's OOM killer did it (its count went up meanwhile). */
static void bt_say_killed(const struct bt_job *j, long oom0)
{
	long oom1;

	if (!WIFSIGNALED(j->status) || WTERMSIG(j->status) != SIGKILL)
		return;
	oom1 = bt_qemu_oom_kills();
	if (oom0 >= 0 && oom1 > oom0)
		bt_msg("btrace: process %d (%s under qemu-x86_64) was "
			"killed by the kernel's OOM killer (SIGKILL; %ld OOM "
			"kill%s on this system during the run): the program "
			"and the emulator ran out of memory; try a smaller "
			"--size, more memory, or a hardware backend", j->pid,
			bt_basename(j->prog), oom1 - oom0,
			oom1 - oom0 == 1 ? "" : "s");
	else
		bt_msg("btrace: process %d (%s under qemu-x86_64) was "
			"killed by SIGKILL, which btrace did not send%s", j->pid,
			bt_basename(j->prog), oom0 < 0 || oom1 < 0 ?
			" (whether by the OOM killer is unknown)" :
			" (not the OOM killer)");
}

/* The emulator, the plugin, the preload library, and the program, checked
 * as QEMU will run it (a program it cannot run as the kernel would is
 * refused). */
static int bt_qemu_find_all(const struct btrace_record_opts *opts,
			    char *qemu, char *plugin, char *preload, char *prog,
			    size_t len, struct bt_qemu_launch *launch,
			    struct btrace_error *err)
{
	int rc = bt_qemu_find_emulator(qemu, len, err);

	if (!rc)
		rc = bt_qemu_find_plugin(plugin, len, err);
	if (!rc)
		rc = bt_qemu_find_preload(plugin, preload, len, err);
	if (!rc)
		rc = bt_qemu_check_program(opts->argv, prog, len, launch, err);
	if (!rc)
		rc = bt_qemu_check_sanitizers(prog, err);
	return rc;
}

/* TB records per slot: about one PT byte each; BTS needs 24 bytes per
 * taken branch, so fewer records fill its ring. */
static uint64_t bt_slot_entries(uint32_t kind, uint64_t size)
{
	uint64_t entries = bt_pow2_roundup(kind == BTRACE_TRACE_BTS ? size / 12 :
					   size * 2);

	if (entries < 65536)
		entries = 65536;
	if (entries > (1ull << 26))
		entries = 1ull << 26;
	return entries;
}

/* The emulator's command line and environment (bt_cmdline_build). */
struct bt_cmdline {
	char **argv, **envp;
	char *pre_env, *extra;
	char dir_env[PATH_MAX + 32];
};

static void bt_cmdline_free(struct bt_cmdline *c)
{
	free(c->argv);
	free(c->envp);
	free(c->pre_env);
	free(c->extra);
	c->argv = c->envp = NULL;
	c->pre_env = c->extra = NULL;
}

/*
 * "qemu -cpu max -0 ARGV0 [BTRACE_QEMU_ARGS] [-E VAR]... -plugin @plugarg
 * PROG ARGS...", and the emulator's environment: ours less the loader's
 * variables (the guest's alone, through -E), with LD_PRELOAD of @preload
 * and BTRACE_QEMU_CORE_DIR=@dir.  -ENOMEM, all freed, when out of memory.
 */
static int bt_cmdline_build(struct bt_cmdline *c, char *qemu,
			    const char *preload, char *prog, char *plugarg,
			    const struct bt_qemu_launch *launch,
			    const char *dir)
{
	/* The guest's argv: a script's has its interpreter first. */
	int n = (int)launch->argc, k;
	size_t nenv = 0, nld = 0;
	char *save = NULL;

	memset(c, 0, sizeof(*c));
	/* BTRACE_QEMU_ARGS: extra emulator options (e.g. "-d exec,nochain
	 * -D log"), split at spaces. */
	c->extra = getenv("BTRACE_QEMU_ARGS");
	c->extra = c->extra ? strdup(c->extra) : NULL;
	/* The loader's variables go to the guest alone (-E). */
	for (char **e = environ; *e; e++) {
		nenv++;
		nld += bt_env_guest_only(*e);
	}
	c->argv = calloc((size_t)n + 10 + 2 * nld +
			 (c->extra ? strlen(c->extra) / 2 + 1 : 0),
			 sizeof(*c->argv));
	c->envp = calloc(nenv + 3, sizeof(*c->envp));
	/* The emulator (not the guest: the library takes itself out of the
	 * environment QEMU hands on) preloads libbtrace-qemu-preload.so, which
	 * sends QEMU's guest core to the ring directory. */
	if (asprintf(&c->pre_env, "LD_PRELOAD=%s", preload) < 0)
		c->pre_env = NULL;
	snprintf(c->dir_env, sizeof(c->dir_env), "BTRACE_QEMU_CORE_DIR=%s", dir);
	if (!c->argv || !c->envp || !c->pre_env) {
		bt_cmdline_free(c);
		return -ENOMEM;
	}
	c->argv[0] = qemu;
	c->argv[1] = (char *)"-cpu";
	c->argv[2] = (char *)"max";
	c->argv[3] = (char *)"-0";
	c->argv[4] = launch->argv[0];
	k = 5;
	for (char *tok = c->extra ? strtok_r(c->extra, " ", &save) : NULL; tok;
	     tok = strtok_r(NULL, " ", &save))
		c->argv[k++] = tok;
	nenv = 0;
	for (char **e = environ; *e; e++) {
		if (bt_env_guest_only(*e)) {
			c->argv[k++] = (char *)"-E";
			c->argv[k++] = *e;
		} else if (!strncmp(*e, "LD_PRELOAD=", 11)) {
			/* One with a comma stays the emulator's (see
			 * bt_env_guest_only); ours goes first. */
			char *m = NULL;

			if (asprintf(&m, "%s:%s", c->pre_env, *e + 11) >= 0) {
				free(c->pre_env);
				c->pre_env = m;
			}
		} else if (strncmp(*e, "BTRACE_QEMU_CORE_DIR=", 21)) {
			c->envp[nenv++] = *e;
		}
	}
	c->envp[nenv++] = c->pre_env;
	c->envp[nenv++] = c->dir_env;
	c->argv[k++] = (char *)"-plugin";
	c->argv[k++] = plugarg;
	c->argv[k++] = prog;
	for (int i = 1; i < n; i++)
		c->argv[k++] = launch->argv[i];
	return 0;
}

/*
 * Fork and exec the emulator (@c), the ring memfd @ringfd inherited: its
 * pid in *@pidp, and in *@cerr the errno of an execve() that failed (the
 * child's status then in *@status).  Orphaned emulator processes (forked
 * children whose parent died) become our children, so their status is
 * ours to read: *@subreaper is the setting to restore, or -1.  Fails (the
 * signal forwarding and subreaper restored) when no pipe or no fork.
 */
static int bt_spawn_emulator(const char *qemu, const struct bt_cmdline *c,
			     int ringfd, struct bt_fwd *fwd,
			     struct bt_jobctl *jc, int *subreaper,
			     const struct rlimit *nofile, pid_t *pidp,
			     int *cerr, int *status, struct btrace_error *err)
{
	int pipefd[2], k, rc;
	pid_t pid;

	*subreaper = -1;
	*cerr = 0;
	if (prctl(PR_GET_CHILD_SUBREAPER, (unsigned long)&k, 0, 0, 0) == 0 &&
	    prctl(PR_SET_CHILD_SUBREAPER, 1UL, 0, 0, 0) == 0)
		*subreaper = k;
	if (pipe2(pipefd, O_CLOEXEC)) {
		rc = -errno;
		if (*subreaper >= 0)
			prctl(PR_SET_CHILD_SUBREAPER, (unsigned long)*subreaper,
			      0, 0, 0);
		return bt_error(err, rc, "pipe failed: %s", strerror(-rc));
	}
	bt_fwd_install(fwd);
	bt_jobctl_init(jc);
	pid = fork();
	if (pid < 0) {
		rc = -errno;
		bt_jobctl_end(jc);
		bt_fwd_restore(fwd);
		if (*subreaper >= 0)
			prctl(PR_SET_CHILD_SUBREAPER, (unsigned long)*subreaper,
			      0, 0, 0);
		close(pipefd[0]);
		close(pipefd[1]);
		return bt_error(err, rc, "fork failed: %s", strerror(-rc));
	}
	if (pid == 0) {
		int e;

		/* The ring memfd is the emulator's to inherit (the plugin
		 * closes it before the guest starts). */
		fcntl(ringfd, F_SETFD, 0);
		bt_jobctl_child(jc);
		bt_fwd_restore(fwd);
		/* The program's own descriptor limit, not the one btrace
		 * raised for itself (bt_nofile_raise()). */
		if (nofile)
			setrlimit(RLIMIT_NOFILE, nofile);   /* a lower soft
							     * limit: no error */
		execve(qemu, c->argv, c->envp);
		e = errno;
		if (write(pipefd[1], &e, sizeof(e)) < 0)
			_exit(127);
		_exit(127);
	}
	bt_jobctl_parent(jc, pid);
	bt_child_lead = jc->lead;
	close(pipefd[1]);
	if (read(pipefd[0], cerr, sizeof(*cerr)) != sizeof(*cerr))
		*cerr = 0;
	close(pipefd[0]);
	if (*cerr)
		while (waitpid(pid, status, 0) < 0 && errno == EINTR)
			;
	*pidp = pid;
	return 0;
}

/*
 * The program ended (j->status): the result, the notes on how it ran, and
 * its snapshot when it is wanted; the rings dropped (kept with
 * BTRACE_QEMU_KEEP_RINGS).  @rc is the watch's.
 */
static int bt_qemu_finish(struct bt_job *j, struct bt_rings *rs,
			  const char *ring_path, const char *plugin, long oom0,
			  int rc, struct btrace_record_result *res,
			  struct btrace_error *err)
{
	res->exit_status = j->status;
	res->shell_status = j->status == -1 ? 1 :
			    WIFEXITED(j->status) ? WEXITSTATUS(j->status) :
			    WIFSIGNALED(j->status) ? 128 + WTERMSIG(j->status) : 1;
	if (bt_fwd_lost)
		bt_msg("btrace: warning: real-time signal %d sent to btrace "
		       "did not reach the program (limit.rt-signals): QEMU 7.2 "
		       "keeps two host real-time signals for itself and "
		       "cannot deliver signals 63 and 64", (int)bt_fwd_lost);

	if (!bt_ring_present(ring_path)) {
		bt_qowner_free(j->owner);
		bt_drop_rings(rs);
		bt_error(err, -BTRACE_ERR_UNSUPPORTED, "%s: load plugin failed: "
			 "qemu-x86_64 did not start the btrace plugin (exit "
			 "status %d)", plugin, res->shell_status);
		return bt_hint(err, "run 'btrace doctor'; the plugin must match "
			       "QEMU 7.2's plugin API version 1");
	}
	bt_qemu_limits_warn(ring_path, j->pid);
	bt_untraced_children_warn(ring_path, j->pid);
	bt_say_killed(j, oom0);
	if (!rc && !bt_qemu_failure(rs->dir, j->pid) && bt_wants(j, ring_path))
		rc = bt_write_snapshot_timed(j, ring_path, res);
	bt_qemu_failures_rest(rs->dir);
	bt_qowner_free(j->owner);
	j->owner = NULL;
	if (getenv("BTRACE_QEMU_KEEP_RINGS")) {
		bt_keep_rings(rs);
		bt_msg("btrace: ring files kept in %s", rs->dir);
	} else {
		bt_drop_rings(rs);
	}
	return rc;
}

static int bt_qemu_run(const struct btrace_record_opts *opts,
		       struct btrace_record_result *res,
		       struct bt_qemu_launch *launch,
		       const struct rlimit *nofile,
		       struct btrace_error *err)
{
	char qemu[PATH_MAX], plugin[PATH_MAX], prog[PATH_MAX];
	char preload[PATH_MAX];
	char cwd[PATH_MAX], plugarg[PATH_MAX * 2 + 128];
	char ring_path[PATH_MAX + 32];
	struct bt_cmdline cl;
	struct bt_rings rs;
	struct bt_fwd fwd;
	struct bt_jobctl jc;
	struct bt_job j;
	long oom0;
	uint64_t on, entries, acc;
	int rc, k, cerr = 0, subreaper = -1, ringfd;
	char fdarg[32] = "", commarg[32];
	pid_t pid = 0;

	memset(res, 0, sizeof(*res));
	res->exit_status = -1;   /* until the program ran */
	res->backend = BTRACE_BACKEND_QEMU;
	if (opts && opts->pid && (!opts->argv || !opts->argv[0]))
		return bt_qemu_attach_refused(opts->pid, NULL, err);
	if (!opts || !opts->argv || !opts->argv[0])
		return bt_error(err, -EINVAL, "qemu backend: record failed: "
				"no program to run");
	rc = bt_qemu_find_all(opts, qemu, plugin, preload, prog, PATH_MAX,
			      launch, err);
	if (rc)
		return rc;
	oom0 = bt_qemu_oom_kills();
	if (!getcwd(cwd, sizeof(cwd)))
		return bt_error(err, -errno, "getcwd failed: %s", strerror(errno));

	memset(&j, 0, sizeof(j));
	clock_gettime(CLOCK_REALTIME_COARSE, &j.started);
	j.opts = opts;
	j.err = err;
	j.prog = prog;
	j.start_cwd = cwd;
	j.size = opts->size ? opts->size : BT_QEMU_DEFAULT_SIZE;
	j.pad = opts->pad ? opts->pad : BT_QEMU_DEFAULT_PAD;
	j.kind = opts->trace_kind == BTRACE_TRACE_BTS ? BTRACE_TRACE_BTS :
							  BTRACE_TRACE_PT;
	on = opts->on ? opts->on : BTRACE_ON_DEFAULT;
	entries = bt_slot_entries(j.kind, j.size);
	acc = opts->flags & BTRACE_RECORD_NO_ACCESSES ? 0 :
	      opts->accesses ? opts->accesses : BTRACE_ACCESSES_DEFAULT;
	rc = bt_check_address_space(entries, acc, err);
	if (rc)
		return rc;

	/* Everything that could fail for want of TMPDIR, memory or
	 * descriptors fails here, before the program runs. */
	rc = bt_rings_init(&rs, err);
	if (rc) {
		bt_drop_rings(&rs);
		return rc;
	}
	j.dir = rs.dir;
	j.rs = &rs;
	ringfd = bt_ring_memfd(&rs, err);
	if (ringfd < 0) {
		bt_drop_rings(&rs);
		return ringfd;
	}
	snprintf(fdarg, sizeof(fdarg), ",fd=%d", ringfd);
	/* watch=1 (children wait for our pidfd) only if pidfds work. */
	k = bt_pidfd_open(getpid());
	if (k >= 0)
		close(k);
	snprintf(plugarg, sizeof(plugarg),
		 "%s,dir=%s,entries=%llu,accesses=%llu,dumpable=0,exec=1,"
		 "watch=%d%s%s", plugin, rs.dir, (unsigned long long)entries,
		 (unsigned long long)acc, k >= 0, fdarg,
		 bt_qemu_comm_arg(opts->argv[0], commarg, sizeof(commarg)));
	if (bt_cmdline_build(&cl, qemu, preload, prog, plugarg, launch,
			     rs.dir)) {
		close(ringfd);
		bt_drop_rings(&rs);
		return bt_error(err, -ENOMEM, "qemu backend: out of memory");
	}
	rc = bt_spawn_emulator(qemu, &cl, ringfd, &fwd, &jc, &subreaper,
			       nofile, &pid, &cerr, &j.status, err);
	bt_cmdline_free(&cl);
	if (rc) {
		close(ringfd);
		bt_drop_rings(&rs);
		return rc;
	}
	if (cerr) {
		bt_child_lead = 0;
		bt_jobctl_end(&jc);
		bt_fwd_restore(&fwd);
		close(ringfd);
		bt_drop_rings(&rs);
		return bt_error(err, -cerr, "%s: exec failed: %s", qemu,
				strerror(cerr));
	}
	bt_fwd_start(pid);
	snprintf(ring_path, sizeof(ring_path), "%s/ring.%d", rs.dir, (int)pid);
	k = bt_rings_add(&rs, pid, ringfd);
	if (k) {
		/* Only our own directory's link can fail here: the emulator
		 * runs on, its ring unread, and this is said. */
		close(ringfd);
		bt_msg("btrace: %s: link ring failed: %s", ring_path,
			strerror(-k));
	}
	j.pid = pid;
	j.on = on;
	/* The registry owner of the program's processes (qemu-owner.h). */
	j.owner = bt_qowner_new(bt_snapshot_ondemand, &j,
				!!(opts->flags & BTRACE_RECORD_QUIET));
	bt_qowner_claim(j.owner, pid, j.prog);
	j.jc = &jc;
	rc = bt_watch_tree(&j, res);
	/* the terminal back before anything is said */
	bt_child_lead = 0;
	bt_jobctl_end(&jc);
	j.jc = NULL;
	/* The program is gone: a signal to btrace from now on (SIGTERM,
	 * ^C, a hangup) is held until the snapshot is written, not let kill
	 * btrace in the middle of the write (bt_fwd_said()). */
	bt_child_pid = 0;
	if (subreaper >= 0)
		prctl(PR_SET_CHILD_SUBREAPER, (unsigned long)subreaper, 0, 0, 0);
	j.pid = pid;
	rc = bt_qemu_finish(&j, &rs, ring_path, plugin, oom0, rc, res, err);
	bt_fwd_restore(&fwd);
	bt_fwd_said();
	return rc;
}

/*
 * btrace holds two descriptors per live process of the tree (its ring and
 * a pidfd), so a program that keeps a few hundred children alive ran it
 * out of a soft `ulimit -n` of 256 or 1024: rings that could not be
 * received and pidfds that could not be opened left children untraced
 * (79 of 300 at 256, 36 of 600 at 1024).  As the hardware engine does
 * (raise_nofile() in src/capture/engine.c), raise the soft limit to the
 * hard one for btrace itself; the emulator gets the caller's limit back
 * before it starts (bt_spawn_emulator()), so the program sees its own.
 * Returns 1 when raised (*@old: the limit to restore).
 */
static int bt_nofile_raise(struct rlimit *old)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_NOFILE, old) || old->rlim_cur >= old->rlim_max)
		return 0;
	rl = *old;
	rl.rlim_cur = rl.rlim_max;
	return setrlimit(RLIMIT_NOFILE, &rl) == 0;
}

int bt_qemu_record(const struct btrace_record_opts *opts,
		   struct btrace_record_result *res, struct btrace_error *err)
{
	struct bt_qemu_launch launch;
	struct rlimit nofile;
	int rc, raised = bt_nofile_raise(&nofile);

	memset(&launch, 0, sizeof(launch));
	rc = bt_qemu_run(opts, res, &launch, raised ? &nofile : NULL, err);
	bt_qemu_launch_free(&launch);
	if (raised)
		setrlimit(RLIMIT_NOFILE, &nofile);
	return rc;
}
