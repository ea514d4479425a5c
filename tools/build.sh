#!/bin/sh
# Configure (once) and build btrace in $1 (default: build) with extra meson
# options after it.  Incremental on later runs.  Development builds treat
# warnings as errors (-Dwerror=true); a plain `meson setup` does not.
set -eu
cd "$(dirname "$0")/.."
dir=${1:-build}
[ $# -gt 0 ] && shift
if [ ! -f "$dir/build.ninja" ]; then
	meson setup "$dir" -Dwerror=true "$@" >/dev/null
fi
ninja -C "$dir" >/dev/null || ninja -C "$dir"
