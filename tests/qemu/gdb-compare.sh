#!/bin/sh
# SPDX-License-Identifier: MIT
# Compare the fault btrace's QEMU backend records with gdb's view of the
# same program crashing natively: same signal, same faulting instruction
# (as an offset into the program's ELF, since load addresses differ).
#
#   gdb-compare.sh BTRACE SNAPINFO PROG [ARGS...]
#
# The fault comes from the snapshot through SNAPINFO (tests/qemu/snapinfo.c);
# once `btrace report --json` exists, replace qemu_fault() with a query of
# its JSON (the fault address and the symbol+offset gdb prints as $pc).
set -eu
btrace=$1 snapinfo=$2
shift 2
prog=$1
name=$(basename "$prog")
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

command -v gdb >/dev/null || { echo "1..0 # SKIP gdb not installed"; exit 0; }
q=${BTRACE_QEMU:-$(command -v qemu-x86_64 || true)}
[ -n "$q" ] || { echo "1..0 # SKIP qemu-x86_64 not installed"; exit 0; }
"$q" -h 2>&1 | grep -q -- '-plugin' ||
	{ echo "1..0 # SKIP $q has no TCG plugin support"; exit 0; }

# Native: gdb's pc, signal and the program's load address.
gdb -nx -batch -ex run -ex 'p/x $pc' -ex 'info proc mappings' \
	--args "$@" >"$work/gdb.txt" 2>&1 </dev/null || true
gsig=$(sed -n 's/^Program received signal \(SIG[A-Z]*\).*/\1/p' "$work/gdb.txt" | head -1)
gpc=$(sed -n 's/^\$1 = \(0x[0-9a-f]*\).*/\1/p' "$work/gdb.txt" | head -1)
gpc=${gpc:-0}
# The file holding pc, and pc's offset from that file's base.
gfile=
while read -r s e size off f; do
	case $s in 0x*) ;; *) continue ;; esac
	[ -n "${f:-}" ] || continue
	if [ $((gpc)) -ge $((s)) ] && [ $((gpc)) -lt $((e)) ]; then
		gfile=$f
		break
	fi
done <<EOT
$(sed -n 's/^ *\(0x[0-9a-f]* *0x[0-9a-f]* *0x[0-9a-f]* *0x[0-9a-f]*\) *[rwxps-]* *\(.*\)$/\1 \2/p' "$work/gdb.txt")
EOT
gbase=$(awk -v f="$gfile" '$NF == f && $4 == "0x0" { print $1; exit }' "$work/gdb.txt")

qemu_fault() {
	"$btrace" record -b qemu -q -o "$work/s.btrace" -- "$@" >/dev/null 2>&1 </dev/null || true
	"$snapinfo" "$work/s.btrace" "$name"
}
qemu_fault "$@" >"$work/q.txt"
qsig=$(sed -n 's/^signo=//p' "$work/q.txt")
qoff=$(sed -n 's/^fault_off=//p' "$work/q.txt")
qfile=$(sed -n 's/^fault_file=//p' "$work/q.txt")

echo "1..2"
qsigname=SIG$(kill -l "${qsig:-0}" 2>/dev/null || echo "?")
if [ -n "$gsig" ] && [ "$gsig" = "$qsigname" ]; then echo "ok 1 - signal $gsig"
else echo "not ok 1 - signal: gdb $gsig, btrace $qsig"; fail=1; fi
if [ -n "$gpc" ] && [ -n "$gbase" ] && [ -n "$qoff" ] &&
   [ "$(basename "$gfile")" = "$qfile" ] &&
   [ $((gpc - gbase)) -eq $((qoff)) ]; then
	printf 'ok 2 - fault at %s+0x%x in both\n' "$qfile" $((qoff))
else
	echo "not ok 2 - fault: gdb pc $gpc in $gfile (base $gbase), btrace $qfile+$qoff"
	fail=1
fi
exit ${fail:-0}
