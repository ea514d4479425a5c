/* SPDX-License-Identifier: MIT */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>

#include "cli.h"

int cli_fail(const char *cmd, const struct btrace_error *err)
{
	fprintf(stderr, "btrace %s: %s\n", cmd,
		err->msg[0] ? err->msg : btrace_strerror(err->code));
	if (err->hint[0])
		fprintf(stderr, "hint: %s\n", err->hint);
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
