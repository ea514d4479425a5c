#!/bin/sh
# SPDX-License-Identifier: MIT
# Corrupt and truncated snapshots fed to every command (info, report,
# decode, export): each must fail with exit 1 and a message naming the
# file (or, for a salvaging command, exit 0 reporting the damage), never
# crash, hang or trip a sanitizer.  Which damage may pass silently is decided
# here from the file layout of docs/format.md, not by the reader under test:
# only a file whose bytes up to the end of the end marker section equal the
# original's (a change after the end marker, or no change at all).  TAP.
#   corrupt.sh BTRACE GEN_FIXTURE PROG SEED_SNAPSHOT
# BT_CORRUPT_BASES (default "pt bts sample") limits the damaged snapshots to
# some of the bases, for a quicker run by hand.
set -u
btrace=$1 gen=$2 prog=$3 seed=$4
. "$(dirname "$0")/lib.sh"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

# Valid snapshots to damage: PT and BTS from a real program, and a
# checked-in sample (zstd-compressed sections).
if ! "$gen" -o "$work/pt.btrace" -- "$prog" 300 >"$work/gen.log" 2>&1 ||
   ! "$gen" -b -o "$work/bts.btrace" -- "$prog" 100 >>"$work/gen.log" 2>&1; then
	not_ok "making the base snapshots"; sed 's/^/#   /' "$work/gen.log"
	finish; exit 1
fi
cp "$seed" "$work/sample.btrace"

# The damaged files: truncations, bit flips spread over the file, zeroed
# and garbage ranges, a lying length field, an empty file, not a file.
python3 - "$work" ${BT_CORRUPT_BASES:-pt bts sample} <<'PY'
import os, random, struct, sys
work, bases = sys.argv[1], sys.argv[2:]
rnd = random.Random(1234)


def end_of_end_marker(data):
    """File offset just past the end marker section (docs/format.md: a
    64-byte file header, then sections: 40-byte header with the magic
    "BSEC" at 0, the type at 4 and the stored size at 16, the payload
    padded to 8 bytes; the end marker has type 0x7fff)."""
    off = 64
    while off + 40 <= len(data):
        if data[off:off + 4] != b'BSEC':
            break
        typ, = struct.unpack_from('<I', data, off + 4)
        stored, = struct.unpack_from('<Q', data, off + 16)
        off += 40 + ((stored + 7) & ~7)
        if typ == 0x7fff:
            return off
    sys.exit('corrupt.sh: a base snapshot has no end marker at a section '
             'boundary: not a valid base')


allowed = []
for base in bases:
    data = open(os.path.join(work, base + '.btrace'), 'rb').read()
    n = len(data)
    end = end_of_end_marker(data)
    out = {}
    for cut in sorted({0, 1, 7, 8, 16, 63, 64, 100, n // 3, n // 2, n - 100, n - 25, n - 1}):
        if 0 <= cut < n:
            out['trunc-%d' % cut] = data[:cut]
    for k in range(24):
        pos = (k * n) // 24 + rnd.randrange(max(1, n // 24))
        b = bytearray(data)
        b[min(pos, n - 1)] ^= 1 << rnd.randrange(8)
        out['flip-%d' % pos] = bytes(b)
    for k in range(4):
        pos = rnd.randrange(n - 64)
        b = bytearray(data)
        b[pos:pos + 64] = bytes(64)
        out['zero-%d' % pos] = bytes(b)
        b = bytearray(data)
        b[pos:pos + 64] = bytes(rnd.randrange(256) for _ in range(64))
        out['junk-%d' % pos] = bytes(b)
    # every 8-byte word of the first section header set to all ones
    for pos in range(64, 112, 8):
        b = bytearray(data)
        b[pos:pos + 8] = b'\xff' * 8
        out['huge-%d' % pos] = bytes(b)
    out['doubled'] = data + data
    out['garbage-tail'] = data + bytes(rnd.randrange(256) for _ in range(333))
    for name, d in out.items():
        open(os.path.join(work, '%s-%s.btrace' % (base, name)), 'wb').write(d)
        # silent success allowed only when nothing up to the end of the
        # end marker changed
        if len(d) >= end and d[:end] == data[:end]:
            allowed.append('%s-%s' % (base, name))
open(os.path.join(work, 'allow-ok'), 'w').write('\n'.join(allowed) + '\n')
open(os.path.join(work, 'empty.btrace'), 'wb').close()
open(os.path.join(work, 'text.btrace'), 'w').write('hello, this is not a snapshot\n')
PY
mkdir "$work/dir.btrace"

for f in "$work"/*-*.btrace "$work/empty.btrace" "$work/text.btrace" \
	 "$work/dir.btrace" "$work/missing.btrace"; do
	name=$(basename "$f" .btrace)
	# Only a change after the end marker may pass silently (allow-ok,
	# from the layout above); anything else must be reported.
	allow_ok=0
	grep -qxF "$name" "$work/allow-ok" && allow_ok=1
	for cmd in "info" "info --json" "report" "report --json" \
		   "decode --insn" "decode --blocks" "decode --calls" \
		   "export --perf-data $work/out.data -f --no-cache -q"; do
		also=
		case $cmd in export*) also=out.data ;; esac
		run_cmd "$work/log" "$btrace" $cmd "$f"
		expect_clean "$name: btrace $cmd" "$f" "$work/log"
		rm -f "$work/out.data"
	done
	# The lenient reader must not crash either.
	run_cmd "$work/log" "$btrace" export --lenient --perf-data "$work/out.data" \
		-f --no-cache -q "$f"
	strict_ok=$allow_ok allow_ok=1 also=out.data
	expect_clean "$name: btrace export --lenient" "$f" "$work/log"
	allow_ok=$strict_ok
	# export must not leave a partial perf.data behind when it fails.
	if [ $rc -ne 0 ] && [ -e "$work/out.data" ]; then
		not_ok "$name: export failed but left $work/out.data"
	fi
	rm -rf "$work/out.data" "$work/out.data.symfs"
done
finish
