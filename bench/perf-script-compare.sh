#!/bin/sh
# SPDX-License-Identifier: MIT
# `btrace decode --insn` against `perf script --itrace=i0ns` on the same
# trace (docs/performance.md, "Instruction listing against perf script").
# The trace: a real program single-stepped by tests/decode's bt-gen-fixture
# (its loop replayed), exported with `btrace export` for perf.  Both list
# every instruction; both write to /dev/null.  Goal: btrace 10x faster.
#   bench/perf-script-compare.sh [BUILD_DIR] [LOOP_REPEATS]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
reps=${2:-50000}
work=$(mktemp -d /tmp/btrace-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
m="python3 $top/bench/measure.py"

ninja -C "$build" tests/decode/bt-gen-fixture tests/decode/fx-crash-loop \
	src/cli/btrace >/dev/null
command -v perf >/dev/null || { echo "perf is not installed"; exit 77; }
btrace=$build/src/cli/btrace
"$build/tests/decode/bt-gen-fixture" -p 4096 -S step:$reps -o "$work/s.btrace" -- \
	"$build/tests/decode/fx-crash-loop" 40 >"$work/gen.txt"
"$btrace" export -q -f "$work/s.btrace" --perf-data "$work/s.data" 2>/dev/null
ninsn=$(cut -d' ' -f1 "$work/gen.txt")
pt=$(stat -c %s "$work/s.data")
echo "trace: $ninsn instructions, perf.data $pt bytes"

# Instruction counts first: both must list the same path.
nb=$("$btrace" decode --insn "$work/s.btrace" | grep -c '^  0x' || true)
np=$(perf script -f --symfs "$work/s.data.symfs" -i "$work/s.data" --itrace=i0ns 2>/dev/null | wc -l)
echo "instructions listed: btrace $nb, perf script $np"

b=$($m -n 3 -- "$btrace" decode --insn "$work/s.btrace")
b2=$($m -n 3 -- "$btrace" decode --insn --no-disk "$work/s.btrace")
p=$($m -n 3 -- perf script -f --symfs "$work/s.data.symfs" -i "$work/s.data" --itrace=i0ns)
echo "btrace decode --insn:           wall/cpu/maxrss $b"
echo "btrace decode --insn --no-disk: wall/cpu/maxrss $b2"
echo "perf script --itrace=i0ns:      wall/cpu/maxrss $p"
echo "$b $b2 $p" | awk '{
	printf "speed-up (perf / btrace): wall %.2fx, cpu %.2fx; --no-disk: wall %.2fx, cpu %.2fx (goal 10x)\n",
		$7 / $1, $8 / $2, $7 / $4, $8 / $5
	printf "per instruction: btrace %.0f ns, perf %.0f ns (wall)\n", $1 * 1e9 / '"$ninsn"', $7 * 1e9 / '"$ninsn"' }'
