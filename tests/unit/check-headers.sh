#!/bin/sh
# Every public header compiles alone as C99 (-pedantic) and as C++.
#   check-headers.sh INCLUDE_DIR CC [CXX]
set -u
inc=$1 cc=$2 cxx=${3:-}
n=0 fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for h in "$inc"/btrace/*.h; do
	name=btrace/$(basename "$h")
	printf '#include <%s>\n#include <%s>\nint main(void) { return 0; }\n' \
		"$name" "$name" > "$tmp/t.c"
	n=$((n + 1))
	if $cc -std=c99 -pedantic -Wall -Wextra -Werror -I"$inc" -c "$tmp/t.c" \
		-o "$tmp/t.o" 2>"$tmp/err"; then
		echo "ok $n - $name compiles alone as C99"
	else
		echo "not ok $n - $name does not compile alone as C99"
		sed 's/^/# /' "$tmp/err" | head -10
		fails=$((fails + 1))
	fi
	if [ -n "$cxx" ] && command -v "$cxx" >/dev/null 2>&1; then
		cp "$tmp/t.c" "$tmp/t.cc"
		n=$((n + 1))
		if $cxx -Wall -Wextra -Werror -I"$inc" -c "$tmp/t.cc" \
			-o "$tmp/t.o" 2>"$tmp/err"; then
			echo "ok $n - $name compiles as C++"
		else
			echo "not ok $n - $name does not compile as C++"
			sed 's/^/# /' "$tmp/err" | head -10
			fails=$((fails + 1))
		fi
	fi
done
echo "1..$n"
[ $fails -eq 0 ]
