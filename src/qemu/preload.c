// SPDX-License-Identifier: MIT
/*
 * libbtrace-qemu-preload.so: preloaded into qemu-x86_64 itself (never into
 * the guest) by the QEMU backend, so that QEMU's guest core, which holds
 * the exact registers of the thread that died, is always written, and
 * written only where btrace reads it.
 *
 * QEMU 7.2 (linux-user) writes the guest core when the guest dies of a
 * core-dumping signal: elf_core_dump() asks getrlimit(RLIMIT_CORE) (gives
 * up at 0, and again before every write), opens "qemu_<prog>_<time>_<pid>.core"
 * in the working directory with open64(O_WRONLY | O_CREAT, 0644), writes,
 * and dump_core_and_abort() then kill()s its own process with the signal,
 * so the kernel also dumps QEMU's own (host) core.  A core so written
 * depends on the guest's RLIMIT_CORE and working directory, follows a
 * symbolic link another user planted under the predictable name, and is
 * readable by anyone.  This library interposes exactly those calls of
 * QEMU's (the guest's own system calls never go through the host libc):
 *
 *   open, open64   the core's name (a path whose last component is
 *                  "qemu_*_<pid>.core", created): instead "core.<pid>" in
 *                  btrace's private ring directory (BTRACE_QEMU_CORE_DIR,
 *                  checked: a directory of ours that no one else can
 *                  write, the same one as at start), created O_EXCL |
 *                  O_NOFOLLOW, mode 0600.  Without a usable directory the
 *                  open fails: a core is never written anywhere else.
 *   getrlimit(64)  RLIMIT_CORE asked by QEMU's core writer: no limit (the
 *                  real soft limit is untouched, so the guest, whose
 *                  prlimit64 goes to the kernel directly, sees its own).
 *   kill           QEMU killing its own process with the fatal signal:
 *                  the soft RLIMIT_CORE goes to 0 first, so the kernel
 *                  dumps no core of QEMU itself.
 *   pthread_exit   the initial thread exiting while other threads run
 *                  (a guest main thread that called pthread_exit()): it
 *                  is parked instead, because QEMU 7.2's fatal-signal path
 *                  reads its image description from that thread's stack
 *                  and crashes (no guest core, a host SIGSEGV) once it is
 *                  gone.
 *   abort, __assert_fail  QEMU's own failure (the guest never calls the
 *                  host's libc): "qemu-fail.<pid>" in the directory says
 *                  so, and btrace writes no crash report for it.
 *   execve         the plugin's re-execution of the emulator at a guest
 *                  execve() (plugin-exec.c): this library and its
 *                  directory are handed on.
 *
 * "QEMU's core writer" is told from a guest's getrlimit system call by the
 * thread's signal mask: QEMU blocks every host signal, SIGSEGV and SIGBUS
 * included, while it handles a pending guest signal (process_pending_signals,
 * where the core is written), and never while a guest system call runs
 * (the host mask is then the guest's, less SIGSEGV and SIGBUS).
 *
 * At load, the library removes BTRACE_QEMU_CORE_DIR and itself from
 * LD_PRELOAD in the environment, before QEMU copies the environment for
 * the guest.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
/* The library defines open, open64, getrlimit and getrlimit64 themselves:
 * no header may rename or wrap them. */
#undef _FILE_OFFSET_BITS
#undef _FORTIFY_SOURCE
#include <assert.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define BT_EXPORT __attribute__((visibility("default")))
#define BT_CORE_DIR_ENV "BTRACE_QEMU_CORE_DIR"

static struct {
	char dir[PATH_MAX];   /* the private directory, "" if unusable */
	dev_t dev;
	ino_t ino;
	uid_t uid;
	char self[PATH_MAX];  /* this library, as LD_PRELOAD named it */
} g;

/* ---- set-up ---- */

/* Remove the token @self from the colon/space separated LD_PRELOAD. */
static void bt_strip_preload(const char *self)
{
	const char *v = getenv("LD_PRELOAD");
	char *out, *o;
	const char *p = v;

	if (!v)
		return;
	out = malloc(strlen(v) + 1);
	if (!out)
		return;
	o = out;
	while (*p) {
		size_t n = strcspn(p, ": ");

		if (n && (n != strlen(self) || strncmp(p, self, n))) {
			if (o != out)
				*o++ = ':';
			memcpy(o, p, n);
			o += n;
		}
		p += n;
		if (*p)
			p++;
	}
	*o = 0;
	if (*out)
		setenv("LD_PRELOAD", out, 1);
	else
		unsetenv("LD_PRELOAD");
	free(out);
}

__attribute__((constructor)) static void bt_preload_init(void)
{
	const char *d = getenv(BT_CORE_DIR_ENV);
	struct stat st;
	Dl_info info;

	if (d && d[0] == '/' && strlen(d) < sizeof(g.dir) &&
	    !lstat(d, &st) && S_ISDIR(st.st_mode) && st.st_uid == geteuid() &&
	    !(st.st_mode & 077)) {
		snprintf(g.dir, sizeof(g.dir), "%s", d);
		g.dev = st.st_dev;
		g.ino = st.st_ino;
		g.uid = st.st_uid;
	}
	unsetenv(BT_CORE_DIR_ENV);
	if (dladdr((void *)bt_preload_init, &info) && info.dli_fname &&
	    info.dli_fname[0] == '/' && strlen(info.dli_fname) < sizeof(g.self)) {
		snprintf(g.self, sizeof(g.self), "%s", info.dli_fname);
		bt_strip_preload(g.self);
	}
}

/* ---- the guest core ---- */

/* Whether the thread is in QEMU's handling of a guest signal (see above). */
static int bt_in_signal_path(void)
{
	sigset_t cur;

	if (pthread_sigmask(SIG_BLOCK, NULL, &cur))
		return 0;
	return sigismember(&cur, SIGSEGV) == 1 && sigismember(&cur, SIGBUS) == 1;
}

/* Whether @path names QEMU's guest core of this process. */
static int bt_is_core_name(const char *path, int flags)
{
	const char *b;
	char suf[32];
	size_t n, s;

	if (!path || !(flags & O_CREAT))
		return 0;
	b = strrchr(path, '/');
	b = b ? b + 1 : path;
	if (strncmp(b, "qemu_", 5))
		return 0;
	snprintf(suf, sizeof(suf), "_%d.core", (int)getpid());
	n = strlen(b);
	s = strlen(suf);
	return n > 5 + s && !strcmp(b + n - s, suf);
}

/* @name.<pid> in the private directory, created new, 0600. */
static int bt_dir_create(const char *what)
{
	char name[48];
	struct stat st;
	int dfd, fd, e;

	if (!g.dir[0]) {
		errno = EACCES;
		return -1;
	}
	dfd = (int)syscall(SYS_openat, AT_FDCWD, g.dir,
			   O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC, 0);
	if (dfd < 0)
		return -1;
	if (fstat(dfd, &st) || st.st_dev != g.dev || st.st_ino != g.ino ||
	    st.st_uid != g.uid || (st.st_mode & 077)) {
		close(dfd);
		errno = EACCES;
		return -1;
	}
	snprintf(name, sizeof(name), "%s.%d", what, (int)getpid());
	/* An earlier process's, when the pid came round again. */
	unlinkat(dfd, name, 0);
	fd = (int)syscall(SYS_openat, dfd, name,
			  O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
			  0600);
	e = errno;
	close(dfd);
	errno = e;
	return fd;
}

static int bt_open(const char *path, int flags, va_list ap)
{
	mode_t mode = 0;

	if (flags & (O_CREAT | __O_TMPFILE))
		mode = (mode_t)va_arg(ap, int);
	if (bt_is_core_name(path, flags))
		return bt_dir_create("core");
	return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

BT_EXPORT int open(const char *path, int flags, ...)
{
	va_list ap;
	int fd;

	va_start(ap, flags);
	fd = bt_open(path, flags, ap);
	va_end(ap);
	return fd;
}

BT_EXPORT int open64(const char *path, int flags, ...)
{
	va_list ap;
	int fd;

	va_start(ap, flags);
	fd = bt_open(path, flags, ap);
	va_end(ap);
	return fd;
}

/* ---- QEMU's own failures ---- */

/*
 * The guest never calls the host's libc (its code is emulated), so an
 * abort() or a failed assert() here is QEMU's own (qemu_thread_create()
 * failing for want of tasks under RLIMIT_NPROC, an internal assertion):
 * "qemu-fail.<pid>" in the private directory says so, with the reason,
 * and btrace writes no crash report for it (the program did not fault)
 * and says so (limit.qemu-failure).
 */
static void bt_note_failure(const char *text)
{
	int fd = bt_dir_create("qemu-fail");

	ssize_t n;

	if (fd < 0)
		return;
	n = write(fd, text, strlen(text));
	(void)n;   /* a note: nothing more to do when it fails */
	close(fd);
}

BT_EXPORT void abort(void)
{
	void (*real)(void) = (void (*)(void))dlsym(RTLD_NEXT, "abort");

	bt_note_failure("QEMU called abort()");
	if (real)
		real();
	_exit(134);
}

BT_EXPORT void __assert_fail(const char *expr, const char *file,
			     unsigned int line, const char *fn)
{
	void (*real)(const char *, const char *, unsigned int, const char *) =
		(void (*)(const char *, const char *, unsigned int,
			  const char *))dlsym(RTLD_NEXT, "__assert_fail");
	char text[512];

	snprintf(text, sizeof(text), "QEMU's assertion `%s' failed (%s:%u)",
		 expr ? expr : "?", file ? file : "?", line);
	bt_note_failure(text);
	if (real)
		real(expr, file, line, fn);
	_exit(134);
}

static int bt_getrlimit(int resource, struct rlimit *rl)
{
	int rc = (int)syscall(SYS_prlimit64, 0, resource, NULL, rl);

	if (!rc && resource == RLIMIT_CORE && bt_in_signal_path())
		rl->rlim_cur = RLIM_INFINITY;
	return rc;
}

BT_EXPORT int getrlimit(__rlimit_resource_t resource, struct rlimit *rl)
{
	return bt_getrlimit((int)resource, rl);
}

BT_EXPORT int getrlimit64(__rlimit_resource_t resource, struct rlimit64 *rl)
{
	_Static_assert(sizeof(struct rlimit64) == sizeof(struct rlimit),
		       "rlimit64 is rlimit");
	return bt_getrlimit((int)resource, (struct rlimit *)rl);
}

BT_EXPORT int kill(pid_t pid, int sig)
{
	if (pid == getpid() && bt_in_signal_path()) {
		struct rlimit rl;

		if (!syscall(SYS_prlimit64, 0, RLIMIT_CORE, NULL, &rl)) {
			rl.rlim_cur = 0;
			syscall(SYS_prlimit64, 0, RLIMIT_CORE, &rl, NULL);
		}
	}
	return (int)syscall(SYS_kill, pid, sig);
}

/* ---- the initial thread ---- */

BT_EXPORT void pthread_exit(void *ret)
{
	static void (*real)(void *);

	if (gettid() == getpid()) {
		sigset_t all;

		/* Process-directed signals go to the other threads. */
		sigfillset(&all);
		pthread_sigmask(SIG_SETMASK, &all, NULL);
		for (;;)
			pause();
	}
	if (!real)
		real = (void (*)(void *))dlsym(RTLD_NEXT, "pthread_exit");
	if (!real)
		syscall(SYS_exit, 0);
	real(ret);
	__builtin_unreachable();
}

/* ---- re-execution of the emulator ---- */

static int bt_same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

BT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	char **env = NULL, *pre = NULL, *dir = NULL;
	size_t n = 0, k = 0;
	int rc, e;

	if (!g.self[0] || !bt_same_file(path, "/proc/self/exe"))
		return (int)syscall(SYS_execve, path, argv, envp);
	while (envp && envp[n])
		n++;
	env = calloc(n + 3, sizeof(*env));
	if (!env)
		goto plain;
	for (size_t i = 0; i < n; i++) {
		const char *v = envp[i];

		if (!strncmp(v, "LD_PRELOAD=", 11) && !pre) {
			if (asprintf(&pre, "LD_PRELOAD=%s:%s", g.self, v + 11) < 0) {
				pre = NULL;
				goto plain;
			}
			env[k++] = pre;
		} else if (strncmp(v, BT_CORE_DIR_ENV "=",
				   sizeof(BT_CORE_DIR_ENV))) {
			env[k++] = (char *)v;
		}
	}
	if (!pre) {
		if (asprintf(&pre, "LD_PRELOAD=%s", g.self) < 0) {
			pre = NULL;
			goto plain;
		}
		env[k++] = pre;
	}
	if (g.dir[0]) {
		if (asprintf(&dir, "%s=%s", BT_CORE_DIR_ENV, g.dir) < 0) {
			dir = NULL;
			goto plain;
		}
		env[k++] = dir;
	}
	env[k] = NULL;
	rc = (int)syscall(SYS_execve, path, argv, env);
	e = errno;
	free(pre);
	free(dir);
	free(env);
	errno = e;
	return rc;
plain:
	free(pre);
	free(dir);
	free(env);
	return (int)syscall(SYS_execve, path, argv, envp);
}
