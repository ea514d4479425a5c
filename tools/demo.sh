#!/bin/sh
# The demo: install dependencies, build, record the bundled crashing program
# with the best backend this machine has, and print its crash report.
set -eu
cd "$(dirname "$0")/.."
tools/deps.sh
tools/build.sh build
out=${BTRACE_DEMO_DIR:-build/demo}
mkdir -p "$out"
snap="$out/crashdemo.btrace"
rm -f "$snap"
echo "\$ btrace record --snapshot -o $snap -- crashdemo" >&2
status=0
build/src/cli/btrace record --snapshot -o "$snap" -- \
	build/fixtures/demo/crashdemo || status=$?
echo "(crashdemo exited with status $status, as it would without btrace)" >&2
echo "\$ btrace report $snap" >&2
build/src/cli/btrace report "$snap"
