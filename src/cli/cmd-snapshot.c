/* SPDX-License-Identifier: MIT */
#include "cli.h"

int cmd_snapshot(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_failf("snapshot", NULL, "not implemented in this build");
}
