/* SPDX-License-Identifier: MIT */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>

#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include <btrace/decode.h>
#include <btrace/snapshot.h>

#include "cli.h"

int cli_fail(const char *cmd, const struct btrace_error *err)
{
	/* messages may quote a snapshot's names and paths */
	fprintf(stderr, "btrace %s: %s\n", cmd,
		cli_esc(err->msg[0] ? err->msg : btrace_strerror(err->code)));
	if (err->hint[0])
		fprintf(stderr, "hint: %s\n", cli_esc(err->hint));
	return CLI_EXIT_FAIL;
}

int cli_failf(const char *cmd, const char *hint, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "btrace %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	if (hint)
		fprintf(stderr, "hint: %s\n", hint);
	return CLI_EXIT_FAIL;
}

int cli_usage(const char *cmd, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "btrace %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, "\nsee 'btrace %s --help'\n", cmd);
	return CLI_EXIT_USAGE;
}

int cli_bad_option(const char *cmd, int c, char **argv)
{
	const char *word = optind > 0 ? argv[optind - 1] : NULL;
	int n;

	/* A long option names itself in full (up to any "=value"); a short
	 * one by its letter, which may sit inside a cluster such as -qx. */
	if (word && !strncmp(word, "--", 2) && word[2]) {
		n = (int)strcspn(word, "=");
		if (c == ':')
			return cli_usage(cmd, "option '%.*s' needs an argument", n, word);
		if (word[n] && optopt)
			return cli_usage(cmd, "option '%.*s' takes no argument", n, word);
		return cli_usage(cmd, "unknown option '%.*s'", n, word);
	}
	if (optopt > 0 && optopt < 128 && isgraph(optopt))
		return cli_usage(cmd, c == ':' ? "option '-%c' needs an argument" :
				 "unknown option '-%c'", optopt);
	return cli_usage(cmd, "unknown option '%s'", word ? cli_esc(word) : "?");
}

void cli_help_end(FILE *f, const char *cmd)
{
	fprintf(f, "\nThe manual page: man btrace-%s\n", cmd);
}

int cli_parse_u64(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*out = v;
	return 0;
}

int cli_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;
	unsigned shift = 0;

	if (!s || !*s || *s == '-')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: return -1;
	}
	if (*end == 'i')
		end++;
	if (*end == 'B' || *end == 'b')
		end++;
	if (*end)
		return -1;
	if (shift && v > (~0ull >> shift))
		return -1;
	*out = v << shift;
	return 0;
}

int cli_read_snapshot(const char *cmd, const char *path,
		      struct btrace_snapshot **snap, char *dir)
{
	struct btrace_error err;

	if (btrace_snapshot_read(path, BTRACE_READ_LENIENT, snap, &err) < 0)
		return cli_fail(cmd, &err);
	for (size_t i = 0; i < (*snap)->nwarnings; i++)
		fprintf(stderr, "btrace %s: warning: %s\n", cmd,
			cli_esc((*snap)->warnings[i]));
	cli_snapshot_dir(path, dir);
	return 0;
}

void cli_snapshot_dir(const char *path, char *dir)
{
	char real[PATH_MAX];

	dir[0] = '\0';
	if (realpath(path, real))
		snprintf(dir, PATH_MAX, "%s", dirname(real));
}

void cli_decode_env(struct btrace_decode_opts *d, const char *dir)
{
	const char *env;

	if (dir[0])
		d->search_dir = dir;
	env = getenv("BTRACE_DEBUG_PATH");
	if (env && *env)
		d->debug_path = env;
	env = getenv("BTRACE_NO_DEMANGLE");
	if (env && *env && strcmp(env, "0"))
		d->flags |= BTRACE_DECODE_NO_DEMANGLE;
}

int cli_decode_option(const char *cmd, int c, const char *arg,
		      struct btrace_decode_opts *d)
{
	uint64_t v;

	switch (c) {
	case 'v': d->flags |= BTRACE_DECODE_ALL_NOTES; return 0;
	case 't':
		if (cli_parse_u64(arg, &v) || !v || v > INT32_MAX)
			return cli_usage(cmd, "--thread: '%s' is not a thread id", arg);
		d->tid = (int32_t)v;
		return 0;
	case 'D': d->debug_dir = arg; return 0;
	case 'N': d->flags |= BTRACE_DECODE_NO_DISK; return 0;
	case 'U': unsetenv("DEBUGINFOD_URLS"); return 0;  /* libdw's client */
	}
	return -1;
}

int cli_decode_open(const char *cmd, int argc, char **argv,
		    struct btrace_decode_opts *d, struct btrace_snapshot **snap,
		    char *dir)
{
	int rc;

	if (optind + 1 != argc)
		return cli_usage(cmd, optind >= argc ? "a snapshot FILE is required" :
				 "only one FILE is accepted");
	rc = cli_read_snapshot(cmd, argv[optind], snap, dir);
	if (rc)
		return rc;
	cli_decode_env(d, dir);
	return 0;
}

const char *cli_esc(const char *s)
{
	static char *slot[16];
	static size_t cap[16];
	static unsigned next;
	const unsigned char *p;
	size_t need = 1, n = 0;
	unsigned k;
	char *o;

	if (!s)
		return NULL;
	for (p = (const unsigned char *)s; *p; p++)
		need += 4;
	k = next++ % 16;
	if (cap[k] < need) {
		char *nb = realloc(slot[k], need);

		if (!nb)
			return "(out of memory)";
		slot[k] = nb;
		cap[k] = need;
	}
	o = slot[k];
	for (p = (const unsigned char *)s; *p;) {
		size_t l = cli_utf8_len(p);

		if (*p == '\\') {
			o[n++] = '\\';
			o[n++] = '\\';
			p++;
		} else if (*p < 0x20 || *p == 0x7f || !l ||
			   (l == 2 && p[0] == 0xc2 && p[1] < 0xa0)) {
			/* one byte at a time: a C1 control is two */
			n += (size_t)snprintf(o + n, 5, "\\x%02x", *p);
			p++;
		} else {
			memcpy(o + n, p, l);
			n += l;
			p += l;
		}
	}
	o[n] = 0;
	return o;
}

int cli_check_output(const char *cmd, const char *out)
{
	char dir[PATH_MAX];
	struct rlimit rl;
	struct stat st;

	if (getrlimit(RLIMIT_FSIZE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY)
		return cli_failf(cmd, "raise it (ulimit -f unlimited); the traced program can be given its own limit inside the command",
				 "the file size limit (ulimit -f) is %llu bytes: the trace files and the snapshot may not fit, and btrace would lose the recording",
				 (unsigned long long)rl.rlim_cur);
	if (out && !*out)
		return cli_usage(cmd, "the output file name is empty");
	if (out && stat(out, &st) == 0 && S_ISDIR(st.st_mode))
		return cli_failf(cmd, "give a file name, e.g. -o DIR/NAME.btrace",
				 "%s: cannot write the snapshot there: it is a directory",
				 cli_esc(out));
	snprintf(dir, sizeof(dir), "%s", out ? out : ".");
	if (out) {
		char *slash = strrchr(dir, '/');

		if (!slash)
			snprintf(dir, sizeof(dir), ".");
		else if (slash == dir)
			dir[1] = 0;
		else
			*slash = 0;
	}
	if (access(dir, W_OK | X_OK) < 0)
		return cli_failf(cmd, "choose another place with -o, or fix the directory",
				 "%s: cannot write the snapshot in directory %s: %s",
				 out ? cli_esc(out) : "(default name)", cli_esc(dir),
				 strerror(errno));
	return 0;
}

uint64_t cli_progress_bytes(const struct btrace_snapshot *snap)
{
	uint64_t bytes = 0;

	for (size_t i = 0; i < snap->nbuffers; i++)
		bytes += snap->buffers[i].size;
	return bytes;
}

bool cli_progress_wanted(uint64_t bytes, bool whole)
{
	return isatty(STDERR_FILENO) && bytes >= (whole ? 1u << 20 : 8u << 20);
}

bool cli_progress_debuginfod(void)
{
	const char *u = getenv("DEBUGINFOD_URLS");

	return u && *u;
}

void cli_progress_erase(void)
{
	fprintf(stderr, "\r\033[K");
}
