#!/bin/sh
# SPDX-License-Identifier: MIT
# Sysfs trees with garbage (through --sysfs-root and BTRACE_SYSFS_ROOT):
# `btrace doctor` must report (exit 0 or 1, valid JSON with --json) and
# `btrace record --backend pt` must fail with exit 1 and a message, never
# crash or run the program.  TAP.
#   sysfs.sh BTRACE SYSFS_DATA_DIR
set -u
btrace=$1 data=$2
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

pmu=bus/event_source/devices/intel_pt
mk() {  # mk NAME: a fresh copy of the skylake tree in $work/NAME
	cp -r "$data/skylake" "$work/$1"
	t="$work/$1"
}
mk type-garbage;     printf 'garbage\n' >"$t/$pmu/type"
mk type-empty;       : >"$t/$pmu/type"
mk type-negative;    printf -- '-8\n' >"$t/$pmu/type"
mk type-huge;        printf '99999999999999999999\n' >"$t/$pmu/type"
mk type-binary;      head -c 300 /dev/urandom >"$t/$pmu/type"
mk type-big;         head -c 1048576 /dev/zero | tr '\0' '8' >"$t/$pmu/type"
mk type-dir;         rm "$t/$pmu/type"; mkdir "$t/$pmu/type"
mk no-type;          rm "$t/$pmu/type"
mk pmu-file;         rm -r "$t/$pmu"; echo x >"$t/$pmu"
mk format-bits;      printf 'config:99\n' >"$t/$pmu/format/pt"
mk format-reversed;  printf 'config:17-14\n' >"$t/$pmu/format/mtc_period"
mk format-words;     printf 'bananas\n' >"$t/$pmu/format/tsc"
mk format-empty;     : >"$t/$pmu/format/branch"
mk format-config9;   printf 'config9:0-3\n' >"$t/$pmu/format/cyc"
mk format-overlap;   printf 'config:0-63\n' >"$t/$pmu/format/pt"
mk format-dir;       rm "$t/$pmu/format/pt"; mkdir "$t/$pmu/format/pt"
mk format-many;      for i in $(seq 1 80); do echo "config:$((i % 64))" >"$t/$pmu/format/f$i"; done
mk format-longname;  echo 'config:1' >"$t/$pmu/format/$(printf 'n%.0s' $(seq 1 200))"
mk format-file;      rm -r "$t/$pmu/format"; echo x >"$t/$pmu/format"
mk caps-garbage;     printf 'zz\n' >"$t/$pmu/caps/mtc_periods"
mk caps-huge;        printf 'ffffffffffffffffff\n' >"$t/$pmu/caps/psb_periods"
mk caps-zero;        for c in "$t/$pmu/caps/"*; do echo 0 >"$c"; done
mk caps-all;         for c in "$t/$pmu/caps/"*; do echo ffffffff >"$c"; done
mk caps-dir;         rm "$t/$pmu/caps/mtc"; mkdir "$t/$pmu/caps/mtc"
mk caps-none;        rm -r "$t/$pmu/caps"
mk caps-many;        for i in $(seq 1 80); do echo 1 >"$t/$pmu/caps/c$i"; done
mk ratio-garbage;    printf 'x:y\n' >"$t/$pmu/tsc_art_ratio"; printf 'lots\n' >"$t/$pmu/max_nonturbo_ratio"
mk filters-garbage;  printf -- '-7\n' >"$t/$pmu/nr_addr_filters"
mk online-garbage;   printf '3-1,x,,-\n' >"$t/devices/system/cpu/online"
mk online-huge;      printf '0-2147483646,0-2147483646\n' >"$t/devices/system/cpu/online"
mk online-empty;     : >"$t/devices/system/cpu/online"
mk meltdown-binary;  head -c 200 /dev/urandom >"$t/devices/system/cpu/vulnerabilities/meltdown"
mk symlink-loop;     rm "$t/$pmu/type"; ln -s type "$t/$pmu/type"
mk all-garbage;      find "$t" -type f | while read -r f; do head -c 64 /dev/urandom >"$f"; done
mkdir -p "$work/empty-root"

for root in "$work"/*; do
	name=$(basename "$root")
	run_cmd "$work/log" "$btrace" doctor --sysfs-root "$root"
	if sanitizer_said "$work/log" || [ $rc -gt 1 ]; then
		not_ok "$name: btrace doctor: exit $rc"; sed 's/^/#   /' "$work/log" | head -20
	else
		ok "$name: btrace doctor: exit $rc"
	fi
	run_cmd "$work/log" "$btrace" doctor --json --sysfs-root "$root"
	if sanitizer_said "$work/log" || [ $rc -gt 1 ]; then
		not_ok "$name: btrace doctor --json: exit $rc"; sed 's/^/#   /' "$work/log" | head -20
	elif ! "$btrace" doctor --json --sysfs-root "$root" 2>/dev/null |
			python3 -c 'import json,sys; json.load(sys.stdin)' 2>"$work/jerr"; then
		not_ok "$name: btrace doctor --json: not valid JSON: $(tail -1 "$work/jerr")"
	else
		ok "$name: btrace doctor --json: exit $rc, valid JSON"
	fi
	rm -f "$work/ran"
	BTRACE_SYSFS_ROOT=$root run_cmd "$work/log" "$btrace" record --backend pt \
		-o "$work/out.btrace" -- sh -c ": >'$work/ran'"
	if sanitizer_said "$work/log" || [ $rc -gt 128 ]; then
		not_ok "$name: btrace record --backend pt: exit $rc"; sed 's/^/#   /' "$work/log" | head -20
	elif [ $rc -ne 1 ] || [ -e "$work/ran" ]; then
		not_ok "$name: btrace record --backend pt: exit $rc, program ran: $([ -e "$work/ran" ] && echo yes || echo no)"
		sed 's/^/#   /' "$work/log" | head -5
	elif ! grep -q 'btrace record: ' "$work/log"; then
		not_ok "$name: btrace record --backend pt: exit 1 without a message"
	else
		ok "$name: btrace record --backend pt: exit 1: $(head -1 "$work/log")"
	fi
	rm -f "$work/out.btrace"
done
finish
