/* SPDX-License-Identifier: MIT */
#ifndef BT_QEMU_PLUGIN_EXEC_H
#define BT_QEMU_PLUGIN_EXEC_H

#include <stdint.h>

/*
 * At the guest's execve(@path, @argv, @envp) (guest addresses): execve()
 * the emulator again, with this plugin, on the new program.  Returns only
 * when the program is to run natively or that failed; errno is kept.
 */
void bt_exec_reenter(uint64_t path, uint64_t argv, uint64_t envp);

#endif
