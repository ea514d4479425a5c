// SPDX-License-Identifier: MIT
/*
 * A SIGSEGV handler that never returns to the fault.  argv[1] picks what
 * it does instead: "abort" (raises SIGABRT), "exit" (prints, _exit(3)) or
 * "longjmp" (siglongjmps back to main, which exits 4).  Writes the address
 * of the faulting function as "crash_here=0x..." to argv[2].
 */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sigjmp_buf env;
static const char *mode = "abort";

__attribute__((noinline)) static void crash_here(int *p)
{
	*(volatile int *)p = 42;
}

static void on_segv(int sig)
{
	static const char msg[] = "handler: caught SIGSEGV\n";

	(void)sig;
	if (write(2, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	if (!strcmp(mode, "exit"))
		_exit(3);
	if (!strcmp(mode, "longjmp"))
		siglongjmp(env, 1);
	abort();
}

int main(int argc, char **argv)
{
	int *volatile p = (int *)0x10;
	FILE *f;

	if (argc > 1)
		mode = argv[1];
	if (argc > 2 && (f = fopen(argv[2], "w"))) {
		fprintf(f, "crash_here=%p\n", (void *)crash_here);
		fclose(f);
	}
	signal(SIGSEGV, on_segv);
	if (sigsetjmp(env, 1))
		return 4;   /* came back from the handler */
	crash_here(p);
	return 0;
}
