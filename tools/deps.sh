#!/bin/sh
# Install what btrace needs to build, test and run, from Debian's packages.
# Quick when everything is already there (no apt-get call at all).
# The last line: the toolchains and runtimes of tests/corpus.
set -eu

PKGS="meson ninja-build pkg-config gcc libc6-dev libipt-dev libelf-dev
strace debhelper dpkg-dev lintian
libdw-dev libzstd-dev libcapstone-dev qemu-user linux-perf scdoc elfutils
gdb python3 g++ libc6-dbg clang libclang-rt-14-dev procps file util-linux hyperfine time
chromium
rustc golang-go nodejs default-jdk-headless luajit perl"

missing=""
for p in $PKGS; do
	if ! dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null |
	     grep -q "install ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" -ne 0 ]; then
	SUDO=sudo
	command -v sudo >/dev/null 2>&1 || {
		echo "tools/deps.sh: missing packages:$missing" >&2
		echo "hint: run as root, or install them with apt-get" >&2
		exit 1
	}
else
	SUDO=
fi
echo "tools/deps.sh: installing:$missing" >&2
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
# shellcheck disable=SC2086
$SUDO apt-get install -y -qq --no-install-recommends $missing >/dev/null
