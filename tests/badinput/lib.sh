# SPDX-License-Identifier: MIT
# Shared helpers of the bad-input tests (sourced).  TAP output.
n=0
failed=0

ok() { n=$((n + 1)); echo "ok $n - $*"; }
# A "not ok ... # TODO reason" (a known, reported defect) does not fail.
not_ok() {
	n=$((n + 1))
	case "$*" in *" # TODO "*) ;; *) failed=$((failed + 1)) ;; esac
	echo "not ok $n - $*"
}
diag() { echo "# $*"; }
finish() { echo "1..$n"; [ $failed -eq 0 ]; }

# qemu_missing: prints why the QEMU backend cannot run on this machine
# (nothing when it can).  Decided from the machine: the emulator's file and
# its own -h, never btrace's discovery (a regression there must fail).
qemu_missing() {
	q=${BTRACE_QEMU:-$(command -v qemu-x86_64)}
	if [ -z "$q" ]; then
		echo "qemu-x86_64 is not installed (package qemu-user)"
	elif ! "$q" -h 2>&1 | grep -q -- '-plugin'; then
		echo "$q has no TCG plugin support (-plugin)"
	fi
}

# A run crashed when it died of a signal (status > 128 from timeout(1) is
# 124 for a hang) or when a sanitizer said anything.
sanitizer_said() {
	grep -qE 'ERROR: AddressSanitizer|ERROR: LeakSanitizer|runtime error:|UndefinedBehaviorSanitizer|SUMMARY: .*Sanitizer' "$1"
}

# run_cmd LOG CMD...: run with a time limit, stdout+stderr to LOG; sets rc.
run_cmd() {
	log=$1; shift
	timeout -k 5 "${BT_TIMEOUT:-60}" "$@" >"$log" 2>&1 </dev/null
	rc=$?
}

# expect_clean DESC FILE LOG: rc 1 and a message naming FILE, or rc 0 with
# the damage reported (a salvaging command), no crash, hang or sanitizer
# report; rc 0 silently only when $allow_ok is 1 (damage the strict reader
# does not see).
expect_clean() {
	desc=$1 file=$2 log=$3
	if sanitizer_said "$log"; then
		not_ok "$desc: sanitizer report"; sed 's/^/#   /' "$log" | head -40
	elif [ $rc -eq 124 ] || [ $rc -eq 137 ]; then
		not_ok "$desc: hung (killed after ${BT_TIMEOUT:-60} s)"
	elif [ $rc -gt 128 ]; then
		not_ok "$desc: killed by signal $((rc - 128))"; sed 's/^/#   /' "$log" | tail -5
	elif [ $rc -eq 1 ]; then
		# $also: another name the message may use instead (the output
		# file of export when the failure is in writing it).
		if grep -qF -- "$(basename "$file")" "$log" ||
		   { [ -n "${also:-}" ] && grep -qF -- "$also" "$log"; }; then
			ok "$desc: exit 1, names the file"
		else
			not_ok "$desc: exit 1 but the message does not name $file"
			sed 's/^/#   /' "$log" | head -5
		fi
	elif [ $rc -eq 0 ] && [ "${allow_ok:-0}" = 1 ]; then
		ok "$desc: exit 0 (no damage the strict reader sees)"
	elif [ $rc -eq 0 ] && grep -F -- "$(basename "$file")" "$log" |
			grep -qiE 'warning|failed|incomplete|damage|mismatch|truncat'; then
		ok "$desc: exit 0, salvaged, the damage reported"
	elif [ $rc -eq 0 ]; then
		not_ok "$desc: exit 0 and the damage is not reported"
	else
		not_ok "$desc: exit $rc"; sed 's/^/#   /' "$log" | head -5
	fi
}
