#!/bin/sh
# Only btrace_* symbols may be exported by the shared libraries, and the
# public functions named with --expect are exported by one of them.
#   check-exports.sh [--expect SYMBOL]... LIB...
set -u
status=0
n=0
expect=""
while [ "${1:-}" = --expect ]; do
	expect="$expect $2"
	shift 2
done
all=""
for lib in "$@"; do
	n=$((n + 1))
	syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' |
		sed 's/@.*//')
	all="$all $syms"
	if [ -z "$syms" ]; then
		echo "not ok $n - $lib exports nothing"
		status=1
		continue
	fi
	leaks=$(printf '%s\n' "$syms" | grep -v '^btrace_' | grep -v '^BTRACE_' || true)
	if [ -n "$leaks" ]; then
		echo "not ok $n - $lib exports non-btrace symbols:"
		printf '%s\n' "$leaks" | sed 's/^/# /'
		status=1
	else
		echo "ok $n - $lib exports $(printf '%s\n' "$syms" | wc -l) btrace_* symbols"
	fi
done
for sym in $expect; do
	n=$((n + 1))
	if printf '%s\n' $all | grep -qx "$sym"; then
		echo "ok $n - $sym is exported"
	else
		echo "not ok $n - $sym is not exported"
		status=1
	fi
done
echo "1..$n"
exit $status
