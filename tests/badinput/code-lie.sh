#!/bin/sh
# SPDX-License-Identifier: MIT
# Snapshots whose embedded code lies (wrong address, garbage bytes, cut
# short, mappings moved or overlapping, no code at all): report, decode and
# export must succeed or fail cleanly, and the decoder must show the lie as
# a gap or a decode error, never crash.  TAP.
#   code-lie.sh BTRACE GEN_FIXTURE PROG MKBAD
set -u
btrace=$1 gen=$2 prog=$3 mkbad=$4
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

if ! "$gen" -o "$work/pt.btrace" -- "$prog" 200 >"$work/gen.log" 2>&1 ||
   ! "$gen" -b -o "$work/bts.btrace" -- "$prog" 100 >>"$work/gen.log" 2>&1; then
	not_ok "making the base snapshots"; sed 's/^/#   /' "$work/gen.log"
	finish; exit 1
fi

for base in pt bts; do
	for mode in code-shift code-garbage code-int3 code-short code-wrap \
		    map-shift map-overlap no-code; do
		f="$work/$base-$mode.btrace"
		if ! "$mkbad" "$mode" "$work/$base.btrace" "$f" 2>"$work/log"; then
			not_ok "$base $mode: bt-mkbad failed"; sed 's/^/#   /' "$work/log"
			continue
		fi
		# --no-disk: the fixture's program is on this disk and would
		# mend the lie.
		for cmd in "report --no-disk" "report --json --no-disk --full" \
			   "decode --insn --no-disk" "decode --calls --no-disk" \
			   "export --perf-data $work/out.data -f --no-cache -q" \
			   "info"; do
			run_cmd "$work/log" "$btrace" $cmd "$f"
			allow_ok=1 expect_clean "$base $mode: btrace $cmd" "$f" "$work/log"
			rm -f "$work/out.data"
		done
		# The lie must show: a gap, a decode error or missing code.
		run_cmd "$work/log" "$btrace" report --json --no-disk --full "$f"
		if [ $rc -eq 0 ] && ! grep -qiE '"gaps": *\[ *\{|"kind": *"(decode|noimage|unusable)"|no code|image' "$work/log"; then
			not_ok "$base $mode: report shows no gap, decode error or missing code"
			sed 's/^/#   /' "$work/log" | head -20
		else
			ok "$base $mode: the lie shows in the report (or the report failed cleanly)"
		fi
	done
done
finish
