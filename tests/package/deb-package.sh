#!/bin/sh
# TAP: build the Debian packages (debian/) with `dpkg-buildpackage -us -uc -b`
# from a copy of the source tree in a scratch directory, check them with
# lintian, unpack them into a scratch root with `dpkg -x` (nothing installed
# on the machine), and run the unpacked program from another directory with
# no LD_LIBRARY_PATH: --version, doctor, and the README demo recorded with
# the QEMU backend.
#   deb-package.sh SOURCE_ROOT VERSION CRASHDEMO
set -u
src=$1 version=$2 demo=$3
unset LD_LIBRARY_PATH LD_PRELOAD BTRACE_QEMU_PLUGIN BTRACE_QEMU_PRELOAD

for t in dpkg-buildpackage dh dpkg-deb; do
	if ! command -v $t >/dev/null 2>&1; then
		echo "1..0 # SKIP $t not installed (tools/deps.sh installs debhelper and dpkg-dev)"
		exit 0
	fi
done

n=0 fails=0
ok() { n=$((n + 1)); echo "ok $n - $1"; }
not_ok() { n=$((n + 1)); fails=$((fails + 1)); echo "not ok $n - $1"; }
skip() { n=$((n + 1)); echo "ok $n # SKIP $1"; }
check() { if [ "$1" -eq 0 ]; then ok "$2"; else not_ok "$2"; fi; }
diag() { sed 's/^/# /' "$@"; }
bail() { echo "Bail out! $1"; exit 1; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/btrace-deb.XXXXXX") || bail "mktemp -d failed"
trap 'rm -rf "$tmp"' EXIT
echo "1..11"

# 1. The source: the tree's files (committed or not, never ignored build
# directories) or, outside a git checkout, the tree without build dirs.
mkdir "$tmp/btrace-$version"
if git -C "$src" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
	git -C "$src" ls-files -z -c -o --exclude-standard |
		tar -C "$src" --null -T - --ignore-failed-read -cf - 2>"$tmp/tar.err" |
		tar -C "$tmp/btrace-$version" -xf -
else
	tar -C "$src" --exclude='./build*' --exclude='./obj-*' \
		--exclude=./.git -cf - . | tar -C "$tmp/btrace-$version" -xf -
fi
[ -f "$tmp/btrace-$version/debian/control" ]
check $? "source tree copied to a scratch directory"

# 2. The package build (the test suite runs in CI already: nocheck).
start=$(date +%s)
(cd "$tmp/btrace-$version" &&
	DEB_BUILD_OPTIONS="nocheck parallel=2" dpkg-buildpackage -us -uc -b) \
	>"$tmp/build.log" 2>&1
rc=$?
echo "# dpkg-buildpackage took $(($(date +%s) - start)) s"
[ $rc -eq 0 ] || tail -40 "$tmp/build.log" | diag
check $rc "dpkg-buildpackage -us -uc -b"
[ $rc -eq 0 ] || { echo "Bail out! no packages to check"; exit 1; }

# 3. lintian: no errors; warnings and the rest are printed.
if command -v lintian >/dev/null 2>&1; then
	start=$(date +%s)
	lintian "$tmp"/btrace_"$version"_*.changes >"$tmp/lintian.txt" 2>&1
	echo "# lintian took $(($(date +%s) - start)) s"
	grep -v '^running with root' "$tmp/lintian.txt" | diag
	if grep -q '^E:' "$tmp/lintian.txt"; then
		not_ok "lintian reports no errors"
	else
		ok "lintian reports no errors ($(grep -c '^[WIP]:' "$tmp/lintian.txt") warnings or notes)"
	fi
else
	skip "lintian not installed"
fi

# 4. Unpack into a scratch root, as the packages would install.
root=$tmp/root
rc=0
for deb in "$tmp"/*.deb; do
	case $deb in *-dbgsym_*) continue ;; esac
	dpkg -x "$deb" "$root" || rc=1
done
check $rc "dpkg -x of every package into a scratch root"

# 5. What the packages hold.
lib=$root/usr/lib/$(dpkg-architecture -qDEB_HOST_MULTIARCH)
missing=
for f in usr/bin/branchtrace "$lib/libbtrace.so.0" "$lib/libbtrace-decode.so.0" \
	"$lib/libbtrace.so" "$lib/libbtrace-decode.so" \
	"$lib/pkgconfig/libbtrace.pc" "$lib/pkgconfig/libbtrace-decode.pc" \
	"$lib/btrace/libbtrace-qemu.so" "$lib/btrace/libbtrace-qemu-preload.so" \
	usr/include/btrace/btrace.h usr/include/btrace/decode.h \
	usr/include/btrace/report.h \
	usr/share/man/man1/btrace.1.gz usr/share/man/man1/branchtrace.1.gz \
	usr/share/man/man1/btrace-record.1.gz \
	usr/share/doc/btrace/README.Debian usr/share/doc/btrace/copyright; do
	case $f in /*) p=$f ;; *) p=$root/$f ;; esac
	[ -e "$p" ] || missing="$missing ${p#"$root"/}"
done
if [ -f "$src/completion/btrace.bash" ] &&
   [ ! -e "$root/usr/share/bash-completion/completions/branchtrace" ]; then
	missing="$missing usr/share/bash-completion/completions/branchtrace"
fi
if [ -z "$missing" ]; then
	ok "the packages hold the program, libraries, headers, pkg-config files, plugin, man pages and docs"
else
	not_ok "the packages hold everything: missing$missing"
fi

# 6. The development files work: compile and link against the root.
cat >"$tmp/use.c" <<'EOF'
#include <stdio.h>
#include <btrace/btrace.h>
#include <btrace/decode.h>
int main(void) { printf("%s\n", btrace_version()); return 0; }
EOF
flags=$(PKG_CONFIG_SYSROOT_DIR=$root PKG_CONFIG_LIBDIR=$lib/pkgconfig \
	pkg-config --cflags --libs libbtrace-decode 2>"$tmp/pc.err")
rc=$?
if [ $rc -eq 0 ]; then
	# shellcheck disable=SC2086
	cc -o "$tmp/use" "$tmp/use.c" $flags >"$tmp/cc.log" 2>&1 &&
		out=$(LD_LIBRARY_PATH=$lib "$tmp/use" 2>&1)
	rc=$?
	[ $rc -ne 0 ] || [ "$out" = "$version" ] || rc=1
fi
[ $rc -eq 0 ] || cat "$tmp/pc.err" "$tmp/cc.log" | diag
check $rc "a program builds with pkg-config libbtrace-decode and the headers"

# 7-8. The program, from another directory, without LD_LIBRARY_PATH.
mkdir "$tmp/cwd" && cd "$tmp/cwd" || bail "cd"
bt=$root/usr/bin/branchtrace
out=$("$bt" --version 2>&1)
if [ "$out" = "btrace $version" ]; then
	ok "branchtrace --version from the scratch root: $out"
else
	echo "# got: $out"; not_ok "branchtrace --version from the scratch root"
fi
"$bt" doctor >"$tmp/doctor.txt" 2>&1
rc=$?
diag "$tmp/doctor.txt"
check $rc "branchtrace doctor"

# 9-11. The README demo with the QEMU backend.
if ! command -v qemu-x86_64 >/dev/null 2>&1; then
	for i in 9 10 11; do skip "qemu-x86_64 not installed (qemu-user)"; done
	exit $((fails > 0))
fi
cp "$demo" crashdemo
(ulimit -c 0; exec ./crashdemo) >/dev/null 2>&1
want=$?
if command -v strace >/dev/null 2>&1; then
	set -- strace -f -qq -s 4096 -e trace=execve -o "$tmp/strace.log"
else
	set --
fi
"$@" "$bt" record --snapshot -o crash.btrace -- ./crashdemo \
	>"$tmp/record.out" 2>"$tmp/record.err"
rc=$?
diag "$tmp/record.err"
if [ $rc -eq $want ] && [ -s crash.btrace ]; then
	ok "branchtrace record of the demo wrote a snapshot and exited $rc, as the demo does"
else
	not_ok "branchtrace record of the demo wrote a snapshot (exit $rc, the demo's $want)"
fi
if [ -f "$tmp/strace.log" ]; then
	plugin=$(sed -n 's/.*execve(".*qemu-x86_64".*"-plugin", "\([^",]*\).*/\1/p' \
		"$tmp/strace.log" | head -1)
	case "$plugin" in
	"$lib/btrace/libbtrace-qemu.so")
		ok "QEMU loads the plugin of the scratch root: $plugin" ;;
	*)
		not_ok "QEMU loads the plugin of the scratch root (got '$plugin')" ;;
	esac
else
	skip "strace not installed: the plugin's path is not checked"
fi
"$bt" report crash.btrace >"$tmp/report.txt" 2>&1
if grep -q '^fault .*greet' "$tmp/report.txt"; then
	head -12 "$tmp/report.txt" | diag
	ok "branchtrace report shows the demo's fault in greet"
else
	diag "$tmp/report.txt"
	not_ok "branchtrace report shows the demo's fault in greet"
fi
exit $((fails > 0))
