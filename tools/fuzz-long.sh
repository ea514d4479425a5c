#!/bin/sh
# The long libFuzzer run (issue #13: every target, export included, 10^7
# executions): each target of tests/fuzz in turn, or all of them at once
# with BT_FUZZ_PARALLEL=1, for RUNS executions or SECONDS seconds, whichever
# comes first, over a corpus kept outside the repository (seeded from
# tests/fuzz/corpus/TARGET, growing from run to run).  Prints, per target,
# the executions done, the executions per second and the projected time to
# 10^7 executions at that rate.  Crashing inputs are left in
# CORPUS_DIR/crashes/TARGET (put them in tests/fuzz/regress/TARGET once
# fixed).
#   tools/fuzz-long.sh [RUNS [SECONDS [TARGET...]]]
# RUNS default 10000000; SECONDS default 0 = no time limit.
# BT_FUZZ_CORPUS: the corpus root (default ${XDG_CACHE_HOME:-~/.cache}/btrace-fuzz).
# BT_FUZZ_BUILD: the clang fuzz build (default build-fuzz-long: ASan+UBSan at
# -O2 with debug info, about three times the executions per second of the
# test suite's -O0 build-fuzz; configured and built here when missing).  BT_FUZZ_ARGS: more libFuzzer options.
# BT_FUZZ_NICE: the niceness of the runs (default 19: idle CPU only).
# BT_FUZZ_LOGS: keep each target's libFuzzer log there (TARGET.log).
set -eu
cd "$(dirname "$0")/.."
root=$(pwd)
runs=${1:-10000000}
secs=${2:-0}
[ $# -gt 0 ] && shift
[ $# -gt 0 ] && shift
build=${BT_FUZZ_BUILD:-build-fuzz-long}
corpus=${BT_FUZZ_CORPUS:-${XDG_CACHE_HOME:-$HOME/.cache}/btrace-fuzz}
targets=${*:-reader decode-pt decode-bts sysfs sideband export values report view}

if [ ! -f "$build/build.ninja" ]; then
	CC=clang meson setup "$build" -Dfuzz=true -Dbuildtype=debugoptimized \
		-Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
exes=""
for t in $targets; do exes="$exes tests/fuzz/fuzz-$t"; done
# shellcheck disable=SC2086
nice ninja -C "$build" $exes >/dev/null || nice ninja -C "$build" $exes

export UBSAN_OPTIONS="${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}"
if [ -n "${BT_FUZZ_LOGS:-}" ]; then
	logs=$BT_FUZZ_LOGS
	mkdir -p "$logs"
else
	logs=$(mktemp -d)
	trap 'rm -rf "$logs"' EXIT
fi

run_one() {
	t=$1
	mkdir -p "$corpus/$t" "$corpus/crashes/$t"
	# the whole-snapshot targets (values, report, view) share corpus/snapshot
	seeds=$root/tests/fuzz/corpus/$t
	[ -d "$seeds" ] || seeds=$root/tests/fuzz/corpus/snapshot
	cp -n "$seeds"/* "$corpus/$t"/ 2>/dev/null || true
	# as tests/fuzz/run-fuzzer.sh: 64 KiB, or 3 times the largest seed
	big=$(find "$seeds" -type f -printf '%s\n' | sort -n | tail -1)
	maxlen=$(( ${big:-0} * 3 > 65536 ? ${big:-0} * 3 : 65536 ))
	[ "$maxlen" -gt 8388608 ] && maxlen=8388608
	start=$(date +%s)
	set +e
	# -timeout: a hang guard, not a speed limit (run-fuzzer.sh)
	# shellcheck disable=SC2086
	(cd "$corpus/crashes/$t" && nice -n "${BT_FUZZ_NICE:-19}" /usr/bin/time -o "$logs/$t.cpu" \
		-f '%U %S' "$root/$build/tests/fuzz/fuzz-$t" \
		-runs="$runs" -max_total_time="$secs" -max_len="$maxlen" \
		-rss_limit_mb=2048 -timeout="${BT_FUZZ_TIMEOUT:-300}" \
		-print_final_stats=1 ${BT_FUZZ_ARGS:-} "$corpus/$t") \
		>"$logs/$t.log" 2>&1
	rc=$?
	set -e
	end=$(date +%s)
	echo "$rc $((end - start))" >"$logs/$t.rc"
}

if [ "${BT_FUZZ_PARALLEL:-0}" = 1 ]; then
	for t in $targets; do run_one "$t" & done
	wait
else
	for t in $targets; do run_one "$t"; done
fi

fail=0
# exec/s: per second of wall time on this (shared) machine; per CPU s:
# per second of the target's own CPU time (user + system), what one
# dedicated core would do.  "to 10^7": the time 10^7 executions take at
# the wall-time rate, and on both cores of an idle 2-core machine (two
# fuzzing processes, libFuzzer -jobs=2) at the CPU-time rate.
hm() { printf '%dh%02dm' $(($1 / 3600)) $(($1 % 3600 / 60)); }
printf '%-11s %10s %7s %7s %8s %11s %11s  %s\n' target execs wall_s exec/s \
	"/CPU s" "to 10^7" "idle 2-core" result
for t in $targets; do
	read -r rc wall <"$logs/$t.rc"
	execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$logs/$t.log")
	execs=${execs:-0}
	cpu=$(awk '/^[0-9.]+ [0-9.]+$/ { printf "%d", ($1 + $2) * 1000 }' \
		"$logs/$t.cpu" 2>/dev/null || true)
	cpu=${cpu:-0}
	rate=$(( wall > 0 ? execs / wall : execs ))
	crate=$(( cpu > 0 ? execs * 1000 / cpu : 0 ))
	proj=- cproj=-
	[ "$rate" -gt 0 ] && proj=$(hm $(( 10000000 / rate )))
	[ "$crate" -gt 0 ] && cproj=$(hm $(( 10000000 / (2 * crate) )))
	res=ok
	if [ "$rc" -ne 0 ]; then
		res="FAILED (exit $rc): $(grep -m1 -E 'ERROR|runtime error|deadly signal|Test unit written' "$logs/$t.log" || true)"
		fail=1
		sed 's/^/#   /' "$logs/$t.log" | tail -40 >&2
	fi
	printf '%-11s %10s %7s %7s %8s %11s %11s  %s\n' "$t" "$execs" "$wall" \
		"$rate" "$crate" "$proj" "$cproj" "$res"
done
echo "corpus: $corpus; crashes: $corpus/crashes/TARGET"
exit $fail
