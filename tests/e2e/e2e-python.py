#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A real program nobody here wrote (TAP):

    python3 -c 'import ctypes; ctypes.string_at(0)'

recorded with `btrace record -b qemu`.  The report must put the fault in
libc's strlen (any IFUNC variant: QEMU's CPU is not the host's) called from
the ctypes module (_ctypes*.so, libffi in the stack or the calls), and the
stack must match gdb's backtrace of the native crash where both name a
frame (tests/e2e/e2elib.py stack_compare).

    e2e-python.py BTRACE [PYTHON]

PYTHON defaults to the interpreter running this script (resolved to its
ELF file: a pyenv shim is a shell script, which QEMU cannot run).
"""
import os
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as L  # noqa: E402


def main():
    btrace = sys.argv[1]
    py = os.path.realpath(sys.argv[2] if len(sys.argv) > 2
                          else sys.executable)
    argv = [py, '-c', 'import ctypes; ctypes.string_at(0)']
    why = L.qemu_skip_reason()
    if why:
        return L.skip_all(why)
    work = tempfile.mkdtemp(prefix='btrace-e2e-py.')
    t = L.Tap()
    try:
        snap = os.path.join(work, 'py.btrace')
        rec = L.record(btrace, snap, argv)
        if not t.ok(os.path.exists(snap), 'snapshot of %s written' % py):
            t.diag(rec.stderr)
            return t.done()
        rep = L.report_json(btrace, snap, '--calls', '64')
        sig = rep.get('signal') or {}
        fault = rep.get('fault') or {}
        thr = rep['threads'][0]
        stack, calls = thr['stack'], thr['calls']
        t.ok(sig.get('name') == 'SIGSEGV' and sig.get('code') == 1 and
             sig.get('address') == '0x0',
             'SIGSEGV SEGV_MAPERR at 0x0: %s' % sig)
        fn = fault.get('function') or ''
        t.ok(re.match(r'^(__)?strlen(_\w+)?$', fn) is not None and
             L.base(fault.get('module')).startswith('libc.so') and
             fault.get('exact') is True,
             'fault in libc strlen: %s in %s, exact %s' %
             (fn, L.base(fault.get('module')), fault.get('exact')))
        ctypes_re = re.compile(r'^(_ctypes.*\.so|libffi\.so.*)$')
        below = [L.base(f.get('module')) for f in stack[1:4]]
        t.ok(len(below) > 0 and below[0].startswith('_ctypes'),
             'strlen called from the ctypes module: %s' % below)
        t.ok(any(ctypes_re.match(L.base(f.get('module'))) for f in stack) and
             any(ctypes_re.match(L.base(c.get('module')))
                 for c in calls if c.get('module')),
             'ctypes/libffi frames in the stack and the calls')
        if shutil.which('gdb'):
            # All of gdb's frames: btrace's stack must reach main as gdb's
            # does, not only agree on as many frames as it happens to have.
            g = L.gdb_native(argv)
            ok, msg = L.stack_compare(stack, g['frames'], [])
            t.ok(ok, 'stack matches gdb (IFUNC suffix ignored; gdb %s): %s'
                 % (g['frames'][0]['function'] if g['frames'] else None, msg))
        else:
            t.ok(True, 'stack matches gdb # SKIP gdb is not installed')
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    L.run_main(main)
