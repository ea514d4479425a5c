// SPDX-License-Identifier: MIT
/*
 * For on-demand snapshots of a running program (tests/qemu/snapshot.py):
 * runs snap_stage_one() and snap_stage_two(), says "ready PID" on stdout,
 * waits for a line on stdin (blocked in read(), no guest code runs), then
 * runs snap_after(), which it had never run before, and crashes there
 * (SIGSEGV), unless the line is "exit".
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile int sink;
static int *volatile target;   /* NULL: the compiler cannot know it */

__attribute__((noinline)) static int snap_stage_one(int v)
{
	for (int i = 0; i < 100; i++)
		sink += v + i;
	return sink & 0xff;
}

__attribute__((noinline)) static int snap_stage_two(int v)
{
	return v % 3 ? v * 2 : v + 1;
}

__attribute__((noinline)) static void snap_after(int v)
{
	*target = v;
}

int main(int argc, char **argv)
{
	char line[64] = "";
	ssize_t n;

	(void)argv;
	sink = snap_stage_two(snap_stage_one(argc));
	printf("ready %d\n", (int)getpid());
	fflush(stdout);
	n = read(0, line, sizeof(line) - 1);
	if (n > 0 && !strncmp(line, "exit", 4))
		return 0;
	snap_after(sink);
	return 1;
}
