#!/bin/sh
# SPDX-License-Identifier: MIT
# A full disk while writing: a snapshot (`btrace record -b qemu` of a
# crashing program) and a perf.data export into a 64 KiB tmpfs.  btrace
# must say so clearly, leave no file (partial or temporary) behind, and pass
# the program's status through unchanged.  Needs root (mount); skips
# otherwise.  TAP.
#   fulldisk.sh BTRACE STRESS
set -u
btrace=$1 stress=$2
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
full=$work/full
mkdir "$full"
cleanup() { umount "$full" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
why=$(qemu_missing)
if [ -n "$why" ]; then
	echo "1..0 # SKIP $why"
	exit 0
fi
if ! mount -t tmpfs -o size=64k tmpfs "$full" 2>"$work/log"; then
	echo "1..0 # SKIP cannot mount a tmpfs: $(head -1 "$work/log")"
	exit 0
fi

# record: the program crashes, the snapshot (> 64 KiB: embedded code) does
# not fit.
run_cmd "$work/log" "$btrace" record -b qemu -o "$full/crash.btrace" -- "$stress" close-stdio crash
if sanitizer_said "$work/log"; then
	not_ok "record to a full disk: sanitizer report"; sed 's/^/#   /' "$work/log" | head -30
elif [ $rc -ne 139 ]; then
	not_ok "record to a full disk: exit $rc, the program's status is 139"
	sed 's/^/#   /' "$work/log" | tail -5
else
	ok "record to a full disk: the program's status 139 passed through"
fi
if grep -qiE 'no space left|ENOSPC' "$work/log" && grep -qF crash.btrace "$work/log"; then
	ok "record to a full disk: the error names the file and the reason: $(grep -iE 'no space' "$work/log" | head -1)"
else
	not_ok "record to a full disk: no clear error"; sed 's/^/#   /' "$work/log" | tail -5
fi
left=$(ls -A "$full")
if [ -z "$left" ]; then
	ok "record to a full disk: nothing left on the disk"
else
	not_ok "record to a full disk: left behind: $left"
	rm -f "$full"/* "$full"/.[!.]* 2>/dev/null
fi

# export: the perf.data (and its build-id cache) do not fit either.
snap=$work/good.btrace
"$btrace" record -b qemu -q -o "$snap" -- "$stress" close-stdio crash >/dev/null 2>&1
run_cmd "$work/log" "$btrace" export --perf-data "$full/out.data" "$snap"
expect_clean "export to a full disk" "$full/out.data" "$work/log"
if grep -qiE 'no space left|ENOSPC' "$work/log"; then
	ok "export to a full disk: says the disk is full"
else
	not_ok "export to a full disk: does not say why"; sed 's/^/#   /' "$work/log" | tail -5
fi
if [ -e "$full/out.data" ]; then
	not_ok "export to a full disk: a partial $full/out.data is left"
else
	ok "export to a full disk: no partial perf.data"
fi

# A disk that fills up half-way: room for the header, not the trace.
umount "$full"
mount -t tmpfs -o size=8k tmpfs "$full"
run_cmd "$work/log" "$btrace" record -b qemu -o "$full/crash.btrace" -- "$stress" close-stdio crash
if [ $rc -eq 139 ] && ! [ -e "$full/crash.btrace" ] && ! sanitizer_said "$work/log"; then
	ok "record to an 8 KiB disk: status 139, no file"
else
	not_ok "record to an 8 KiB disk: exit $rc, files: $(ls -A "$full")"
fi

# An on-demand snapshot (`btrace snapshot`) of a running recording into a
# 20 KiB disk: the copy's first write is short, the next fails ENOSPC.  The
# message must say so (not a stale errno such as "File exists").
umount "$full"
mount -t tmpfs -o size=20k tmpfs "$full"
go=$work/go
"$btrace" record -b qemu -q -o "$work/od-crash.btrace" -- "$stress" wait "$go" \
	>"$work/rec.log" 2>&1 </dev/null &
bt=$!
emu=
for i in $(seq 200); do
	for k in $(cat /proc/$bt/task/*/children 2>/dev/null); do
		a0=$(tr '\0' '\n' <"/proc/$k/cmdline" 2>/dev/null | head -1)
		case ${a0##*/} in *qemu*) emu=$k ;; esac
	done
	[ -n "$emu" ] && break
	sleep 0.05
done
if [ -z "$emu" ]; then
	not_ok "snapshot to a full disk: the recording's emulator never started"
else
	run_cmd "$work/log" "$btrace" snapshot -o "$full/od.btrace" "$emu"
	if [ $rc -eq 1 ] && grep -qi 'no space left' "$work/log" &&
	   grep -qF od.btrace "$work/log" && ! sanitizer_said "$work/log"; then
		ok "snapshot to a full disk: exit 1, $(head -1 "$work/log")"
	else
		not_ok "snapshot to a full disk: exit $rc: $(head -3 "$work/log")"
	fi
	left=$(ls -A "$full")
	if [ -z "$left" ]; then
		ok "snapshot to a full disk: nothing left on the disk"
	else
		not_ok "snapshot to a full disk: left behind: $left"
	fi
fi
touch "$go"
wait $bt
rc=$?
if [ $rc -eq 0 ]; then
	ok "snapshot to a full disk: the program went on and exited 0"
else
	not_ok "snapshot to a full disk: the recording exited $rc: $(tail -3 "$work/rec.log")"
fi
finish
