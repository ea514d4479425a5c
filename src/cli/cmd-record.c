/* SPDX-License-Identifier: MIT */
#include "cli.h"

int cmd_record(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_failf("record", NULL, "not implemented in this build");
}
