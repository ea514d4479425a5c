/* SPDX-License-Identifier: MIT */
/* The parts every backend's snapshot shares (snapbuild.h). */
#include "config.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>

#include "snapbuild.h"
#include "util.h"

void bt_snap_default_name(char *buf, size_t len, const char *comm, pid_t pid)
{
	char clean[32];
	size_t i;

	for (i = 0; comm && comm[i] && i + 1 < sizeof(clean); i++)
		clean[i] = (comm[i] == '/' || comm[i] == ' ') ? '_' : comm[i];
	clean[i] = '\0';
	snprintf(buf, len, "btrace-%s-%d.btrace", i ? clean : "process",
		 (int)pid);
}

/* @argv joined by spaces; NULL when out of memory. */
static char *join_argv(char *const *argv)
{
	size_t cl = 0;
	char *cmd;

	for (char *const *a = argv; *a; a++)
		cl += strlen(*a) + 1;
	cmd = calloc(1, cl + 1);
	if (!cmd)
		return NULL;
	for (char *const *a = argv; *a; a++) {
		strcat(cmd, *a);
		if (a[1])
			strcat(cmd, " ");
	}
	return cmd;
}

/* /proc/@pid/cmdline, its arguments joined by spaces; NULL when it cannot
 * be read or is empty (a zombie, a kernel thread). */
static char *read_cmdline(pid_t pid)
{
	char path[64], *buf;
	size_t len;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
	if (pid <= 0 || bt_read_file(path, &buf, &len, 1 << 20) < 0)
		return NULL;
	while (len && buf[len - 1] == '\0')
		len--;
	if (!len) {
		free(buf);
		return NULL;
	}
	for (size_t i = 0; i < len; i++)
		if (buf[i] == '\0')
			buf[i] = ' ';
	buf[len] = '\0';
	return buf;
}

int bt_snap_std_meta(struct btrace_writer *w, char *const *argv, pid_t pid,
		     struct btrace_error *err)
{
	struct utsname u;
	char tbuf[64], *cmd;
	time_t now = time(NULL);
	struct tm tm;
	int rc = 0;

	if (!uname(&u)) {
		rc = btrace_writer_add_meta(w, "host", u.nodename, err);
		if (!rc)
			rc = btrace_writer_add_meta(w, "kernel", u.release, err);
	}
	if (!rc)
		rc = btrace_writer_add_meta(w, "btrace_version", BTRACE_VERSION,
					    err);
	gmtime_r(&now, &tm);
	strftime(tbuf, sizeof(tbuf), "%Y-%m-%dT%H:%M:%SZ", &tm);
	if (!rc)
		rc = btrace_writer_add_meta(w, "time", tbuf, err);
	cmd = argv ? join_argv(argv) : read_cmdline(pid);
	if (cmd && !rc)
		rc = btrace_writer_add_meta(w, "command", cmd, err);
	free(cmd);
	return rc;
}

const char *btrace_signal_str(int signo, char *buf, size_t len)
{
	const char *ab = signo > 0 && signo < 65 ? sigabbrev_np(signo) : NULL;

	if (!ab)
		return NULL;
	snprintf(buf, len, "SIG%s", ab);
	return buf;
}
