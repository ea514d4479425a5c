/* SPDX-License-Identifier: MIT */
/* btrace snapshot PID: an on-demand snapshot of a running recording. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <btrace/capture.h>

#include "cli.h"

static void help(void)
{
	printf(
"usage: btrace snapshot [-o FILE] PID\n\n"
"Ask the btrace process that records PID (btrace record) for a snapshot now:\n"
"the trace events are disabled while the buffers are copied, then enabled\n"
"again, and the program keeps running.\n\n"
"  -o, --output FILE   snapshot file (default btrace-PID-snapshot.btrace)\n"
"  -h, --help          this text\n");
	cli_help_end(stdout, "snapshot");
}

int cmd_snapshot(int argc, char **argv)
{
		static const struct option opts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct btrace_error err = { 0 };
	const char *out = NULL;
	char def[64];
	uint64_t pid;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":o:h", opts, NULL)) != -1) {
		switch (c) {
		case 'o':
			out = optarg;
			break;
		case 'h':
			help();
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("snapshot", c, argv);
		}
	}
	if (optind != argc - 1)
		return cli_usage("snapshot", "give exactly one PID");
	if (cli_parse_u64(argv[optind], &pid) || !pid || pid > 0x7fffffff)
		return cli_usage("snapshot", "invalid pid '%s'", argv[optind]);
	if (!out) {
		snprintf(def, sizeof(def), "btrace-%llu-snapshot.btrace",
			 (unsigned long long)pid);
		out = def;
	}
	c = cli_check_output("snapshot", out);
	if (c)
		return c;
	if (btrace_snapshot_request((int)pid, out, &err) < 0) {
		char proc[64];

		/* Nobody records it: the registry's hint (attach with -p)
		 * works only with Intel PT or BTS; say what works anywhere. */
		snprintf(proc, sizeof(proc), "/proc/%llu",
			 (unsigned long long)pid);
		if (err.code == -ESRCH && access(proc, F_OK) == 0)
			snprintf(err.hint, sizeof(err.hint), "%s",
				 "only a process btrace records has a "
				 "snapshot: start it with 'btrace record -- "
				 "PROGRAM' (any backend), or attach with "
				 "'btrace record -p PID' (Intel PT or BTS "
				 "only)");
		return cli_fail("snapshot", &err);
	}
	fprintf(stderr, "btrace snapshot: written to %s\n", out);
	return CLI_EXIT_OK;
}
