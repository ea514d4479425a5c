/* SPDX-License-Identifier: MIT */
#include "cli.h"

int cmd_decode(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_failf("decode", NULL, "not implemented in this build");
}
