#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Handlers that do not simply re-raise, and a signal sent from outside,
under the QEMU backend (TAP).

    e2e-handlers.py BTRACE SIGLJ NODEFER LOOP

- SIGLJ (tests/decode/progs/crash-siglj.c): a SIGSEGV handler on a
  sigaltstack siglongjmps away, the program later calls abort(): the fault
  is the SIGSEGV in poke (exact, or its block named), the stack at it is
  poke <- outer <- main without the handler, the handler is in
  after_fault, the death is SIGABRT.
- NODEFER (crash-nodefer.c): SA_NODEFER, the handler re-raises and the
  process dies in it: the same, the death SIGSEGV.
- LOOP (crash-loop.c) spinning, killed with SIGSEGV from here: a stack
  and a tail (where the thread was), the fault not claimed as a kernel
  fault.
"""
import os
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as L  # noqa: E402

T = L.Tap()


def fns(frames):
    return [f.get('function') for f in frames]


def handler_case(btrace, work, name, prog, death):
    snap = os.path.join(work, name + '.btrace')
    rec = L.record(btrace, snap, [prog])
    if not T.ok(rec is not None and os.path.exists(snap),
                '%s: snapshot written' % name):
        if rec is not None:
            T.diag(rec.stderr)
        return
    r = L.report_json(btrace, snap)
    f = r['fault'] or {}
    th = r['threads'][0]
    blk = f.get('block') or {}
    T.ok(f.get('function') == 'poke' and
         (f.get('exact') is True or blk.get('function') == 'poke'),
         '%s: the fault is in poke (exact %s, %s)' %
         (name, f.get('exact'), f.get('how')))
    T.ok(fns(th['stack'])[:3] == ['poke', 'outer', 'main'] and
         not any(x['signal'] for x in th['stack']),
         '%s: stack at the fault %s' % (name, fns(th['stack'])))
    after = th.get('after_fault') or {}
    T.ok('handler' in fns(after.get('calls', [])) and
         'handler' not in fns(th['tail']) and
         (th['tail'] or [{}])[-1].get('fault') is True,
         '%s: the handler is after the fault, the tail ends at the fault'
         % name)
    d = r['death'] or {}
    T.ok((d.get('signal') or {}).get('name') == death and
         d.get('after_fault') is True,
         '%s: died of %s after the fault' %
         (name, (d.get('signal') or {}).get('name')))


def kill_case(btrace, work, prog):
    snap = os.path.join(work, 'kill.btrace')
    p = subprocess.Popen([btrace, 'record', '-b', 'qemu', '-q', '-o', snap,
                          '--', prog, '2000000000'],
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    guest = 0
    for _ in range(100):   # the emulator: btrace's child running QEMU
        time.sleep(0.1)    # (btrace's janitor is a child too)
        kids = L.emulators(p.pid)
        if kids:
            guest = kids[0]
            break
    time.sleep(3)
    if guest:
        os.kill(guest, signal.SIGSEGV)   # our own child, by its pid
    try:
        p.communicate(timeout=300)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
    if not T.ok(guest and os.path.exists(snap),
                'kill -SEGV: snapshot written (emulator pid %d)' % guest):
        return
    r = L.report_json(btrace, snap)
    th = r['threads'][0]
    f = r['fault'] or {}
    st = fns(th['stack'])
    T.ok(st and 'main' in st and th['tail'],
         'kill -SEGV: where the thread was: %s, %d tail entries' %
         (st, len(th['tail'])))
    sg = r['signal'] or {}
    T.ok(f.get('kind') == 'sent' or
         (sg.get('code') is None and 'unknown' in (f.get('how') or '')),
         'kill -SEGV: not claimed as a kernel fault (kind %s, code %s, %s)'
         % (f.get('kind'), sg.get('code'), f.get('how')))


def main():
    btrace, siglj, nodefer, loop = (os.path.abspath(a) for a in sys.argv[1:5])
    if not L.qemu_available():
        print('1..0 # SKIP qemu-x86_64 is not installed')
        return 0
    work = tempfile.mkdtemp(prefix='btrace-e2e-handlers.')
    try:
        handler_case(btrace, work, 'siglongjmp-abort', siglj, 'SIGABRT')
        handler_case(btrace, work, 'nodefer', nodefer, 'SIGSEGV')
        kill_case(btrace, work, loop)
    finally:
        subprocess.run(['rm', '-rf', work])
    return T.done()


if __name__ == '__main__':
    L.run_main(main)
