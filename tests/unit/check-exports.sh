#!/bin/sh
# Only btrace_* symbols may be exported by the shared libraries, and each
# SYM named with -n is exported by one of them.
#   check-exports.sh [-n SYM]... LIB...
set -u
status=0
n=0
need=
while [ $# -gt 0 ] && [ "$1" = -n ]; do
	need="$need $2"
	shift 2
done
for lib in "$@"; do
	n=$((n + 1))
	syms=$(nm -D --defined-only "$lib" | awk '$2 ~ /^[TDBRVW]$/ {print $3}')
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
for sym in $need; do
	n=$((n + 1))
	if nm -D --defined-only "$@" 2>/dev/null | awk '{sub(/@.*/, "", $3); print $3}' | grep -qx "$sym"; then
		echo "ok $n - $sym is exported"
	else
		echo "not ok $n - $sym is not exported by $*"
		status=1
	fi
done
echo "1..$n"
exit $status
