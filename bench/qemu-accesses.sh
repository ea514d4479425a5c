#!/bin/sh
# Cost of the QEMU backend's access log (btrace record --accesses N,
# docs/performance.md, "QEMU backend: the cost of the access log"): the
# same program recorded with --accesses 0 (no log: the baseline), the
# default (64K records per thread) and 1M, and run by plain qemu-x86_64,
# in the same interleaved rounds (bench/interleave.py):
#   1. bench/branchy.c   (xorshift, branchy classify(), indirect call:
#                         few memory accesses per block)
#   2. bench/pyload.py   under /usr/bin/python3 (json, re, genexpr, fib:
#                         CPython, an access every two or three
#                         instructions)
#   3. bench/memwalk.c   (a loop of loads and stores over a 4 MiB array:
#                         the worst case, nearly every instruction an access)
# The figure is each command's CPU time over the first's (--accesses 0),
# as the median of all runs and within each round.
#
# Usage: bench/qemu-accesses.sh [BUILD_DIR]   (default: build)
# Env:   ROUNDS (4), RUNS per round and command (2), N (branchy iterations,
#        20000000), SCALE (pyload rounds, 2), M (memwalk passes, 200),
#        PYTHON (/usr/bin/python3), QEMU (qemu-x86_64).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
rounds=${ROUNDS:-4}
runs=${RUNS:-2}
n=${N:-20000000}
scale=${SCALE:-2}
m=${M:-200}
py=${PYTHON:-/usr/bin/python3}
qemu=${QEMU:-qemu-x86_64}
work=$(mktemp -d /tmp/btrace-qacc.XXXXXX)
trap 'rm -rf "$work"' EXIT

ninja -C "$build" src/cli/btrace src/qemu/libbtrace-qemu.so >/dev/null ||
	echo "warning: build failed; using the binaries in $build" >&2
cc -O2 -g -o "$work/branchy" "$top/bench/branchy.c"
cc -O2 -g -o "$work/memwalk" "$top/bench/memwalk.c"
rec="$build/src/cli/btrace record -b qemu -q"

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), Linux $(uname -r)"
echo "qemu:    $($qemu --version | head -1)"
echo "rounds:  $rounds x $runs runs per command, interleaved"
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (start)"

# bench NAME PROGRAM...: the four commands on PROGRAM
bench() {
	name=$1
	shift
	"$py" "$top/bench/interleave.py" "$rounds" "$runs" "$name" \
		"$rec --accesses 0 -o $work/a0.btrace -- $*" \
		"$rec -o $work/adef.btrace -- $*" \
		"$rec --accesses 1M -o $work/a1m.btrace -- $*" \
		"$qemu $*"
}

bench "branchy ($n iterations)" "$work/branchy" "$n"
bench "pyload (scale $scale)" "$py" "$top/bench/pyload.py" "$scale"
bench "memwalk ($m passes)" "$work/memwalk" "$m"
echo
echo "load:    $(cut -d' ' -f1-3 /proc/loadavg) (end)"
echo "(rows: btrace record -b qemu --accesses 0 (the baseline), the default"
echo " (64K), --accesses 1M, plain qemu-x86_64.  x = ratio to the baseline.)"
