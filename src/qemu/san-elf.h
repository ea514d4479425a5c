/* SPDX-License-Identifier: MIT */
#ifndef BT_QEMU_SAN_ELF_H
#define BT_QEMU_SAN_ELF_H

#include <stddef.h>

/* The sanitizer ("AddressSanitizer", ...) the library name @lib is the
 * runtime of, or NULL. */
const char *bt_san_of_lib(const char *lib);
/* The sanitizer the ELF file @path needs or defines, or NULL; @what says
 * how it tells ("it needs libasan.so.8"). */
const char *bt_elf_sanitizer(const char *path, char *what, size_t wlen);

#endif
