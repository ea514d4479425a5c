/* SPDX-License-Identifier: MIT */
/* btrace export: convert a snapshot for other tools. */
#include <string.h>

#include "cli.h"

int cmd_export(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "--help")) {
		printf("usage: btrace export FILE --perf-data OUT\n\n"
		       "Write a perf.data file that perf script and perf "
		       "report decode with\nperf's own Intel PT decoder.\n");
		return CLI_EXIT_OK;
	}
	return cli_failf("export", "this build of btrace has no exporter yet",
			 "perf.data export: not available");
}
