/* SPDX-License-Identifier: MIT */
/* cli_log_stderr(): library messages on stderr, wrapped at 80 columns. */
#include <stdio.h>
#include <string.h>

#include "cli-log.h"

void cli_log_stderr(int level, const char *msg, void *ctx)
{
	enum { WIDTH = 80, INDENT = 2 };
	char out[4608];
	const char *p = msg, *e;
	size_t col = 0, n = 0, len;

	(void)level;
	(void)ctx;
	while (*p && n + 8 < sizeof(out)) {
		if (*p == '\n') {          /* the message's own line break */
			out[n++] = *p++;
			col = 0;
			continue;
		}
		if (*p == ' ') {
			p++;
			continue;
		}
		e = p + strcspn(p, " \n");
		len = (size_t)(e - p);
		if (col && col + 1 + len > WIDTH) {
			out[n++] = '\n';
			for (col = 0; col < INDENT; col++)
				out[n++] = ' ';
		} else if (col) {
			out[n++] = ' ';
			col++;
		}
		if (n + 8 >= sizeof(out))
			break;
		if (len > sizeof(out) - 8 - n)
			len = sizeof(out) - 8 - n;
		memcpy(out + n, p, len);
		n += len;
		col += len;
		p = e;
	}
	if (!n || out[n - 1] != '\n')
		out[n++] = '\n';
	fwrite(out, 1, n, stderr);
}
