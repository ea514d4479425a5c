/* SPDX-License-Identifier: MIT */
/* The btrace command: shared helpers of the subcommands. */
#ifndef BT_CLI_H
#define BT_CLI_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <btrace/btrace.h>

/* Exit codes. */
#define CLI_EXIT_OK 0
#define CLI_EXIT_FAIL 1
#define CLI_EXIT_USAGE 2

struct cli_command {
	const char *name;
	const char *summary;
	int (*run)(int argc, char **argv);   /* argv[0] is the command name */
};

/* Print "btrace <cmd>: <msg>" and "hint: <hint>" from @err; returns 1. */
int cli_fail(const char *cmd, const struct btrace_error *err);
/* Print "btrace <cmd>: <formatted>" (and an optional hint); returns 1. */
int cli_failf(const char *cmd, const char *hint, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Usage error: message, then "see 'btrace <cmd> --help'"; returns 2. */
int cli_usage(const char *cmd, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/*
 * The usage error for getopt_long()'s return @c ('?' or ':', with opterr
 * 0 and a ':' after any '+' at the start of the option string): "unknown
 * option '--x'", "option '-o' needs an argument"; returns 2.
 */
int cli_bad_option(const char *cmd, int c, char **argv);
/* The line every command's --help ends with: where its manual page is.
 * (Every option list ends with "-h, --help".) */
void cli_help_end(FILE *f, const char *cmd);

struct btrace_snapshot;

/*
 * Read the snapshot at @path for decoding: salvage mode (damaged sections are
 * skipped, and each warning is printed on stderr as "btrace <cmd>: warning:
 * ..."), and @dir (PATH_MAX bytes) set to the snapshot's directory, where
 * binaries are looked for by build ID ("" when unknown).  Returns 0, or the
 * exit status after printing the error.
 */
int cli_read_snapshot(const char *cmd, const char *path,
		      struct btrace_snapshot **snap, char *dir);

/*
 * The options btrace decode and btrace report share: what to decode and
 * where to find binaries.  Put CLI_DECODE_LONGOPTS in the getopt_long()
 * table (and "v" in the short ones); cli_decode_option() takes what
 * getopt_long() returned: 0 when it was one of them (set in @d), -1 when
 * not, else the exit status of a usage error.
 */
#define CLI_DECODE_LONGOPTS \
	{ "thread", required_argument, NULL, 't' }, \
	{ "debug-dir", required_argument, NULL, 'D' }, \
	{ "no-disk", no_argument, NULL, 'N' }, \
	{ "no-debuginfod", no_argument, NULL, 'U' }, \
	{ "verbose", no_argument, NULL, 'v' }
struct btrace_decode_opts;
int cli_decode_option(const char *cmd, int c, const char *arg,
		      struct btrace_decode_opts *d);
/*
 * The one FILE after the options (argv[optind]): read it (cli_read_snapshot)
 * into *@snap, and complete @d for it: the snapshot's directory in @dir
 * (PATH_MAX bytes) as d->search_dir, and what the environment says
 * (BTRACE_DEBUG_PATH, BTRACE_NO_DEMANGLE: the library reads no
 * environment).  Returns 0, or the exit status after printing the error.
 */
int cli_decode_open(const char *cmd, int argc, char **argv,
		    struct btrace_decode_opts *d, struct btrace_snapshot **snap,
		    char *dir);

/*
 * Can a snapshot be written at @out (NULL: a default name in the current
 * directory)?  Its directory must let us create files, @out must not be a
 * directory, and no file size limit (ulimit -f) may cut it short.  Prints
 * the error and returns 1, else 0.
 */
int cli_check_output(const char *cmd, const char *out);

/* Parse sizes such as 4096, 64K, 4M, 1G (binary units); -1 if invalid. */
int cli_parse_size(const char *s, uint64_t *out);
/* Parse an unsigned integer (decimal or 0x); -1 if invalid. */
int cli_parse_u64(const char *s, uint64_t *out);

/*
 * Text from a snapshot (names, paths, metadata, symbols) made safe to print
 * on a terminal: control characters (C0, DEL, and C1 U+0080-U+009F) and
 * bytes that are not valid UTF-8 become \xNN, a backslash becomes \\, so
 * no snapshot can move the cursor, set the title or forge a line.  The
 * result lives until 16 later calls; NULL stays NULL.  Every command prints
 * snapshot text through this.
 */
const char *cli_esc(const char *s);
/*
 * The progress line of btrace decode and btrace report (each draws its
 * own text): on stderr, only when it is a terminal and the trace (the
 * bytes of all of @snap's buffers) is large, 1 MiB and more when the whole
 * history is decoded (@whole), else 8 MiB; the line mentions it when debug
 * info may be downloaded (DEBUGINFOD_URLS set); erased when done.
 */
struct btrace_snapshot;
uint64_t cli_progress_bytes(const struct btrace_snapshot *snap);
bool cli_progress_wanted(uint64_t bytes, bool whole);
bool cli_progress_debuginfod(void);
void cli_progress_erase(void);

/* Length of the valid UTF-8 sequence at @p, 0 when invalid (json.c). */
size_t cli_utf8_len(const unsigned char *p);

/* Minimal JSON writer on a FILE with indentation and proper escaping. */
struct json {
	FILE *f;
	int depth;
	bool need_comma[64];
	bool pretty;
};
void json_init(struct json *j, FILE *f, bool pretty);
void json_begin_object(struct json *j, const char *key);  /* key NULL in arrays */
void json_end_object(struct json *j);
void json_begin_array(struct json *j, const char *key);
void json_end_array(struct json *j);
void json_str(struct json *j, const char *key, const char *val);  /* NULL -> null */
void json_int(struct json *j, const char *key, long long val);
void json_uint(struct json *j, const char *key, unsigned long long val);
void json_hex(struct json *j, const char *key, unsigned long long val); /* "0x.." */
void json_bool(struct json *j, const char *key, bool val);
void json_null(struct json *j, const char *key);
/* @ns nanoseconds as microseconds with three decimals (exact) */
void json_micros(struct json *j, const char *key, uint64_t ns);
void json_finish(struct json *j);  /* final newline */

/*
 * The timeline of a report (struct btrace_report, its threads' call
 * entries and faults) in the Chrome Trace Event format (timeline.c;
 * docs/export.md, "Timeline").
 */
struct btrace_report;
void cli_timeline_chrome(FILE *f, const struct btrace_report *rep);
/* Decode @snap for a timeline (the last @last call entries of each
 * thread) and build its report: 0, or the exit status after printing the
 * error. */
struct btrace_decode_result;
int cli_timeline_decode(const char *cmd, const struct btrace_snapshot *snap,
			struct btrace_decode_opts *d, uint64_t last,
			struct btrace_decode_result **r,
			struct btrace_report **rep);
/* Default of @last (btrace export --timeline, btrace view). */
#define CLI_TIMELINE_LAST 4096
/* The text of btrace report for @rep (every thread) into @f (cmd-report.c). */
void cli_report_text(FILE *f, const char *path, const struct btrace_report *rep,
		     uint64_t calls, uint64_t blocks);
/* The same as --json (cmd-report.c). */
void cli_report_json(FILE *f, const struct btrace_report *rep,
		     uint64_t calls, uint64_t blocks);
/* The page of btrace view for @rep (of the snapshot @path) into @f:
 * 0, or -1 out of memory (cmd-view.c). */
int cli_view_page(FILE *f, const char *path, const struct btrace_report *rep);
/* The snapshot's directory (PATH_MAX bytes; "" unknown) for @path, and
 * the decode options the environment gives (cli_decode_open()). */
void cli_snapshot_dir(const char *path, char *dir);
void cli_decode_env(struct btrace_decode_opts *d, const char *dir);

/* btrace --version [--verbose] (version.c). */
int cli_version(bool verbose);

/* Subcommands. */
int cmd_record(int argc, char **argv);
int cmd_snapshot(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_decode(int argc, char **argv);
int cmd_info(int argc, char **argv);
int cmd_export(int argc, char **argv);
int cmd_doctor(int argc, char **argv);
int cmd_calibrate(int argc, char **argv);
int cmd_view(int argc, char **argv);

#endif /* BT_CLI_H */
