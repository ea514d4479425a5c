#!/bin/sh
# Run a libFuzzer target for a fixed number of executions over a copy of its
# seed corpus (libFuzzer writes new inputs into its first corpus directory).
#   run-fuzzer.sh TARGET RUNS SEED_DIR
set -eu
target=$1 runs=$2 seeds=$3
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$seeds"/* "$work"/ 2>/dev/null || true
exec "$target" -runs="$runs" -max_len=65536 -rss_limit_mb=2048 \
	-timeout=25 -print_final_stats=1 "$work"
