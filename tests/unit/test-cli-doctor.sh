#!/bin/sh
# btrace doctor checks the QEMU backend for real (emulator, version, plugin,
# a probe run) and its text fits 80 columns.
#   test-cli-doctor.sh BTRACE
set -u
BTRACE=$1
n=0
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

ok() { n=$((n + 1)); echo "ok $n - $1"; }
notok() {
	n=$((n + 1)); echo "not ok $n - $1"; fails=$((fails + 1))
	[ -f "$tmp/out" ] && sed 's/^/# /' "$tmp/out" | head -40
}
skip() { n=$((n + 1)); echo "ok $n - $1 # SKIP $2"; }

# No emulator: PATH is an empty directory, BTRACE_QEMU unset.
mkdir "$tmp/empty"
env -u BTRACE_QEMU PATH="$tmp/empty" "$BTRACE" doctor >"$tmp/out" 2>"$tmp/err"
rc=$?
[ $rc -eq 0 ] && ok "doctor without QEMU: exit 0" || notok "doctor without QEMU: exit $rc"
if grep -q '^QEMU: *not found' "$tmp/out" &&
   grep -q 'why: qemu-x86_64: find emulator failed: not found in PATH' "$tmp/out"; then
	ok "doctor without QEMU: says qemu-x86_64 is missing"
else
	notok "doctor without QEMU: says qemu-x86_64 is missing"
fi
if grep -q 'hint: install the qemu-user package' "$tmp/out"; then
	ok "doctor without QEMU: says how to fix it"
else
	notok "doctor without QEMU: says how to fix it"
fi
if grep -q '^Backend auto: *qemu' "$tmp/out" && grep -q 'QEMU software trace is used' "$tmp/out"; then
	notok "doctor without QEMU: does not claim the QEMU trace is used"
else
	ok "doctor without QEMU: does not claim the QEMU trace is used"
fi
env -u BTRACE_QEMU PATH="$tmp/empty" "$BTRACE" doctor --json >"$tmp/json" 2>/dev/null
if command -v python3 >/dev/null; then
	if python3 -c 'import json,sys; q=json.load(open(sys.argv[1]))["qemu"]; sys.exit(not (q["emulator"] is None and q["usable"] is False and q["hint"]))' "$tmp/json"; then
		ok "doctor --json without QEMU: qemu.emulator null, usable false, a hint"
	else
		cp "$tmp/json" "$tmp/out"; notok "doctor --json without QEMU: qemu.emulator null, usable false, a hint"
	fi
else
	skip "doctor --json without QEMU" "python3 is not installed"
fi

# Width: every line fits 80 columns, unless it is one word (a long path).
"$BTRACE" doctor >"$tmp/out" 2>&1
if awk 'length($0) > 80 && NF > 1 && !($0 ~ /^ +[^ ]+$/) { bad = 1 } END { exit bad }' "$tmp/out"; then
	ok "doctor: every line fits 80 columns"
else
	notok "doctor: every line fits 80 columns"
fi

# With the emulator of this machine: its version and a probe run.
qemu=$(command -v qemu-x86_64 2>/dev/null)
if [ -z "$qemu" ]; then
	skip "doctor with QEMU: version and probe run" "qemu-x86_64 is not in PATH"
elif ! "$qemu" --version >/dev/null 2>&1; then
	skip "doctor with QEMU: version and probe run" "$qemu --version does not run"
else
	want=$("$qemu" --version | sed -n '1s/.* version \([^ ]*\).*/\1/p')
	env -u BTRACE_QEMU "$BTRACE" doctor >"$tmp/out" 2>&1
	if grep -q "^QEMU: *$qemu, version $want\$" "$tmp/out"; then
		ok "doctor with QEMU: path and version ($want) as qemu-x86_64 --version says"
	else
		notok "doctor with QEMU: path and version ($want) as qemu-x86_64 --version says"
	fi
	# the probe's verdict must agree with a real recording of /bin/true
	if env -u BTRACE_QEMU "$BTRACE" record --backend qemu -q -- /bin/true >/dev/null 2>&1; then
		if grep -q 'usable: a probe run recorded /bin/true' "$tmp/out"; then
			ok "doctor with QEMU: usable, as record --backend qemu works"
		else
			notok "doctor with QEMU: usable, as record --backend qemu works"
		fi
	else
		if grep -A3 '^QEMU:' "$tmp/out" | grep -q 'unavailable'; then
			ok "doctor with QEMU: unavailable, as record --backend qemu fails"
		else
			notok "doctor with QEMU: unavailable, as record --backend qemu fails"
		fi
	fi
fi

# record's own lines on stderr fit 80 columns too (a crash under QEMU)
if grep -q 'usable: a probe run recorded' "$tmp/out" 2>/dev/null; then
	"$BTRACE" record --backend auto -o "$tmp/s.btrace" -- /bin/sh -c 'kill -SEGV $$' \
		>/dev/null 2>"$tmp/out"
	if ! grep -q 'wrote' "$tmp/out"; then
		notok "record: says where it wrote the snapshot"
	elif awk 'length($0) > 80 && NF > 1 { bad = 1 } END { exit bad }' "$tmp/out"; then
		ok "record: every line of its own on stderr fits 80 columns"
	else
		notok "record: every line of its own on stderr fits 80 columns"
	fi
	# frames of a module with a long name keep their offsets when cut
	long="$tmp/a_very_long_program_name_to_see_truncation"
	cp /bin/sh "$long"
	"$BTRACE" record -q -o "$tmp/t.btrace" -- "$long" -c 'kill -SEGV $$' >/dev/null 2>&1
	"$BTRACE" report --blocks 64 "$tmp/t.btrace" 2>/dev/null |
		grep -o 'a_very_long[^ ]*~[^ ]*' >"$tmp/names"  # the cut ones
	if [ "$(wc -l <"$tmp/names")" -lt 2 ]; then
		notok "report: frames in a long module name (fewer than 2 found)"
	elif grep -qv '~+0x[0-9a-f]*$' "$tmp/names"; then
		cp "$tmp/names" "$tmp/out"; notok "report: a long module name is cut before its offset"
	elif [ "$(sort -u "$tmp/names" | wc -l)" -lt 2 ]; then
		cp "$tmp/names" "$tmp/out"; notok "report: cut names stay distinguishable"
	else
		ok "report: long module names are cut before their offsets, distinguishable"
	fi
else
	skip "record: lines fit 80 columns" "the QEMU backend is not usable here"
	skip "report: long module names" "the QEMU backend is not usable here"
fi

# One table of backends: what record accepts is what its error lists, the
# backend doctor picks is one of them, calibrate's are the hardware ones.
"$BTRACE" record -b no-such-backend -- /bin/true >/dev/null 2>"$tmp/out"
names=$(sed -n "s/.*unknown backend 'no-such-backend' (\(.*\))$/\1/p" "$tmp/out" | tr -d ,)
bad=""
for b in $names; do
	"$BTRACE" record -q -b "$b" -p 999999999 >/dev/null 2>"$tmp/err"
	grep -q "unknown backend" "$tmp/err" && bad="$bad $b"
done
if [ "$names" = "auto pt bts qemu" ] && [ -z "$bad" ]; then
	ok "record: --backend accepts each backend it lists ($names)"
else
	notok "record: --backend lists '$names' and refuses '$bad'"
fi
"$BTRACE" doctor --json >"$tmp/json" 2>/dev/null
auto=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["auto_backend"])' "$tmp/json" 2>/dev/null)
case " $names " in
*" $auto "*) [ "$auto" != auto ] && ok "doctor: its auto backend ($auto) is one record accepts" ||
	notok "doctor: auto backend '$auto'" ;;
*) notok "doctor: its auto backend '$auto' is not in record's list ($names)" ;;
esac
"$BTRACE" calibrate -b no-such-backend >/dev/null 2>"$tmp/out"
if grep -q "unknown backend 'no-such-backend' (pt, bts)$" "$tmp/out"; then
	ok "calibrate: lists the hardware backends of the table"
else
	notok "calibrate: lists the hardware backends of the table"
fi

echo "1..$n"
[ $fails -eq 0 ]
