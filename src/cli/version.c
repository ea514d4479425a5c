/* SPDX-License-Identifier: MIT */
/* btrace --version [--verbose]: the version, and with --verbose the
 * versions of the libraries in use and of QEMU, and the backends. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <capstone/capstone.h>
#include <elfutils/libdwfl.h>
#include <intel-pt.h>
#include <zstd.h>

#include "cli.h"

/* Is @path an executable regular file? */
static int is_exec(const char *path)
{
	return access(path, X_OK) == 0 && strchr(path, '/');
}

/* The emulator btrace record would use: $BTRACE_QEMU (a path, or a name
 * looked up in PATH), else qemu-x86_64 in PATH.  0 when found. */
static int find_qemu(char *out, size_t len)
{
	const char *name = getenv("BTRACE_QEMU"), *path = getenv("PATH"), *p, *e;

	if (!name || !*name)
		name = "qemu-x86_64";
	if (strchr(name, '/')) {
		snprintf(out, len, "%s", name);
		return is_exec(out) ? 0 : -1;
	}
	if (!path || !*path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; *p; p = *e ? e + 1 : e) {
		e = strchr(p, ':');
		if (!e)
			e = p + strlen(p);
		snprintf(out, len, "%.*s/%s", (int)(e - p), e > p ? p : ".", name);
		if (is_exec(out))
			return 0;
	}
	return -1;
}

/* "7.2.22" from the first line of `EMU --version` ("qemu-x86_64 version
 * 7.2.22 (Debian ...)"); "" when it does not run or says otherwise. */
static void qemu_version(const char *emu, char *out, size_t len)
{
	char buf[512], *v, *end;
	int fds[2], st;
	size_t n = 0;
	ssize_t r;
	pid_t pid;

	out[0] = 0;
	if (pipe(fds) < 0)
		return;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		close(fds[1]);
		execl(emu, emu, "--version", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	while (pid > 0 && n < sizeof(buf) - 1 &&
	       ((r = read(fds[0], buf + n, sizeof(buf) - 1 - n)) > 0 ||
		(r < 0 && errno == EINTR)))
		n += r > 0 ? (size_t)r : 0;
	close(fds[0]);
	if (pid < 0)
		return;
	while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
		;
	buf[n] = 0;
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0 || !(v = strstr(buf, " version ")))
		return;
	v += strlen(" version ");
	end = v + strcspn(v, " \n");
	snprintf(out, len, "%.*s", (int)(end - v), v);
}

int cli_version(bool verbose)
{
	struct pt_version pv = pt_library_version();
	char emu[4096], qv[64];
	int csmaj = 0, csmin = 0;
	const char *dw = dwfl_version(NULL);

	printf("btrace %s\n", btrace_version());
	if (!verbose)
		return CLI_EXIT_OK;
	cs_version(&csmaj, &csmin);
	printf("libipt:    %u.%u.%u\n", pv.major, pv.minor, pv.patch);
	printf("libdw:     %s\n", dw ? dw : "unknown");
	printf("capstone:  %d.%d\n", csmaj, csmin);
	printf("zstd:      %s\n", ZSTD_versionString());
	if (find_qemu(emu, sizeof(emu)) < 0) {
		printf("QEMU:      not found (%s)\n", getenv("BTRACE_QEMU") &&
		       *getenv("BTRACE_QEMU") ? "BTRACE_QEMU" : "qemu-x86_64 in PATH");
	} else {
		qemu_version(emu, qv, sizeof(qv));
		printf("QEMU:      %s (%s)\n", qv[0] ? qv : "version unknown",
		       cli_esc(emu));
	}
	printf("backends:  pt, bts (perf_event_open), qemu (TCG plugin)\n"
	       "           'btrace doctor' says which of them work here\n");
	return CLI_EXIT_OK;
}
