// SPDX-License-Identifier: MIT
/* Installs a seccomp filter that kills the process at getppid(), then
 * calls it: natively the program dies of SIGSYS.  "prctl" installs it with
 * prctl(PR_SET_SECCOMP), otherwise with seccomp(2). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

int main(int argc, char **argv)
{
	struct sock_filter f[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS,
			 offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { sizeof(f) / sizeof(f[0]), f };
	long r;

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return 2;
	if (argc > 1 && !strcmp(argv[1], "prctl"))
		r = prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
	else
		r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog);
	printf("filter %ld\n", r);
	fflush(stdout);
	printf("ppid %ld\n", (long)syscall(SYS_getppid));
	return 0;
}
