/* SPDX-License-Identifier: MIT */
#ifndef BT_QEMU_PLUGIN_EXEC_H
#define BT_QEMU_PLUGIN_EXEC_H

#include <stdint.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Read guest memory without risking a fault (guest_base is 0: guest
 * addresses are the emulator's own). */
static inline ssize_t bt_peek(uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };

	return process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
}

/*
 * Whether the environment entry @e is for the guest alone: a variable of
 * the dynamic loader (LD_PRELOAD, LD_LIBRARY_PATH, LD_AUDIT, ...), which
 * the host's loader would otherwise apply to qemu-x86_64 itself (a
 * preloaded SIGSEGV handler or sanitizer runtime breaks the emulator).
 * Such entries reach the guest through QEMU's -E instead, which splits its
 * argument at commas: an entry with a comma stays in the emulator's own
 * environment, as before.
 */
static inline int bt_env_guest_only(const char *e)
{
	return !strncmp(e, "LD_", 3) && strchr(e, '=') && !strchr(e, ',');
}

/* The "#!" line in @head (NUL-terminated) as the kernel splits it: the
 * interpreter, and the rest (trimmed) as one optional argument.  Used by
 * the plugin at an execve() and by btrace at launch (qemu-launch.c). */
static inline int bt_shebang_parse(char *head, char **interp,
				   char **arg)
{
	char *p = head + 2, *e;

	e = memchr(p, '\n', strlen(p));
	if (e)
		*e = 0;
	while (*p == ' ' || *p == '\t')
		p++;
	if (!*p)
		return -1;
	*interp = p;
	while (*p && *p != ' ' && *p != '\t')
		p++;
	*arg = NULL;
	if (*p) {
		*p++ = 0;
		while (*p == ' ' || *p == '\t')
			p++;
		e = p + strlen(p);
		while (e > p && (e[-1] == ' ' || e[-1] == '\t'))
			*--e = 0;
		if (*p)
			*arg = p;
	}
	return 0;
}

/*
 * At the guest's execve(@path, @argv, @envp) (guest addresses): execve()
 * the emulator again, with this plugin, on the new program.  Returns only
 * when the program is to run natively or that failed; errno is kept.
 */
void bt_exec_reenter(uint64_t path, uint64_t argv, uint64_t envp);

#endif
