/* SPDX-License-Identifier: MIT */
/*
 * bt-gen-fixture: write a synthetic .btrace from a real program.
 *   bt-gen-fixture [-b] [-r] [-T] [-p PSB] [-w RING] [-O FROM:TO] [-n] [-R] [-F] [-K SIZE] [-D SIZE] [-A]
 *                  -o OUT -- PROG [ARGS...]
 * -b BTS, -r return compression, -T TNT-64, -p PSB period, -w ring size,
 * -O overflow over truth[FROM, TO), -n no embedded code, -R no registers,
 * -S SYM:COUNT replay the loop between arrivals at SYM COUNT more times,
 * -F record the first signal's siginfo (a re-raised fault, as QEMU does),
 * -Q label it QEMU's and place faults at their block's start as QEMU does,
 * -E no trace in the buffer, -M KEY=VALUE metadata (up to 4),
 * -K SIZE store up to SIZE bytes of the stack at the fatal signal,
 * -D SIZE store up to SIZE bytes of the process's other memory at it (the
 *         recorders' rule: bt_snap_data_select(), src/snapbuild.h),
 * -A an access log of the last instructions' memory accesses, computed
 *    from the true registers (gen_opts.accesses).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "gen.h"

int main(int argc, char **argv)
{
	struct gen_opts o = { 0 };
	struct gen_truth t;
	char eb[512];
	int c;

	while ((c = getopt(argc, argv, "brTp:w:O:nRFQEM:o:S:K:D:A")) != -1) {
		switch (c) {
		case 'b': o.bts = 1; break;
		case 'r': o.retcomp = 1; break;
		case 'T': o.tnt64 = 1; break;
		case 'p': o.psb_period = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'w': o.ring_size = strtoull(optarg, NULL, 0); break;
		case 'O':
			o.ovf_from = strtoull(optarg, NULL, 0);
			o.ovf_to = strtoull(strchr(optarg, ':') ? strchr(optarg, ':') + 1 : "0", NULL, 0);
			break;
		case 'n': o.no_code = 1; break;
		case 'K': o.stack = strtoull(optarg, NULL, 0); break;
		case 'D': o.memory = strtoull(optarg, NULL, 0); break;
		case 'A': o.accesses = o.regs = 1; break;
		case 'R': o.no_regs = 1; break;
		case 'F': o.first_siginfo = 1; break;
		case 'Q': o.qemu = 1; break;
		case 'E': o.empty_trace = 1; break;
		case 'M':
			for (int i = 0; i < 4; i++)
				if (!o.meta[i]) {
					o.meta[i] = optarg;
					break;
				}
			break;
		case 'o': o.out = optarg; break;
		case 'S': {
			/* -S SYMBOL:COUNT: replay a steady-state loop COUNT times */
			char *colon = strchr(optarg, ':');
			if (!colon)
				return 2;
			*colon = 0;
			o.repeat_sym = optarg;
			o.repeat = strtoull(colon + 1, NULL, 0);
			break;
		}
		default:
			fprintf(stderr, "usage: bt-gen-fixture [-b] [-r] [-T] [-p PSB] [-w RING] [-O A:B] [-n] [-R] [-F] [-K SIZE] [-D SIZE] [-Q] [-E] [-M K=V] -o OUT -- PROG [ARGS]\n");
			return 2;
		}
	}
	if (!o.out || optind >= argc) {
		fprintf(stderr, "bt-gen-fixture: -o OUT and a program are required\n");
		return 2;
	}
	o.argv = argv + optind;
	if (gen_run(&o, &t, eb, sizeof(eb))) {
		fprintf(stderr, "bt-gen-fixture: %s\n", eb);
		return 1;
	}
	printf("%llu instructions, fault at 0x%llx", (unsigned long long)t.n,
	       (unsigned long long)t.fault_ip);
	if (t.handler_fault)
		printf(", first fault at 0x%llx", (unsigned long long)t.handler_fault);
	printf("\n");
	gen_truth_free(&t);
	return 0;
}
