#!/bin/sh
# SPDX-License-Identifier: MIT
# Peak memory (max RSS, getrusage of the child: bench/measure.py) of
# `btrace decode --insn/--calls/--blocks` and `btrace report` (text, JSON)
# on QEMU-backend snapshots with the default history size (--size 4M):
#   t16: bench/decode-rss-prog.c with 16 busy threads and one that crashes
#        after MS ms (17 buffers with the main thread);
#   t1:  the same program in one thread, busy for MS ms, then crashing.
# Each listing goes to /dev/null.  With BEFORE=<build dir of an older
# btrace>, the same commands run with it too (same snapshots), and CHECK=1
# compares the two outputs byte for byte (sha256 of stdout).
# (docs/performance.md, "Peak memory of btrace decode")
#   bench/decode-rss.sh [BUILD_DIR]
# Env: MS (busy time, 3000), CASES ("t16 t1"), CMDS (see below), BEFORE,
#      CHECK, KEEP=DIR (keep the snapshots there; reused when present).
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
ms=${MS:-3000}
cases=${CASES:-t16 t1}
work=$(mktemp -d /tmp/btrace-rss.XXXXXX)
trap 'rm -rf "$work"' EXIT
snapdir=${KEEP:-$work}
mkdir -p "$snapdir"
m="python3 $top/bench/measure.py -n 1"

ninja -C "$build" src/cli/btrace src/qemu/libbtrace-qemu.so >/dev/null ||
	echo "warning: build failed; using the binaries in $build" >&2
cc -O2 -g -pthread -o "$work/prog" "$top/bench/decode-rss-prog.c"
echo "machine: $(nproc) CPUs, $(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //'), load $(cut -d' ' -f1-3 /proc/loadavg)"
for c in $cases; do
	f=$snapdir/$c.btrace
	[ -s "$f" ] && continue
	case $c in
	t16) n=16 ;;
	t1) n=0 ;;
	*) echo "unknown case $c" >&2; exit 2 ;;
	esac
	(cd "$work" && "$build/src/cli/btrace" record -b qemu -q -o "$f" -- \
		"$work/prog" $n "$ms" >/dev/null 2>&1) || true
	[ -s "$f" ] || { echo "no snapshot for $c" >&2; exit 1; }
done

run() {   # run BTRACE CMD... -> "wall cpu maxrss_kib" or "failed"
	$m -- "$@" 2>/dev/null || echo "- - failed"
}
printf '%-5s %9s %-16s %12s %12s %8s %s\n' case snapshot command before_MiB \
	after_MiB ratio "after wall/cpu s"
for c in $cases; do
	f=$snapdir/$c.btrace
	size=$(stat -c %s "$f")
	for cmd in ${CMDS:-decode:--insn decode:--calls decode:--blocks report report:--json}; do
		args=$(echo "$cmd" | tr ':' ' ')
		set -- $args "$f"
		a=$(run "$build/src/cli/btrace" "$@")
		b="- - -"
		[ -n "${BEFORE:-}" ] && b=$(run "$BEFORE/src/cli/btrace" "$@")
		echo "$c $size $args|$b|$a" | awk -F'|' '{
			split($1, h, " "); split($2, x, " "); split($3, y, " ");
			cmd = h[3] (h[4] != "" ? " " h[4] : "");
			bm = x[3] ~ /^[0-9]+$/ ? sprintf("%.1f", x[3] / 1024) : x[3];
			am = y[3] ~ /^[0-9]+$/ ? sprintf("%.1f", y[3] / 1024) : y[3];
			r = "-";   # (mawk: no line break inside ?:)
			if (x[3] ~ /^[0-9]+$/ && y[3] ~ /^[0-9]+$/)
				r = sprintf("%.3f", y[3] / x[3]);
			printf "%-5s %8.1fM %-16s %12s %12s %8s %s/%s\n", h[1],
			       h[2] / 1048576, cmd, bm, am, r, y[1], y[2] }'
		if [ "${CHECK:-0}" = 1 ] && [ -n "${BEFORE:-}" ]; then
			x=$("$BEFORE/src/cli/btrace" "$@" 2>/dev/null | sha256sum | cut -c1-16)
			y=$("$build/src/cli/btrace" "$@" 2>/dev/null | sha256sum | cut -c1-16)
			[ "$x" = "$y" ] && echo "      output identical ($y)" ||
				echo "      OUTPUT DIFFERS: before $x, after $y"
		fi
	done
done
