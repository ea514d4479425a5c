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

/*
 * Messages.  The libraries print nothing by themselves: an operation that
 * has something to say while it runs (which backend `auto` took, a thread
 * that could not be traced, where a snapshot went) calls the log callback
 * of its options, and says nothing when none is set.
 *
 * @msg is one message, complete and without a trailing newline; it is not
 * wrapped (it may hold a newline of its own).  It reads as btrace's command
 * line prints it, starting with the tag of the operation ("btrace record:
 * using Intel PT", "btrace: warning: ...").  @level is a BTRACE_LOG_* value
 * (a warning says "warning:" after the tag).  @ctx is the options' log_ctx.
 * The callback runs in the calling thread, or in a child process the
 * operation forked, before the call returns.
 */
enum btrace_log_level {
	BTRACE_LOG_WARN = 1,
	BTRACE_LOG_INFO = 2,
};
typedef void (*btrace_log_fn)(int level, const char *msg, void *ctx);

/*
 * Options and results: every struct passed by pointer whose size may grow
 * starts with `size_t sz`, which the caller sets to sizeof the struct it
 * was built with.  The policy (the same for every entry point, libbpf's
 * OPTS_VALID): an @sz smaller than the library's struct (an older caller)
 * is accepted and the fields it lacks read as zero (a result struct: only
 * its first @sz bytes are written); a larger @sz (a newer caller) is accepted when the bytes the
 * library does not know are all zero, else the call fails with -EINVAL
 * ("unknown options set").  An @sz below sizeof(size_t) (0 included) is
 * -EINVAL.  Both libraries apply it with one helper (bt_opts_copy() and
 * bt_result_size() of src/util.c): btrace_record_opts/_result,
 * btrace_export_opts/_result, btrace_decode_opts and btrace_decode_sink;
 * the message names the struct ("decode options: check failed: ...").
 * Structs the library allocates (btrace_report, btrace_decode_result)
 * have their sz set by the library.
 */

#ifdef __cplusplus
}
#endif

#endif /* BTRACE_BTRACE_H */
