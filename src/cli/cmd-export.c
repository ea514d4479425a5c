/* SPDX-License-Identifier: MIT */
#include "cli.h"

int cmd_export(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_failf("export", NULL, "not implemented in this build");
}
