#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The report names a stack overflow, and only that (TAP).

    e2e-cause.py BTRACE PROGDIR

Records two real programs with the QEMU backend: e2e-crash-stack (unbounded
recursion into the stack's guard) and e2e-crash-fnptr (a call through a NULL
function pointer).  The first report says "cause     stack overflow" and its
JSON "cause" is {"kind": "stack_overflow", ...}; the second has no cause
line and "cause": null.  An overflow with a handler on an alternate stack
dies of SIGSEGV after it, and its report has the limit "stack-layout"; without
a handler there is none.  A handler that runs longer than the history
(fx-crash-panic, --size 16K) leaves the limit "fault-left-history".  Skipped (TAP "1..0 # SKIP") when this machine's qemu-x86_64 is missing or
has no plugin support.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402  (its TAP writer)

T = e2elib.Tap()
ok = T.ok


def record(btrace, prog, out, *args):
    p = subprocess.run([btrace, 'record', '-b', 'qemu', '-q', '-o', out, '--',
                        prog] + list(args), capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stderr


def main():
    btrace, progdir, panic = sys.argv[1:4]
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    with tempfile.TemporaryDirectory() as d:
        so = os.path.join(d, 'stack.btrace')
        rc, err = record(btrace, os.path.join(progdir, 'e2e-crash-stack'), so)
        ok(rc == 128 + 11, 'stack overflow: exit status of a SIGSEGV death (%d)' % rc)
        text = subprocess.run([btrace, 'report', so], capture_output=True,
                              text=True).stdout
        lines = [x for x in text.splitlines() if x.startswith('cause ')]
        print('# %s' % lines)
        ok(len(lines) == 1 and 'stack overflow' in lines[0],
           'text report: one cause line naming a stack overflow')
        ok(all(len(x) <= 80 for x in lines), 'the cause line fits 80 columns')
        r = json.loads(subprocess.run([btrace, 'report', '--json', so],
                                      capture_output=True, text=True).stdout)
        ok(isinstance(r.get('cause'), dict) and
           r['cause'].get('kind') == 'stack_overflow',
           'JSON: cause.kind is stack_overflow')
        ok(r['fault'] is not None and r['fault']['function'] == 'down',
           'the fault is in the recursive function')
        names = [x.get('name') for x in r.get('limits', [])]
        ok('stack-layout' not in names,
           'no handler: no stack-layout limit (%s)' % names)

        # With a handler on an alternate stack that says so and lets the
        # access fault again: SIGSEGV as natively, and the report says
        # that QEMU's stack layout could have changed how a handler judged
        # it.
        sh = os.path.join(d, 'stack-handler.btrace')
        rc, err = record(btrace, os.path.join(progdir, 'e2e-crash-stack'), sh,
                         'handler')
        ok(rc == 128 + 11 and 'stack overflow' in err,
           'handled overflow: the handler ran, then SIGSEGV (%d)' % rc)
        r = json.loads(subprocess.run([btrace, 'report', '--json', sh],
                                      capture_output=True, text=True).stdout)
        names = [x.get('name') for x in r.get('limits', [])]
        ok('stack-layout' in names and r['fault'] and
           r['fault']['function'] == 'down',
           'handled overflow: fault in down, stack-layout limit (%s)' % names)

        # A handler that ran longer than the history (then re-raised): the
        # fault left the buffer; the report says which signal it was and
        # how to keep it, and claims no exact fault.  (With "exit" the
        # process exits 2: no crash snapshot at all.)
        pp = os.path.join(d, 'panic.btrace')
        rc2 = subprocess.run([btrace, 'record', '-b', 'qemu', '-q', '--size',
                              '16K', '-o', pp, '--', panic],
                             capture_output=True, text=True,
                             stdin=subprocess.DEVNULL)
        r = json.loads(subprocess.run([btrace, 'report', '--json', pp],
                                      capture_output=True, text=True).stdout)
        lim = {x.get('name'): x.get('text') for x in r.get('limits', [])}
        txt = lim.get('fault-left-history') or ''
        ok(rc2.returncode == 128 + 11 and 'SIGSEGV' in txt and
           'larger --size' in txt and
           (r['fault'] is None or not r['fault'].get('exact')),
           'fault before the history kept: limit fault-left-history names '
           'SIGSEGV and --size; no exact fault claimed (%r, %s)' %
           (txt[:80], r['fault']))

        fp = os.path.join(d, 'fnptr.btrace')
        rc, err = record(btrace, os.path.join(progdir, 'e2e-crash-fnptr'), fp)
        ok(rc == 128 + 11, 'NULL call: exit status of a SIGSEGV death (%d)' % rc)
        text = subprocess.run([btrace, 'report', fp], capture_output=True,
                              text=True).stdout
        ok(not any(x.startswith('cause ') for x in text.splitlines()),
           'NULL call: no cause line')
        r = json.loads(subprocess.run([btrace, 'report', '--json', fp],
                                      capture_output=True, text=True).stdout)
        ok('cause' in r and r['cause'] is None, 'NULL call: JSON cause is null')
    return T.done()


if __name__ == '__main__':
    sys.exit(main())
