/* SPDX-License-Identifier: MIT */
#ifndef BT_QEMU_LAUNCH_H
#define BT_QEMU_LAUNCH_H

#include <limits.h>
#include <stddef.h>

#include <btrace/btrace.h>

/* What QEMU runs for a command line (qemu-launch.c). */
struct bt_qemu_launch {
	char prog[PATH_MAX];   /* the file QEMU loads (not a script) */
	char **argv;           /* the guest's argv, NULL-terminated */
	size_t argc;
	int nscripts;          /* "#!" levels resolved */
	char **strs;           /* owned strings */
	size_t nstrs;
};

/*
 * @argv as the kernel's execve() of @found (argv[0] found in PATH) would
 * run it: "#!" scripts through their interpreters, nested up to the
 * kernel's limit.  Fails with a message naming the script and the reason
 * (a missing interpreter, too deep a nesting, an empty #! line).
 */
int bt_qemu_launch_resolve(char *const *argv, const char *found,
			   struct bt_qemu_launch *l, struct btrace_error *err);
void bt_qemu_launch_free(struct bt_qemu_launch *l);

#endif
