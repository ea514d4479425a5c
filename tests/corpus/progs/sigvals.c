/* SPDX-License-Identifier: MIT */
/*
 * Signals delivered at the return of a system call, then a crash: the
 * register values recovered across the handler are checked against the
 * emulator's own register log (bench/values-qemu.py).  One shape per
 * argument:
 *   raise-crash  raise(); the handler dereferences NULL
 *   raise-ret    raise() five times, the handler returns; main crashes
 *   kill-loop    kill(getpid()) from a loop; main crashes after it
 *   tgkill       tgkill() of the thread itself; main crashes after it
 *   restart      SIGALRM interrupts a blocking read() (SA_RESTART): the
 *                handler writes what the restarted read gets (again,
 *                until the signal came while read() waited); crash
 *   eintr        SIGALRM, blocked until ppoll() waits, interrupts it
 *                (no SA_RESTART): EINTR; crash
 *   nested       the SIGUSR1 handler raises SIGUSR2 (delivered at once,
 *                nested) and SIGURG, which its mask blocks (delivered at
 *                its rt_sigreturn); main crashes after them
 *   altstack     the handler runs on an alternate signal stack and
 *                returns; main crashes
 *   rax-handler  the handler reads through rax as it starts: rax is 0
 *                there (x64_setup_rt_frame()), set by the kernel, not
 *                the result of raise()'s tgkill
 */
#define _GNU_SOURCE
#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <time.h>
#include <ucontext.h>
#include <unistd.h>

struct rec {
	long sum;
	int last;
	int *where;
};

static volatile long hits;
static struct rec *volatile bad;   /* NULL */
static int fds[2];

__attribute__((noinline)) static long mix(long a, long b)
{
	return a * 31 + (b ^ (a >> 3));
}

/* the crash: reads through the NULL record after a little work */
__attribute__((noinline)) static long use(struct rec *r, long seed)
{
	long t = seed;
	for (int i = 0; i < 8; i++)
		t = mix(t, i);
	return t + r->sum + *r->where;
}

static void on_usr1(int sig)
{
	hits = mix(hits, sig);
}

static void on_crash(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	hits = mix(hits, sig + si->si_signo);
	hits += bad->sum;   /* dies here */
}

static void on_alrm(int sig)
{
	char c = (char)sig;
	hits = mix(hits, sig);
	if (write(fds[1], &c, 1) != 1)
		_exit(3);
}

static volatile int restarted;

/* SIGALRM with SA_RESTART: interrupted in read() itself, the kernel sets
 * the frame's rip back to the syscall instruction (0f 05) */
static void on_alrm_rs(int sig, siginfo_t *si, void *uc)
{
	const unsigned char *ip =
		(const unsigned char *)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
	(void)si;
	restarted = ip[0] == 0x0f && ip[1] == 0x05;
	on_alrm(sig);
}

static void on_usr2(int sig)
{
	hits = mix(hits, sig * 7);
}

static void on_nest(int sig)
{
	hits = mix(hits, sig);
	raise(SIGUSR2);     /* nested: delivered at this kill's return */
	raise(SIGURG);      /* blocked here: at rt_sigreturn's */
	hits = mix(hits, 3);
}

/* reads through rax, as the kernel left it */
void on_rax(int sig);
__asm__(".text\n.globl on_rax\n.type on_rax, @function\non_rax:\n"
	"\tmov (%rax), %eax\n\tret\n.size on_rax, .-on_rax\n");

static void handle(int sig, void (*fn)(int), int flags, int block)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = fn;
	sa.sa_flags = flags;
	sigemptyset(&sa.sa_mask);
	if (block)
		sigaddset(&sa.sa_mask, block);
	if (sigaction(sig, &sa, NULL) < 0) {
		perror("sigaction");
		exit(2);
	}
}

static void alarm_in(long usec)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_usec = usec;
	if (setitimer(ITIMER_REAL, &it, NULL) < 0) {
		perror("setitimer");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	const char *m = argc > 1 ? argv[1] : "raise-ret";
	long seed = argc;

	if (!strcmp(m, "raise-crash")) {
		struct sigaction sa;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_crash;
		sa.sa_flags = SA_SIGINFO;
		sigaction(SIGUSR1, &sa, NULL);
		raise(SIGUSR1);
	} else if (!strcmp(m, "raise-ret")) {
		handle(SIGUSR1, on_usr1, 0, 0);
		for (int i = 0; i < 5; i++)
			raise(SIGUSR1);
	} else if (!strcmp(m, "kill-loop")) {
		handle(SIGUSR1, on_usr1, SA_RESTART, 0);
		for (int i = 0; i < 20; i++) {
			seed = mix(seed, i);
			kill(getpid(), SIGUSR1);
		}
	} else if (!strcmp(m, "tgkill")) {
		handle(SIGUSR2, on_usr2, 0, 0);
		syscall(SYS_tgkill, getpid(), gettid(), SIGUSR2);
		seed = mix(seed, hits);
	} else if (!strcmp(m, "restart")) {
		char c = 0;
		struct sigaction sa;
		if (pipe(fds) < 0)
			return 2;
		memset(&sa, 0, sizeof(sa));
		sa.sa_sigaction = on_alrm_rs;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		sigaction(SIGALRM, &sa, NULL);
		for (int i = 0; i < 100 && !restarted; i++) {
			alarm_in(20000);
			/* restarted after the handler */
			if (read(fds[0], &c, 1) != 1)
				return 2;
		}
		seed = mix(seed, c);
	} else if (!strcmp(m, "eintr")) {
		struct timespec ts = { 5, 0 };
		sigset_t blk, old;
		if (pipe(fds) < 0)
			return 2;
		handle(SIGALRM, on_alrm, 0, 0);
		sigemptyset(&blk);
		sigaddset(&blk, SIGALRM);
		sigprocmask(SIG_BLOCK, &blk, &old);
		alarm_in(20000);
		/* SIGALRM arrives while ppoll() waits, however late */
		if (ppoll(NULL, 0, &ts, &old) >= 0 || errno != EINTR)
			return 2;
		sigprocmask(SIG_SETMASK, &old, NULL);
		seed = mix(seed, errno);
	} else if (!strcmp(m, "nested")) {
		handle(SIGUSR1, on_nest, 0, SIGURG);
		handle(SIGUSR2, on_usr2, 0, 0);
		handle(SIGURG, on_usr2, 0, 0);
		raise(SIGUSR1);
		seed = mix(seed, hits);
	} else if (!strcmp(m, "altstack")) {
		stack_t ss;
		memset(&ss, 0, sizeof(ss));
		ss.ss_size = 1 << 16;
		ss.ss_sp = malloc(ss.ss_size);
		if (!ss.ss_sp || sigaltstack(&ss, NULL) < 0)
			return 2;
		handle(SIGUSR1, on_usr1, SA_ONSTACK, 0);
		raise(SIGUSR1);
		raise(SIGUSR1);
		seed = mix(seed, hits);
	} else if (!strcmp(m, "rax-handler")) {
		handle(SIGUSR1, on_rax, 0, 0);
		raise(SIGUSR1);
	} else {
		fprintf(stderr, "usage: sigvals MODE\n");
		return 2;
	}
	/* (nothing long between the signals and the crash: the values
	 * cover the last few thousand instructions) */
	return (int)use(bad, seed + hits);
}
