#!/bin/sh
# SPDX-License-Identifier: MIT
# Compare perf's decode of an exported snapshot with btrace's own decoder.
#
#	compare-perf.sh SNAPSHOT BTRACE
#
# Exports SNAPSHOT with `BTRACE export --perf-data`, decodes it with
# `perf script --itrace=i0nse` over the snapshot's embedded code only
# (--symfs), decodes it with `BTRACE decode --insn SNAPSHOT`, takes the
# instruction addresses of both, and diffs the two sequences.
# Exit 0 equal (and not empty), 1 different, empty or a decode error, 77 when
# perf is missing (a helper, not a test: replay-fixtures.sh turns 77 into a
# TAP SKIP).
set -u
SNAP=$1
BTRACE=$2
command -v perf >/dev/null 2>&1 || { echo "compare-perf: perf is not installed"; exit 77; }
T=$(mktemp -d "${TMPDIR:-/tmp}/btrace-compare.XXXXXX")
trap 'rm -rf "$T"' EXIT

"$BTRACE" export "$SNAP" --perf-data "$T/perf.data" -q 2>"$T/export.err" ||
	{ cat "$T/export.err"; exit 1; }
perf script --symfs "$T/perf.data.symfs" -i "$T/perf.data" --itrace=i0nse \
	-F tid,ip >"$T/perf.out" 2>"$T/perf.err" || { cat "$T/perf.err"; exit 1; }
if grep -q 'trace error' "$T/perf.out"; then
	echo "compare-perf: perf reports decode errors:"
	grep 'trace error' "$T/perf.out" | head
	exit 1
fi
"$BTRACE" decode --insn "$SNAP" >"$T/btrace.out" 2>"$T/btrace.err" ||
	{ cat "$T/btrace.err"; exit 1; }

# Both as "TID IP" lines, IPs as bare lowercase hex without leading zeros,
# grouped by thread in the order of first appearance (the two tools list
# threads in different orders; within a thread the order is the path).
# perf (-F tid,ip): "TID IP".  btrace decode --insn: "thread TID ..." headers,
# then lines whose first field is a 0x address (source lines and gap notes
# such as "[no code for the block at 0x...]" are not instructions).
awk 'NF == 2 && $2 ~ /^[0-9a-f]+$/ { ip = $2; sub(/^0+/, "", ip); print $1, ip }' \
	"$T/perf.out" | sort -s -n -k1,1 >"$T/perf.ips"
awk '$1 == "thread" { tid = $2; sub(/[^0-9].*/, "", tid); next }
     $1 ~ /^0x[0-9a-fA-F]+$/ { ip = tolower(substr($1, 3)); sub(/^0+/, "", ip); print tid, ip }' \
	"$T/btrace.out" | sort -s -n -k1,1 >"$T/btrace.ips"
np=$(wc -l <"$T/perf.ips")
nb=$(wc -l <"$T/btrace.ips")
nt=$(cut -d' ' -f1 "$T/perf.ips" | uniq | wc -l)
# Two empty decodes are not "equal": the snapshot has a trace.
if [ "$np" -eq 0 ] || [ "$nb" -eq 0 ]; then
	echo "compare-perf: perf decoded $np instructions, btrace $nb: nothing to compare"
	head -5 "$T/perf.err" "$T/btrace.err" 2>/dev/null
	exit 1
fi
if diff "$T/perf.ips" "$T/btrace.ips" >"$T/diff"; then
	echo "compare-perf: equal, $np instructions in $nt threads"
	exit 0
fi
echo "compare-perf: perf $np instructions, btrace $nb; first differences (< perf, > btrace, as TID IP):"
head -20 "$T/diff"
grep -n '^\[' "$T/btrace.out" | head -5 | sed 's/^/btrace note: /'
exit 1
