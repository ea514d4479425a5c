#!/bin/sh
# SPDX-License-Identifier: MIT
# Peak memory (max RSS, bench/measure.py) and time of `btrace report` on
# QEMU snapshots where a SIGSEGV handler ran a long path after the fault and
# the program then aborted (bench/handler-path-prog.c): the decoder keeps
# the history before the fault, the head and the end of the path after it
# and counts the rest (decoder/decode.c, "hold"; it kept the whole history
# before).  Baseline in the same run: the same path run
# before a plain crash (no handler), a buffer of about the same size.
# Issue #13 asks for at most 200 MB with default history sizes.
#   bench/report-handler-rss.sh [BUILD_DIR]
# Env: NS (handler iterations, "300000 1000000 1800000"), SIZE (--size, 4M).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
work=$(mktemp -d /tmp/btrace-hrss.XXXXXX)
trap 'rm -rf "$work"' EXIT
m="python3 $top/bench/measure.py -n 1"
btrace=$build/src/cli/btrace
cc -O1 -g -o "$work/prog" "$top/bench/handler-path-prog.c"
mkdir -m 0700 "$work/tmp"
printf '%-9s %-8s %10s %8s %12s\n' n case buffer time_s report_rss
for n in ${NS:-300000 1000000 1800000}; do
	for c in handler plain; do
		f=$work/$c-$n.btrace
		x=; [ $c = plain ] && x=x
		TMPDIR=$work/tmp "$btrace" record -b qemu --size "${SIZE:-4M}" \
			-o "$f" -- "$work/prog" "$n" $x >/dev/null 2>&1 || true
		buf=$("$btrace" info "$f" | awk '$3 == "buffer" { print $4 $5 }')
		r=$($m -- "$btrace" report "$f")
		printf '%-9s %-8s %10s %8s %10s K\n' "$n" "$c" "$buf" \
			"$(echo "$r" | cut -d' ' -f1)" "$(echo "$r" | cut -d' ' -f3)"
	done
done
