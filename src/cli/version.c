/* SPDX-License-Identifier: MIT */
/* btrace --version [--verbose]: the version, and with --verbose the
 * versions of the libraries in use and of QEMU, and the backends. */
#include <stdlib.h>

#include <capstone/capstone.h>
#include <elfutils/libdwfl.h>
#include <intel-pt.h>
#include <zstd.h>

#include <btrace/capture.h>

#include "cli.h"

int cli_version(bool verbose)
{
	struct pt_version pv = pt_library_version();
	struct btrace_error err = { 0 };
	char emu[4096], qv[64];
	int csmaj = 0, csmin = 0;
	const char *dw = dwfl_version(NULL);

	printf("btrace %s\n", btrace_version());
	if (!verbose)
		return CLI_EXIT_OK;
	cs_version(&csmaj, &csmin);
	printf("libipt:    %u.%u.%u\n", pv.major, pv.minor, pv.patch);
	printf("libdw:     %s\n", dw ? dw : "unknown");
	printf("capstone:  %d.%d\n", csmaj, csmin);
	printf("zstd:      %s\n", ZSTD_versionString());
	btrace_qemu_emulator(emu, sizeof(emu), qv, sizeof(qv), &err);
	if (!emu[0]) {
		printf("QEMU:      not found (%s)\n", getenv("BTRACE_QEMU") &&
		       *getenv("BTRACE_QEMU") ? "BTRACE_QEMU" : "qemu-x86_64 in PATH");
	} else {
		printf("QEMU:      %s (%s)\n", qv[0] ? qv : "version unknown",
		       cli_esc(emu));
	}
	printf("backends:  pt, bts (perf_event_open), qemu (TCG plugin)\n"
	       "           'btrace doctor' says which of them work here\n");
	return CLI_EXIT_OK;
}
