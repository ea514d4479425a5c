/* SPDX-License-Identifier: MIT */
/* btrace: the command-line front end.  `btrace <command> [options]`. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <ucontext.h>

#include <btrace/btrace.h>

#include "cli.h"

static const struct cli_command commands[] = {
	{ "record", "run a program (or attach) with a flight recorder", cmd_record },
	{ "snapshot", "take a snapshot of a running recording", cmd_snapshot },
	{ "report", "explain a crash from a snapshot", cmd_report },
	{ "decode", "print the recovered path (instructions, blocks, calls)", cmd_decode },
	{ "info", "show what a snapshot file holds", cmd_info },
	{ "export", "convert a snapshot for other tools (perf.data, a timeline)", cmd_export },
	{ "view", "write an HTML page: the timeline of all threads, the report", cmd_view },
	{ "doctor", "what this machine supports, and why not", cmd_doctor },
	{ "calibrate", "measure the trace written after a fault (pad)", cmd_calibrate },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: btrace <command> [options] [args]\n"
		   "       btrace --version [--verbose] | --help\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\noptions:\n"
		   "  -V, --version        print the version\n"
		   "  -v, --verbose        with --version: the versions of libipt,\n"
		   "                       libdw, capstone, zstd and QEMU, the backends\n"
		   "  -h, --help           this text\n"
		   "\nSee 'btrace <command> --help' or man btrace-<command>.\n"
		   "The manual page: man btrace\n");
}

/* SIGXFSZ (ulimit -f): the write fails with EFBIG and btrace says so,
 * instead of dying.  A handler, not SIG_IGN, so that the programs btrace
 * runs get the default action back at execve(). */
static void on_xfsz(int sig)
{
	(void)sig;
}

static struct {
	const struct cli_command *cmd;
	int argc, rc;
	char **argv;
	ucontext_t main_ctx, run_ctx;
} job;

static void run_job(void)
{
	job.rc = job.cmd->run(job.argc, job.argv);
}

/*
 * Run a command.  Under a small stack limit (ulimit -s below 1 MiB) it runs
 * on a stack of its own (8 MiB, with a guard page), so that btrace works
 * whatever limit the traced program is given (the program still gets it).
 */
static int run(const struct cli_command *c, int argc, char **argv)
{
	const size_t size = 8u << 20, guard = 64u << 10;
	struct rlimit rl;
	char *base;

	if (getrlimit(RLIMIT_STACK, &rl) < 0 || rl.rlim_cur == RLIM_INFINITY ||
	    rl.rlim_cur >= (1u << 20))
		return c->run(argc, argv);
	base = mmap(NULL, size + guard, PROT_READ | PROT_WRITE,
		    MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
	if (base == MAP_FAILED || mprotect(base, guard, PROT_NONE) < 0 ||
	    getcontext(&job.run_ctx) < 0)
		return c->run(argc, argv);
	job.cmd = c;
	job.argc = argc;
	job.argv = argv;
	job.run_ctx.uc_stack.ss_sp = base + guard;
	job.run_ctx.uc_stack.ss_size = size;
	job.run_ctx.uc_link = &job.main_ctx;
	makecontext(&job.run_ctx, run_job, 0);
	if (swapcontext(&job.main_ctx, &job.run_ctx) < 0)
		return c->run(argc, argv);
	return job.rc;
}

/* btrace --version [--verbose], in either order. */
static int global_options(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "version", no_argument, NULL, 'V' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	bool version = false, verbose = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+:Vvh", opts, NULL)) != -1) {
		switch (c) {
		case 'V': version = true; break;
		case 'v': verbose = true; break;
		case 'h': usage(stdout); return CLI_EXIT_OK;
		default:
			fprintf(stderr, "btrace: unknown option '%s'\n", cli_esc(argv[optind - 1]));
			usage(stderr);
			return CLI_EXIT_USAGE;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "btrace: options come before the command: "
			"btrace %s [options]\n", cli_esc(argv[optind]));
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!version) {
		fprintf(stderr, "btrace: --verbose goes with --version\n");
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	return cli_version(verbose);
}

int main(int argc, char **argv)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_xfsz;
	sigaction(SIGXFSZ, &sa, NULL);
	opterr = 0;  /* each command says what is wrong, in its own format */
	if (argc < 2) {
		usage(stderr);
		return CLI_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return CLI_EXIT_OK;
	}
	if (argv[1][0] == '-')
		return global_options(argc, argv);
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return run(&commands[i], argc - 1, argv + 1);
	fprintf(stderr, "btrace: '%s' is not a btrace command\n", argv[1]);
	usage(stderr);
	return CLI_EXIT_USAGE;
}
