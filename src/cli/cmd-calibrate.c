/* SPDX-License-Identifier: MIT */
/* btrace calibrate: measure the post-fault pad with a known crasher. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <btrace/capture.h>
#include <btrace/record.h>
#include <btrace/snapshot.h>

#include "cli.h"

/* The hardware backend called @name (0: none) and back, from the table. */
static uint32_t hw_backend(const char *name)
{
	const struct btrace_backend_desc *d = btrace_backend_by_name(name);

	return d && (d->flags & BTRACE_BACKEND_F_HARDWARE) ? d->id : 0;
}

static const char *hw_name(uint32_t id)
{
	const struct btrace_backend_desc *d = btrace_backend_by_id(id);

	return d ? d->name : "pt";
}

static void help(void)
{
	printf(
"usage: btrace calibrate [--backend pt|bts] [--runs N] [--json]\n\n"
"Measure the pad: how many trace bytes are written after a fault before\n"
"tracing stops (kernel signal delivery and exit with kernel tracing, a\n"
"crash handler that re-raises).  A known crasher runs N times (5) as a\n"
"plain crash and with a handler; the worst case plus half is stored and used\n"
"by 'btrace record' when --pad is not given.  Needs Intel PT or BTS.\n\n"
"  -b, --backend NAME  pt or bts (default: the first available)\n"
"  --runs N            runs per case (5)\n"
"  --json              print the result as JSON\n"
"  --sysfs-root DIR    read PMUs from DIR instead of /sys\n"
"  -h, --help          this text\n");
	cli_help_end(stdout, "calibrate");
}

int cmd_calibrate(int argc, char **argv)
{
	enum { O_RUNS = 256, O_JSON, O_ROOT };
	static const struct option opts[] = {
		{ "backend", required_argument, NULL, 'b' },
		{ "runs", required_argument, NULL, O_RUNS },
		{ "json", no_argument, NULL, O_JSON },
		{ "sysfs-root", required_argument, NULL, O_ROOT },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct btrace_calibration cal = { .sz = sizeof(cal) };
	struct btrace_error err = { 0 };
	const char *root = NULL;
	uint32_t backend = 0;
	uint64_t runs = 5;
	bool json = false;
	int c;

	optind = 1;
	while ((c = getopt_long(argc, argv, ":b:h", opts, NULL)) != -1) {
		switch (c) {
		case 'b':
			backend = hw_backend(optarg);
			if (!backend) {
				const struct btrace_backend_desc *d;
				char names[256] = "";

				for (size_t i = 0; (d = btrace_backend_at(i)); i++)
					if (d->flags & BTRACE_BACKEND_F_HARDWARE)
						snprintf(names + strlen(names),
							 sizeof(names) - strlen(names),
							 "%s%s", names[0] ? ", " : "", d->name);
				return cli_usage("calibrate", "unknown backend '%s' (%s)",
						 optarg, names);
			}
			break;
		case O_RUNS:
			if (cli_parse_u64(optarg, &runs) || !runs || runs > 1000)
				return cli_usage("calibrate", "invalid --runs '%s'", optarg);
			break;
		case O_JSON:
			json = true;
			break;
		case O_ROOT:
			root = optarg;
			break;
		case 'h':
			help();
			return CLI_EXIT_OK;
		default:
			return cli_bad_option("calibrate", c, argv);
		}
	}
	if (optind != argc)
		return cli_usage("calibrate", "unexpected argument '%s'", argv[optind]);
	if ((!root || !*root) && getenv("BTRACE_SYSFS_ROOT"))
		root = getenv("BTRACE_SYSFS_ROOT");
	if (btrace_calibrate(backend, (unsigned)runs, root, &cal, &err) < 0)
		return cli_fail("calibrate", &err);
	if (json) {
		struct json j;

		json_init(&j, stdout, true);
		json_begin_object(&j, NULL);
		json_str(&j, "backend", hw_name(cal.backend));
		json_uint(&j, "runs", cal.runs);
		json_uint(&j, "pad_plain", cal.pad_plain);
		json_uint(&j, "pad_handler", cal.pad_handler);
		json_uint(&j, "pad_max", cal.pad_max);
		json_uint(&j, "recommended", cal.recommended);
		json_str(&j, "saved_to", cal.saved_to[0] ? cal.saved_to : NULL);
		json_end_object(&j);
		json_finish(&j);
	} else {
		printf("backend %s, %u runs per case\n",
		       hw_name(cal.backend), cal.runs);
		printf("bytes after the fault: plain crash %llu, handler re-raising %llu\n",
		       (unsigned long long)cal.pad_plain,
		       (unsigned long long)cal.pad_handler);
		printf("recommended --pad %llu%s%s\n",
		       (unsigned long long)cal.recommended,
		       cal.saved_to[0] ? " (saved to " : "",
		       cal.saved_to[0] ? cal.saved_to : "");
		if (cal.saved_to[0])
			printf(")\n");
	}
	return CLI_EXIT_OK;
}
