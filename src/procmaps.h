/* SPDX-License-Identifier: MIT */
/*
 * One parser for the lines of /proc/PID/maps (the kernel's, and the text
 * QEMU emulates for a guest).  Header and source depend on libc alone: the
 * QEMU plugin, which is not linked with libbtrace, compiles procmaps.c in.
 */
#ifndef BT_PROCMAPS_H
#define BT_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

/* "start-end perms pgoff maj:min ino   path" */
struct bt_maps_line {
	uint64_t start, end;
	char perms[8];          /* "r-xp", NUL-terminated */
	uint64_t pgoff;
	unsigned int maj, min;
	uint64_t ino;
	const char *path;       /* into the line, after the blanks; "" when
				 * anonymous; a name such as "[vdso]" or
				 * "/lib/x.so (deleted)" is kept whole */
	size_t path_len;        /* up to the end of the line */
};

/* BT_MAPS_RANGE fields: start and end only; BT_MAPS_ALL: every field up to
 * the inode (the path may be empty). */
#define BT_MAPS_RANGE 2
#define BT_MAPS_ALL   7

/*
 * Parse the @len bytes at @line (one line, without its '\n').  Returns how
 * many leading fields were read: below BT_MAPS_RANGE the line is not a
 * mapping; BT_MAPS_ALL when every field up to the inode was.  Fields not
 * read are zero (path "").
 */
int bt_maps_parse(const char *line, size_t len, struct bt_maps_line *m);

/*
 * The next line of the text at *@cursor (NUL-terminated): returns its start
 * and sets *@len to its length without the '\n', and advances *@cursor;
 * NULL at the end.
 */
const char *bt_maps_next(const char **cursor, size_t *len);

#endif /* BT_PROCMAPS_H */
