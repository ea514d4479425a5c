/* SPDX-License-Identifier: MIT */
/* The on-disk layout of .btrace files (docs/format.md).  Private to src/format. */
#ifndef BT_FORMAT_H
#define BT_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define BT_FILE_MAGIC "\x89" "BTRC\r\n\x1a"
#define BT_FILE_HEADER_SIZE 64
#define BT_ENDIAN_MARKER 0x01020304u
#define BT_SECTION_MAGIC 0x43455342u  /* "BSEC" little-endian */
#define BT_SECTION_HEADER_SIZE 40
#define BT_FIELD_HEADER_SIZE 16

/* Section types. */
enum bt_section_type {
	BT_SEC_CONFIG = 1,
	BT_SEC_BUFFER = 2,
	BT_SEC_TASKS = 3,
	BT_SEC_MAPPINGS = 4,
	BT_SEC_CODE = 5,
	BT_SEC_SIGNAL = 6,
	BT_SEC_META = 7,
	BT_SEC_MEMORY = 8,
	BT_SEC_ACCESSES = 9,
	BT_SEC_END = 0x7fff,
};

/* Section flags. */
#define BT_SECF_ZSTD 0x1u

/* A list section holds one BT_F_RECORD field per element, whose value is
 * itself a sequence of fields. */
#define BT_F_RECORD 1

/* CONFIG fields. */
enum {
	BT_CF_BACKEND = 2, BT_CF_TRACE_KIND, BT_CF_CPU_VENDOR, BT_CF_CPU_FAMILY,
	BT_CF_CPU_MODEL, BT_CF_CPU_STEPPING, BT_CF_CPUID15_EAX, BT_CF_CPUID15_EBX,
	BT_CF_NOM_FREQ, BT_CF_MTC_FREQ, BT_CF_PMU_TYPE, BT_CF_PT_CONFIG,
	BT_CF_TSC_BIT, BT_CF_MTC_BIT, BT_CF_CYC_BIT, BT_CF_NORETCOMP_BIT,
	BT_CF_BRANCH_BIT, BT_CF_PSB_PERIOD, BT_CF_USER_ONLY,
	BT_CF_REQUESTED_SIZE, BT_CF_PAD, BT_CF_CRASH_MODE,
};

/* BUFFER fields. */
enum {
	BT_BF_KIND = 2, BT_BF_FLAGS, BT_BF_TID, BT_BF_CPU, BT_BF_REQUESTED,
	BT_BF_PAD, BT_BF_RING_SIZE, BT_BF_HEAD, BT_BF_LOST, BT_BF_DATA,
};

/* TASKS record fields. */
enum {
	BT_TF_PID = 2, BT_TF_TID, BT_TF_PPID, BT_TF_FLAGS, BT_TF_COMM, BT_TF_EXE,
};

/* MAPPINGS record fields. */
enum {
	BT_MF_PID = 2, BT_MF_START, BT_MF_END, BT_MF_PGOFF, BT_MF_PROT,
	BT_MF_FLAGS, BT_MF_DEV, BT_MF_INO, BT_MF_BUILD_ID, BT_MF_PATH,
};

/* CODE fields (one section per blob). */
enum {
	BT_XF_KIND = 2, BT_XF_BUILD_ID, BT_XF_VADDR, BT_XF_FILE_OFFSET,
	BT_XF_PATH, BT_XF_DATA,
};

/* MEMORY fields (one section per range). */
enum { BT_YF_TID = 2, BT_YF_VADDR, BT_YF_DATA };

/* ACCESSES fields (one section per thread): the records are BT_ACCESS_SIZE
 * bytes each, ip, addr (8 bytes each), size, flags (4 bytes each). */
enum { BT_AF_TID = 2, BT_AF_FLAGS, BT_AF_RECORDS };
#define BT_ACCESS_SIZE 24
#define BT_MAX_ACCESSES (1u << 22)   /* records in one section */

/* SIGNAL fields. */
enum {
	BT_SF_TID = 2, BT_SF_SIGNO, BT_SF_CODE, BT_SF_ERRNO, BT_SF_ADDR,
	BT_SF_SENDER_PID, BT_SF_FAULT_SOURCE, BT_SF_FAULT_IP, BT_SF_REGS,
	BT_SF_EXIT_STATUS,
};

/* META record fields. */
enum { BT_KF_KEY = 2, BT_KF_VALUE };

/* END fields. */
enum { BT_EF_SECTIONS = 2 };

uint32_t bt_crc32c(uint32_t crc, const void *data, size_t len);

#endif /* BT_FORMAT_H */
