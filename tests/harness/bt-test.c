/* SPDX-License-Identifier: MIT */
#include "bt-test.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

void bt_test_diag(const char *fmt, ...)
{
	char buf[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* Every line of a diagnostic is a TAP comment. */
	for (char *l = buf, *nl;; l = nl + 1) {
		nl = strchr(l, '\n');
		if (nl)
			*nl = '\0';
		if (*l || !nl)
			printf("# %s\n", l);
		if (!nl || !nl[1])
			break;
	}
}

void bt_test_fail(struct bt_test *t, const char *file, int line,
		  const char *fmt, ...)
{
	va_list ap;

	t->failed++;
	printf("# %s:%d: ", file, line);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
}

_Noreturn void bt_test_skip_all(const char *reason)
{
	printf("1..0 # SKIP %s\n", reason);
	fflush(stdout);
	exit(0);
}

int bt_test_copy_file(const char *src, const char *dst, unsigned mode)
{
	char buf[65536];
	int in, out, rc = 0;
	ssize_t n;

	in = open(src, O_RDONLY | O_CLOEXEC);
	if (in < 0)
		return -errno;
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		   0600);
	if (out < 0) {
		rc = -errno;
		close(in);
		return rc;
	}
	while ((n = read(in, buf, sizeof(buf))) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			rc = -errno;
			break;
		}
		for (ssize_t o = 0; o < n;) {
			ssize_t w = write(out, buf + o, (size_t)(n - o));

			if (w < 0 && errno == EINTR)
				continue;
			if (w <= 0) {
				rc = w < 0 ? -errno : -EIO;
				break;
			}
			o += w;
		}
		if (rc)
			break;
	}
	if (!rc && fchmod(out, (mode_t)mode) < 0)
		rc = -errno;
	if (close(out) < 0 && !rc)
		rc = -errno;
	close(in);
	if (rc)
		unlink(dst);
	return rc;
}

int bt_test_run(const struct bt_test_case *cases, int n)
{
	const char *only = getenv("BT_TEST_ONLY");
	int failed = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	printf("1..%d\n", n);
	for (int i = 0; i < n; i++) {
		struct bt_test t = { .name = cases[i].name };

		if (only && !strstr(cases[i].name, only)) {
			printf("ok %d - %s # SKIP not selected\n", i + 1,
			       cases[i].name);
			continue;
		}
		cases[i].fn(&t);
		if (t.skip && !t.failed) {
			printf("ok %d - %s # SKIP %s\n", i + 1, t.name, t.skip);
		} else if (t.failed || !t.checks) {
			if (!t.checks)
				printf("# %s: the test made no check\n", t.name);
			printf("not ok %d - %s\n", i + 1, t.name);
			failed++;
		} else {
			printf("ok %d - %s (%d checks)\n", i + 1, t.name,
			       t.checks);
		}
	}
	return failed ? 1 : 0;
}
