#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshot latency, from the traced program's death to the file in place
# (docs/performance.md, "Snapshot latency").  QEMU backend: btrace's host
# side prints, with BTRACE_QEMU_TIMING=1, the time from waitpid()/pidfd
# reporting the death to the rename of the snapshot (reading the rings,
# encoding, the guest core, writing, fsync, rename).  Baseline in the same
# run: writing a file of the snapshot's size to the same directory with
# fsync (dd conv=fsync), i.e. what the disk alone costs.
#   bench/snapshot-latency.sh [BUILD_DIR]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
work=$(mktemp -d "${BENCH_DIR:-/tmp}/btrace-bench.XXXXXX")
trap 'rm -rf "$work"' EXIT

ninja -C "$build" tests/decode/fx-crash-loop src/cli/btrace >/dev/null
prog=$build/tests/decode/fx-crash-loop
printf '%-10s %-8s %12s %12s %12s %8s\n' loops size trace snapshot latency ratio
for spec in 100000:4M 1000000:4M 4000000:16M 4000000:64M; do
	loops=${spec%%:*} size=${spec#*:}
	best=
	for run in 1 2 3; do
		rm -f "$work/s.btrace"
		BTRACE_QEMU_TIMING=1 "$build/src/cli/btrace" record -b qemu \
			--size "$size" -o "$work/s.btrace" -- "$prog" "$loops" \
			>/dev/null 2>"$work/err" || true
		# messages are wrapped at 80 columns: join the lines first
		ms=$(sed -e ':a' -e 'N' -e '$!ba' -e 's/\n  / /g' "$work/err" |
			sed -n 's/.*written \([0-9.]*\) ms after its death.*/\1/p')
		[ -n "$ms" ] || { cat "$work/err"; exit 1; }
		best=$(echo "$ms ${best:-$ms}" | awk '{ print ($1 < $2) ? $1 : $2 }')
	done
	bytes=$(stat -c %s "$work/s.btrace")
	# (the line wraps at 80 columns: joined first)
	trace=$(tr '\n' ' ' <"$work/err" | tr -s ' ' |
		sed -n 's/.*, \([0-9.]* [KMG]*i*B\) of trace kept.*/\1/p')
	# Baseline: the same number of bytes written and fsynced.
	base=999999
	for run in 1 2 3; do
		s=$(date +%s%N)
		dd if="$work/s.btrace" of="$work/copy" bs=1M conv=fsync 2>/dev/null
		e=$(date +%s%N)
		base=$(echo "$s $e $base" | awk '{ d = ($2 - $1) / 1e6; print (d < $3) ? d : $3 }')
		rm -f "$work/copy"
	done
	printf '%-10s %-8s %12s %12s %9s ms %7.1fx  (write+fsync baseline %.1f ms)\n' \
		"$loops" "$size" "$trace" "$bytes" "$best" \
		"$(echo "$best $base" | awk '{ print $1 / $2 }')" "$base"
done
