/* SPDX-License-Identifier: MIT */
/*
 * A file made by a renderer of the command (btrace export --timeline,
 * btrace view): the bytes go to a private temporary file (mode 0600, an
 * unpredictable name beside the output) that is renamed into place once
 * complete, so a failed write leaves nothing and no other user can read it
 * meanwhile (docs/security.md).
 */
#include <errno.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <btrace/export.h>

#include "util.h"

int btrace_export_file(const char *out, const void *data, size_t len,
		       uint32_t flags, struct btrace_error *err)
{
	char tmp[PATH_MAX];
	const char *p = data;
	struct stat st;
	int fd, rc = 0;

	bt_error_clear(err);
	if (!out || !*out || (!data && len))
		return bt_error(err, -EINVAL, "export: invalid argument: %s",
				!out || !*out ? "no output file" : "NULL data");
	if (!(flags & BTRACE_EXPORT_FORCE) && !lstat(out, &st)) {
		bt_error(err, -EEXIST, "%s: write failed: the file exists", out);
		return bt_hint(err, "remove it, or use --force to replace it");
	}
	fd = bt_tmp_create(out, tmp, sizeof(tmp), 0600);
	if (fd < 0) {
		bt_error(err, fd, "%s: create a temporary file beside it failed: %s",
			 out, btrace_strerror(fd));
		return bt_hint(err, "check that the directory exists and is "
			       "writable, or choose another output");
	}
	while (len && !rc) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			rc = n < 0 ? -errno : -EIO;
		else
			p += n, len -= (size_t)n;
	}
	rc = bt_tmp_commit(fd, tmp, out, rc);
	if (rc < 0) {
		bt_error(err, rc, "%s: write failed: %s", out, btrace_strerror(rc));
		return bt_hint(err, "check the free space and the file size "
			       "limit (ulimit -f)");
	}
	return 0;
}
