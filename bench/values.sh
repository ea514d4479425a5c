#!/bin/sh
# SPDX-License-Identifier: MIT
# Register values recovered along the last 1,000 instructions before the
# fault, against the truth (tests/decode/test-decode-values: the programs
# single-stepped under ptrace with their registers at every step): the
# share recovered and the wrong values, per program and in total, as a
# Markdown table, without and with the stack at the fault in the snapshot,
# with the process's memory too, with an access log, and on the crash
# corpus.  Then the time of `btrace report` (which now computes the
# origin) against a baseline btrace without it on the same snapshots (the
# recorded fixtures and the demo program's, with its stack): CPU time (user + sys) of the
# fastest of 9 runs each, in the same run (CPU time, not wall clock: the
# machine is shared).  (docs/performance.md, "Values and the
# origin")
#   bench/values.sh [BUILD_DIR [BASELINE_BTRACE]]
# BASELINE_BTRACE: e.g. the btrace of a build of main; without it only the
# table is printed.
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build}
base=${2:-}
work=$(mktemp -d /tmp/btrace-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT
m="python3 $top/bench/measure.py -n 9"

progs="null loop first longjmp ljrec tailcycle tailind skipret retskip ctx jmpctx sigtail panic kill values vdso"
targets="tests/decode/test-decode-values tests/decode/bt-gen-fixture fixtures/demo/crashdemo src/cli/btrace"
for p in $progs; do targets="$targets tests/decode/fx-crash-$p"; done
# shellcheck disable=SC2086
ninja -C "$build" $targets >/dev/null
set --
for p in $progs; do set -- "$@" "$build/tests/decode/fx-crash-$p"; done
echo "Registers at the fault only:"
echo
"$build/tests/decode/test-decode-values" --table "$@" \
	"$build/fixtures/demo/crashdemo" || true
echo
echo "With the stack at the fault in the snapshot (64 KiB, as btrace record stores it):"
echo
"$build/tests/decode/test-decode-values" --table --stack 65536 "$@" \
	"$build/fixtures/demo/crashdemo" || true
echo
echo "With the stack and the process's other memory (8 MiB, btrace record's default):"
echo
"$build/tests/decode/test-decode-values" --table --stack 65536 \
	--memory 8388608 "$@" "$build/fixtures/demo/crashdemo" || true
echo
echo "With the stack and an access log (every access of the last instructions, computed from the true registers: what the QEMU backend's --accesses records):"
echo
"$build/tests/decode/test-decode-values" --table --stack 65536 --log \
	"$@" "$build/fixtures/demo/crashdemo" || true
echo
echo "The crash corpus's C and C++ programs (bench/values-corpus.py), stack and memory:"
echo
python3 "$top/bench/values-corpus.py" "$build" -- --stack 65536 \
	--memory 8388608 2>/dev/null | grep '^|' || true
[ -n "$base" ] || exit 0

btrace=$build/src/cli/btrace
"$build/tests/decode/bt-gen-fixture" -K 65536 -o "$work/crashdemo.btrace" \
	"$build/fixtures/demo/crashdemo" >/dev/null
# the demo recorded by this machine's backend (QEMU here), with its stack
"$btrace" record -q -o "$work/crashdemo-recorded.btrace" -- \
	"$build/fixtures/demo/crashdemo" >/dev/null 2>&1 || true
echo
printf '| snapshot | baseline report (CPU s) | report with the origin (CPU s) | ratio |\n'
printf '|---|---:|---:|---:|\n'
for f in "$work"/crashdemo*.btrace "$top"/fixtures/recorded/*/*.btrace; do
	b=$($m -- "$base" report "$f" | cut -d' ' -f2)
	n=$($m -- "$btrace" report "$f" | cut -d' ' -f2)
	printf '| %s | %s | %s | %.2f |\n' "$(basename "$f")" \
		"$b" "$n" "$(echo "$n $b" | awk '{ print $1 / $2 }')"
done
