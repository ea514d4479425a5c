// SPDX-License-Identifier: MIT
/* Export test program: string functions (rep-prefixed and vector code in
 * libc, ifunc-resolved), a loop long enough to wrap a small trace ring,
 * then a fault through a bad function pointer. */
#include <stdio.h>
#include <string.h>

static char buf[4096], dst[4096];

int main(int argc, char **argv)
{
	unsigned long h = 0;
	void (*volatile bad)(void) = (void (*)(void))16;

	for (int r = 0; r < 60; r++) {
		memset(buf, 'a' + r % 26, sizeof(buf) - 1 - r);
		memcpy(dst, buf, sizeof(buf) - r);
		h = h * 31 + strlen(dst) + (unsigned long)strchr(dst, 'q');
	}
	snprintf(buf, sizeof(buf), "%lu %d", h, argc);
	if (strlen(buf) > 1)
		bad();
	return 0;
}
