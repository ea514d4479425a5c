/* SPDX-License-Identifier: MIT */
/* btrace record: run a program (or attach) with a flight recorder. */
#include <getopt.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <btrace/record.h>

#include "cli-log.h"
#include "cli.h"

static void help(void)
{
	printf(
"usage: btrace record [--snapshot] [options] -- PROGRAM [ARGS...]\n"
"       btrace record [--snapshot] [options] -p PID\n\n"
"Run PROGRAM (or attach to PID) with a branch-trace flight recorder and\n"
"write a snapshot file when it dies of a fatal signal.  The program's\n"
"input, output, environment and exit status pass through unchanged; btrace\n"
"exits with the program's status (128+N when killed by signal N).\n\n"
"  --snapshot           flight-recorder mode: keep the last history, write\n"
"                       it on a crash (the default and only mode)\n"
"  -b, --backend NAME   auto (default), pt, bts or qemu; auto picks Intel PT,\n"
"                       then BTS, then QEMU, and says why\n"
"  --format pt|bts      trace format written by the qemu backend (pt)\n"
"  -o, --output FILE    snapshot file (default btrace-COMM-PID.btrace)\n"
"  --size SIZE          history kept per thread, as trace bytes (4M)\n"
"  --pad SIZE           extra room for what runs after the fault\n"
"  --on LIST            events that write a snapshot: signal names or\n"
"                       numbers, 'default' (SEGV,BUS,ILL,FPE,ABRT,TRAP,SYS)\n"
"                       and 'exit' (every exit); comma-separated\n"
"  -p, --pid PID        attach to a running process (hardware backends)\n"
"  --no-ptrace          passive crash watch (snapshot after death)\n"
"  --no-code            do not embed executable code in the snapshot\n"
"  --memory SIZE        at a crash, store up to SIZE bytes of the program's\n"
"                       data (globals, heap, libraries' data) besides the\n"
"                       stack (8M, at most 128M; 0: the stack alone)\n"
"  --accesses N         qemu backend: log each thread's last N memory\n"
"                       accesses (instruction, address, size, read or\n"
"                       write) and store the crashed thread's (64K, at\n"
"                       most 4M; 0: none)\n"
"  --keep-core          keep QEMU's guest core next to the snapshot\n"
"  -q, --quiet          no summary line\n"
"  -h, --help           this text\n\n"
"SIZE and N take K, M and G suffixes (binary units).\n");
	cli_help_end(stdout, "record");
}

static int parse_on(const char *list, uint64_t *out)
{
	char *copy = strdup(list), *save = NULL;
	uint64_t mask = 0;
	int ret = 0;

	if (!copy)
		return -1;
	for (char *t = strtok_r(copy, ",", &save); t;
	     t = strtok_r(NULL, ",", &save)) {
		uint64_t n;
		int sig;

		if (!strcasecmp(t, "exit")) {
			mask |= BTRACE_ON_EXIT;
			continue;
		}
		if (!strcasecmp(t, "default")) {
			mask |= BTRACE_ON_DEFAULT;
			continue;
		}
		if (!cli_parse_u64(t, &n)) {
			sig = n > 0 && n < 63 ? (int)n : -1;
		} else {
			const char *name = t;

			if (!strncasecmp(name, "SIG", 3))
				name += 3;
			sig = -1;
			for (int s = 1; s < 32; s++) {
				char a[16];

				if (btrace_signal_str(s, a, sizeof(a)) &&
				    !strcasecmp(a + 3, name)) {
					sig = s;
					break;
				}
			}
		}
		if (sig < 0 || sig == SIGKILL || sig == SIGSTOP) {
			ret = -1;
			break;
		}
		mask |= BTRACE_ON_SIGNAL(sig);
	}
	free(copy);
	*out = mask;
	return ret ? ret : (mask ? 0 : -1);
}

int cmd_record(int argc, char **argv)
{
	enum { O_SNAPSHOT = 256, O_FORMAT, O_SIZE, O_PAD, O_ON, O_NO_PTRACE,
	       O_NO_CODE, O_KEEP_CORE, O_MEMORY, O_ACCESSES };
	static const struct option opts[] = {
		{ "snapshot", no_argument, NULL, O_SNAPSHOT },
		{ "backend", required_argument, NULL, 'b' },
		{ "format", required_argument, NULL, O_FORMAT },
		{ "output", required_argument, NULL, 'o' },
		{ "size", required_argument, NULL, O_SIZE },
		{ "pad", required_argument, NULL, O_PAD },
		{ "on", required_argument, NULL, O_ON },
		{ "pid", required_argument, NULL, 'p' },
		{ "no-ptrace", no_argument, NULL, O_NO_PTRACE },
		{ "no-code", no_argument, NULL, O_NO_CODE },
		{ "memory", required_argument, NULL, O_MEMORY },
		{ "accesses", required_argument, NULL, O_ACCESSES },
		{ "keep-core", no_argument, NULL, O_KEEP_CORE },
		{ "quiet", no_argument, NULL, 'q' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct btrace_record_opts ro = { .sz = sizeof(ro),
					 .log = cli_log_stderr };
	const struct btrace_backend_desc *bd;
	struct btrace_record_result res = { .sz = sizeof(res),
					     .exit_status = -1 };
	struct btrace_error err = { 0 };
	uint64_t v;
	int c, ret;

	optind = 1;
	while ((c = getopt_long(argc, argv, "+:b:o:p:qh", opts, NULL)) != -1) {
		switch (c) {
		case O_SNAPSHOT:
			break;
		case 'b':
			if (!strcmp(optarg, "auto")) {
				ro.backend = BTRACE_BACKEND_UNKNOWN;
			} else if ((bd = btrace_backend_by_name(optarg))) {
				ro.backend = bd->id;
			} else {
				char names[256] = "auto";

				for (size_t i = 0; (bd = btrace_backend_at(i)); i++)
					snprintf(names + strlen(names),
						 sizeof(names) - strlen(names),
						 ", %s", bd->name);
				return cli_usage("record", "unknown backend "
						 "'%s' (%s)", optarg, names);
			}
			break;
		case O_FORMAT:
			if (!strcmp(optarg, "pt"))
				ro.trace_kind = BTRACE_TRACE_PT;
			else if (!strcmp(optarg, "bts"))
				ro.trace_kind = BTRACE_TRACE_BTS;
			else
				return cli_usage("record", "unknown format "
						 "'%s' (pt, bts)", optarg);
			break;
		case 'o':
			ro.output = optarg;
			break;
		case O_SIZE:
			if (cli_parse_size(optarg, &ro.size) || !ro.size)
				return cli_usage("record", "invalid --size "
						 "'%s'", optarg);
			break;
		case O_PAD:
			if (cli_parse_size(optarg, &ro.pad))
				return cli_usage("record", "invalid --pad "
						 "'%s'", optarg);
			break;
		case O_ON:
			if (parse_on(optarg, &ro.on))
				return cli_usage("record", "invalid --on '%s' "
						 "(signal names or numbers, "
						 "default, exit)", optarg);
			break;
		case 'p':
			if (cli_parse_u64(optarg, &v) || !v || v > 0x7fffffff)
				return cli_usage("record", "invalid pid '%s'",
						 optarg);
			ro.pid = (int)v;
			break;
		case O_NO_PTRACE:
			ro.flags |= BTRACE_RECORD_NO_PTRACE;
			break;
		case O_NO_CODE:
			ro.flags |= BTRACE_RECORD_NO_CODE;
			break;
		case O_MEMORY:
			if (cli_parse_size(optarg, &ro.memory) ||
			    ro.memory > BTRACE_MEMORY_MAX)
				return cli_usage("record", "invalid --memory "
						 "'%s' (a size up to 128M; 0: "
						 "the stack alone)", optarg);
			if (!ro.memory)
				ro.flags |= BTRACE_RECORD_NO_MEMORY;
			else
				ro.flags &= ~BTRACE_RECORD_NO_MEMORY;
			break;
		case O_ACCESSES:
			if (cli_parse_size(optarg, &ro.accesses) ||
			    ro.accesses > BTRACE_ACCESSES_MAX)
				return cli_usage("record", "invalid --accesses "
						 "'%s' (a number of records up "
						 "to 4M; 0: none)", optarg);
			if (!ro.accesses)
				ro.flags |= BTRACE_RECORD_NO_ACCESSES;
			else
				ro.flags &= ~BTRACE_RECORD_NO_ACCESSES;
			break;
		case O_KEEP_CORE:
			ro.flags |= BTRACE_RECORD_KEEP_CORE;
			break;
		case 'q':
			ro.flags |= BTRACE_RECORD_QUIET;
			break;
		case 'h':
			help();
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("record", c, argv);
		}
	}
	if (ro.pid && optind < argc)
		return cli_usage("record", "give either -p PID or a program, "
				 "not both");
	if (!ro.pid && optind >= argc)
		return cli_usage("record", "no program given (btrace record "
				 "-- PROGRAM [ARGS...])");
	if (!ro.pid)
		ro.argv = argv + optind;

	/* a recorded sysfs tree (tests); the library reads no environment */
	ro.sysfs_root = getenv("BTRACE_SYSFS_ROOT");
	/* before the program runs, not after its whole run */
	ret = cli_check_output("record", ro.output);
	if (ret)
		return ret;
	ret = btrace_record(&ro, &res, &err);
	if (ret) {
		cli_fail("record", &err);
		/* The program ran: its status passes through all the same. */
		return res.exit_status >= 0 ? res.shell_status : CLI_EXIT_FAIL;
	}
	return res.shell_status;
}
