// SPDX-License-Identifier: MIT
/* Signal handlers that do not simply re-raise (argv[1]):
 *   nodefer   SA_NODEFER|SA_RESETHAND handler raises the signal again from
 *             inside the handler: the process dies in the handler;
 *   reraise   faulthandler-like: dumps a line, restores SIG_DFL, re-raises
 *             (blocked until the handler returns);
 *   abort     prints a message, then abort(): fault SIGSEGV, death SIGABRT;
 *   altstack  unbounded recursion, the handler runs on a sigaltstack,
 *             prints and returns with SIG_DFL restored: the access faults
 *             again;
 *   longjmp   the handler siglongjmps back to main, which later fails an
 *             unrelated check and abort()s: fault SIGSEGV, death SIGABRT;
 *   chatty    like a runtime's panic: the handler prints a long report
 *             (hundreds of calls, more than the history asked for) and
 *             _exit(2)s: fault SIGSEGV, death by exit. */
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static sigjmp_buf back;
/* Opaque to the compiler, so the NULL access is not optimized away. */
static int *volatile no_record;
static const char *mode;

static void say(const char *s)
{
	if (write(2, s, strlen(s)) < 0)
		_exit(5);
}

__attribute__((noinline)) void parse_record(int *rec)
{
	rec[1] = rec[0] + 1;
}

__attribute__((noinline)) int descend(int depth)
{
	volatile char pad[256];

	pad[depth % 256] = (char)depth;
	return descend(depth + 1) + pad[(depth + 1) % 256];
}

static void on_fault(int sig)
{
	if (!strcmp(mode, "nodefer")) {
		say("handler: raising again\n");
		raise(sig);
	} else if (!strcmp(mode, "reraise")) {
		say("Fatal error: Segmentation fault\n\nCurrent thread:\n"
		    "  parse_record\n  main\n");
		signal(sig, SIG_DFL);
		raise(sig);
	} else if (!strcmp(mode, "abort")) {
		say("fatal runtime error: segmentation fault, aborting\n");
		abort();
	} else if (!strcmp(mode, "chatty")) {
		say("panic: invalid memory address\n\ngoroutine 1 [running]:\n");
		for (int i = 0; i < 300; i++)
			say("  frame\n");
		_exit(2);
	} else if (!strcmp(mode, "altstack")) {
		say("thread 'main' has overflowed its stack\n");
		signal(sig, SIG_DFL);
	} else {
		siglongjmp(back, 1);
	}
}

__attribute__((noinline)) void check_state(int recovered)
{
	if (recovered)
		abort();
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	static char altstack[64 * 1024];
	stack_t ss = {.ss_sp = altstack, .ss_size = sizeof(altstack)};

	mode = argc > 1 ? argv[1] : "reraise";
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fault;
	sigemptyset(&sa.sa_mask);
	if (!strcmp(mode, "nodefer"))
		sa.sa_flags = SA_NODEFER | SA_RESETHAND;
	if (!strcmp(mode, "altstack")) {
		if (sigaltstack(&ss, NULL))
			return 3;
		sa.sa_flags = SA_ONSTACK;
	}
	sigaction(SIGSEGV, &sa, NULL);
	printf("mode %s\n", mode);
	fflush(stdout);
	if (!strcmp(mode, "altstack"))
		return descend(0);
	if (!strcmp(mode, "longjmp")) {
		int recovered = sigsetjmp(back, 1);
		if (!recovered)
			parse_record(no_record);
		say("recovered from the fault\n");
		check_state(recovered);
		return 0;
	}
	parse_record(no_record);
	return 0;
}
