// SPDX-License-Identifier: MIT
/*
 * Where QEMU 7.2 cannot behave as the kernel and the CPU do, btrace says so
 * instead of silently recording a different program:
 *
 *  - Sanitizer runtimes (ASan, TSan, MSan, HWASan) map terabytes of shadow
 *    memory at fixed addresses; under qemu-x86_64 7.2 an ASan program grew
 *    the emulator to about 24 GB in a minute, without finishing, until the
 *    OOM killer ended it.  Such a program is refused before it runs: its
 *    DT_NEEDED names the runtime (gcc: libasan.so.N), or it defines the
 *    runtime's init symbol (clang links the runtime statically), or
 *    LD_PRELOAD loads one.
 *  - What the plugin notes while the program runs (plugin-limits.c):
 *    unmasked FP exceptions, a refused seccomp filter, EFAULT from a call
 *    the vDSO would have served.  Each becomes a warning at record time
 *    (bt_msg(): the library's log callback, the command line's stderr)
 *    and snapshot metadata "limit.<name>" (one sentence), which
 *    the report prints as a "limits" line.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <sys/wait.h>

#include "qemu-limits.h"
#include "san-elf.h"
#include "util.h"

int bt_qemu_check_sanitizers(const char *prog, struct btrace_error *err)
{
	const char *pre = getenv("LD_PRELOAD"), *san;
	char what[PATH_MAX + 64] = "";

	san = bt_elf_sanitizer(prog, what, sizeof(what));
	if (!san && pre) {
		char *copy = strdup(pre), *save = NULL;

		for (char *t = copy ? strtok_r(copy, " :", &save) : NULL;
		     t && !san; t = strtok_r(NULL, " :", &save))
			if ((san = bt_san_of_lib(t)))
				snprintf(what, sizeof(what),
					 "LD_PRELOAD loads %s", t);
		free(copy);
	}
	if (!san)
		return 0;
	bt_error(err, -ENOTSUP, "%s: record failed: the program is built "
		 "with %s (%s), whose shadow memory QEMU 7.2 cannot emulate "
		 "(it grows to tens of GB without finishing)", prog, san, what);
	return bt_hint(err, "record it with a hardware backend (--backend pt "
		       "or bts, on an Intel CPU), or build it without "
		       "-fsanitize for the QEMU backend");
}

static const char *bt_sysname(int nr)
{
	switch (nr) {
	case 96:
		return "gettimeofday";
	case 201:
		return "time";
	case 228:
		return "clock_gettime";
	case 229:
		return "clock_getres";
	case 309:
		return "getcpu";
	case 157:
		return "prctl(PR_SET_SECCOMP)";
	case 317:
		return "seccomp";
	case 62:
		return "kill";
	case 129:
		return "rt_sigqueueinfo";
	case 200:
		return "tkill";
	case 234:
		return "tgkill";
	case 297:
		return "rt_tgsigqueueinfo";
	case 424:
		return "pidfd_send_signal";
	}
	return "a system call";
}

/* The names of the bits of @bits, comma-separated, into @buf. */
static const char *bt_bit_list(uint32_t bits, const char *const *names,
			       int n, char *buf, size_t len)
{
	size_t o = 0;

	buf[0] = 0;
	for (int i = 0; i < n; i++)
		if ((bits & (1u << i)) && o < len)
			o += (size_t)snprintf(buf + o, len - o, "%s%s",
					      o ? ", " : "", names[i]);
	return buf;
}

__attribute__((format(printf, 3, 4)))
static void bt_limit_put(struct bt_qemu_limit *out, const char *name,
			 const char *fmt, ...)
{
	va_list ap;

	out->name = name;
	va_start(ap, fmt);
	vsnprintf(out->text, sizeof(out->text), fmt, ap);
	va_end(ap);
}

size_t bt_qemu_limits_get(const struct bt_ring_hdr *h,
			  struct bt_qemu_limit *out)
{
	static const char *const fpe_names[6] = {
		"invalid", "denormal", "divide-by-zero", "overflow",
		"underflow", "inexact",
	};
	/* BT_ENOSYS_* bits */
	static const char *const enosys_names[3] = {
		"clone3", "io_uring_setup", "ptrace",
	};
	const struct bt_ring_limits *l = bt_ring_limits_of(h);
	uint32_t f = __atomic_load_n(&l->flags, __ATOMIC_ACQUIRE);
	char list[128];
	size_t n = 0;

	if (f & BT_LIMIT_FPE_TRAPS) {
		bt_bit_list(l->fpe_bits, fpe_names, 6, list, sizeof(list));
		bt_limit_put(&out[n++], "fpe-traps",
			 "The program unmasked floating-point exceptions (%s; "
			 "%s, first at %#llx), but QEMU 7.2 never raises SIGFPE for "
			 "them: an operation that traps natively gave an "
			 "inf/NaN result here and the program went on; record "
			 "with a hardware backend (pt or bts) to see that "
			 "fault.", list[0] ? list : "some",
			 l->fpe_insn == 3 ? "x87 by fldcw and SSE by ldmxcsr" :
			 l->fpe_insn == 2 ? "x87 by fldcw" : "SSE by ldmxcsr",
			 (unsigned long long)l->fpe_ip);
	}
	if (f & BT_LIMIT_SECCOMP) {
		long e = (long)-l->seccomp_ret;

		bt_limit_put(&out[n++], "seccomp",
			 "The program installed a seccomp filter with %s, "
			 "which QEMU 7.2 refuses (%s): it ran unfiltered, so "
			 "a system call the filter forbids (natively SIGSYS "
			 "or an error) went through here; record with a "
			 "hardware backend (pt or bts).",
			 bt_sysname(l->seccomp_nr),
			 e > 0 && e < 4096 ? strerror((int)e) : "an error");
	}
	if (f & BT_LIMIT_VDSO)
		bt_limit_put(&out[n++], "vdso",
			 "%s() got EFAULT from the system call because QEMU "
			 "7.2 gives the program no vDSO; natively the vDSO's "
			 "code reads that bad pointer and the program dies of "
			 "SIGSEGV inside the vDSO (for clocks it serves); "
			 "record with a hardware backend (pt or bts) to see "
			 "that crash.", bt_sysname(l->vdso_nr));
	if (f & BT_LIMIT_ENOSYS) {
		bt_bit_list(l->enosys_calls, enosys_names, 3, list,
			    sizeof(list));
		bt_limit_put(&out[n++], "enosys",
			 "The program called %s, which QEMU 7.2 does not "
			 "implement: it got ENOSYS where the kernel runs the "
			 "call, and went on as on a kernel without it; record "
			 "with a hardware backend (pt or bts) to see the "
			 "native path.", list[0] ? list : "a system call");
	}
	if (f & BT_LIMIT_RTSIG)
		bt_limit_put(&out[n++], "rt-signals",
			 "The program used real-time signal %d (%s), which "
			 "QEMU 7.2 cannot deliver: it keeps two host real-time "
			 "signals for itself, so signals 63 and 64 (SIGRTMAX-1, "
			 "SIGRTMAX) have none; a handler for them is silently "
			 "not installed and sending them fails with EINVAL, "
			 "where natively both work; record with a hardware "
			 "backend (pt or bts).", l->rtsig,
			 bt_sysname(l->rtsig_nr));
	if (f & BT_LIMIT_SIGALIGN)
		bt_limit_put(&out[n++], "sigalign",
			 "QEMU 7.2 starts signal handlers with the stack 8 "
			 "bytes off the x86-64 ABI's alignment, and btrace "
			 "could not correct it for the handler at %#llx (its "
			 "code ran as an ordinary function before it was "
			 "installed, or more than 64 handlers were installed): "
			 "an aligned SSE access there (movaps, snprintf of a "
			 "double) faults here with SIGSEGV (si_code SI_KERNEL) "
			 "where natively it does not; such a fault is not the "
			 "program's; record with a hardware backend (pt or "
			 "bts).", (unsigned long long)l->sigalign_ip);
	return n;
}

void bt_qemu_limits_warn(const char *ring_path, int pid)
{
	struct bt_qemu_limit lim[BT_QEMU_MAX_LIMITS];
	struct bt_ring_hdr h;
	struct bt_ring_limits l;
	size_t n;
	int fd = open(ring_path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	memset(&h, 0, sizeof(h));
	if (pread(fd, &l, sizeof(l), BT_RING_LIMITS_OFFSET) != sizeof(l) ||
	    pread(fd, &h, sizeof(h), 0) != sizeof(h) ||
	    memcmp(h.magic, BT_RING_MAGIC, 8)) {
		close(fd);
		return;
	}
	close(fd);
	{
		/* A header page image with the limits in place. */
		static _Thread_local uint8_t page[BT_RING_HDR_SIZE];

		memcpy(page, &h, sizeof(h));
		memcpy(page + BT_RING_LIMITS_OFFSET, &l, sizeof(l));
		n = bt_qemu_limits_get((const struct bt_ring_hdr *)page, lim);
	}
	for (size_t i = 0; i < n; i++)
		bt_msg("btrace: warning: process %d ran differently "
			"under QEMU (limit.%s): %s", pid, lim[i].name,
			lim[i].text);
}

/*
 * QEMU 7.2 keeps the host's first two real-time signals for itself and
 * gives guest signal N (SIGRTMIN 34 .. 62) host signal N + 2; guest 63
 * and 64 have none.  Measured: a guest raise(62) kills the emulator
 * with host signal 64, raise(63) and raise(64) fail with EINVAL, and a
 * host signal N + 2 sent to the emulator reaches the guest as N.
 */
int bt_qemu_host_signal(int sig)
{
	if (sig >= 34 && sig <= 62)
		return sig + 2;
	return sig >= 63 ? 0 : sig;
}

int bt_qemu_guest_status(int status)
{
	int s = WIFSIGNALED(status) ? WTERMSIG(status) : 0;

	if (s >= 36 && s <= 64)
		return (status & ~0x7f) | (s - 2);
	return status;
}

const char *bt_qemu_comm_arg(const char *argv0, char *buf, size_t len)
{
	const char *b = strrchr(argv0, '/');
	char name[16];

	/* The kernel's comm: the basename of the path execve() ran, 15
	 * bytes at most (a shell runs the PATH entry whose basename is
	 * argv[0]'s).  A comma would split the plugin's arguments. */
	snprintf(name, sizeof(name), "%s", b ? b + 1 : argv0);
	if (!name[0] || strchr(name, ','))
		return "";
	snprintf(buf, len, ",comm=%s", name);
	return buf;
}

long bt_qemu_oom_kills(void)
{
	char line[256];
	long kills = -1;
	FILE *f = fopen("/proc/vmstat", "re");

	/* The kernel's count of OOM kills (Linux 4.13+), system-wide: a
	 * SIGKILL while it went up was, in all likelihood, the OOM killer. */
	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "oom_kill %ld", &kills) == 1)
			break;
	fclose(f);
	return kills;
}
