#!/bin/sh
# TAP: `meson install` into a scratch prefix, move the prefix elsewhere, and
# run the installed btrace from another directory with no LD_LIBRARY_PATH:
# it must load its libraries through its $ORIGIN RUNPATH, find its QEMU
# plugin and preload library inside the moved prefix, record and report the
# README demo there, and never touch a file of the build tree.
#   prefix-install.sh BUILD_ROOT VERSION CRASHDEMO
set -u
build=$1 version=$2 demo=$3
unset LD_LIBRARY_PATH LD_PRELOAD BTRACE_QEMU_PLUGIN BTRACE_QEMU_PRELOAD

n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
check() { if [ "$1" -eq 0 ]; then ok "$2"; else not_ok "$2"; fi; }
diag() { sed 's/^/# /' "$@"; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/btrace-prefix.XXXXXX") || {
	echo "1..0 # SKIP mktemp -d failed"; exit 0; }
trap 'rm -rf "$tmp"' EXIT

# The build root as the kernel names it (strace prints resolved paths).
root=$(cd "$build" && pwd -P)
prefix=$(meson introspect "$build" --buildoptions | python3 -c '
import json, sys
print([o["value"] for o in json.load(sys.stdin) if o["name"] == "prefix"][0])')
echo "1..9"

meson install -C "$build" --no-rebuild --destdir "$tmp/destdir" \
	>"$tmp/install.log" 2>&1
rc=$?
[ $rc -eq 0 ] || diag "$tmp/install.log"
check $rc "meson install --destdir into a scratch directory"

# Move the prefix: nothing may depend on where it was installed.
mkdir -p "$tmp/elsewhere" "$tmp/cwd"
mv "$tmp/destdir$prefix" "$tmp/elsewhere/prefix" 2>"$tmp/mv.log"
check $? "the installed prefix moved to another directory"
bt=$tmp/elsewhere/prefix/bin/btrace
rm -rf "$tmp/destdir"

readelf -d "$bt" >"$tmp/dyn.txt" 2>&1
if grep -q 'RUNPATH.*\[\$ORIGIN/' "$tmp/dyn.txt"; then
	ok "installed btrace has an \$ORIGIN-relative RUNPATH"
else
	diag "$tmp/dyn.txt"; not_ok "installed btrace has an \$ORIGIN-relative RUNPATH"
fi

cd "$tmp/cwd" || exit 1
out=$("$bt" --version 2>&1)
if [ "$out" = "btrace $version" ]; then
	ok "btrace --version from another directory: $out"
else
	echo "# got: $out"; not_ok "btrace --version from another directory"
fi

"$bt" doctor >"$tmp/doctor.txt" 2>&1
rc=$?
[ $rc -eq 0 ] || diag "$tmp/doctor.txt"
check $rc "btrace doctor runs from the moved prefix"

if ! command -v qemu-x86_64 >/dev/null 2>&1 || ! command -v strace \
		>/dev/null 2>&1; then
	for i in 6 7 8 9; do
		n=$((n + 1))
		echo "ok $n # SKIP qemu-x86_64 or strace not installed (tools/deps.sh installs them)"
	done
	exit $((fails > 0))
fi

# The demo, as the README records it, from a directory outside the build
# tree, every file system call of btrace and QEMU logged.
cp "$demo" "$tmp/cwd/crashdemo"
(ulimit -c 0; exec ./crashdemo) >/dev/null 2>&1
want=$?
# LeakSanitizer (an ASan build) cannot run under ptrace: off for this run.
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" \
strace -f -qq -s 4096 -e trace=%file -o "$tmp/strace.log" \
	"$bt" record --snapshot -o crash.btrace -- ./crashdemo \
	>"$tmp/record.out" 2>"$tmp/record.err"
rc=$?
if [ $rc -eq $want ] && [ -s crash.btrace ]; then
	ok "btrace record of the demo wrote a snapshot and exited $rc, as the demo does"
else
	diag "$tmp/record.err"
	not_ok "btrace record of the demo wrote a snapshot (exit $rc, the demo's $want)"
fi

plugin=$(sed -n 's/.*execve(".*qemu-x86_64".*"-plugin", "\([^",]*\).*/\1/p' \
	"$tmp/strace.log" | head -1)
case "$plugin" in
"$tmp/elsewhere/prefix/"*/btrace/libbtrace-qemu.so*)
	ok "QEMU loads the plugin inside the moved prefix: $plugin" ;;
*)
	grep execve "$tmp/strace.log" | diag
	not_ok "QEMU loads the plugin inside the moved prefix (got '$plugin')" ;;
esac

if grep -F "$root/" "$tmp/strace.log" >"$tmp/leak.txt"; then
	diag "$tmp/leak.txt"
	not_ok "no file of the build tree $root is looked at"
else
	ok "no file of the build tree is looked at ($(wc -l <"$tmp/strace.log") file calls)"
fi

"$bt" report crash.btrace >"$tmp/report.txt" 2>&1
if grep -q '^fault .*greet' "$tmp/report.txt"; then
	ok "the installed btrace reports the demo's fault in greet"
else
	diag "$tmp/report.txt"
	not_ok "the installed btrace reports the demo's fault in greet"
fi
exit $((fails > 0))
