#!/bin/sh
# SPDX-License-Identifier: MIT
# Re-record the fixtures of fixtures/recorded/ with the QEMU backend: build
# each fixture's program from its source (-g -O1), run it under
# `btrace record -b qemu --size 64K`, then compare the reports with the
# goldens (tests/e2e/replay-fixtures.sh).  The goldens change only with
# --update: review that diff like code.
#
#   tools/record-fixtures.sh [--update] [BUILD_DIR [SCENARIO...]]
#
# BUILD_DIR defaults to build; it must hold src/cli/btrace and the QEMU
# plugin.  Each fixtures/recorded/<scenario>/fixture.env names PROG (the
# program: PROG.c is its source), ARGS, LIBS (link options) and
# REPORT_OPTS (options of the golden reports).
set -eu
update=
if [ "${1:-}" = --update ]; then update=--update; shift; fi
top=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-$top/build}" && pwd)
[ $# -gt 0 ] && shift
btrace="$build/src/cli/btrace"
root="$top/fixtures/recorded"
cc=${CC:-cc}
[ -x "$btrace" ] || { echo "record-fixtures: $btrace: not built" >&2; exit 1; }

list=${*:-$(cd "$root" && for d in */fixture.env; do dirname "$d"; done)}
for s in $list; do
	dir="$root/$s"
	PROG= ARGS= LIBS=
	. "$dir/fixture.env"
	echo "record-fixtures: $s: building $PROG and recording" >&2
	# Relative paths in the debug info: the binary is committed.
	(cd "$dir" && $cc -g -O1 -fdebug-prefix-map="$dir"=. \
		-o "$PROG" "$PROG.c" $LIBS)
	rm -f "$dir/$PROG.btrace"
	# shellcheck disable=SC2086
	(cd "$dir" && "$btrace" record -b qemu -q --size 64K \
		-o "$PROG.btrace" -- "./$PROG" $ARGS >/dev/null 2>&1) || true
	[ -s "$dir/$PROG.btrace" ] ||
		{ echo "record-fixtures: $s: no snapshot written" >&2; exit 1; }
	chmod 644 "$dir/$PROG.btrace"
done
# shellcheck disable=SC2086
exec sh "$top/tests/e2e/replay-fixtures.sh" "$btrace" "$root" $update $list
