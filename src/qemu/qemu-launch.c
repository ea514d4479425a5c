// SPDX-License-Identifier: MIT
/*
 * What the QEMU backend launches for `btrace record -- PROG ARGS`: PROG as
 * the kernel's execve() would run it.  A "#!" script runs through its
 * interpreter: argv becomes INTERP [ARG] SCRIPT ARGS..., where INTERP and
 * the optional ARG are split from the "#!" line as the kernel splits it
 * (the rest of the line after the interpreter, trimmed, is one argument),
 * and SCRIPT is the path the script was found at.  An interpreter that is
 * itself a script is resolved again, up to the kernel's limit (5 levels:
 * more is ELOOP).  The interpreter is opened as the kernel opens it:
 * relative to the working directory, never searched in PATH.
 *
 * A script whose interpreter is missing, not executable or not a program
 * fails here, before anything runs, with the reason (btrace exits 1, as for
 * any program it cannot launch; a shell would say "bad interpreter" and
 * exit 126 or 127).
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "plugin-exec.h"
#include "qemu-launch.h"
#include "util.h"

#define BT_SHEBANG_MAX 256   /* the kernel's BINPRM_BUF_SIZE */
#define BT_SCRIPT_DEPTH 5    /* the kernel's nesting limit (ELOOP beyond) */

static int bt_push(struct bt_qemu_launch *l, char *s)
{
	char **v;

	if (!s)
		return -ENOMEM;
	v = realloc(l->strs, (l->nstrs + 1) * sizeof(*v));
	if (!v) {
		free(s);
		return -ENOMEM;
	}
	l->strs = v;
	l->strs[l->nstrs++] = s;
	return 0;
}

void bt_qemu_launch_free(struct bt_qemu_launch *l)
{
	for (size_t i = 0; i < l->nstrs; i++)
		free(l->strs[i]);
	free(l->strs);
	free(l->argv);
	memset(l, 0, sizeof(*l));
}

/* The first bytes of @path; 1 if they start with "#!", 0 if not, or
 * -errno.  Fails as execve() would for a file that cannot be run. */
static int bt_read_head(const char *path, char *head, size_t len)
{
	struct stat st;
	ssize_t r;
	int fd;

	if (stat(path, &st))
		return -errno;
	if (!S_ISREG(st.st_mode))
		return -EACCES;
	if (access(path, X_OK))
		return -errno;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	memset(head, 0, len);
	r = pread(fd, head, len - 1, 0);
	close(fd);
	if (r < 0)
		return -errno;
	return r >= 2 && head[0] == '#' && head[1] == '!';
}

int bt_qemu_launch_resolve(char *const *argv, const char *found,
			   struct bt_qemu_launch *l, struct btrace_error *err)
{
	char head[BT_SHEBANG_MAX + 1];
	char *path, *script = NULL;
	size_t n = 0;
	int rc;

	memset(l, 0, sizeof(*l));
	while (argv[n])
		n++;
	/* The kernel's argv at each step: INTERP [ARG] FILE ARGV[1..]. */
	l->argv = calloc(n + 2 * BT_SCRIPT_DEPTH + 2, sizeof(*l->argv));
	if (!l->argv || bt_push(l, strdup(found)))
		goto nomem;
	for (size_t i = 0; i < n; i++)
		l->argv[i] = argv[i];
	l->argc = n;
	path = l->strs[0];
	for (;;) {
		char *interp, *arg, *p;
		size_t add;

		rc = bt_read_head(path, head, sizeof(head));
		if (rc < 0) {
			if (!script)
				return bt_error(err, rc, "%s: run program "
						"failed: %s", path,
						strerror(-rc));
			bt_error(err, rc, "%s: run script failed: its "
				 "interpreter %s (from its #! line) %s", script,
				 path, rc == -ENOENT ? "does not exist" :
				 strerror(-rc));
			return bt_hint(err, "install the interpreter or "
				       "correct the script's #! line");
		}
		if (!rc)
			break;
		if (l->nscripts == BT_SCRIPT_DEPTH) {
			bt_error(err, -ELOOP, "%s: run script failed: more "
				 "than %d levels of #! interpreters (the "
				 "kernel's limit)", l->strs[0],
				 BT_SCRIPT_DEPTH);
			return bt_hint(err, "name a program, not a script, "
				       "as the interpreter");
		}
		if (!memchr(head, '\n', strlen(head)) &&
		    strlen(head) >= BT_SHEBANG_MAX) {
			/* The kernel takes at most this much of the line. */
			head[BT_SHEBANG_MAX] = 0;
		}
		if (bt_shebang_parse(head, &interp, &arg)) {
			bt_error(err, -ENOEXEC, "%s: run script failed: its "
				 "#! line names no interpreter", path);
			return bt_hint(err, "start the script's first line "
				       "with #!/path/to/interpreter");
		}
		script = path;
		/* The kernel opens the interpreter as named, relative to
		 * the working directory (never through PATH). */
		if (bt_push(l, strdup(interp)) ||
		    (arg && bt_push(l, strdup(arg))))
			goto nomem;
		add = arg ? 2 : 1;
		memmove(l->argv + add + 1, l->argv + 1,
			(l->argc - 1 + 1) * sizeof(*l->argv));
		p = l->strs[l->nstrs - add];
		l->argv[0] = p;
		if (arg)
			l->argv[1] = l->strs[l->nstrs - 1];
		l->argv[add] = script;
		l->argc += add;
		l->nscripts++;
		path = p;
		if (!strchr(path, '/')) {
			/* open_exec() of a bare name is relative to the
			 * cwd; our PATH search must not see it. */
			char *rel = malloc(strlen(path) + 3);

			if (!rel)
				goto nomem;
			sprintf(rel, "./%s", path);
			if (bt_push(l, rel))
				goto nomem;
			path = rel;
		}
	}
	snprintf(l->prog, sizeof(l->prog), "%s", path);
	return 0;
nomem:
	return bt_error(err, -ENOMEM, "%s: launch failed: out of memory",
			argv[0]);
}
