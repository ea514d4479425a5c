#!/bin/sh
# Run a libFuzzer target for a fixed number of executions over a copy of its
# seed corpus (libFuzzer writes new inputs into its first corpus directory).
# Undefined behaviour counts as a crash (UBSAN_OPTIONS halt_on_error=1 unless
# the caller set UBSAN_OPTIONS).  Crashing inputs are written to the current
# directory as crash-*; put them in tests/fuzz/regress/TARGET/.
# The per-input limit is about hangs, not speed: every input here replays in
# well under a second, so BT_FUZZ_TIMEOUT (default 300 s) is far from what
# a busy machine or a sanitizer build needs.
# Seeds are folders (their files) or files.  The longest input libFuzzer
# makes is 64 KiB, or three times the largest seed (whole snapshots,
# rewritten uncompressed by the custom mutator), at most 8 MiB.
#   run-fuzzer.sh TARGET RUNS SEED... [LIBFUZZER_OPTIONS...]
set -eu
target=$1 runs=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
while [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; do
	if [ -d "$1" ]; then
		cp "$1"/* "$work"/ 2>/dev/null || true
	else
		cp "$1" "$work"/
	fi
	shift
done
big=$(find "$work" -type f -printf '%s\n' | sort -n | tail -1)
max=$(( ${big:-0} * 3 > 65536 ? ${big:-0} * 3 : 65536 ))
[ "$max" -gt 8388608 ] && max=8388608
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
"$target" -runs="$runs" -max_len="$max" -rss_limit_mb=2048 \
	-timeout="${BT_FUZZ_TIMEOUT:-300}" -print_final_stats=1 "$@" "$work"
