#!/bin/sh
# completion/btrace.bash: completes commands, every option --help lists (no
# more), and snapshot files.
#   test-cli-completion.sh BTRACE COMPLETION_FILE
set -u
BTRACE=$1
COMP=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
n=0
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

if ! command -v bash >/dev/null; then
	echo "1..0 # SKIP bash is not installed"
	exit 0
fi

ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() { n=$((n + 1)); echo "not ok $n - $1"; fails=$((fails + 1)); }

# complete WORDS...: what the completion offers for the last word, sorted
complete_words() {
	bash -c '. "$1"; shift; COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1));
		 _btrace; printf "%s\n" "${COMPREPLY[@]}" | sort -u' sh "$COMP" "$@"
}

help_opts() {
	sed -n 's/^  *\(-[^ ].*\)$/\1/p' | sed 's/   *.*//' |
		grep -oE -- '(^|[ ,])--?[A-Za-z][A-Za-z0-9-]*' |
		sed 's/^[ ,]*//' | sort -u
}

got=$(complete_words btrace "" | tr '\n' ' ')
want="calibrate decode doctor export info record report snapshot view "
[ "$got" = "$want" ] && ok "commands" || notok "commands: got '$got'"

for cmd in record snapshot report decode info export view doctor calibrate; do
	"$BTRACE" $cmd --help | help_opts >"$tmp/h"
	complete_words btrace $cmd - >"$tmp/c"
	if cmp -s "$tmp/h" "$tmp/c"; then
		ok "$cmd: the options of --help, no more"
	else
		notok "$cmd: options differ from --help: $(diff "$tmp/h" "$tmp/c" | grep '^[<>]' | tr '\n' ' ')"
	fi
done

mkdir "$tmp/d"
: >"$tmp/d/a.btrace"
: >"$tmp/d/b.txt"
got=$(cd "$tmp" && complete_words btrace report d/ | tr '\n' ' ')
[ "$got" = "d/a.btrace " ] && ok "report: snapshot files" || notok "report: snapshot files: got '$got'"
got=$(complete_words btrace record --backend "" | tr '\n' ' ')
[ "$got" = "auto bts pt qemu " ] && ok "record --backend: the backends" || notok "record --backend: got '$got'"

echo "1..$n"
[ $fails -eq 0 ]
