#!/bin/sh
# SPDX-License-Identifier: MIT
# Mutation check: apply each one-line mutation of tests/mutation/mutations.txt
# in turn to a scratch copy of this tree (never to the checkout), build it,
# run the tests the mutation names, and say whether they noticed.
#
#	tools/mutate.sh [-l LIST] [-k | -d DIR] [NAME...]
#
#   -l LIST   the mutation list (default tests/mutation/mutations.txt)
#   -k        keep the scratch directory (its path is printed)
#   -d DIR    use (and keep) DIR as the scratch directory: a second run
#             with the same DIR copies the tree again and builds
#             incrementally
#   NAME...   run only these mutations (default: all)
#
# Environment: MUTATE_MESON_OPTS (extra `meson setup` options of the scratch
# build), MUTATE_JOBS (meson test --num-processes, default 2).
#
# The copy holds the files git knows plus untracked ones that are not
# ignored, so uncommitted tests are used too.  Before any mutation the named
# tests run on the unchanged copy: if one of them fails or skips there, the
# run stops (exit 2) since nothing could be learnt from it.  Then each
# mutation prints "killed NAME (failed: TESTS)" or "SURVIVED NAME"; one that
# no longer applies (its original text is not in the file exactly once) or
# does not build is "INVALID NAME (reason)".  Exit 0 when every mutation was
# killed, 1 when one survived or was invalid, 2 on a setup error.
set -u
src=$(cd "$(dirname "$0")/.." && pwd)
list=$src/tests/mutation/mutations.txt
keep=0 dir=
while getopts l:kd: o; do
	case $o in
	l) list=$OPTARG ;;
	k) keep=1 ;;
	d) dir=$OPTARG keep=1 ;;
	*) echo "usage: tools/mutate.sh [-l LIST] [-k | -d DIR] [NAME...]" >&2; exit 2 ;;
	esac
done
shift $((OPTIND - 1))
[ -r "$list" ] || { echo "mutate: read $list failed: no such file" >&2; exit 2; }
command -v python3 >/dev/null || { echo "mutate: python3 is needed" >&2; exit 2; }

if [ -n "$dir" ]; then
	mkdir -p "$dir" && tmp=$(cd "$dir" && pwd) || exit 2
else
	tmp=$(mktemp -d "${TMPDIR:-/tmp}/btrace-mutate.XXXXXX") || exit 2
fi
if [ $keep -eq 1 ]; then
	echo "mutate: scratch tree in $tmp"
else
	trap 'rm -rf "$tmp"' EXIT
fi
trap 'exit 2' INT TERM

# The mutations as "name file original replacement tests" separated by \037
# (after the escapes \n \t \\ are resolved, a newline is written as \001).
python3 - "$list" "$@" >"$tmp/list.tsv" <<'PY' || exit 2
import sys
path, only = sys.argv[1], set(sys.argv[2:])
def unesc(s):
    out, i = [], 0
    while i < len(s):
        c = s[i]
        if c == '\\' and i + 1 < len(s):
            n = s[i + 1]
            out.append({'n': '\n', 't': '\t', '\\': '\\'}.get(n, '\\' + n))
            i += 2
            continue
        out.append(c)
        i += 1
    return ''.join(out)
seen = set()
for no, line in enumerate(open(path), 1):
    line = line.rstrip('\n')
    if not line.strip() or line.lstrip().startswith('#'):
        continue
    f = [x.strip() for x in line.split('@@')]
    if len(f) != 5 or not all(f[:3]) or not f[4]:
        sys.exit('%s:%d: expected "name @@ file @@ original @@ replacement @@ tests"' % (path, no))
    if f[0] in seen:
        sys.exit('%s:%d: mutation %s listed twice' % (path, no, f[0]))
    seen.add(f[0])
    if only and f[0] not in only:
        continue
    orig, repl = unesc(f[2]), unesc(f[3])
    print('\x1f'.join([f[0], f[1], orig.replace('\n', '\1').replace('\t', '\2'),
                     repl.replace('\n', '\1').replace('\t', '\2'), f[4]]))
missing = only - seen
if missing:
    sys.exit('no mutation named %s in %s' % (', '.join(sorted(missing)), path))
PY
[ -s "$tmp/list.tsv" ] || { echo "mutate: no mutation to run" >&2; exit 2; }

# The scratch copy.  Into a reused one only files whose bytes differ are
# copied (with a new time): ninja rebuilds exactly what changed.
mkdir -p "$tmp/tree"
(cd "$src" && git ls-files -z --cached --others --exclude-standard) |
	python3 -c '
import os, shutil, sys
src, dst = sys.argv[1], sys.argv[2]
for p in sys.stdin.buffer.read().split(b"\0"):
    if not p:
        continue
    p = os.fsdecode(p)
    s = os.path.join(src, p)
    if not os.path.lexists(s):
        continue          # deleted in the checkout, not yet committed
    d = os.path.join(dst, p)
    os.makedirs(os.path.dirname(d), exist_ok=True)
    if os.path.islink(s):
        if os.path.lexists(d):
            os.unlink(d)
        os.symlink(os.readlink(s), d)
        continue
    if os.path.isfile(d) and not os.path.islink(d):
        with open(s, "rb") as a, open(d, "rb") as b:
            if a.read() == b.read():
                continue
    shutil.copyfile(s, d, follow_symlinks=False)
    shutil.copymode(s, d)
' "$src" "$tmp/tree" || { echo "mutate: copying the tree failed" >&2; exit 2; }
tree=$tmp/tree
build=$tmp/build
echo "mutate: building the scratch copy"
# shellcheck disable=SC2086
if { [ ! -f "$build/build.ninja" ] &&
     ! meson setup "$build" "$tree" ${MUTATE_MESON_OPTS:-} >"$tmp/setup.log" 2>&1; } ||
   ! ninja -C "$build" >"$tmp/build.log" 2>&1; then
	tail -30 "$tmp/setup.log" "$tmp/build.log" 2>/dev/null
	echo "mutate: the unchanged tree does not build" >&2
	exit 2
fi

# run_tests TESTS [first]: runs meson test for each token (a test name, or
# suite:NAME) in order; the tests that failed (not OK/SKIP) go to
# $tmp/failed, skipped ones to $tmp/skipped; returns 0 when none failed.
# With "first", stops at the first token with a failure (a mutation is
# killed by one).
run_tests() {
	: >"$tmp/failed"
	: >"$tmp/skipped"
	for tok in $1; do
		[ "${2:-}" = first ] && [ -s "$tmp/failed" ] && break
		case $tok in
		suite:*) sel="--suite ${tok#suite:}" ;;
		*) sel=$tok ;;
		esac
		rm -f "$build/meson-logs/testlog.json"
		# shellcheck disable=SC2086
		meson test -C "$build" --no-rebuild --num-processes "${MUTATE_JOBS:-2}" \
			$sel </dev/null >"$tmp/test.log" 2>&1
		python3 - "$build/meson-logs/testlog.json" "$tok" \
			>>"$tmp/failed" 3>>"$tmp/skipped" <<'PY'
import json, os, sys
path, tok = sys.argv[1], sys.argv[2]
if not os.path.exists(path):
    print(tok + '(no test ran)')
    sys.exit()
ran = 0
with open(path) as f:
    for line in f:
        if not line.strip():
            continue
        r = json.loads(line)
        ran += 1
        if r.get('result') == 'SKIP':
            os.write(3, (r['name'] + '\n').encode())
        elif r.get('result') not in ('OK', 'EXPECTEDFAIL'):
            print(r['name'])
if not ran:
    print(tok + '(no test ran)')
PY
	done
	[ ! -s "$tmp/failed" ]
}

us=$(printf '\037')
all_tests=$(cut -d "$us" -f5 "$tmp/list.tsv" | tr ' ' '\n' | sort -u | tr '\n' ' ')
echo "mutate: baseline: $all_tests"
if ! run_tests "$all_tests" || [ -s "$tmp/skipped" ]; then
	echo "mutate: on the unchanged tree these fail: $(tr '\n' ' ' <"$tmp/failed")"
	[ -s "$tmp/skipped" ] && echo "mutate: on the unchanged tree these skip: $(tr '\n' ' ' <"$tmp/skipped")"
	tail -40 "$tmp/test.log"
	exit 2
fi

killed=0 survived=0 invalid=0
while IFS=$us read -r name file orig repl tests; do
	f=$tree/$file
	if [ ! -f "$f" ]; then
		echo "INVALID $name ($file: no such file)"
		invalid=$((invalid + 1)); continue
	fi
	cp -p "$f" "$tmp/orig"
	why=$(python3 - "$f" "$orig" "$repl" <<'PY'
import sys
path, orig, repl = sys.argv[1:4]
dec = lambda s: s.replace('\1', '\n').replace('\2', '\t')
orig, repl = dec(orig), dec(repl)
text = open(path).read()
n = text.count(orig)
if n != 1:
    print('the original text occurs %d times in the file' % n)
    sys.exit(1)
open(path, 'w').write(text.replace(orig, repl))
PY
	) || { echo "INVALID $name ($file: $why)"; invalid=$((invalid + 1)); continue; }
	if ! ninja -C "$build" </dev/null >"$tmp/build.log" 2>&1; then
		echo "INVALID $name (does not build: $(grep -m1 'error' "$tmp/build.log"))"
		invalid=$((invalid + 1))
	elif run_tests "$tests" first; then
		echo "SURVIVED $name ($file; ran: $tests)"
		survived=$((survived + 1))
	else
		echo "killed $name (failed: $(tr '\n' ' ' <"$tmp/failed" | sed 's/ $//'))"
		killed=$((killed + 1))
	fi
	cp -p "$tmp/orig" "$f"
	touch "$f"
done <"$tmp/list.tsv"
ninja -C "$build" </dev/null >/dev/null 2>&1   # the tree as it was
echo "mutate: $killed killed, $survived survived, $invalid invalid"
[ $survived -eq 0 ] && [ $invalid -eq 0 ]
