#!/bin/sh
# SPDX-License-Identifier: MIT
# Replay the recorded fixtures (fixtures/recorded/<scenario>/, TAP): for each,
# `btrace report` and `btrace report --json` (masked by fixture-mask.py) must
# equal the goldens report.txt and report.json, and perf's decode of the
# exported snapshot must equal `btrace decode --insn` instruction by
# instruction (tests/export/compare-perf.sh; skipped when perf is missing).
#
#   replay-fixtures.sh BTRACE FIXTURES_DIR [--update] [SCENARIO...]
#
# --update rewrites the goldens instead of comparing (review the diff).
set -u
btrace=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
root=$(cd "$2" && pwd)
shift 2
update=
if [ "${1:-}" = --update ]; then update=1; shift; fi
here=$(cd "$(dirname "$0")" && pwd)
mask="$here/fixture-mask.py"
compare="$here/../export/compare-perf.sh"
py=$(command -v python3)
work=$(mktemp -d "${TMPDIR:-/tmp}/btrace-fixtures.XXXXXX")
trap 'rm -rf "$work"' EXIT

list=${*:-$(cd "$root" && for d in */fixture.env; do dirname "$d"; done)}
n=0 fail=0
echo "1..$(( $(echo $list | wc -w) * 3 ))"
for s in $list; do
	dir="$root/$s"
	PROG= REPORT_OPTS=
	. "$dir/fixture.env"
	snap="$dir/$PROG.btrace"
	# btrace's exit status is checked, not lost in a pipe.
	# shellcheck disable=SC2086
	"$btrace" report --json $REPORT_OPTS "$snap" >"$work/$s.raw.json" 2>"$work/$s.json.err"
	rc_json=$?
	# shellcheck disable=SC2086
	"$btrace" report $REPORT_OPTS "$snap" >"$work/$s.raw.txt" 2>&1
	rc_txt=$?
	FIXTURE_DIR="$dir" "$py" "$mask" text "$PROG" "$work/$s.raw.json" \
		<"$work/$s.raw.txt" >"$work/$s.txt" 2>&1
	FIXTURE_DIR="$dir" "$py" "$mask" json "$PROG" - <"$work/$s.raw.json" \
		>"$work/$s.json" 2>&1
	for g in txt json; do
		n=$((n + 1))
		eval "rc=\$rc_$g"
		if [ "$rc" -ne 0 ]; then
			opt=; [ $g = json ] && opt=" --json"
			echo "not ok $n - $s: btrace report$opt exit $rc"
			[ $g = json ] && sed 's/^/# /' "$work/$s.json.err" | head -10
			[ $g = txt ] && sed 's/^/# /' "$work/$s.raw.txt" | head -10
			fail=1
		elif [ -n "$update" ]; then
			cp "$work/$s.$g" "$dir/report.$g"
			echo "ok $n - $s: report.$g (updated)"
		elif diff -u "$dir/report.$g" "$work/$s.$g" >"$work/diff"; then
			echo "ok $n - $s: report.$g equals the golden"
		else
			echo "not ok $n - $s: report.$g differs from the golden"
			sed 's/^/# /' "$work/diff" | head -60
			fail=1
		fi
	done
	n=$((n + 1))
	sh "$compare" "$snap" "$btrace" >"$work/perf.out" 2>&1
	rc=$?
	if [ $rc -eq 0 ]; then
		echo "ok $n - $s: perf == btrace decode --insn ($(sed -n 's/.*equal, //p' "$work/perf.out"))"
	elif [ $rc -eq 77 ]; then
		echo "ok $n - $s: perf vs btrace # SKIP perf is not installed"
	else
		echo "not ok $n - $s: perf != btrace decode --insn"
		sed 's/^/# /' "$work/perf.out" | head -30
		fail=1
	fi
done
exit $fail
