#!/bin/sh
# Run a libFuzzer target for a fixed number of executions over a copy of its
# seed corpus (libFuzzer writes new inputs into its first corpus directory).
# Undefined behaviour counts as a crash (UBSAN_OPTIONS halt_on_error=1 unless
# the caller set UBSAN_OPTIONS).  Crashing inputs are written to the current
# directory as crash-*; put them in tests/fuzz/regress/TARGET/.
# The per-input limit is about hangs, not speed: every input here replays in
# well under a second, so BT_FUZZ_TIMEOUT (default 300 s) is far from what
# a busy machine or a sanitizer build needs.
#   run-fuzzer.sh TARGET RUNS SEED_DIR [LIBFUZZER_OPTIONS...]
set -eu
target=$1 runs=$2 seeds=$3
shift 3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$seeds"/* "$work"/ 2>/dev/null || true
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
"$target" -runs="$runs" -max_len=65536 -rss_limit_mb=2048 \
	-timeout="${BT_FUZZ_TIMEOUT:-300}" -print_final_stats=1 "$@" "$work"
