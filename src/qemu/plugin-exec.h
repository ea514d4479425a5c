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

/*
 * At the guest's execve(@path, @argv, @envp) (guest addresses): execve()
 * the emulator again, with this plugin, on the new program.  Returns only
 * when the program is to run natively or that failed; errno is kept.
 */
void bt_exec_reenter(uint64_t path, uint64_t argv, uint64_t envp);

#endif
