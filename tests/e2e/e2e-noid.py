#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program without a build ID (TAP).

    e2e-noid.py BTRACE NOID NOID_OTHER

NOID and NOID_OTHER are progs/noid.c linked with -Wl,--build-id=none, the
second with other code bytes (-DOTHER) and the same function names.  A copy
of NOID is recorded with the QEMU backend; then:
- its report names the fault, crash_here <- middle <- main, with no image
  gap (the embedded code is tied to the mapping by path, the file on disk by
  its bytes);
- `decode --no-disk` decodes the embedded code alone, without gaps;
- with NOID_OTHER at the recorded path, that file is not used for symbols
  (its bytes are not the ones that ran): no crash_here, and the report
  says why;
- with the recorded path gone and NOID copied next to the snapshot, the
  copy is found by name and used again.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

T = e2elib.Tap()
ok = T.ok


def report(btrace, snap):
    p = subprocess.run([btrace, 'report', '--json', snap], capture_output=True,
                       text=True)
    try:
        return p.returncode, json.loads(p.stdout), p.stderr
    except ValueError:
        return p.returncode, None, p.stderr


def names(r):
    thr = [t for t in r.get('threads', []) if t.get('crashed')]
    return [f.get('function') for f in (thr[0].get('stack', []) if thr else [])]


def main():
    btrace, noid, other = sys.argv[1:4]
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    with tempfile.TemporaryDirectory() as d:
        run = os.path.join(d, 'run')
        keep = os.path.join(d, 'keep')
        os.mkdir(run)
        os.mkdir(keep)
        prog = os.path.join(run, 'noid')
        shutil.copy(noid, prog)
        snap = os.path.join(keep, 'noid.btrace')
        p = subprocess.run([btrace, 'record', '-b', 'qemu', '-q', '-o', snap,
                            '--', prog], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
        ok(p.returncode == 128 + 11, 'recorded: died of SIGSEGV (%d)' %
           p.returncode)
        rc, r, err = report(btrace, snap)
        ok(rc == 0 and r is not None, 'report --json: exit 0, valid JSON')
        r = r or {}
        fault = r.get('fault') or {}
        st = names(r)
        print('# fault %s, stack %s' % (fault.get('function'), st[:4]))
        ok(fault.get('function') == 'crash_here' and fault.get('exact'),
           'the fault is crash_here, exact')
        ok(st[:3] == ['crash_here', 'middle', 'main'],
           'the stack is crash_here <- middle <- main')
        notes = json.dumps(r.get('image_notes', []))
        ok('noid' not in notes, 'no image note about the program: %s' %
           notes[:200])

        p = subprocess.run([btrace, 'decode', '--calls', '--no-disk', snap],
                           capture_output=True, text=True)
        ok(p.returncode == 0 and 'crash_here' in p.stdout and
           'missing-image' not in p.stdout,
           'decode --no-disk: the embedded code decodes without a gap')

        shutil.copy(other, prog)
        rc, r, err = report(btrace, snap)
        r = r or {}
        fault = r.get('fault') or {}
        notes = json.dumps(r.get('image_notes', []))
        ok(rc == 0 and fault.get('function') != 'crash_here' and
           'crash_here' not in names(r),
           'another build at the recorded path is not used for symbols '
           '(fault %s)' % fault.get('function'))
        ok('no file without a build ID that holds the code' in notes,
           'the report says why the file was not used')
        ok(fault.get('ip') is not None and fault.get('exact'),
           'the fault address is still known and exact')

        os.unlink(prog)
        shutil.copy(noid, os.path.join(keep, 'noid'))
        rc, r, err = report(btrace, snap)
        r = r or {}
        ok(rc == 0 and (r.get('fault') or {}).get('function') ==
           'crash_here' and names(r)[:3] == ['crash_here', 'middle', 'main'],
           'the same bytes next to the snapshot are found by name')
    return T.done()


if __name__ == '__main__':
    sys.exit(main())
