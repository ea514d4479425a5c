#!/bin/sh
# SPDX-License-Identifier: MIT
# Decode speed on a trace that goes back and forth between a program and
# the C library (bench/libc-pingpong.c: qsort with the program's
# comparator, snprintf, strlen in a loop; recorded with the QEMU backend,
# 1 MiB ring), docs/performance.md "Decode speed":
#  1. `btrace decode --calls` vs `perf script --itrace=cr` and
#     `btrace decode --insn` vs `perf script --itrace=i0ns` on the same
#     trace (`btrace export --perf-data`), CPU of interleaved runs
#     (bench/interleave.py);
#  2. with BASE_BUILD: `btrace report` and `decode --calls` of a 17-thread
#     snapshot (16 threads more running the same loop) against that build;
#  3. with BENCH_CALLGRIND=1 (valgrind): the whole-buffer decode
#     (btrace_decode() as `report --full`, bench/decode-bench.c) against
#     libipt's pt_blk_next alone with a section cache over the same bytes,
#     in instructions, on a shorter recording.
# Usage: bench/decode-speed.sh [BUILD_DIR [BASE_BUILD_DIR]]
# Environment: BENCH_ROUNDS (interleaved rounds, default 3), BENCH_ITERS
# (loop iterations of the recorded program, default 20000).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
base=${2:-}
rounds=${BENCH_ROUNDS:-3}
iters=${BENCH_ITERS:-20000}
work=$(mktemp -d /tmp/btrace-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
il="python3 $top/bench/interleave.py"

ninja -C "$build" src/cli/btrace >/dev/null
command -v perf >/dev/null || { echo "perf is not installed"; exit 77; }
btrace=$build/src/cli/btrace
cc -O2 -g -pthread -o "$work/pingpong" "$top/bench/libc-pingpong.c"
rec() {  # rec OUT ARGS...: record the program until its crash
	out=$1; shift
	"$btrace" record -q --size 1M -o "$out" -- "$work/pingpong" "$@" \
		2>/dev/null || true
	[ -s "$out" ] || { echo "recording failed"; exit 1; }
}
rec "$work/pp.btrace" "$iters"
"$btrace" export -q -f "$work/pp.btrace" --perf-data "$work/pp.data" 2>/dev/null
nc=$("$btrace" decode --calls "$work/pp.btrace" | wc -l)
np=$(perf script -f --symfs "$work/pp.data.symfs" -i "$work/pp.data" --itrace=cr 2>/dev/null | wc -l)
echo "trace: $(stat -c %s "$work/pp.data") bytes of perf.data; call lines: btrace $nc, perf script $np"

ps="perf script -f --symfs $work/pp.data.symfs -i $work/pp.data"
$il "$rounds" 1 calls "$ps --itrace=cr" "$btrace decode --calls $work/pp.btrace"
$il "$rounds" 1 insn "$ps --itrace=i0ns" "$btrace decode --insn $work/pp.btrace"

if [ -n "$base" ]; then
	rec "$work/t17.btrace" $((iters / 6)) 16
	echo "17-thread snapshot: $(stat -c %s "$work/t17.btrace") bytes"
	$il "$rounds" 1 report17 "$base/src/cli/btrace report $work/t17.btrace" \
		"$btrace report $work/t17.btrace"
fi

[ "${BENCH_CALLGRIND:-0}" = 1 ] || exit 0
cc -O2 -I"$top/include" -o "$work/decode-bench" "$top/bench/decode-bench.c" \
	-L"$build/decoder" -L"$build/src" -lbtrace-decode -lbtrace -lipt \
	-Wl,-rpath,"$build/decoder:$build/src"
rec "$work/small.btrace" $((iters / 10))
cg() {  # cg FUNCTION MODE: instructions in FUNCTION
	BENCH_RUNS=1 valgrind --tool=callgrind --toggle-collect="$1" \
		--callgrind-out-file="$work/cg.out" "$work/decode-bench" "$2" \
		"$work/small.btrace" >/dev/null 2>&1
	callgrind_annotate "$work/cg.out" | awk '/PROGRAM TOTALS/ { gsub(",", "", $1); print $1 }'
}
raw=$(cg run_raw raw)
full=$(cg btrace_decode full)
echo "callgrind, whole buffer: btrace_decode() $full vs libipt pt_blk_next with a section cache $raw instructions"
echo "$raw $full" | awk '{ printf "  ratio %.3f (goal <= 1.05)\n", $2 / $1 }'
