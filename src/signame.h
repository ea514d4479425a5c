/* SPDX-License-Identifier: MIT */
/*
 * Signal names, the one table for both libraries (compiled into
 * libbtrace-internal, which libbtrace and libbtrace-decode both link).
 *
 * Signal 29 has two names in Linux, SIGIO and SIGPOLL.  Each output keeps
 * the one it has always printed, so the caller says which:
 *  - BT_SIG_IO   "SIGIO":   the decode library (btrace_signal_name(): the
 *                report's text and JSON);
 *  - BT_SIG_POLL "SIGPOLL": the C library's sigabbrev_np() name, printed by
 *                libbtrace (btrace_signal_str(): snapshot metadata, record
 *                messages) and btrace info.
 * Real-time signals (32 and above) have no name here: NULL.
 */
#ifndef BT_SIGNAME_H
#define BT_SIGNAME_H

enum bt_sig_style {
	BT_SIG_IO,
	BT_SIG_POLL,
};

/* "SIGSEGV" for 11 (a static string), NULL for 0, negative numbers and
 * real-time signals.  Without the "SIG": bt_sig_name(...) + 3. */
const char *bt_sig_name(int signo, enum bt_sig_style style);

#endif /* BT_SIGNAME_H */
