#!/bin/sh
# SPDX-License-Identifier: MIT
# Traced programs that behave badly under `btrace record -b qemu`: closed
# stdio, SIGTERM ignored (btrace forwards it), 1,000 children, 1,000
# threads, a flooded signal queue; each also crashing at the end.  The
# program's exit status must pass through unchanged, a snapshot appear
# exactly when it crashed (and read back strictly), and btrace never crash.
# TAP.
#   programs.sh BTRACE STRESS MKBAD
set -u
btrace=$1 stress=$2 mkbad=$3
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
BT_TIMEOUT=300

# rec DESC WANT_STATUS WANT_SNAPSHOT ARGS...: run bt-stress ARGS traced.
rec() {
	desc=$1 want=$2 want_snap=$3; shift 3
	rm -f "$work/s.btrace"
	run_cmd "$work/log" "$btrace" record -b qemu -o "$work/s.btrace" -- "$stress" "$@"
	if sanitizer_said "$work/log"; then
		not_ok "$desc: sanitizer report"; sed 's/^/#   /' "$work/log" | head -30
	elif [ $rc -ne "$want" ]; then
		not_ok "$desc: exit $rc, the program's status is $want"
		sed 's/^/#   /' "$work/log" | tail -5
	elif [ "$want_snap" = yes ] && ! [ -f "$work/s.btrace" ]; then
		not_ok "$desc: status $rc passed through but no snapshot"
		sed 's/^/#   /' "$work/log" | tail -5
	elif [ "$want_snap" = yes ] && ! "$mkbad" check "$work/s.btrace"; then
		not_ok "$desc: the snapshot does not read back"
	elif [ "$want_snap" = no ] && [ -e "$work/s.btrace" ]; then
		not_ok "$desc: a snapshot was written though the program did not crash"
	else
		ok "$desc: status $rc passed through, snapshot: $want_snap"
	fi
	if [ "$want_snap" = yes ] && [ -f "$work/s.btrace" ]; then
		# A hang guard, not a speed check: the signal flood's report
		# decodes a whole 4 MiB ring of 20,000 handler runs, which takes
		# minutes on a loaded machine.
		BT_TIMEOUT=900 run_cmd "$work/log" "$btrace" report "$work/s.btrace"
		if sanitizer_said "$work/log" || [ $rc -ne 0 ]; then
			not_ok "$desc: btrace report of the snapshot: exit $rc"
			sed 's/^/#   /' "$work/log" | head -10
		else
			ok "$desc: btrace report of the snapshot"
		fi
	fi
	# No temporary file may be left beside the snapshot.
	left=$(find "$work" -maxdepth 1 -name '*.btrace?*' -o -maxdepth 1 -name '.*btrace*' | head -3)
	[ -z "$left" ] || not_ok "$desc: temporary files left: $left"
}

why=$(qemu_missing)
if [ -n "$why" ]; then
	echo "1..0 # SKIP $why"
	exit 0
fi

rec "closes stdin/stdout/stderr" 3 no close-stdio
rec "closes stdin/stdout/stderr, crashes" 139 yes close-stdio crash
rec "1,000 children" 0 no fork 1000
rec "1,000 children, crashes" 139 yes fork 1000 crash
rec "1,000 threads" 0 no threads 1000
rec "1,000 threads, crashes" 139 yes threads 1000 crash
rec "signal flood" 0 no sigflood 20000
rec "signal flood, crashes" 139 yes sigflood 20000 crash

# btrace's own stdio closed: it must still run the program and pass its
# status (the summary line has nowhere to go).
rm -f "$work/s.btrace"
timeout 120 "$btrace" record -b qemu -o "$work/s.btrace" -- "$stress" close-stdio crash \
	<&- >&- 2>&-
rc=$?
if [ $rc -eq 139 ] && [ -f "$work/s.btrace" ]; then
	ok "btrace with its own stdio closed: status 139, snapshot written"
else
	not_ok "btrace with its own stdio closed: exit $rc, snapshot: $([ -f "$work/s.btrace" ] && echo yes || echo no)"
fi

# SIGTERM: btrace forwards it; the program ignores it and must keep
# running, then its own status (7) must come back.
rm -f "$work/ready" "$work/go"
"$btrace" record -b qemu -o "$work/s.btrace" -- "$stress" ignore-term \
	"$work/ready" "$work/go" >"$work/log" 2>&1 &
bt=$!
i=0
while ! [ -e "$work/ready" ] && [ $i -lt 600 ]; do sleep 0.05; i=$((i + 1)); done
if ! [ -e "$work/ready" ]; then
	not_ok "SIGTERM ignored: the program never became ready"
	kill -KILL $bt 2>/dev/null
else
	kill -TERM $bt
	sleep 1
	if kill -0 $bt 2>/dev/null; then
		ok "SIGTERM ignored: btrace and the program keep running after SIGTERM"
	else
		not_ok "SIGTERM ignored: btrace exited on SIGTERM"
	fi
	: >"$work/go"
fi
wait $bt
rc=$?
if [ $rc -eq 7 ]; then
	ok "SIGTERM ignored: the program's status 7 passed through"
else
	not_ok "SIGTERM ignored: exit $rc, the program's status is 7"
	sed 's/^/#   /' "$work/log" | tail -5
fi
if sanitizer_said "$work/log"; then
	not_ok "SIGTERM ignored: sanitizer report"; sed 's/^/#   /' "$work/log" | head -30
fi
# Set-up errors before anything runs: exit 1 (not the 0 of a program that
# never ran), with the object and a hint.
# A "#!" script is run through its interpreter (tests/behav); a file with
# neither "#!" nor an ELF header is what execve() refuses (ENOEXEC).
printf 'exit 0\n' >"$work/no-magic"
chmod +x "$work/no-magic"
for bad in "$work/does-not-exist" "$work/no-magic"; do
	rm -f "$work/s.btrace"
	run_cmd "$work/log" "$btrace" record -b qemu -o "$work/s.btrace" -- "$bad"
	if [ $rc -eq 1 ] && grep -q "$bad" "$work/log" && grep -q "^hint: " "$work/log" &&
	   ! [ -e "$work/s.btrace" ]; then
		ok "record of $(basename "$bad"): exit 1, named, with a hint"
	else
		not_ok "record of $(basename "$bad"): exit $rc"
		sed 's/^/#   /' "$work/log" | tail -3
	fi
done

# An address-space limit (ulimit -v) too small for the rings.  ASan needs
# terabytes of address space for its shadow, so an instrumented btrace
# cannot run under such a limit at all: then these two are skipped (the
# build decides: ASan's runtime is linked into the executable, or, with
# gcc, loaded as libasan.so).
if grep -qa 'AddressSanitizer' "$btrace" ||
   ldd "$btrace" 2>/dev/null | grep -q 'libasan\.so'; then
	ok "address-space limit # SKIP btrace cannot start under ulimit -v (sanitizer build)"
	ok "address-space limit, plugin # SKIP the same"
else
	# 1. Far too small: refused before the program runs (it would touch
	#    a file), exit 1, with the sizes and a hint.
	rm -f "$work/ran" "$work/s.btrace"
	(ulimit -v 1048576; exec "$btrace" record -b qemu --size 4M \
		-o "$work/s.btrace" -- /bin/touch "$work/ran") >"$work/log" 2>&1
	rc=$?
	if [ $rc -eq 1 ] && ! [ -e "$work/ran" ] && ! [ -e "$work/s.btrace" ] &&
	   grep -q "the rings need [0-9.]* GiB of address space.*limit is 1.0 GiB" "$work/log" &&
	   grep -q "^hint: .*ulimit -v" "$work/log"; then
		ok "address-space limit below the rings: refused before running, exit 1, with a hint"
	else
		not_ok "address-space limit below the rings: exit $rc, program ran: $([ -e "$work/ran" ] && echo yes || echo no)"
		sed 's/^/#   /' "$work/log" | tail -5
	fi
	# 2. Enough for the rings alone, not for the rings and QEMU: the
	#    plugin cannot map them, the program runs and crashes untraced.
	#    Its status passes through, the failure is named, and the guest
	#    core that btrace's RLIMIT_CORE let QEMU write is not left behind.
	mkdir -p "$work/cwd"
	rm -f "$work/s.btrace" "$work/cwd"/*
	abs_bt=$(realpath "$btrace") abs_stress=$(realpath "$stress")
	# The rings' need as btrace said it in case 1 (rounded to 0.1 GiB),
	# plus 0.06 GiB: room for the rings, not for the rings and the
	# emulator (QEMU itself takes about 0.3 GiB of address space; with a
	# margin of 0.2 GiB it sometimes fitted, and the test failed).
	need=$(sed -n 's/.*the rings need \([0-9.]*\) GiB.*/\1/p' "$work/log" | head -1)
	lim=$(awk -v n="${need:-2.1}" 'BEGIN { printf "%d", (n + 0.06) * 1048576 }')
	(cd "$work/cwd" && ulimit -v "$lim" && exec "$abs_bt" record -b qemu \
		--size 4M -o "$work/s.btrace" -- "$abs_stress" fork 0 crash) >"$work/log" 2>&1
	rc=$?
	cores=$(ls "$work/cwd" | head -3)
	if [ $rc -eq 139 ] && [ -z "$cores" ] && ! [ -e "$work/s.btrace" ] &&
	   grep -q "plugin did not start tracing" "$work/log" &&
	   grep -q "mmap of .* failed: Cannot allocate memory; not tracing" "$work/log"; then
		ok "rings refused by the address-space limit in QEMU: status 139 passed through, failure named, no core left"
	else
		not_ok "rings refused in QEMU: exit $rc, left in the working directory: '$cores'"
		sed 's/^/#   /' "$work/log" | tail -5
	fi
fi
finish
