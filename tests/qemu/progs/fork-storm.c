// SPDX-License-Identifier: MIT
/*
 * Many forked children alive at once (tests/qemu/lost.py):
 *   fork-storm N CRASH_EVERY [wait [WORK]]
 * prints "nofile SOFT HARD" and "nproc SOFT HARD" (the limits it sees),
 * with "wait" runs WORK calls first (a long history to snapshot), then
 * says "ready PID" and waits for a line on stdin, and leaves the rest to a
 * forked child (so that the process with the long history, whose
 * on-demand snapshots take long, is not the one that forks; it exits with
 * that child's status); then forks N
 * children, each blocked on a pipe until all N exist; then lets them go:
 * child i runs a little code and exits with status 3, except every
 * CRASH_EVERY-th (i % CRASH_EVERY == CRASH_EVERY - 1; 0: none), which
 * dereferences NULL (SIGSEGV).  The parent reaps them all and exits with
 * 0 when every child ended as meant, else 1 (a line per surprise on
 * stderr); a fork that fails prints "fork failed after K: ERRNO" and the
 * parent lets the K children go and exits with 2.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

static int *volatile nowhere;   /* NULL: the compiler cannot know it */

__attribute__((noinline)) static unsigned storm_work(int n)
{
	unsigned x = 1;

	for (int i = 0; i < n; i++)
		x = x * 2654435761u + (unsigned)i;
	return x;
}

__attribute__((noinline)) static void storm_crash(unsigned v)
{
	*nowhere = (int)v;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 100;
	int every = argc > 2 ? atoi(argv[2]) : 0, bad = 0, forked = 0, err = 0;
	pid_t *kids = calloc((size_t)(n > 0 ? n : 1), sizeof(*kids));
	struct rlimit rl;
	int p[2];
	char c;

	if (!kids || pipe(p))
		return 100;
	getrlimit(RLIMIT_NOFILE, &rl);
	printf("nofile %llu %llu\n", (unsigned long long)rl.rlim_cur,
	       (unsigned long long)rl.rlim_max);
	getrlimit(RLIMIT_NPROC, &rl);
	printf("nproc %llu %llu\n", (unsigned long long)rl.rlim_cur,
	       (unsigned long long)rl.rlim_max);
	if (argc > 3 && !strcmp(argv[3], "wait")) {
		char line[64];
		volatile unsigned sink = 0;

		for (int k = argc > 4 ? atoi(argv[4]) : 0; k > 0; k--)
			sink += storm_work(k & 63);
		printf("ready %d\n", (int)getpid());
		fflush(stdout);
		if (read(0, line, sizeof(line)) < 0)
			return 100;
		pid_t f = fork();
		int st = 0;

		if (f < 0)
			return 100;
		if (f > 0) {
			close(p[0]);
			close(p[1]);   /* the storm's children wait for EOF */
			if (waitpid(f, &st, 0) != f)
				return 101;
			return WIFEXITED(st) ? WEXITSTATUS(st) : 102;
		}
	}
	fflush(stdout);
	for (int i = 0; i < n; i++) {
		pid_t pid = fork();

		if (pid < 0) {
			err = errno;
			break;
		}
		if (pid == 0) {
			unsigned v;

			close(p[1]);
			while (read(p[0], &c, 1) < 0 && errno == EINTR)
				;
			v = storm_work(1000 + i);
			if (every > 0 && i % every == every - 1)
				storm_crash(v);
			_exit(3);
		}
		kids[forked++] = pid;
	}
	close(p[1]);   /* all go */
	for (int i = 0; i < forked; i++) {
		int st = 0, crash = every > 0 && i % every == every - 1;

		if (waitpid(kids[i], &st, 0) != kids[i]) {
			perror("waitpid");
			return 101;
		}
		if (crash ? WIFSIGNALED(st) && WTERMSIG(st) == SIGSEGV :
			    WIFEXITED(st) && WEXITSTATUS(st) == 3)
			continue;
		fprintf(stderr, "fork-storm: child %d: wait status %#x\n", i,
			st);
		bad++;
	}
	if (err) {
		printf("fork failed after %d: %s\n", forked, strerror(err));
		return 2;
	}
	return bad ? 1 : 0;
}
