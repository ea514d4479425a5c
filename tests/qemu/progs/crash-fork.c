// SPDX-License-Identifier: MIT
/*
 * fork(): the child works a little and dereferences NULL; the parent waits
 * for it, keeps running, and exits 5.  Writes "child=PID" to argv[1].
 */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static int child_work(int n)
{
	int x = 1;

	for (int i = 0; i < n; i++)
		x = x * 7 + (x >> 2) + i;
	return x;
}

__attribute__((noinline)) static void child_crash(int *p)
{
	*(volatile int *)p = child_work(1000);
}

int main(int argc, char **argv)
{
	int *volatile bad = NULL;
	int status = 0;
	FILE *f;
	pid_t pid;

	pid = fork();
	if (pid < 0)
		return 1;
	if (pid == 0) {
		child_crash(bad);
		_exit(0);
	}
	if (argc > 1 && (f = fopen(argv[1], "w"))) {
		fprintf(f, "child=%d\n", (int)pid);
		fclose(f);
	}
	waitpid(pid, &status, 0);
	printf("parent: child status %#x, still running\n", status);
	fflush(stdout);
	return child_work(100) ? 5 : 6;
}
