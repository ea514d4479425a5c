/* SPDX-License-Identifier: MIT */
/* btrace: the command-line front end.  `btrace <command> [options]`. */
#include <stdio.h>
#include <string.h>

#include <btrace/btrace.h>

#include "cli.h"

static const struct cli_command commands[] = {
	{ "record", "run a program (or attach) with a flight recorder", cmd_record },
	{ "snapshot", "take a snapshot of a running recording", cmd_snapshot },
	{ "report", "explain a crash from a snapshot", cmd_report },
	{ "decode", "print the recovered path (instructions, blocks, calls)", cmd_decode },
	{ "info", "show what a snapshot file holds", cmd_info },
	{ "export", "convert a snapshot for other tools (perf.data)", cmd_export },
	{ "doctor", "what this machine supports, and why not", cmd_doctor },
	{ "calibrate", "measure the trace written after a fault (pad)", cmd_calibrate },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: btrace <command> [options] [args]\n"
		   "       btrace --version | --help\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\nSee 'btrace <command> --help' or man btrace-<command>.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V")) {
		printf("btrace %s\n", btrace_version());
		return CLI_EXIT_OK;
	}
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].run(argc - 1, argv + 1);
	fprintf(stderr, "btrace: '%s' is not a btrace command\n", argv[1]);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
