/* SPDX-License-Identifier: MIT */
#include "cli.h"

int cmd_report(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_failf("report", NULL, "not implemented in this build");
}
