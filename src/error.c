/* SPDX-License-Identifier: MIT */
#include "config.h"

#include <string.h>

#include <btrace/btrace.h>

#include "util.h"

const char *btrace_version(void)
{
	return BTRACE_VERSION;
}

static const char *const bt_errstr[] = {
	[BTRACE_ERR_FORMAT - BTRACE_ERR_BASE] = "not a valid btrace snapshot",
	[BTRACE_ERR_VERSION - BTRACE_ERR_BASE] = "unsupported format version",
	[BTRACE_ERR_CHECKSUM - BTRACE_ERR_BASE] = "checksum mismatch",
	[BTRACE_ERR_TRUNCATED - BTRACE_ERR_BASE] = "file is truncated",
	[BTRACE_ERR_NOSYNC - BTRACE_ERR_BASE] = "no synchronization point in trace",
	[BTRACE_ERR_OVERFLOW - BTRACE_ERR_BASE] = "trace overflow",
	[BTRACE_ERR_NOMAP - BTRACE_ERR_BASE] = "no code mapped at address",
	[BTRACE_ERR_BAD_PACKET - BTRACE_ERR_BASE] = "malformed trace packet",
	[BTRACE_ERR_NOPMU - BTRACE_ERR_BASE] = "no usable trace PMU",
	[BTRACE_ERR_INTERNAL - BTRACE_ERR_BASE] = "internal error (a btrace bug)",
	[BTRACE_ERR_UNSUPPORTED - BTRACE_ERR_BASE] = "not supported",
};

const char *btrace_strerror(int err)
{
	int e = err < 0 ? -err : err;

	if (e > BTRACE_ERR_BASE && e < BTRACE_ERR_LAST &&
	    bt_errstr[e - BTRACE_ERR_BASE])
		return bt_errstr[e - BTRACE_ERR_BASE];
	return strerror(e);
}
