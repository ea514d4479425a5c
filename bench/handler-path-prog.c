// SPDX-License-Identifier: MIT
/*
 * A crash whose SIGSEGV handler runs a long path (as a traceback dump
 * does) and then aborts: the QEMU backend keeps the final signal apart
 * (metadata qemu.final_signal) and the decoder must keep the history
 * before the fault, far from the end (decoder/thread.c, "hold").
 * bench/report-handler-rss.sh.
 *   handler-path-prog N    N iterations in the handler (default 20000000)
 *   handler-path-prog N x  the same work before the crash, no handler
 */
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long step(unsigned long v)
{
	if (v & 1) return v * 3 + 1;
	if (v & 2) return v >> 1;
	return v ^ 0x5555;
}
__attribute__((noinline)) static void walk(long n)
{
	unsigned long v = 7;
	for (long i = 0; i < n; i++) v = step(v + (unsigned long)i);
	sink = v;
}
static long n;
static void on_segv(int sig)
{
	(void)sig;
	walk(n);          /* a long handler path, e.g. a traceback dump */
	abort();
}
__attribute__((noinline)) static void crash_here(int *p) { *(volatile int *)p = 1; }
int main(int argc, char **argv)
{
	n = argc > 1 ? atol(argv[1]) : 20000000;
	if (argc > 2) {
		walk(n);     /* the baseline: the same path, then the crash */
		crash_here(NULL);
	}
	signal(SIGSEGV, on_segv);
	walk(100000);
	crash_here(NULL);
	return 0;
}
