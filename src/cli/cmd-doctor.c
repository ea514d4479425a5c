/* SPDX-License-Identifier: MIT */
#include "cli.h"

int cmd_doctor(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	return cli_failf("doctor", NULL, "not implemented in this build");
}
