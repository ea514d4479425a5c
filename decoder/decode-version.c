/* SPDX-License-Identifier: MIT */
/* Placeholder translation unit until the decoder lands. */
#include <intel-pt.h>
int bt_decode_libipt_major(void);
int bt_decode_libipt_major(void)
{
	return pt_library_version().major;
}
