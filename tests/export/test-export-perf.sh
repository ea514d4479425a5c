#!/bin/sh
# SPDX-License-Identifier: MIT
# perf 6.1 cross-check of `btrace export --perf-data` (suite 'decode').
#
#	test-export-perf.sh BTRACE EXPORT_GEN BUILDDIR
#
# For each case: export-gen runs a real program (tests/export/progs/) under
# ptrace single-step to its crash and writes a snapshot and the true
# instruction sequence; btrace exports the snapshot; perf decodes it with
# its own Intel PT (or BTS) decoder and the embedded code only
# (--symfs OUT.symfs); perf's IP sequence must equal the truth exactly
# (a wrapped ring: equal the truth's tail), with no decode error.
# TAP output; skipped ("1..0 # SKIP") when perf is not installed.
set -u
BTRACE=$1
GEN=$2
BUILD=$3
PROGS=$BUILD
if ! command -v perf >/dev/null 2>&1 || ! perf version >/dev/null 2>&1; then
	echo "1..0 # SKIP perf is not installed"
	exit 0
fi
T=$(mktemp -d "${TMPDIR:-/tmp}/btrace-export-perf.XXXXXX")
trap 'rm -rf "$T"' EXIT
n=0
fail=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() {
	n=$((n + 1)); fail=1; echo "not ok $n - $1"
	shift
	for f in "$@"; do [ -f "$f" ] && sed 's/^/# /' "$f" | head -20; done
}

# perf script output -> one hex IP per line; error lines kept as "ERROR ..."
perf_ips() {
	awk '/trace error/ { print "ERROR " $0; next }
	     { sub(/^[ \t]+/, ""); split($0, a, /[ \t]+/); print a[1] }' "$1"
}

# case NAME PROG "GEN OPTS" "EXPORT OPTS" MODE(exact|tail)
pt_case() {
	name=$1 prog=$2 gopts=$3 eopts=$4 mode=$5
	d=$T/$name
	mkdir -p "$d"
	# shellcheck disable=SC2086
	if ! "$GEN" $gopts "$d/s.btrace" "$d/truth" -- "$PROGS/export-prog-$prog" \
		>"$d/gen.out" 2>"$d/gen.err"; then
		notok "$name: generate snapshot" "$d/gen.err"; return
	fi
	# shellcheck disable=SC2086
	if ! "$BTRACE" export "$d/s.btrace" --perf-data "$d/perf.data" $eopts \
		>"$d/export.out" 2>"$d/export.err"; then
		notok "$name: btrace export" "$d/export.err"; return
	fi
	if ! perf script --symfs "$d/perf.data.symfs" -i "$d/perf.data" \
		--itrace=i0nse -F ip,sym >"$d/perf.out" 2>"$d/perf.err"; then
		notok "$name: perf script" "$d/perf.err"; return
	fi
	perf_ips "$d/perf.out" >"$d/perf.ips"
	if grep -q '^ERROR' "$d/perf.ips"; then
		notok "$name: perf reports decode errors" "$d/perf.ips"; return
	fi
	np=$(wc -l <"$d/perf.ips")
	nt=$(wc -l <"$d/truth")
	# Two empty sequences are not "equal": the program ran to a crash.
	if [ "$nt" -eq 0 ] || [ "$np" -eq 0 ]; then
		notok "$name: perf gave $np instructions, the truth has $nt" "$d/export.err" "$d/perf.err"
		return
	fi
	if [ "$mode" = tail ]; then
		if [ "$np" -ge "$nt" ] || [ "$np" -lt 100 ]; then
			notok "$name: expected a proper tail of $nt instructions, perf gave $np" "$d/export.err"
			return
		fi
		tail -n "$np" "$d/truth" >"$d/truth.cmp"
	else
		cp "$d/truth" "$d/truth.cmp"
	fi
	if ! diff "$d/truth.cmp" "$d/perf.ips" >"$d/diff"; then
		notok "$name: perf's instructions differ from the truth ($np vs $nt)" "$d/diff"
		return
	fi
	ok "$name: perf decodes $np instructions, equal to the truth ($mode)"
}

pt_case calls calls "" "" exact
pt_case calls-retcomp-chunks calls "--retcomp --tnt64 --psb 256" "--chunk 256" exact
pt_case vdso vdso "--retcomp" "" exact
pt_case strings-wrapped strings "--retcomp --psb 512 --ring 2048" "" tail

# The exported file passes the checks of the chunk test: several AUXTRACE
# records, each at a packet boundary (perf would report "Bad packet").
d=$T/calls-retcomp-chunks
if [ -f "$d/export.out" ] && grep -q 'AUXTRACE records' "$d/export.out"; then
	ok "calls-retcomp-chunks: $(sed -n 's/.* in \([0-9]*\) AUXTRACE records.*/\1/p' "$d/export.out") AUXTRACE records"
else
	notok "calls-retcomp-chunks: several AUXTRACE records" "$d/export.out"
fi

# Wrapped ring: the bytes before the first PSB are dropped and reported.
d=$T/strings-wrapped
if grep -q 'bytes before the first PSB dropped (the ring wrapped)' "$d/export.err" 2>/dev/null; then
	ok "strings-wrapped: dropped bytes reported"
else
	notok "strings-wrapped: dropped bytes reported" "$d/export.err"
fi

# BTS: perf's intel_bts decoder gives the taken branches (from, to).
d=$T/bts
mkdir -p "$d"
if "$GEN" --bts "$d/s.btrace" "$d/truth" -- "$PROGS/export-prog-calls" >/dev/null 2>"$d/gen.err" &&
   "$BTRACE" export "$d/s.btrace" --perf-data "$d/perf.data" -q 2>"$d/export.err" &&
   perf --buildid-dir "$d/perf.data.symfs/.debug" script -i "$d/perf.data" \
	--itrace=be -F ip,addr >"$d/perf.out" 2>"$d/perf.err"; then
	awk '/trace error/ { print "ERROR " $0; next }
	     { print $1, $3 }' "$d/perf.out" >"$d/perf.br"
	if grep -q ERROR "$d/perf.br"; then
		notok "bts: perf reports decode errors" "$d/perf.br"
	elif ! [ -s "$d/truth" ] || ! [ -s "$d/perf.br" ]; then
		notok "bts: perf gave $(wc -l <"$d/perf.br") branches, the truth has $(wc -l <"$d/truth")" "$d/perf.err"
	elif diff "$d/truth" "$d/perf.br" >"$d/diff"; then
		ok "bts: perf gives $(wc -l <"$d/perf.br") branches, equal to the truth"
	else
		notok "bts: perf's branches differ from the truth" "$d/diff"
	fi
else
	notok "bts: generate, export, perf script" "$d/gen.err" "$d/export.err" "$d/perf.err"
fi

# perf report and perf inject read the same file.
d=$T/calls
if perf --buildid-dir "$d/perf.data.symfs/.debug" report -i "$d/perf.data" \
	--itrace=i0ns --stdio --sort sym >"$d/report.out" 2>"$d/report.err" &&
   grep -q '\] main' "$d/report.out"; then
	ok "perf report --itrace=i0ns shows main (with symbols from this machine's files)"
else
	notok "perf report" "$d/report.err" "$d/report.out"
fi
if perf --buildid-dir "$d/perf.data.symfs/.debug" inject --itrace=i0ns \
	-i "$d/perf.data" -o "$d/inj.data" 2>"$d/inject.err" &&
   perf script -i "$d/inj.data" -F ip >"$d/inj.out" 2>>"$d/inject.err" &&
   [ -s "$d/truth" ] &&
   [ "$(wc -l <"$d/inj.out")" -eq "$(wc -l <"$d/truth")" ]; then
	ok "perf inject --itrace=i0ns: $(wc -l <"$d/inj.out") instruction samples"
else
	notok "perf inject" "$d/inject.err"
fi

echo "1..$n"
exit $fail
