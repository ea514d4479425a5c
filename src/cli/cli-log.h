/* SPDX-License-Identifier: MIT */
/* The log callback the command line gives the libraries. */
#ifndef BT_CLI_LOG_H
#define BT_CLI_LOG_H

#include <btrace/btrace.h>

/*
 * A library message on stderr (btrace_log_fn; @ctx unused), wrapped at word
 * boundaries to fit 80 columns; continuation lines are indented by two
 * spaces.  A word longer than a line (a path) is kept whole.  One write per
 * message, so that lines of concurrent writers do not interleave.
 */
void cli_log_stderr(int level, const char *msg, void *ctx);

#endif /* BT_CLI_LOG_H */
