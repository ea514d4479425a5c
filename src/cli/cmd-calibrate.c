/* SPDX-License-Identifier: MIT */
#include "cli.h"

int cmd_calibrate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_failf("calibrate", NULL, "not implemented in this build");
}
