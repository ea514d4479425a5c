#!/bin/sh
# Decoder figures (docs/report.md, "Performance"); ratios come from one run.
#  1. whole-buffer decode into blocks with symbols vs raw libipt pt_blk_next
#     over the same bytes (target: within 1.25x);
#  2. btrace report (default history) on a 64 MiB wrapped PT buffer vs a
#     1 MiB buffer holding the same last history (target: within 2x), both
#     end to end and for the decode alone.
#  3. with BENCH_CALLGRIND=1 (needs valgrind): figure 1 in instructions
#     (callgrind, repeatable where wall time is not), on a 10x smaller
#     buffer: btrace_decode() against the raw decode, and per block what
#     btrace runs besides libipt's pt_blk_next.
# Usage: bench/decode-bench.sh [BUILD_DIR]   (default: build-dec2)
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$top/build-dec2}
work=$(mktemp -d /tmp/btrace-bench.XXXXXX)
trap 'rm -rf "$work"' EXIT

ninja -C "$build" tests/decode/bt-gen-fixture tests/decode/fx-crash-loop \
	src/cli/btrace >/dev/null
cc -O2 -I"$top/include" -o "$work/decode-bench" "$top/bench/decode-bench.c" \
	-L"$build/decoder" -L"$build/src" -lbtrace-decode -lbtrace -lipt \
	-Wl,-rpath,"$build/decoder:$build/src"

gen="$build/tests/decode/bt-gen-fixture"
prog="$build/tests/decode/fx-crash-loop"
echo "generating fixtures (real program, single-stepped, loop replayed)..."
# one buffer decoded whole: ~1 MiB of PT, not wrapped
"$gen" -p 4096 -S step:400000 -o "$work/whole.btrace" -- "$prog" 40 >/dev/null
# the same end of history in a 64 MiB and a 1 MiB ring
"$gen" -p 4096 -w $((64 << 20)) -S step:24000000 -o "$work/r64.btrace" -- "$prog" 40 >/dev/null
"$gen" -p 4096 -w $((1 << 20)) -S step:24000000 -o "$work/r1.btrace" -- "$prog" 40 >/dev/null

b="$work/decode-bench"
# interleaved, best of BENCH_RUNS (default 3) each, three rounds: the
# best of each side gives the ratio (a loaded machine inflates both)
raw=; full=; all=
for round in 1 2 3; do
	r=$("$b" raw "$work/whole.btrace"); f=$("$b" full "$work/whole.btrace")
	raw=$(printf '%s\n%s\n' "$raw" "$r" | sed '/^$/d' | sort -k2 -n | head -1)
	full=$(printf '%s\n%s\n' "$full" "$f" | sed '/^$/d' | sort -k2 -n | head -1)
done
all=$("$b" all "$work/whole.btrace")
echo "whole buffer: $raw (libipt pt_blk_next)"
echo "whole buffer: $full (btrace, as report --full: every block analysed, last 24 kept with symbols)"
echo "whole buffer: $all (btrace, every block and call kept in the result)"
echo "$raw $full" | awk '{ printf "  ratio btrace/libipt = %.2f (target <= 1.25); insns %s vs %s\n", $5 / $2, $6, $3 }'
echo "$raw $all" | awk '{ printf "  ratio keeping everything = %.2f\n", $5 / $2 }'

t64=$("$b" tail "$work/r64.btrace")
t1=$("$b" tail "$work/r1.btrace")
echo "tail decode:  64 MiB ring: $t64;  1 MiB ring: $t1"
echo "$t64 $t1" | awk '{ printf "  decode ratio 64M/1M = %.2f (target <= 2)\n", $2 / $5 }'

best() {  # best wall time of 5 runs of a command
	bt=999
	for i in 1 2 3 4 5; do
		s=$(date +%s.%N); "$@" >/dev/null; e=$(date +%s.%N)
		bt=$(echo "$s $e $bt" | awk '{ d = $2 - $1; print (d < $3) ? d : $3 }')
	done
	echo "$bt"
}
r64=$(best "$build/src/cli/btrace" report "$work/r64.btrace")
r1=$(best "$build/src/cli/btrace" report "$work/r1.btrace")
echo "btrace report end to end: 64 MiB $r64 s, 1 MiB $r1 s" \
	"(ratio $(echo "$r64 $r1" | awk '{ printf "%.2f", $1 / $2 }'); includes reading the snapshot)"

[ "${BENCH_CALLGRIND:-0}" = 1 ] || exit 0
# instructions: run_raw() is out of line in decode-bench.c for this
"$gen" -p 4096 -S step:40000 -o "$work/small.btrace" -- "$prog" 40 >/dev/null
cg() {  # cg FUNCTION MODE: instructions in FUNCTION, and in pt_blk_next (calls)
	BENCH_RUNS=1 valgrind --tool=callgrind --toggle-collect="$1" \
		--callgrind-out-file="$work/cg.out" "$b" "$2" "$work/small.btrace" \
		>/dev/null 2>&1
	callgrind_annotate --inclusive=yes --tree=calling "$work/cg.out" |
		awk '/PROGRAM TOTALS/ { gsub(",", "", $1); t = $1 }
		     /> +\?\?\?:pt_blk_next \(/ { gsub(",", "", $1); p = $1;
			n = $0; sub(/.*pt_blk_next \(/, "", n); sub(/x\).*/, "", n);
			gsub(",", "", n) }
		     END { print t, p, n }'
}
set -- $(cg run_raw raw) $(cg btrace_decode full)
echo "callgrind, whole buffer of $6 blocks: btrace_decode() $4 vs raw decode $1 instructions"
echo "$@" | awk '{ printf "  ratio %.3f (target <= 1.25); libipt pt_blk_next %.0f/block raw (%d blocks), %.0f/block in btrace; btrace besides libipt %.0f/block\n", $4 / $1, $2 / $3, $3, $5 / $6, ($4 - $5) / $6 }'
