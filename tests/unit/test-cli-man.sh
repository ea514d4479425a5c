#!/bin/sh
# Every option a command's --help lists is in its man page's OPTIONS
# section, and every option the man page lists is in --help; and both name
# every option the command accepts (each listed option is tried: an
# unknown one is refused as "unknown option").
#   test-cli-man.sh BTRACE DOCS_DIR
set -u
BTRACE=$1
DOCS=$2
n=0
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; fails=$((fails + 1)); }

# Options of a --help text: the option column of the indented lines that
# start with a dash (the text before the first run of two spaces).
help_opts() {
	sed -n 's/^  *\(-[^ ].*\)$/\1/p' | sed 's/   *.*//' |
		grep -oE -- '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' |
		sed 's/^[ ,]*//' | sort -u
}
# Options of a man page: the term lines (*-x*, *--long* _ARG_) of its
# OPTIONS section.
man_opts() {
	awk '/^# /{ sec = $0 } sec == "# OPTIONS" && /^\*-/' "$1" |
		grep -oE -- '(^|[ ,*])--?[A-Za-z][A-Za-z0-9-]*' |
		sed 's/^[ ,*]*//' | sort -u
}

for cmd in "" record snapshot report decode info export view doctor calibrate; do
	if [ -z "$cmd" ]; then
		page=btrace name=btrace
	else
		page=btrace-$cmd name="btrace $cmd"
	fi
	scd=$DOCS/$page.1.scd
	if [ ! -f "$scd" ]; then
		notok "$name: man page $page.1.scd exists"
		continue
	fi
	ok "$name: man page $page.1.scd exists"
	# shellcheck disable=SC2086
	if ! "$BTRACE" $cmd --help >"$tmp/help" 2>"$tmp/err"; then
		notok "$name --help succeeds"
		continue
	fi
	help_opts <"$tmp/help" >"$tmp/h"
	man_opts "$scd" >"$tmp/m"
	if [ ! -s "$tmp/h" ]; then
		notok "$name: --help lists options"
		continue
	fi
	missing=$(comm -23 "$tmp/h" "$tmp/m" | tr '\n' ' ')
	extra=$(comm -13 "$tmp/h" "$tmp/m" | tr '\n' ' ')
	if [ -z "$missing" ]; then
		ok "$name: every option of --help is in $page(1)"
	else
		notok "$name: options of --help missing from $page(1) OPTIONS: $missing"
	fi
	if [ -z "$extra" ]; then
		ok "$name: every option of $page(1) is in --help"
	else
		notok "$name: options of $page(1) missing from --help: $extra"
	fi
	# The listed options exist: none is refused as unknown.  "-h -h"
	# after it: an option with an argument takes the first, and the
	# second stops the command before it does anything.
	bad=
	while read -r o; do
		# shellcheck disable=SC2086
		"$BTRACE" $cmd "$o" -h -h </dev/null >/dev/null 2>"$tmp/err"
		grep -q "unknown option" "$tmp/err" && bad="$bad $o"
	done <"$tmp/h"
	if [ -z "$bad" ]; then
		ok "$name: every listed option is accepted"
	else
		notok "$name: listed but refused as unknown:$bad"
	fi
	if grep -q -- "-h, --help" "$tmp/help" || [ -z "$cmd" ]; then
		ok "$name: --help lists -h, --help"
	else
		notok "$name: --help lists -h, --help"
	fi
	if [ -n "$cmd" ]; then
		if tail -n 1 "$tmp/help" | grep -qx "The manual page: man $page"; then
			ok "$name: --help ends by naming $page(1)"
		else
			notok "$name: --help ends by naming $page(1)"
		fi
	fi
	# Every man page the page refers to exists.
	for ref in $(grep -oE '\*btrace(-[a-z]+)?\*\(1\)' "$scd" | tr -d '*' | sed 's/(1)//' | sort -u); do
		if [ -f "$DOCS/$ref.1.scd" ]; then :; else
			notok "$name: $page(1) refers to $ref(1), which does not exist"
		fi
	done
done

echo "1..$n"
[ $fails -eq 0 ]
