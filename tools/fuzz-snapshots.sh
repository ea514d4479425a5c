#!/bin/sh
# The long run of tests/badinput/fuzz-snapshots.py (issue #13): N mutated
# snapshots (default 300) made from the recorded fixtures, bt-gen-fixture's
# PT and BTS outputs and the two small PT snapshots of the reader corpus,
# each through info, report, report --json, decode --calls and export, in
# the ASan+UBSan build.
#   tools/fuzz-snapshots.sh [N [JOBS [START]]]
# JOBS parallel cases (default 2), START the first case number (default 0:
# cases are numbered, each drawn from its number alone, so an interrupted
# run continues with START = the cases done).  Failing snapshots are kept
# in $BT_FUZZ_KEEP (default ./fuzz-snapshots-failed).
# The five commands run in one bt-cli-batch process (btrace's own command
# functions) for BT_FUZZ_BATCH snapshots (default 25; 1: one btrace process
# per command, as the unit test does); a snapshot it did not finish or
# found a problem in runs again as btrace processes.  The bases are drawn
# by weight (BT_FUZZ_WEIGHTS, in the order below): the small snapshots
# most of the time (a case of theirs costs some 0.05 CPU-s under ASan in a
# batch, one of a 770 KiB base with libc's code about 1.7 CPU-s).
# BT_FUZZ_NICE: niceness (default 19: idle CPU only).
set -eu
cd "$(dirname "$0")/.."
n=${1:-300} jobs=${2:-2} start=${3:-0}
build=${BT_ASAN_BUILD:-build-asan}
if [ ! -f "$build/build.ninja" ]; then
	tools/build.sh "$build" -Db_sanitize=address,undefined \
		-Db_lundef=false -Dbuildtype=debug
else
	ninja -C "$build" >/dev/null
fi
# weights, in the order of the bases: the 5 recorded fixtures, sample-raw,
# sample-zstd, then gen-pt and gen-bts (made by --gen, put last)
exec nice -n "${BT_FUZZ_NICE:-19}" python3 tests/badinput/fuzz-snapshots.py \
	--btrace "$build/src/cli/btrace" --count "$n" --jobs "$jobs" \
	--start "$start" --timeout 600 \
	--batch "${BT_FUZZ_BATCH:-25}" \
	--batch-exe "$build/tests/badinput/bt-cli-batch" \
	--weights "${BT_FUZZ_WEIGHTS:-1,1,1,1,1,30,30,1,1}" \
	--keep "${BT_FUZZ_KEEP:-fuzz-snapshots-failed}" \
	--gen "$build/tests/decode/bt-gen-fixture" \
	"$build/tests/decode/fx-crash-loop" fixtures/recorded/*/*.btrace \
	tests/fuzz/corpus/reader/sample-raw.btrace \
	tests/fuzz/corpus/reader/sample-zstd.btrace
