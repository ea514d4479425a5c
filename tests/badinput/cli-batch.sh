#!/bin/sh
# SPDX-License-Identifier: MIT
# bt-cli-batch (the long fuzz-snapshots run's harness) says what btrace says:
# for each snapshot (two good ones, a truncated one, one with a flipped
# byte in a section body, not a snapshot at all) the five commands' stdout,
# stderr and exit status from one bt-cli-batch process are the same as
# from five btrace processes.  TAP.
#   cli-batch.sh BTRACE BT_CLI_BATCH SNAPSHOT...
set -u
. "$(dirname "$0")/lib.sh"
btrace=$1 batch=$2
shift 2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
i=0
snaps=""
for s in "$@"; do
	for v in good cut flip; do
		i=$((i + 1))
		mkdir "$work/c$i"
		f=$work/c$i/snap-$i.btrace
		case $v in
		good) cp "$s" "$f" ;;
		cut) head -c $(($(stat -c %s "$s") * 2 / 3)) "$s" >"$f" ;;
		flip) cp "$s" "$f"
		      printf '\377' | dd of="$f" bs=1 seek=700 conv=notrunc 2>/dev/null ;;
		esac
		snaps="$snaps $f"
	done
done
i=$((i + 1))
mkdir "$work/c$i"
echo "not a snapshot" >"$work/c$i/snap-$i.btrace"
snaps="$snaps $work/c$i/snap-$i.btrace"

# shellcheck disable=SC2086
"$batch" 120 $snaps >"$work/batch.log" 2>&1
rc=$?
if [ $rc -eq 0 ]; then ok "bt-cli-batch ran $i snapshots"; else
	not_ok "bt-cli-batch exit $rc"; sed 's/^/# /' "$work/batch.log"; fi
for f in $snaps; do
	d=$(dirname "$f")
	k=0
	for cmd in "info" "report" "report --json" "decode --calls" \
		   "export --perf-data $d/out.data -f -q"; do
		# shellcheck disable=SC2086
		"$btrace" $cmd "$f" >"$d/cli.out" 2>"$d/cli.err"
		crc=$?
		brc=$(sed -n "s/^$k //p" "$d/status" 2>/dev/null)
		what="$(basename "$f") $cmd"
		if [ "$brc" != "$crc" ]; then
			not_ok "$what: exit $brc in the batch, $crc from btrace"
		elif ! cmp -s "$d/cli.out" "$d/$k.out"; then
			not_ok "$what: stdout differs"
		elif ! cmp -s "$d/cli.err" "$d/$k.err"; then
			not_ok "$what: stderr differs"
			diff "$d/cli.err" "$d/$k.err" | head -5 | sed 's/^/# /'
		else
			ok "$what: exit $crc, same output"
		fi
		k=$((k + 1))
	done
	if grep -qx done "$d/status" 2>/dev/null; then ok "$(basename "$f"): done"
	else not_ok "$(basename "$f"): no 'done' in its status"; fi
done
finish
