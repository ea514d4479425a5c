#!/bin/sh
# Time from the death of a 16-thread emulated program to its snapshot file
# renamed into place (docs/performance.md, "QEMU backend: snapshot time").
# btrace prints it with BTRACE_QEMU_TIMING=1: wall time since waitpid()
# returned, and btrace's own CPU time for the snapshot (ring reading,
# branch rebuild and PT encoding of every thread, code, guest core).
# Usage: bench/qemu-snapshot-time.sh [BUILD_DIR]   (default: build)
# Env:   RUNS (5), SIZE (--size, 4M), MS (crash after MS ms, 1000).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
runs=${RUNS:-5}
size=${SIZE:-4M}
ms=${MS:-1000}
work=$(mktemp -d /tmp/btrace-qsnap.XXXXXX)
trap 'rm -rf "$work"' EXIT

ninja -C "$build" src/cli/btrace src/qemu/libbtrace-qemu.so \
	tests/qemu/crash-threads16 >/dev/null ||
	echo "warning: build failed; using the binaries in $build" >&2
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), Linux $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
i=0
while [ "$i" -lt "$runs" ]; do
	(cd "$work" && BTRACE_QEMU_TIMING=1 "$build/src/cli/btrace" record \
		-b qemu -q --size "$size" -o "$work/t16.btrace" -- \
		"$build/tests/qemu/crash-threads16" "$ms" 2>>"$work/log" \
		>/dev/null) || true
	ls -l "$work/t16.btrace" | awk '{ printf "snapshot %s bytes\n", $5 }' >>"$work/sizes"
	rm -f "$work/t16.btrace"
	i=$((i + 1))
done
/usr/bin/python3 - "$work/log" "$work/sizes" "$size" <<'PY'
import re, statistics, sys
wall, cpu = [], []
# btrace's messages are wrapped at 80 columns, continuation lines indented
for line in open(sys.argv[1]).read().replace("\n  ", " ").splitlines():
    m = re.search(r"written ([0-9.]+) ms after its death \(([0-9.]+) ms of CPU\)", line)
    if m:
        wall.append(float(m.group(1)))
        cpu.append(float(m.group(2)))
sizes = [int(l.split()[1]) for l in open(sys.argv[2])]
if not wall:
    sys.exit("no timing lines; is BTRACE_QEMU_TIMING supported by this build?")
print(f"16 threads + main, --size {sys.argv[3]}, {len(wall)} runs: death -> snapshot renamed: "
      f"wall median {statistics.median(wall):.0f} ms (min {min(wall):.0f}), "
      f"btrace CPU median {statistics.median(cpu):.0f} ms (min {min(cpu):.0f}); "
      f"snapshot {statistics.median(sizes) / 2**20:.1f} MiB")
PY
