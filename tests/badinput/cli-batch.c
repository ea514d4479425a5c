/* SPDX-License-Identifier: MIT */
/*
 * The reading commands of the btrace CLI (the same cmd_info, cmd_report,
 * cmd_decode and cmd_export functions btrace's main() calls), run in one
 * process over many snapshots: fuzz-snapshots.py --batch uses it so that a
 * mutated snapshot does not cost five process start-ups (under ASan most of
 * a small case's time).
 *
 *   bt-cli-batch TIMEOUT SNAPSHOT...
 *
 * For each SNAPSHOT, in the directory D holding it: `info`, `report`,
 * `report --json`, `decode --calls` and `export --perf-data D/out.data -f -q`
 * with stdout and stderr in D/K.out and D/K.err (K = 0..4) and the exit
 * status as a line "K STATUS" appended to D/status; then a leak check
 * (LeakSanitizer, when linked in) with its report in D/leak.err; "done"
 * ends D/status.  A command gets TIMEOUT seconds (alarm: SIGALRM kills the process).
 * A sanitizer error or a signal ends the process: the caller runs the
 * snapshots without a complete D/status again, one btrace process per
 * command, to say which command and why.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"

/* LeakSanitizer's interface, when the build has it (weak: absent in a plain
 * build, where leaks are not checked). */
int __lsan_do_recoverable_leak_check(void) __attribute__((weak));

static int redirect(int fd, const char *path)
{
	int f = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC,
		     0600);

	if (f < 0)
		return -1;
	if (dup2(f, fd) < 0) {
		close(f);
		return -1;
	}
	close(f);
	return 0;
}

int main(int argc, char **argv)
{
	int saved_out, saved_err;
	unsigned timeout;

	if (argc < 2) {
		fprintf(stderr, "usage: bt-cli-batch TIMEOUT SNAPSHOT...\n");
		return 2;
	}
	timeout = (unsigned)strtoul(argv[1], NULL, 10);
	opterr = 0;   /* as btrace's main() */
	saved_out = dup(1);
	saved_err = dup(2);
	if (saved_out < 0 || saved_err < 0) {
		perror("bt-cli-batch: dup");
		return 1;
	}
	for (int i = 2; i < argc; i++) {
		const char *snap = argv[i];
		const char *slash = strrchr(snap, '/');
		char dir[4096], path[4200], out[4200];
		FILE *st;

		if (!slash || (size_t)(slash - snap) >= sizeof(dir)) {
			fprintf(stderr, "bt-cli-batch: %s: not DIR/FILE\n", snap);
			return 2;
		}
		memcpy(dir, snap, (size_t)(slash - snap));
		dir[slash - snap] = '\0';
		snprintf(out, sizeof(out), "%s/out.data", dir);
		snprintf(path, sizeof(path), "%s/status", dir);
		st = fopen(path, "we");
		if (!st) {
			perror(path);
			return 1;
		}
		char *cmds[5][8] = {
			{ "info", (char *)snap, NULL },
			{ "report", (char *)snap, NULL },
			{ "report", "--json", (char *)snap, NULL },
			{ "decode", "--calls", (char *)snap, NULL },
			{ "export", "--perf-data", out, "-f", "-q", (char *)snap, NULL },
		};
		for (int k = 0; k < 5; k++) {
			int (*fn)(int, char **) = k == 0 ? cmd_info :
				k <= 2 ? cmd_report : k == 3 ? cmd_decode : cmd_export;
			char *av[8];
			int ac = 0, rc;

			/* a fresh argv: getopt permutes it */
			while (cmds[k][ac]) {
				av[ac] = cmds[k][ac];
				ac++;
			}
			av[ac] = NULL;
			fflush(stdout);
			fflush(stderr);
			snprintf(path, sizeof(path), "%s/%d.out", dir, k);
			if (redirect(1, path) < 0) {
				perror(path);
				return 1;
			}
			snprintf(path, sizeof(path), "%s/%d.err", dir, k);
			if (redirect(2, path) < 0)
				return 1;
			clearerr(stdout);
			clearerr(stderr);
			alarm(timeout);
			rc = fn(ac, av);
			alarm(0);
			fflush(stdout);
			fflush(stderr);
			dup2(saved_out, 1);
			dup2(saved_err, 2);
			fprintf(st, "%d %d\n", k, rc);
			fflush(st);
		}
		/* leaks: once per snapshot (a heap scan each time); the
		 * report in D/leak.err */
		if (__lsan_do_recoverable_leak_check) {
			snprintf(path, sizeof(path), "%s/leak.err", dir);
			if (redirect(2, path) < 0)
				return 1;
			if (__lsan_do_recoverable_leak_check())
				fprintf(stderr, "bt-cli-batch: leaks\n");
			fflush(stderr);
			dup2(saved_err, 2);
		}
		fprintf(st, "done\n");
		if (fclose(st)) {
			perror("bt-cli-batch: status");
			return 1;
		}
	}
	return 0;
}
