#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The report's last blocks against QEMU's own execution log (TAP).

    e2e-qemu-log.py BTRACE PROGDIR

Records programs of tests/qemu/progs with BTRACE_QEMU_ARGS="-d exec,nochain
-D LOG", so QEMU itself logs the start of every translation block (TB) it
executes, in the same run (the same addresses).  Two checks per program,
walking backwards from the fault:

- report level: `btrace report --json --blocks N` (`tail`).  Every logged
  TB start must fall, in order, into the report's blocks, and every block
  must begin at a logged TB start.  A report block may hold several TBs
  (QEMU also ends a TB at a not-taken conditional branch), and libipt may
  cut a straight line into two blocks: a block that starts at most 15 bytes
  after the previous one ends is joined to it first.
- instruction level, exact: `btrace decode --insn --last N`.  The
  instructions between two logged TB starts must start with the first TB
  start and rise strictly (a TB is straight-line code), so every decoded
  instruction belongs to the TB QEMU says ran there, in order.

The faulting TB of the log contains the fault: it must start in the last
block (or at the fault).

The recordings keep every turn of every loop (BTRACE_QEMU_LOOPS=0): by
default the plugin folds the repeated turns of short loops, which QEMU's
log lists one by one (e2e-qplugin checks the folding).
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as L  # noqa: E402

NBLOCKS = 200
NINSN = 3000
CASES = [('e2e-crash-fnptr', []), ('e2e-crash-fpe', []),
         ('e2e-crash-ill', [])]
_TRACE = re.compile(r'^Trace \d+: 0x[0-9a-f]+ \[[0-9a-f]+/([0-9a-f]+)/')


def log_starts(path):
    out = []
    with open(path, errors='replace') as f:
        for ln in f:
            m = _TRACE.match(ln)
            if m:
                out.append(int(m.group(1), 16))
    return out


def align(tail, fault_ip, starts):
    """Report level: (ok, message)."""
    blocks = []
    for b in tail:
        if not b.get('ip'):
            return False, 'gap in the tail'
        ip, end = int(b['ip'], 16), int(b['end_ip'], 16)
        if blocks and 0 < ip - blocks[-1][1] <= 15:
            blocks[-1][1] = end     # a straight line cut in two
        else:
            blocks.append([ip, end])
    k = len(starts) - 1
    used = 0
    for n, (ip, end) in enumerate(reversed(blocks)):
        hi = max(end, fault_ip) if n == 0 else end
        prev = None
        while True:
            if k < 0:
                return False, 'log exhausted at block 0x%x' % ip
            t = starts[k]
            if not (ip <= t <= hi) or (prev is not None and t >= prev):
                return False, ('block -%d [0x%x,0x%x]: log has 0x%x'
                               ' (log entry -%d)' %
                               (n + 1, ip, hi, t, len(starts) - k))
            k -= 1
            used += 1
            prev = t
            if t == ip:
                break
    return True, '%d blocks (%d after joining) = %d QEMU blocks' % (
        len(tail), len(blocks), used)


def insn_align(insns, fault_ip, starts):
    """Instruction level: (ok, message)."""
    seq = insns + [fault_ip]
    k = len(starts) - 1
    i = len(seq) - 1
    ntb = 0
    while i >= 0 and k >= 0:
        t = starts[k]
        j = i
        while j >= 0 and seq[j] != t:
            j -= 1
        if j < 0:
            break       # the decode starts inside this TB
        seg = seq[j:i + 1]
        if any(b <= a for a, b in zip(seg, seg[1:])):
            return False, ('TB 0x%x (log entry -%d) holds a jump: %s' %
                           (t, len(starts) - k,
                            ' '.join('%x' % x for x in seg[:12])))
        if len(seg) > 512:
            return False, 'TB 0x%x: %d instructions' % (t, len(seg))
        ntb += 1
        k -= 1
        i = j - 1
    if ntb < 100 and i >= 0:
        return False, 'only %d TBs matched, %d instructions left' % (ntb, i + 1)
    return True, '%d instructions = the last %d QEMU blocks' % (
        len(seq) - max(i + 1, 0), ntb)


def main():
    btrace, progdir = (os.path.abspath(a) for a in sys.argv[1:3])
    why = L.qemu_skip_reason()
    if why:
        return L.skip_all(why)
    work = tempfile.mkdtemp(prefix='btrace-e2e-log.')
    t = L.Tap()
    try:
        for prog, args in CASES:
            snap = os.path.join(work, prog + '.btrace')
            log = os.path.join(work, prog + '.log')
            rec = L.record(btrace, snap, [os.path.join(progdir, prog)] + args,
                           env={'BTRACE_QEMU_ARGS':
                                '-d exec,nochain -D ' + log,
                                'BTRACE_QEMU_LOOPS': '0'})
            if rec is None:
                print('1..0 # SKIP qemu-x86_64 is not available')
                return 77
            if not t.ok(os.path.exists(snap) and os.path.exists(log),
                        '%s: snapshot and QEMU log written' % prog):
                t.diag(rec.stderr)
                continue
            rep = L.report_json(btrace, snap, '--blocks', str(NBLOCKS))
            tail = rep['threads'][0]['tail']
            fip = int(rep['fault']['ip'], 16)
            starts = log_starts(log)
            ok, msg = align(tail, fip, starts)
            t.ok(ok and len(tail) >= min(NBLOCKS, 50),
                 '%s: report: last %d blocks match the QEMU log: %s' %
                 (prog, len(tail), msg))
            r = subprocess.run([btrace, 'decode', '--insn', '--last',
                                str(NINSN), snap], capture_output=True,
                               text=True)
            insns = [int(m.group(1), 16) for m in
                     re.finditer(r'^\s+0x([0-9a-f]+) ', r.stdout, re.M)]
            ok, msg = insn_align(insns, fip, starts)
            t.ok(r.returncode == 0 and len(insns) >= NINSN and ok,
                 '%s: decode --insn: %s' % (prog, msg))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    L.run_main(main)
