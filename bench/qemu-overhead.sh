#!/bin/sh
# Cost of `btrace record --backend qemu` over plain `qemu-x86_64`, both run
# the same way in the same rounds (docs/performance.md, "QEMU backend"):
#   1. bench/branchy.c   (xorshift, branchy classify(), indirect call
#                         through a table, data-dependent if)   target <= 1.4x
#   2. bench/pyload.py   under /usr/bin/python3 (json, re, genexpr, fib)
#                                                               target <= 1.6x
# The commands are interleaved: every round runs each command RUNS times,
# the order rotated from round to round, so a load that drifts on a shared
# machine hits the baseline and btrace alike.  Each run's CPU time is
# user+sys of the whole process tree (getrusage of the waited child, which
# counts the emulator under btrace), disturbed less by other jobs than wall
# time.  Figures: the median over all runs of wall and CPU time, each as a
# ratio to the baseline's median, and "per-round": the median (and range)
# of the CPU ratio taken within each round.
#
# Usage: bench/qemu-overhead.sh [BUILD_DIR]   (default: build)
# Env:   ROUNDS (5), RUNS per round and command (2), N (C iterations,
#        40000000), SCALE (pyload rounds, 3), PYTHON (/usr/bin/python3),
#        QEMU (qemu-x86_64), BEFORE (another build directory: its btrace
#        runs as one more command of the same rounds, for before/after
#        figures from one run).
# Time: the third command of each bench is btrace without clock samples
# (BTRACE_QEMU_TIME=0), so the cost of time is the second row's ratio over
# the third's, from the same rounds; at the end, the trace and snapshot
# sizes of one branchy run recorded with --on exit, with and without time.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
rounds=${ROUNDS:-5}
runs=${RUNS:-2}
n=${N:-40000000}
scale=${SCALE:-3}
py=${PYTHON:-/usr/bin/python3}
qemu=${QEMU:-qemu-x86_64}
before=${BEFORE:-}
work=$(mktemp -d /tmp/btrace-qbench.XXXXXX)
trap 'rm -rf "$work"' EXIT

ninja -C "$build" src/cli/btrace src/qemu/libbtrace-qemu.so >/dev/null ||
	echo "warning: build failed; using the binaries in $build" >&2
cc -O2 -g -o "$work/branchy" "$top/bench/branchy.c"
btrace="$build/src/cli/btrace record -b qemu -q -o $work/snap.btrace --"
btrace_notime="env BTRACE_QEMU_TIME=0 $build/src/cli/btrace record -b qemu -q -o $work/snapnt.btrace --"
btrace_before=
if [ -n "$before" ]; then
	before=$(cd "$before" && pwd)
	btrace_before="$before/src/cli/btrace record -b qemu -q -o $work/snap0.btrace --"
fi

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), Linux $(uname -r)"
echo "qemu:    $($qemu --version | head -1)"
echo "rounds:  $rounds x $runs runs per command, interleaved"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (start)"

# bench NAME CMD...: interleaved rounds over CMDs, the first is the baseline
# (bench/interleave.py)
bench() {
	name=$1
	shift
	"$py" "$top/bench/interleave.py" "$rounds" "$runs" "$name" "$@"
}

bench branchy \
	"$qemu $work/branchy $n" \
	"$btrace $work/branchy $n" \
	"$btrace_notime $work/branchy $n" \
	"${btrace_before:+$btrace_before $work/branchy $n}" \
	"$qemu -cpu max $work/branchy $n" \
	"$work/branchy $n"

bench pyload \
	"$qemu $py $top/bench/pyload.py $scale" \
	"$btrace $py $top/bench/pyload.py $scale" \
	"$btrace_notime $py $top/bench/pyload.py $scale" \
	"${btrace_before:+$btrace_before $py $top/bench/pyload.py $scale}" \
	"$qemu -cpu max $py $top/bench/pyload.py $scale" \
	"$py $top/bench/pyload.py $scale"
# Size: one run of branchy (SIZE_N iterations, default 200000: the 4 MiB
# ring does not wrap) kept whole with --on exit, with and without time.
sn=${SIZE_N:-200000}
echo
echo "size (branchy $sn iterations, --on exit):"
for t in 256 64 0; do
	rm -f "$work/size.btrace"
	kept=$(BTRACE_QEMU_TIME=$t "$build/src/cli/btrace" record -b qemu \
		--on exit -o "$work/size.btrace" -- "$work/branchy" "$sn" 2>&1 >/dev/null |
		sed -n 's/.* \([0-9.]* [KMG]*i*B\) of trace kept.*/\1/p')
	echo "  BTRACE_QEMU_TIME=$t: trace kept $kept, snapshot $(stat -c %s "$work/size.btrace") bytes"
done
echo
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (end)"
echo "(first row: baseline; then btrace record -b qemu, the same without time${before:+, then $before};"
echo " the same qemu with -cpu max; native.  x = ratio to the baseline.)"
