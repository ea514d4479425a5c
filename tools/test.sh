#!/bin/sh
# The tests: install dependencies, build, and run the whole suite, then the
# same suite under AddressSanitizer + UndefinedBehaviorSanitizer, then the
# libFuzzer targets for a fixed number of executions.
#   tools/test.sh [--quick]     --quick: the plain build only
set -eu
cd "$(dirname "$0")/.."
tools/deps.sh
quick=0
[ "${1:-}" = "--quick" ] && quick=1

# Time limits catch hangs, not slowness: they scale with how busy the
# machine is (load per CPU), and BT_TIMEOUT_MULTIPLIER overrides.
mult=${BT_TIMEOUT_MULTIPLIER:-$(python3 -c '
import os
load = os.getloadavg()[0] / (os.cpu_count() or 1)
print(max(2, int(2 + 2 * load)))')}
echo "tools/test.sh: time limits x$mult"

rc=0
tools/build.sh build
meson test -C build --print-errorlogs --num-processes 2 \
	--timeout-multiplier "$mult" || rc=1
[ $quick -eq 1 ] && exit $rc

tools/build.sh build-asan -Db_sanitize=address,undefined \
	-Db_lundef=false -Dbuildtype=debug
ASAN_OPTIONS=detect_leaks=1:abort_on_error=0 \
UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	meson test -C build-asan --print-errorlogs --num-processes 2 \
	--timeout-multiplier "$mult" || rc=1

# The fuzz build instruments every object for coverage, so only the fuzz
# targets (and the libraries they link) are built there.
if [ ! -f build-fuzz/build.ninja ]; then
	CC=clang meson setup build-fuzz -Dwerror=true -Dfuzz=true -Dbuildtype=debug \
		-Db_sanitize=address,undefined -Db_lundef=false >/dev/null
fi
fuzz_targets=$(meson introspect build-fuzz --targets | python3 -c '
import json, os, sys
for t in json.load(sys.stdin):
    if t["name"].startswith("fuzz-") and t["type"] == "executable":
        print(os.path.relpath(t["filename"][0], os.path.abspath("build-fuzz")))')
ninja -C build-fuzz $fuzz_targets >/dev/null || ninja -C build-fuzz $fuzz_targets
meson test -C build-fuzz --suite fuzz --no-rebuild --print-errorlogs \
	--timeout-multiplier "$mult" || rc=1
exit $rc
