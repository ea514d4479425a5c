#!/bin/sh
# Only btrace_* symbols may be exported by the shared libraries.
#   check-exports.sh LIB...
set -u
status=0
n=0
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
echo "1..$n"
exit $status
