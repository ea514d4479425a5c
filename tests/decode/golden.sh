#!/bin/sh
# Golden reports: synthetic fixtures from a real program (fx-crash-loop, no
# libc code near the fault so the output does not depend on the C library),
# decoded by `btrace report` / `btrace decode`, with what varies between
# runs masked (golden-mask.py: the program's load address, pids, paths,
# the source tree's place relative to the build directory).
# btrace must exit 0.  Compare with tests/decode/golden/*.out.
#
#   golden.sh BTRACE GEN PROG GOLDEN_DIR            check (TAP)
#   golden.sh BTRACE GEN PROG GOLDEN_DIR --update   rewrite the goldens
#
# Review the diff of golden/ after --update like code.
set -u
btrace=$1 gen=$2 prog=$3 dir=$4 update=${5:-}
work=$(mktemp -d /tmp/btrace-golden.XXXXXX)
progdir=$(cd "$(dirname "$prog")" && pwd)
srcdir=$(cd "$dir/../../.." && pwd)
trap 'rm -rf "$work"' EXIT

maskpy="$(dirname "$0")/golden-mask.py"

cases="pt-report pt-json pt-calls pt-wrapped bts-report pt-overflow"
n=0 fail=0
echo "1..$(echo $cases | wc -w)"
for c in $cases; do
	n=$((n + 1))
	f="$work/$c.btrace"
	case $c in
	pt-report|pt-json|pt-calls)
		"$gen" -r -p 1024 -o "$f" -- "$prog" 300 >/dev/null ;;
	pt-wrapped)
		"$gen" -r -p 512 -w 2048 -o "$f" -- "$prog" 20000 >/dev/null ;;
	bts-report)
		"$gen" -b -o "$f" -- "$prog" 300 >/dev/null ;;
	pt-overflow)
		"$gen" -r -O 2400:2500 -o "$f" -- "$prog" 300 >/dev/null ;;
	esac || { echo "not ok $n - $c: generator failed"; fail=1; continue; }
	# btrace's own exit status, not a pipe's
	case $c in
	pt-json) "$btrace" report --json --calls 6 --blocks 6 "$f" ;;
	pt-calls) "$btrace" decode "$f" --calls --last 12 ;;
	pt-overflow) "$btrace" report --calls 8 --blocks 6 --full "$f" ;;
	*) "$btrace" report --calls 8 --blocks 10 "$f" ;;
	esac >"$work/$c.raw" 2>&1
	rc=$?
	if [ $rc -ne 0 ]; then
		echo "not ok $n - $c: btrace exit $rc"
		sed 's/^/# /' "$work/$c.raw" | head -20
		fail=1
		continue
	fi
	if ! "$btrace" report --json "$f" >"$work/$c.json" 2>"$work/$c.err" ||
	   ! python3 "$maskpy" "$prog" "$work/$c.json" "$progdir" "$work" \
		"$srcdir" \
		<"$work/$c.raw" >"$work/$c.out" 2>"$work/$c.err"; then
		echo "not ok $n - $c: masking failed"
		sed 's/^/# /' "$work/$c.err" | head -20
		fail=1
		continue
	fi
	if [ "$update" = --update ]; then
		cp "$work/$c.out" "$dir/$c.out"
		echo "ok $n - $c (updated)"
	elif diff -u "$dir/$c.out" "$work/$c.out" > "$work/$c.diff"; then
		echo "ok $n - $c"
	else
		echo "not ok $n - $c"
		sed 's/^/# /' "$work/$c.diff"
		fail=1
	fi
done
exit $fail
