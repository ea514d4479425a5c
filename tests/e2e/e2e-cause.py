#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The report names a stack overflow, and only that (TAP).

    e2e-cause.py BTRACE PROGDIR

Records two real programs with the QEMU backend: e2e-crash-stack (unbounded
recursion into the stack's guard) and e2e-crash-fnptr (a call through a NULL
function pointer).  The first report says "cause     stack overflow" and its
JSON "cause" is {"kind": "stack_overflow", ...}; the second has no cause
line and "cause": null.  Skipped (TAP "1..0 # SKIP") when this machine's qemu-x86_64 is missing or
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


def record(btrace, prog, out):
    p = subprocess.run([btrace, 'record', '-b', 'qemu', '-q', '-o', out, '--',
                        prog], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    return p.returncode, p.stderr


def main():
    btrace, progdir = sys.argv[1:3]
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
