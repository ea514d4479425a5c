/* SPDX-License-Identifier: MIT */
/*
 * btrace: common definitions shared by the capture, format and decode
 * libraries: version, error codes and the error record every fallible call
 * fills in.
 */
#ifndef BTRACE_BTRACE_H
#define BTRACE_BTRACE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define BTRACE_API __attribute__((visibility("default")))
#else
#define BTRACE_API
#endif

/** @brief The library version as "MAJOR.MINOR.PATCH". */
BTRACE_API const char *btrace_version(void);

/*
 * Error codes.  Functions return >= 0 on success and a negative value on
 * failure: either a negative errno (-ENOMEM, -EINVAL, -EIO, ...) for OS and
 * argument errors, or -BTRACE_ERR_* for btrace-specific failures.
 */
#define BTRACE_ERR_BASE 4000
enum btrace_err {
	BTRACE_ERR_FORMAT = BTRACE_ERR_BASE + 1,   /* not a btrace snapshot / corrupt structure */
	BTRACE_ERR_VERSION,                        /* incompatible format version */
	BTRACE_ERR_CHECKSUM,                       /* a section's checksum does not match */
	BTRACE_ERR_TRUNCATED,                      /* the file ends early */
	BTRACE_ERR_NOSYNC,                         /* no PSB found in a trace buffer */
	BTRACE_ERR_OVERFLOW,                       /* the trace overflowed */
	BTRACE_ERR_NOMAP,                          /* no code mapped at an address */
	BTRACE_ERR_BAD_PACKET,                     /* malformed trace packet */
	BTRACE_ERR_NOPMU,                          /* no usable trace PMU */
	BTRACE_ERR_INTERNAL,                       /* a btrace bug */
	BTRACE_ERR_UNSUPPORTED,                    /* feature not built or not available */
	BTRACE_ERR_LAST
};

/** @brief A message for a negative error code (errno or BTRACE_ERR_*). */
BTRACE_API const char *btrace_strerror(int err);

/*
 * The error record.  On failure a function sets @code to its (negative)
 * return value, @msg to "<object>: <operation> failed: <reason>" and, when a
 * fix is known, @hint to one sentence saying how to fix it.
 */
struct btrace_error {
	int code;
	char msg[768];
	char hint[256];
};

#ifdef __cplusplus
}
#endif

#endif /* BTRACE_BTRACE_H */
