// SPDX-License-Identifier: MIT
/*
 * Behaviour QEMU 7.2's user-mode emulator does not reproduce, detected
 * while the program runs so that btrace can say so instead of passing off
 * a different run as the program's:
 *
 *  - Floating-point exception traps.  QEMU never raises SIGFPE for an
 *    unmasked x87 or SSE exception (a division by zero after
 *    feenableexcept(FE_DIVBYZERO) gives inf and goes on).  The unmasking is
 *    an ldmxcsr (SSE: MXCSR bits 7-12 are the masks) or an fldcw (x87:
 *    control word bits 0-5) that loads a value with a mask bit clear.
 *    Every such instruction (also vldmxcsr) gets a memory callback at
 *    translation; after it loads, the callback reads the loaded value from
 *    guest memory (guest_base is 0: the guest address is ours) and notes
 *    the first unmasking.  fldenv, frstor, fxrstor and xrstor, which load a
 *    whole FP environment through QEMU helpers, are not checked.
 *  - seccomp.  QEMU refuses to install a filter (prctl(PR_SET_SECCOMP)
 *    gives EINVAL, seccomp(2) ENOSYS): it would apply to the emulator's own
 *    system calls.  A program that installs one runs unfiltered: what would
 *    die of SIGSYS natively goes on.
 *  - The vDSO.  QEMU 7.2 gives the guest none: clock_gettime,
 *    gettimeofday, time and getcpu are real system calls, so a bad pointer
 *    gives EFAULT where natively the vDSO's code dies of SIGSEGV.
 *  - System calls QEMU 7.2 does not implement: clone3 (noted only when
 *    the program did not go on to clone() as glibc does), io_uring_setup,
 *    _enter and _register, and ptrace: ENOSYS where the kernel has them.
 *  - Real-time signals 63 and 64: QEMU keeps two host real-time signals
 *    for itself and maps guest signal N to host N + 2, so these two have
 *    none; a handler for them is silently not installed and sending them
 *    fails with EINVAL.  Noted when the program sends one.
 *  - Signal handlers' stack alignment: corrected where the handler starts
 *    (below); noted where it cannot be.
 */
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "plugin-exec.h"
#include "plugin-limits.h"

_Static_assert(sizeof(struct bt_ring_hdr) <= BT_RING_LIMITS_OFFSET,
	       "the header overlaps the limits area");
_Static_assert(BT_RING_LIMITS_OFFSET + sizeof(struct bt_ring_limits) <=
	       BT_RING_HDR_SIZE, "limits area size");

#define BT_NR_CLONE 56
#define BT_NR_KILL 62
#define BT_NR_GETTIMEOFDAY 96
#define BT_NR_PTRACE 101
#define BT_NR_RT_SIGQUEUEINFO 129
#define BT_NR_TKILL 200
#define BT_NR_TGKILL 234
#define BT_NR_RT_TGSIGQUEUEINFO 297
#define BT_NR_PIDFD_SEND_SIGNAL 424
#define BT_NR_IO_URING_SETUP 425
#define BT_NR_IO_URING_ENTER 426
#define BT_NR_IO_URING_REGISTER 427
#define BT_NR_CLONE3 435
#define BT_NR_PRCTL 157
#define BT_NR_TIME 201
#define BT_NR_CLOCK_GETTIME 228
#define BT_NR_CLOCK_GETRES 229
#define BT_NR_GETCPU 309
#define BT_NR_SECCOMP 317
#define BT_PR_SET_SECCOMP 22
#define BT_SECCOMP_SET_MODE_STRICT 0
#define BT_SECCOMP_SET_MODE_FILTER 1

#define BT_FP_LDMXCSR 1u
#define BT_FP_FLDCW 2u

static struct bt_ring_hdr *volatile g_lhdr;

void bt_limits_set_hdr(struct bt_ring_hdr *h)
{
	g_lhdr = h;
}

void bt_limits_inherit(struct bt_ring_hdr *child,
		       const struct bt_ring_hdr *parent)
{
	memcpy(bt_ring_limits_of(child), bt_ring_limits_of(parent),
	       sizeof(struct bt_ring_limits));
}

static struct bt_ring_limits *bt_lim(void)
{
	struct bt_ring_hdr *h = g_lhdr;

	return h ? bt_ring_limits_of(h) : NULL;
}

/* ---- floating-point exception masks ---- */

static void bt_fp_loaded(unsigned int vcpu, qemu_plugin_meminfo_t info,
			 uint64_t vaddr, void *udata)
{
	uint64_t d = (uint64_t)(uintptr_t)udata;
	uint32_t kind = (uint32_t)(d >> 56), v = 0, unmasked;
	struct bt_ring_limits *l = bt_lim();

	(void)vcpu;
	(void)info;
	if (!l || bt_peek(vaddr, &v, kind == BT_FP_LDMXCSR ? 4 : 2) <= 0)
		return;
	/* Mask bits set = exception masked (the power-on state). */
	unmasked = kind == BT_FP_LDMXCSR ? (~v >> 7) & 0x3f : ~v & 0x3f;
	if (!unmasked)
		return;
	if (!(__atomic_fetch_or(&l->flags, BT_LIMIT_FPE_TRAPS,
				__ATOMIC_RELAXED) & BT_LIMIT_FPE_TRAPS))
		l->fpe_ip = d & ((1ull << 56) - 1);
	__atomic_fetch_or(&l->fpe_insn, kind, __ATOMIC_RELAXED);
	__atomic_fetch_or(&l->fpe_bits, unmasked, __ATOMIC_RELAXED);
}

/* ldmxcsr m32 (0f ae /2, or VEX vldmxcsr), fldcw m16 (d9 /5): which one,
 * or 0. */
static uint32_t bt_fp_ctl_load(const uint8_t *p, size_t n)
{
	size_t i = 0;
	uint8_t modrm;

	while (i < n && (p[i] == 0x66 || p[i] == 0x67 || p[i] == 0x2e ||
			 p[i] == 0x3e || p[i] == 0x26 || p[i] == 0x36 ||
			 p[i] == 0x64 || p[i] == 0x65 || p[i] == 0xf0))
		i++;
	if (i < n && (p[i] & 0xf0) == 0x40)
		i++;
	if (i + 1 >= n)
		return 0;
	if (p[i] == 0xd9) {
		modrm = p[i + 1];
		return (modrm >> 6) != 3 && ((modrm >> 3) & 7) == 5 ?
		       BT_FP_FLDCW : 0;
	}
	if (p[i] == 0xc5 && i + 2 < n) {          /* VEX, map 0f */
		if ((p[i + 1] & 0x3) != 0)       /* pp: no prefix */
			return 0;
		i += 2;
	} else if (p[i] == 0xc4 && i + 3 < n) {
		if ((p[i + 1] & 0x1f) != 1 || (p[i + 2] & 0x3) != 0)
			return 0;
		i += 3;
	} else if (p[i] == 0x0f) {
		i += 1;
	} else {
		return 0;
	}
	if (i + 1 >= n || p[i] != 0xae)
		return 0;
	modrm = p[i + 1];
	return (modrm >> 6) != 3 && ((modrm >> 3) & 7) == 2 ? BT_FP_LDMXCSR :
							     0;
}

void bt_limits_tb_trans(struct qemu_plugin_tb *tb)
{
	size_t n = qemu_plugin_tb_n_insns(tb);

	for (size_t i = 0; i < n; i++) {
		struct qemu_plugin_insn *insn = qemu_plugin_tb_get_insn(tb, i);
		const uint8_t *p = qemu_plugin_insn_data(insn);
		size_t len = qemu_plugin_insn_size(insn);
		uint32_t kind;
		uint8_t b;
		size_t k = 0;

		if (!p || !len)
			continue;
		/* Cheap test first: the opcode byte after prefixes. */
		while (k + 1 < len && ((p[k] & 0xf0) == 0x40 || p[k] == 0x66 ||
				       p[k] == 0x67 || p[k] == 0x2e ||
				       p[k] == 0x3e || p[k] == 0x26 ||
				       p[k] == 0x36 || p[k] == 0x64 ||
				       p[k] == 0x65 || p[k] == 0xf0))
			k++;
		b = p[k];
		if (b != 0x0f && b != 0xd9 && b != 0xc5 && b != 0xc4)
			continue;
		kind = bt_fp_ctl_load(p, len);
		if (!kind)
			continue;
		/* QEMU_PLUGIN_MEM_R alone never fired in 7.2 (tested):
		 * ask for both; these instructions only read. */
		qemu_plugin_register_vcpu_mem_cb(insn, bt_fp_loaded,
			QEMU_PLUGIN_CB_NO_REGS, QEMU_PLUGIN_MEM_RW,
			(void *)(uintptr_t)((uint64_t)kind << 56 |
					    (qemu_plugin_insn_vaddr(insn) &
					     ((1ull << 56) - 1))));
	}
}

/* ---- system calls ---- */

/* This thread's clone3() got ENOSYS: whether its next call is the
 * clone() glibc falls back to. */
static _Thread_local int t_clone3_enosys;

static void bt_note_enosys(struct bt_ring_limits *l, uint32_t which)
{
	__atomic_fetch_or(&l->enosys_calls, which, __ATOMIC_RELAXED);
	__atomic_fetch_or(&l->flags, BT_LIMIT_ENOSYS, __ATOMIC_RELEASE);
}

/* The signal a call sends, or 0.  (Installing a handler for 63 or 64 is
 * not noted: runtimes such as Go's install one for every signal, and
 * nothing differs until one is sent.) */
static uint64_t bt_signal_arg(int64_t num, uint64_t a1, uint64_t a2,
			      uint64_t a3)
{
	switch (num) {
	case BT_NR_KILL:
	case BT_NR_TKILL:
	case BT_NR_RT_SIGQUEUEINFO:
	case BT_NR_PIDFD_SEND_SIGNAL:
		return a2;
	case BT_NR_TGKILL:
	case BT_NR_RT_TGSIGQUEUEINFO:
		return a3;
	}
	return 0;
}

void bt_limits_syscall(int64_t num, uint64_t a1, uint64_t a2, uint64_t a3)
{
	struct bt_ring_limits *l = bt_lim();
	uint64_t sig;

	if (!l)
		return;
	if (t_clone3_enosys) {
		/* Anything but the fallback: the program saw the ENOSYS. */
		t_clone3_enosys = 0;
		if (num != BT_NR_CLONE)
			bt_note_enosys(l, BT_ENOSYS_CLONE3);
	}
	if ((num == BT_NR_PRCTL && a1 == BT_PR_SET_SECCOMP) ||
	    (num == BT_NR_SECCOMP && (a1 == BT_SECCOMP_SET_MODE_STRICT ||
				      a1 == BT_SECCOMP_SET_MODE_FILTER)))
		l->seccomp_nr = (int32_t)num;
	/* QEMU keeps two host real-time signals for itself: guest 63 and
	 * 64 have none (sigaction ignores them, kill says EINVAL). */
	sig = bt_signal_arg(num, a1, a2, a3);
	if ((sig == 63 || sig == 64) &&
	    !(__atomic_fetch_or(&l->flags, BT_LIMIT_RTSIG, __ATOMIC_RELAXED) &
	      BT_LIMIT_RTSIG)) {
		l->rtsig_nr = (int32_t)num;
		l->rtsig = (int32_t)sig;
	}
}

void bt_limits_syscall_ret(int64_t num, int64_t ret)
{
	struct bt_ring_limits *l = bt_lim();

	if (!l)
		return;
	switch (num) {
	case BT_NR_CLONE3:
		t_clone3_enosys = ret == -ENOSYS;
		break;
	case BT_NR_IO_URING_SETUP:
	case BT_NR_IO_URING_ENTER:
	case BT_NR_IO_URING_REGISTER:
		if (ret == -ENOSYS)
			bt_note_enosys(l, BT_ENOSYS_IO_URING);
		break;
	case BT_NR_PTRACE:
		if (ret == -ENOSYS)
			bt_note_enosys(l, BT_ENOSYS_PTRACE);
		break;
	case BT_NR_PRCTL:
	case BT_NR_SECCOMP:
		/* Only a filter QEMU refused; a later successful prctl
		 * (another option) leaves no note. */
		if (l->seccomp_nr == num && ret < 0 &&
		    !(l->flags & BT_LIMIT_SECCOMP)) {
			l->seccomp_ret = ret;
			__atomic_fetch_or(&l->flags, BT_LIMIT_SECCOMP,
					  __ATOMIC_RELAXED);
		} else if (l->seccomp_nr == num &&
			   !(l->flags & BT_LIMIT_SECCOMP)) {
			l->seccomp_nr = 0;
		}
		break;
	case BT_NR_GETTIMEOFDAY:
	case BT_NR_TIME:
	case BT_NR_CLOCK_GETTIME:
	case BT_NR_CLOCK_GETRES:
	case BT_NR_GETCPU:
		if (ret == -EFAULT &&
		    !(__atomic_fetch_or(&l->flags, BT_LIMIT_VDSO,
					__ATOMIC_RELAXED) & BT_LIMIT_VDSO))
			l->vdso_nr = (int32_t)num;
		break;
	}
}

/* ---- signal handlers' stack alignment ---- */

/*
 * The x86-64 ABI wants rsp + 8 to be a multiple of 16 at a function's
 * entry, and the kernel starts a signal handler so (get_sigframe() in
 * arch/x86/kernel/signal.c: the frame is aligned by align_sigframe(),
 * "(sp & -16) - 8").  QEMU 7.2 places the frame 8 bytes off: the handler
 * starts with rsp a multiple of 16, and the first aligned SSE access to
 * its stack (a movaps of a local, snprintf of a double) faults.
 *
 * The plugin corrects it where the handler starts: every translation
 * block at a known handler's address (rt_sigaction's, bt_note_handler)
 * gets this callback, asking QEMU to write its registers back before
 * and reload them after (QEMU_PLUGIN_CB_RW_REGS).  QEMU 7.2 has no API
 * to reach them, but its generated code calls the callback directly
 * with the CPU state in rbp (TCG_AREG0 on an x86-64 host; CPUX86State
 * starts with regs[16], then eip).  The callback believes that state only
 * if its eip is the handler (QEMU sets it when it delivers the signal and
 * enters the block from its main loop) and it describes a signal frame
 * as setup_rt_frame() builds it: rdi the
 * signal number, rdx = rsp + 8 (the ucontext after the return address),
 * rsi right after the ucontext (the siginfo, filled only for SA_SIGINFO),
 * the ucontext's FP state pointer after the siginfo or 0.  It then
 * moves the return address, the ucontext and the siginfo 8 bytes down
 * (the FP state stays where the ucontext's pointer says) and moves rsp,
 * rsi and rdx with them: the handler sees the kernel's alignment, and
 * rt_sigreturn (which finds the frame at rsp - 8 after the handler's
 * ret) reads the moved frame.  A block entered by an ordinary call
 * passes none of those checks and is left alone.
 */
#define BT_R_EDX 2
#define BT_R_ESP 4
#define BT_R_ESI 6
#define BT_R_EDI 7
#define BT_R_EIP 16   /* eip follows regs[16] */
#define BT_SIGINFO_SIZE 128
#define BT_UCONTEXT_SIZE 304  /* the kernel's struct ucontext, and QEMU's */
#define BT_UC_FPSTATE 224     /* uc_mcontext.fpstate in it */
#define BT_SIGFRAME_MAX 2048

void bt_sigalign_fix(unsigned int vcpu, void *udata, uint64_t *env);

__asm__(".text\n"
	".p2align 4\n"
	".globl bt_sigalign_entry\n"
	".hidden bt_sigalign_entry\n"
	".type bt_sigalign_entry, @function\n"
	"bt_sigalign_entry:\n"
	"\tmov %rbp, %rdx\n"
	"\tjmp bt_sigalign_fix\n"
	".size bt_sigalign_entry, .-bt_sigalign_entry\n");
void bt_sigalign_entry(unsigned int vcpu, void *udata);

static void bt_sigalign_unfixed(struct bt_ring_limits *l, uint64_t handler)
{
	if (!(__atomic_fetch_or(&l->flags, BT_LIMIT_SIGALIGN,
				__ATOMIC_RELAXED) & BT_LIMIT_SIGALIGN))
		l->sigalign_ip = handler;
}

__attribute__((visibility("hidden"), used, noinline))
void bt_sigalign_fix(unsigned int vcpu, void *udata, uint64_t *env)
{
	uint64_t handler = (uint64_t)(uintptr_t)udata;
	struct bt_ring_limits *l = bt_lim();
	uint64_t r[BT_R_EIP + 1], sp, len, fp;
	uint8_t frame[BT_SIGFRAME_MAX];
	struct iovec lo, re;

	(void)vcpu;
	if (!l)
		return;
	if (bt_peek((uint64_t)(uintptr_t)env, r, sizeof(r)) != sizeof(r))
		return;
	sp = r[BT_R_ESP];
	if (r[BT_R_EIP] != handler ||
	    r[BT_R_EDI] < 1 || r[BT_R_EDI] > 64 || r[BT_R_EDX] != sp + 8 ||
	    r[BT_R_ESI] != r[BT_R_EDX] + BT_UCONTEXT_SIZE ||
	    bt_peek(r[BT_R_EDX] + BT_UC_FPSTATE, &fp, 8) != 8 ||
	    (fp && (fp < r[BT_R_ESI] + BT_SIGINFO_SIZE ||
		    fp - sp > BT_SIGFRAME_MAX)))
		return;     /* not a signal's entry: an ordinary call */
	if ((sp & 15) == 8)
		return;     /* aligned already */
	if ((sp & 15) != 0)
		goto unfixed;
	len = r[BT_R_ESI] + BT_SIGINFO_SIZE - sp;
	if (bt_peek(sp, frame, len) != (ssize_t)len)
		goto unfixed;
	lo.iov_base = frame;
	lo.iov_len = len;
	re.iov_base = (void *)(uintptr_t)(sp - 8);
	re.iov_len = len;
	if (process_vm_writev(getpid(), &lo, 1, &re, 1, 0) != (ssize_t)len)
		goto unfixed;
	env[BT_R_ESP] = sp - 8;
	env[BT_R_ESI] -= 8;
	env[BT_R_EDX] -= 8;
	__atomic_fetch_add(&l->sigalign_fixed, 1, __ATOMIC_RELAXED);
	return;
unfixed:
	bt_sigalign_unfixed(l, handler);
}

void bt_limits_handler_trans(struct qemu_plugin_tb *tb, uint64_t handler)
{
	qemu_plugin_register_vcpu_tb_exec_cb(tb, bt_sigalign_entry,
		QEMU_PLUGIN_CB_RW_REGS, (void *)(uintptr_t)handler);
}

void bt_limits_handler_late(uint64_t handler)
{
	struct bt_ring_limits *l = bt_lim();

	if (l)
		bt_sigalign_unfixed(l, handler);
}
