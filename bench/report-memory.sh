#!/bin/sh
# SPDX-License-Identifier: MIT
# Peak memory (max RSS, getrusage of the child) of `btrace report` against
# the PT buffer size: 1, 4, 16 and 64 MiB wrapped rings of the same program
# (tests/decode's bt-gen-fixture, the loop replayed until every ring is
# full).  Baselines in the same run: `btrace info` of the same file (reading
# the snapshot, no decode) and the 1 MiB report.  Also `report --full`.
# (docs/performance.md, "Peak memory of btrace report")
#   bench/report-memory.sh [BUILD_DIR]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
work=$(mktemp -d /tmp/btrace-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
m="python3 $top/bench/measure.py -n 1"

ninja -C "$build" tests/decode/bt-gen-fixture tests/decode/fx-crash-loop \
	src/cli/btrace >/dev/null
btrace=$build/src/cli/btrace
printf '%-6s %10s %10s %12s %10s %12s %10s %10s\n' ring file info_rss report_rss rss/ring \
	vs_1MiB full_rss full/ring
base1=
for mib in 1 4 16 64; do
	f=$work/r$mib.btrace
	"$build/tests/decode/bt-gen-fixture" -p 4096 -w $((mib << 20)) \
		-S step:24000000 -o "$f" -- "$build/tests/decode/fx-crash-loop" 40 >/dev/null
	info=$($m -- "$btrace" info "$f" | cut -d' ' -f3)
	rep=$($m -- "$btrace" report "$f" | cut -d' ' -f3)
	full=$($m -- "$btrace" report --full "$f" | cut -d' ' -f3)
	base1=${base1:-$rep}
	printf '%-6s %10s %8s K %10s K %10.2f %11.2fx %8s K %10.2f\n' "${mib}M" \
		"$(stat -c %s "$f")" "$info" "$rep" \
		"$(echo "$rep $mib" | awk '{ print $1 / ($2 * 1024) }')" \
		"$(echo "$rep $base1" | awk '{ print $1 / $2 }')" "$full" \
		"$(echo "$full $mib" | awk '{ print $1 / ($2 * 1024) }')"
done
