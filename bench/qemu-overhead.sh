#!/bin/sh
# Cost of `btrace record --backend qemu` over plain `qemu-x86_64`, both run
# the same way in the same rounds (docs/performance.md, "QEMU backend"):
#   1. bench/branchy.c   (xorshift, branchy classify(), indirect call
#                         through a table, data-dependent if)   target <= 1.4x
#   2. bench/pyload.py   under /usr/bin/python3 (json, re, genexpr, fib)
#                                                               target <= 1.6x
# Each round runs hyperfine once over every command, so slow drifts of a shared machine hit baseline and btrace alike.  The
# figures are medians over rounds of wall time and of CPU time (user+sys,
# which other jobs on the machine disturb less), each as a ratio against
# the baseline of the same run; "per-round" is the median (and range) of
# the CPU ratio taken within each round.
#
# Usage: bench/qemu-overhead.sh [BUILD_DIR]   (default: build)
# Env:   ROUNDS (5), RUNS per round and command (2), N (C iterations,
#        40000000), SCALE (pyload rounds, 3), PYTHON (/usr/bin/python3),
#        QEMU (qemu-x86_64).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
rounds=${ROUNDS:-5}
runs=${RUNS:-2}
n=${N:-40000000}
scale=${SCALE:-3}
py=${PYTHON:-/usr/bin/python3}
qemu=${QEMU:-qemu-x86_64}
work=$(mktemp -d /tmp/btrace-qbench.XXXXXX)
trap 'rm -rf "$work"' EXIT

command -v hyperfine >/dev/null || { echo "hyperfine not found" >&2; exit 1; }
ninja -C "$build" src/cli/btrace src/qemu/libbtrace-qemu.so >/dev/null ||
	echo "warning: build failed; using the binaries in $build" >&2
cc -O2 -g -o "$work/branchy" "$top/bench/branchy.c"
btrace="$build/src/cli/btrace record -b qemu -q -o $work/snap.btrace --"

echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), Linux $(uname -r)"
echo "qemu:    $($qemu --version | head -1)"
echo "rounds:  $rounds x $runs runs per command (hyperfine -N)"

# bench NAME CMD...: rounds of hyperfine over CMDs, the first is the baseline
bench() {
	name=$1
	shift
	r=0
	while [ "$r" -lt "$rounds" ]; do
		hyperfine -N --style none --warmup 1 --runs "$runs" \
			--export-json "$work/$name.$r.json" "$@" >/dev/null 2>&1
		r=$((r + 1))
	done
	"$py" - "$work" "$name" "$rounds" "$@" <<'EOF'
import json, statistics, sys
work, name, rounds, cmds = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
wall = {c: [] for c in cmds}
cpu = {c: [] for c in cmds}
for r in range(rounds):
    for res in json.load(open(f"{work}/{name}.{r}.json"))["results"]:
        wall[res["command"]].append(statistics.median(res["times"]))
        cpu[res["command"]].append(res["user"] + res["system"])
base = cmds[0]
bw, bc = statistics.median(wall[base]), statistics.median(cpu[base])
print(f"\n{name}:")
for c in cmds:
    w, u = statistics.median(wall[c]), statistics.median(cpu[c])
    # the ratio within each round (same conditions), then its median
    rr = [x / y for x, y in zip(cpu[c], cpu[base])]
    short = c if len(c) < 70 else c[:67] + "..."
    print(f"  wall {w:7.3f} s  x{w / bw:5.2f}   cpu {u:7.3f} s  x{u / bc:5.2f}"
          f"  per-round cpu x{statistics.median(rr):5.2f} ({min(rr):.2f}-{max(rr):.2f})   {short}")
EOF
}

bench branchy \
	"$qemu $work/branchy $n" \
	"$btrace $work/branchy $n" \
	"$qemu -cpu max $work/branchy $n" \
	"$work/branchy $n"

bench pyload \
	"$qemu $py $top/bench/pyload.py $scale" \
	"$btrace $py $top/bench/pyload.py $scale" \
	"$qemu -cpu max $py $top/bench/pyload.py $scale" \
	"$py $top/bench/pyload.py $scale"
echo
echo "(first row: baseline; second: btrace record -b qemu; third: the same"
echo " qemu with -cpu max; fourth: native.  x = ratio to the baseline.)"
