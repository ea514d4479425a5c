#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A call through a NULL function pointer, against gdb (TAP).

    e2e-null-call.py BTRACE PROG SRC

PROG (tests/e2e/progs/null-call.c, SRC) calls a NULL handler from
dispatch().  gdb on the native run stops at pc 0 with dispatch as frame
#1, at the line of the call.  btrace's report (QEMU backend) must give
the fault at 0x0 exactly (the registers at the signal say so), the
caller's frame at that function and line, and the text report must say
where the call to 0x0 came from; the origin is the call's target
operand, loaded from the table entry gdb names.
"""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

T = e2elib.Tap()
ok = T.ok


def main():
    btrace, prog, src = [os.path.abspath(a) for a in sys.argv[1:4]]
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    if not e2elib.shutil.which('gdb'):
        return e2elib.skip_all('gdb is not installed (the native oracle)')
    line = e2elib.marker_line(src, '/* e2e: call */')
    with tempfile.TemporaryDirectory() as d:
        g = e2elib.gdb_native([prog], cwd=d)
        pc = re.search(r'^#0\s+0x0+ in \?\? \(\)', g['text'], re.M)
        fr = g['frames']
        if not ok(pc and len(fr) >= 2 and fr[1]['function'] == 'dispatch'
                  and fr[1]['line'] == line,
                  'gdb: pc 0, frame #1 dispatch at line %d (%s)' %
                  (line, fr[:2])):
            T.diag(g['text'][-1500:])
        snap = os.path.join(d, 'n.btrace')
        p = e2elib.record(btrace, snap, [prog], cwd=d)
        ok(p.returncode == 128 + 11, 'SIGSEGV passes through (%d)' %
           p.returncode)
        rep = e2elib.report_json(btrace, snap)
        f = rep.get('fault') or {}
        ok(f.get('ip') == '0x0' and f.get('exact') is True,
           'the fault is at 0x0, exact, as gdb\'s pc (%s, exact %s, %s)' %
           (f.get('ip'), f.get('exact'), f.get('how')))
        st = next((t for t in rep['threads'] if t.get('crashed')),
                  {}).get('stack') or []
        ok(len(st) >= 2 and st[0]['ip'] == '0x0' and
           st[1]['function'] == fr[1]['function'] and
           st[1]['line'] == fr[1]['line'],
           'frame #1 is gdb\'s: %s at line %s (%s)' %
           (fr[1]['function'] if len(fr) > 1 else None,
            fr[1]['line'] if len(fr) > 1 else None, st[:2]))
        text = subprocess.run([btrace, 'report', snap], capture_output=True,
                              text=True).stdout
        m = re.search(r'^\s+called here from (dispatch\+0x[0-9a-f]+) at '
                      r'(\S+):(\d+)', text, re.M)
        ok(m and m.group(2) == os.path.basename(src) and
           int(m.group(3)) == line,
           'the text report names the call site: %s' %
           (m.group(0).strip() if m else None))
        ok('limits    fault-not-exact' not in text,
           'no fault-not-exact limit')
        # the origin: the call's memory operand, loaded from the table
        # entry gdb names (its symbol and offset, the static file's)
        gs = subprocess.run(['gdb', '-nx', '-batch', '-ex',
                             'info symbol &commands[1].run', prog],
                            capture_output=True, text=True).stdout
        m = re.search(r'^(\w+) \+ (\d+) in section', gs, re.M)
        want = m and '%s+%#x' % (m.group(1), int(m.group(2)))
        o = rep.get('origin') or {}
        ch = o.get('chain') or []
        ok(want and o.get('role') == 'target' and o.get('value') == '0x0'
           and ch and ch[0].get('function') == 'dispatch' and
           ch[0].get('line') == line and want in (ch[-1].get('what') or ''),
           'origin: the call\'s target operand, 0x0 loaded from %s as gdb '
           'names it (%s)' % (want, o))
    return T.done()


if __name__ == '__main__':
    sys.exit(main())
