#!/bin/sh
# The long run of tests/badinput/fuzz-snapshots.py (issue #13): N mutated
# snapshots (default 300) made from the recorded fixtures and from
# bt-gen-fixture's PT and BTS outputs, each through info, report,
# report --json, decode --calls and export, in the ASan+UBSan build.
#   tools/fuzz-snapshots.sh [N [JOBS [START]]]
# JOBS parallel cases (default 2), START the first case number (default 0:
# cases are numbered, each drawn from its number alone, so an interrupted
# run continues with START = the cases done).  Failing snapshots are kept
# in $BT_FUZZ_KEEP (default ./fuzz-snapshots-failed).  Runs nice'd.
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
exec nice -n 10 python3 tests/badinput/fuzz-snapshots.py \
	--btrace "$build/src/cli/btrace" --count "$n" --jobs "$jobs" \
	--start "$start" --timeout 600 \
	--keep "${BT_FUZZ_KEEP:-fuzz-snapshots-failed}" \
	--gen "$build/tests/decode/bt-gen-fixture" \
	"$build/tests/decode/fx-crash-loop" fixtures/recorded/*/*.btrace
