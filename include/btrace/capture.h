/* SPDX-License-Identifier: MIT */
/*
 * Hardware capture: what this machine supports (btrace doctor), on-demand
 * snapshots of a running recording (btrace snapshot) and the measurement
 * of the post-fault pad (btrace calibrate).
 */
#ifndef BTRACE_CAPTURE_H
#define BTRACE_CAPTURE_H

#include <stddef.h>
#include <stdint.h>

#include <btrace/btrace.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BTRACE_DOCTOR_MAX_CAPS 40

struct btrace_doctor_cap {
	char name[40];
	uint32_t value;            /* as read from caps/<name> (hex in sysfs) */
};

/* One trace PMU (intel_pt or intel_bts). */
struct btrace_doctor_pmu {
	char name[32];
	int present;               /* registered in sysfs */
	int usable;                /* btrace can record with it here */
	int type;                  /* attr.type, -1 when absent */
	char why[768];             /* when not usable: the reason */
	char hint[256];            /* and the fix, when one exists */
	uint64_t default_config;   /* the config btrace would open (PT) */
	uint32_t ncaps;
	struct btrace_doctor_cap caps[BTRACE_DOCTOR_MAX_CAPS];
};

/* The QEMU software backend (btrace record --backend qemu). */
struct btrace_doctor_qemu {
	int found;                 /* the emulator is there and can load plugins */
	int usable;                /* 1: a probe run under the plugin worked;
				      0: something is missing (why, hint);
				      -1: not probed (with a sysfs root) */
	char emulator[512];        /* its path, "" when not found */
	char version[64];          /* "7.2.22" from --version, "" unknown */
	char plugin[512];          /* libbtrace-qemu.so, "" when not found */
	char why[768];             /* what is missing */
	char hint[256];            /* and how to fix it */
};

struct btrace_doctor_report {
	size_t sz;                 /* sizeof(struct btrace_doctor_report);
				    * the size policy of btrace.h */
	/* CPU (CPUID) */
	char cpu_vendor[16];
	char cpu_brand[64];
	uint32_t cpu_family, cpu_model, cpu_stepping;
	int hypervisor;            /* CPUID.1:ECX[31] */
	int cpuid_pt;              /* CPUID.7.0:EBX[25] */
	char kernel[128];
	/* PMUs */
	struct btrace_doctor_pmu pt, bts;
	/* privilege */
	int paranoid;              /* kernel.perf_event_paranoid */
	int uid;
	int cap_perfmon, cap_sys_admin, cap_ipc_lock, cap_sys_ptrace;
	/* locked memory */
	uint64_t mlock_kb;         /* kernel.perf_event_mlock_kb */
	int online_cpus;
	uint64_t user_allowance;   /* bytes: mlock_kb x online CPUs */
	uint64_t rlimit_memlock;   /* bytes, UINT64_MAX for unlimited */
	uint64_t pinned;           /* bytes already pinned by this process */
	int budget_bypass;         /* CAP_IPC_LOCK or paranoid -1 */
	uint64_t max_single_ring;  /* largest AUX ring one thread could get, bytes */
	/* KPTI and ptrace */
	int kpti;                  /* 1 on, 0 off, -1 unknown */
	int ptrace_scope;          /* kernel.yama.ptrace_scope, -1 without Yama */
	/* the backend `auto` would pick (enum btrace_backend) and why */
	uint32_t auto_backend;
	char auto_why[1024];
	/* which BTS path recording uses: "intel_bts" (the AUX PMU),
	 * "branch-instructions" (the legacy event: intel_bts missing, as
	 * under page-table isolation), or "" when BTS is not usable */
	char bts_path[32];
	/* the QEMU backend: emulator, version, plugin, a probe run */
	struct btrace_doctor_qemu qemu;
	size_t :0;
};

/**
 * @brief Fill @rep with what this machine supports for capture.
 *
 * @sysfs_root: NULL for /sys (or a recorded tree, for tests).  @rep->sz
 * must be set by the caller.  The QEMU backend is checked for real: the
 * emulator is found and asked its version, the plugin is found, and a
 * probe run records /bin/true under it (not with a recorded @sysfs_root,
 * which describes another machine).  Returns 0, or -EINVAL for a bad @rep.
 */
BTRACE_API int btrace_doctor(const char *sysfs_root,
			     struct btrace_doctor_report *rep,
			     struct btrace_error *err);

/**
 * @brief Find the emulator the QEMU backend runs ($BTRACE_QEMU, a path or a
 * name looked up in PATH, else qemu-x86_64 in PATH) and ask it its version.
 *
 * @path gets its path ("" when no executable file is there), @version (may
 * be NULL) what `--version` says ("7.2.22"; "" when it does not run or says
 * otherwise).  Returns 0 when it is found and can load plugins, else a
 * negative code with @err saying why (@path is kept when the file exists,
 * as for a statically linked qemu-x86_64).  btrace_doctor() and `btrace
 * --version --verbose` both ask this.
 */
BTRACE_API int btrace_qemu_emulator(char *path, size_t path_len,
				    char *version, size_t version_len,
				    struct btrace_error *err);

/**
 * @brief Ask the btrace process recording @pid for a snapshot now (the
 * events are disabled while the buffers are copied, then re-enabled) and
 * write it to @path.
 *
 * Returns 0, -ESRCH when no recording owns @pid, or another negative code.
 */
BTRACE_API int btrace_snapshot_request(int pid, const char *path,
				       struct btrace_error *err);

struct btrace_calibration {
	size_t sz;                 /* set by the caller: sizeof(struct
				    * btrace_calibration); only that many
				    * bytes are written (btrace.h) */
	uint32_t backend;          /* enum btrace_backend measured */
	uint32_t runs;
	uint64_t pad_max;          /* bytes written after the fault, worst run */
	uint64_t pad_plain;        /* ... for a plain crash */
	uint64_t pad_handler;      /* ... for a handler that re-raises */
	uint64_t recommended;      /* the --pad to use */
	char saved_to[512];        /* where it was stored for btrace record */
};

/**
 * @brief Measure the pad: run a known crasher under @backend (PT or BTS,
 * 0 for the first available) @runs times and measure how many trace bytes
 * are written between the signal-delivery stop and the end of tracing.
 * Needs the hardware; fails with the probe's reason otherwise.
 */
BTRACE_API int btrace_calibrate(uint32_t backend, unsigned runs,
				const char *sysfs_root,
				struct btrace_calibration *out,
				struct btrace_error *err);

#ifdef __cplusplus
}
#endif

#endif /* BTRACE_CAPTURE_H */
