#!/bin/sh
# The btrace command's conventions: --help for every command, --version,
# exit codes 0/1/2, "btrace <cmd>: <object>: <operation> failed: <reason>".
#   test-cli.sh BTRACE SAMPLE_SNAPSHOT
set -u
BTRACE=$1
SAMPLE=$2
n=0
fails=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

check() {  # check NAME EXPECTED_STATUS PATTERN -- CMD...
	name=$1 want=$2 pattern=$3
	shift 4
	n=$((n + 1))
	"$@" >"$tmp/out" 2>"$tmp/err"
	got=$?
	if [ "$got" -ne "$want" ]; then
		echo "not ok $n - $name: exit status $got, expected $want"
		sed 's/^/# /' "$tmp/err" | head -5
		fails=$((fails + 1))
	elif [ -n "$pattern" ] && ! grep -qE -- "$pattern" "$tmp/out" "$tmp/err"; then
		echo "not ok $n - $name: output does not match /$pattern/"
		sed 's/^/# /' "$tmp/out" "$tmp/err" | head -8
		fails=$((fails + 1))
	else
		echo "ok $n - $name"
	fi
}

check "version" 0 '^btrace [0-9]+\.[0-9]+\.[0-9]+$' -- "$BTRACE" --version
check "help" 0 'usage: btrace <command>' -- "$BTRACE" --help
check "no command is a usage error" 2 'usage:' -- "$BTRACE"
check "unknown command is a usage error" 2 "'frobnicate' is not a btrace command" -- "$BTRACE" frobnicate
check "--version --verbose names the libraries" 0 '^zstd: +[0-9]' -- "$BTRACE" --version --verbose
check "--verbose alone is a usage error" 2 "goes with --version" -- "$BTRACE" --verbose
check "unknown global option" 2 "^btrace: unknown option '--bogus'" -- "$BTRACE" --bogus
for cmd in record snapshot report decode info export view doctor calibrate; do
	check "$cmd --help" 0 "usage: btrace $cmd" -- "$BTRACE" $cmd --help
	check "$cmd -h" 0 "usage: btrace $cmd" -- "$BTRACE" $cmd -h
	# the documented error format, never getopt's own line
	check "$cmd: unknown short option" 2 "^btrace $cmd: unknown option '-Z'" -- "$BTRACE" $cmd -Z
	check "$cmd: unknown long option" 2 "^btrace $cmd: unknown option '--bogus'" -- "$BTRACE" $cmd --bogus=1
	if grep -q "invalid option\|unrecognized option" "$tmp/err"; then
		n=$((n + 1)); echo "not ok $n - $cmd: getopt printed its own message"; fails=$((fails + 1))
	fi
done
check "info: missing option argument" 2 "^btrace info: unknown option '-o'" -- "$BTRACE" info -o
check "report: option needs an argument" 2 "^btrace report: option '--calls' needs an argument" -- "$BTRACE" report --calls
check "record: option needs an argument" 2 "^btrace record: option '-o' needs an argument" -- "$BTRACE" record -o
check "info: option after the file" 0 '"complete": true' -- "$BTRACE" info "$SAMPLE" --json
check "snapshot: option after the pid" 2 "option '-o' needs an argument" -- "$BTRACE" snapshot 1 -o
# --bogus after the program is the program's, not an unknown option
check "record: options after the program are the program's" 2 "not both" -- "$BTRACE" record -p 1 true --bogus
check "info: unknown option" 2 "^btrace info: unknown option" -- "$BTRACE" info --bogus x
check "info: missing file argument" 2 "expected one snapshot FILE" -- "$BTRACE" info
check "info: missing file" 1 "^btrace info: /nonexistent.btrace: open failed: No such file or directory" -- "$BTRACE" info /nonexistent.btrace
check "info: not a snapshot" 1 "^btrace info: .*: read failed: not a btrace snapshot" -- "$BTRACE" info /etc/hostname
check "info: sample" 0 "buffers: 1" -- "$BTRACE" info "$SAMPLE"
check "info: sample shows compression" 0 "x zstd" -- "$BTRACE" info "$SAMPLE"
check "info --json" 0 '"complete": true' -- "$BTRACE" info --json "$SAMPLE"
check "info --json: signal named as by report" 0 '"name": "SIGSEGV"' -- "$BTRACE" info --json "$SAMPLE"
if command -v python3 >/dev/null; then
	# both exit statuses count (no pipe)
	check "info --json parses" 0 "" -- sh -c "'$BTRACE' info --json '$SAMPLE' >'$tmp/info.json' && python3 -m json.tool '$tmp/info.json'"
else
	n=$((n + 1))
	echo "ok $n - info --json parses # SKIP python3 is not installed"
fi
head -c 1000 "$SAMPLE" > "$tmp/cut.btrace"
check "info: truncated file is described with a warning" 0 "INCOMPLETE|truncated" -- "$BTRACE" info "$tmp/cut.btrace"
check "record: no program" 2 "no program given" -- "$BTRACE" record
check "record: bad backend" 2 "unknown backend 'x'" -- "$BTRACE" record --backend x -- true
check "record: bad size" 2 "invalid --size" -- "$BTRACE" record --size 12Q -- true
check "record: bad --on" 2 "invalid --on" -- "$BTRACE" record --on KILL -- true
check "record: pid and program" 2 "not both" -- "$BTRACE" record -p 1 -- true

# Color: on a terminal (script(1) gives one), never in a pipe or with NO_COLOR.
esc=$(printf '\033')
n=$((n + 1))
if "$BTRACE" report "$SAMPLE" 2>/dev/null | grep -q "$esc"; then
	echo "not ok $n - report: no color in a pipe"; fails=$((fails + 1))
else
	echo "ok $n - report: no color in a pipe"
fi
if command -v script >/dev/null && script -qec true /dev/null >/dev/null 2>&1; then
	n=$((n + 1))
	if env -u NO_COLOR TERM=xterm script -qec "'$BTRACE' report '$SAMPLE'" /dev/null 2>/dev/null |
	   grep "^signal" | grep -q "$esc\[1;31mSIGSEGV"; then
		echo "ok $n - report: the signal is colored on a terminal"
	else
		echo "not ok $n - report: the signal is colored on a terminal"; fails=$((fails + 1))
	fi
	n=$((n + 1))
	if NO_COLOR=1 TERM=xterm script -qec "'$BTRACE' report '$SAMPLE'" /dev/null 2>/dev/null | grep -q "$esc"; then
		echo "not ok $n - report: NO_COLOR turns color off"; fails=$((fails + 1))
	else
		echo "ok $n - report: NO_COLOR turns color off"
	fi
else
	n=$((n + 1)); echo "ok $n - report: color on a terminal # SKIP script(1) cannot run here"
fi

echo "1..$n"
[ $fails -eq 0 ]
