#!/bin/sh
# The source files of each library call each other one way: no loop.  From
# each archive's objects, an edge A -> B for every symbol A uses and B
# defines; tsort(1) finds a loop if there is one (docs/architecture.md).
#   check-layers.sh ARCHIVE...
set -u
n=0
status=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for a in "$@"; do
	n=$((n + 1))
	# "archive:member.o: [addr] TYPE symbol" -> "symbol member"
	nm -A -g --defined-only "$a" 2>/dev/null |
		awk '{ m = $1; sub(/:[0-9a-f]*$/, "", m); sub(/.*[\/:]/, "", m);
		       print $NF, m }' | sort -u >"$tmp/defs"
	nm -A -u "$a" 2>/dev/null |
		awk '{ m = $1; sub(/:[0-9a-f]*$/, "", m); sub(/.*[\/:]/, "", m);
		       print $NF, m }' | sort -u >"$tmp/uses"
	join "$tmp/uses" "$tmp/defs" | awk '$2 != $3 { print $2, $3 }' |
		sort -u >"$tmp/edges"
	files=$(awk '{ print $2 }' "$tmp/defs" | sort -u | wc -l)
	if [ "$(wc -l <"$tmp/edges")" -eq 0 ] || [ "$files" -lt 2 ]; then
		echo "not ok $n - $a: no calls between its files read (nm failed?)"
		status=1
	elif tsort "$tmp/edges" >/dev/null 2>"$tmp/loop"; then
		echo "ok $n - $a: $files files, $(wc -l <"$tmp/edges") arrows, no loop"
	else
		echo "not ok $n - $a: its files call each other in a loop"
		sed 's/^/# /' "$tmp/loop"
		status=1
	fi
done
echo "1..$n"
exit $status
