/* SPDX-License-Identifier: MIT */
/* The launched program's process group and terminal (qemu-job.h). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "qemu-job.h"

void bt_jobctl_init(struct bt_jobctl *c)
{
	memset(c, 0, sizeof(*c));
	c->tty = -1;
	c->lead = getpgrp() == getpid();
	if (!c->lead)
		return;
	c->tty = open("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
	c->fg = c->tty >= 0 && tcgetpgrp(c->tty) == getpgrp();
	if (!c->fg && c->tty >= 0) {
		close(c->tty);
		c->tty = -1;
	}
}

/* tcsetpgrp() from a background group: SIGTTOU blocked, as a shell does
 * (tcsetpgrp(3); the kernel's tty_check_change() lets it through then). */
static void bt_tty_give(int tty, pid_t pgrp)
{
	sigset_t ttou, old;

	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	/* fails only when the terminal went away: nothing to give then */
	(void)tcsetpgrp(tty, pgrp);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

void bt_jobctl_child(const struct bt_jobctl *c)
{
	if (!c->lead)
		return;
	setpgid(0, 0);
	if (c->fg)
		bt_tty_give(c->tty, getpid());
}

static void bt_on_chld(int sig)
{
	(void)sig;    /* only to interrupt poll() */
}

void bt_jobctl_parent(struct bt_jobctl *c, pid_t pid)
{
	struct sigaction sa;

	if (!c->lead)
		return;
	/* EACCES once it exec'd: it did setpgid() itself by then */
	setpgid(pid, pid);
	c->pgrp = pid;
	if (c->fg)
		bt_tty_give(c->tty, pid);
	memset(&sa, 0, sizeof(sa));
	sigemptyset(&sa.sa_mask);
	sa.sa_handler = SIG_IGN;
	if (sigaction(SIGTTOU, &sa, &c->ttou))
		return;
	sa.sa_handler = bt_on_chld;
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGCHLD, &sa, &c->chld)) {
		sigaction(SIGTTOU, &c->ttou, NULL);
		return;
	}
	c->set = 1;
}

void bt_jobctl_check(struct bt_jobctl *c, pid_t pid)
{
	struct sigaction cur;
	siginfo_t si;
	int sig;

	if (!c->lead)
		return;
	memset(&si, 0, sizeof(si));
	if (waitid(P_PID, (id_t)pid, &si, WSTOPPED | WNOHANG) ||
	    si.si_pid != pid || si.si_code != CLD_STOPPED)
		return;
	sig = si.si_status;
	/* the job-control stops stop btrace too unless it ignores or
	 * handles them (then, as for any other stop, SIGSTOP) */
	if ((sig != SIGTSTP && sig != SIGTTIN && sig != SIGTTOU) ||
	    sigaction(sig, NULL, &cur) || cur.sa_handler != SIG_DFL)
		sig = SIGSTOP;
	kill(getpid(), sig);
	/* continued: `fg` gave btrace's group the terminal, `bg` did not */
	if (c->fg && tcgetpgrp(c->tty) == getpgrp())
		bt_tty_give(c->tty, pid);
	kill(-pid, SIGCONT);
}

void bt_jobctl_end(struct bt_jobctl *c)
{
	if (!c->lead)
		return;
	/* only from the program's group: not from a shell that took it */
	if (c->fg && c->pgrp > 0 && tcgetpgrp(c->tty) == c->pgrp)
		bt_tty_give(c->tty, getpgrp());
	if (c->set) {
		sigaction(SIGCHLD, &c->chld, NULL);
		sigaction(SIGTTOU, &c->ttou, NULL);
		c->set = 0;
	}
	if (c->tty >= 0)
		close(c->tty);
	c->tty = -1;
	c->lead = 0;
}
