#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The origin of the bad value in the README demo (TAP).

    e2e-origin.py BTRACE CRASHDEMO

Records the demo program (fixtures/demo/crashdemo.c) with the QEMU backend:
greet() dereferences the NULL that find_user() returned for an unknown
user.  The report's origin says so: the faulting instruction's base
register rax is 0x0, because find_user returned it into greet at
crashdemo.c:38, from its `mov eax, 0` at crashdemo.c:33 (the source, a
constant).  The text report says the same, and `btrace decode --insn
--values` shows rax = 0x0 after that instruction and at the fault.  The
snapshot holds the crashed thread's stack (`btrace info --json`: one
memory range of the thread, its size and its stored size; the process's
other memory, tid 0, is e2e-memory's).
Skipped (TAP "1..0 # SKIP") when this machine's qemu-x86_64 is missing or
has no plugin support.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

T = e2elib.Tap()
ok = T.ok


def main():
    btrace, demo = sys.argv[1:3]
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    with tempfile.TemporaryDirectory() as d:
        snap = os.path.join(d, 'demo.btrace')
        p = e2elib.record(btrace, snap, [demo])
        ok(p.returncode == 128 + 11, 'the demo dies of SIGSEGV (%d)' % p.returncode)
        info = json.loads(subprocess.run([btrace, 'info', '--json', snap],
                                         capture_output=True, text=True).stdout)
        mem = info.get('memory') or []
        stack = [m for m in mem if m['tid'] != 0]
        T.diag('memory: %s' % stack)
        ok(len(stack) == 1 and stack[0]['bytes'] > 0 and
           info['memory_stack_bytes'] == stack[0]['bytes'] and
           0 < info['memory_stack_stored_bytes'] <= info['memory_stored_bytes'],
           'the snapshot holds the stack at the fault (btrace info: %s bytes, '
           '%s stored)' % (info.get('memory_stack_bytes'),
                           info.get('memory_stack_stored_bytes')))
        rep = e2elib.report_json(btrace, snap)
        o = rep.get('origin')
        T.diag('origin: %s' % o)
        ok(o is not None, 'the report has an origin')
        if not o:
            return T.done()
        ok(o['operand'] == 'rax' and o['role'] == 'base',
           'the operand is the base register rax (%s, %s)' % (o['operand'], o['role']))
        ok(o['value'] == '0x0', 'its value at the fault is 0x0 (%s)' % o['value'])
        ch = o['chain']
        ok(len(ch) == 2, 'two links: the return and the constant (%d)' % len(ch))
        if len(ch) == 2:
            r, c = ch
            ok(r['kind'] == 'return' and r['function'] == 'find_user' and
               r['instruction'] == 'ret' and r['value'] == '0x0',
               'newest: find_user returned 0x0 (%s)' % r)
            ok('into greet (crashdemo.c:38)' in r['what'],
               'into greet at crashdemo.c:38 (%s)' % r['what'])
            ok(c['kind'] == 'constant' and c['function'] == 'find_user' and
               c['line'] == 33 and os.path.basename(c['file'] or '') == 'crashdemo.c' and
               c['instruction'] == 'mov eax, 0' and c['value'] == '0x0',
               'the source: mov eax, 0 at crashdemo.c:33 (%s)' % c)
        text = subprocess.run([btrace, 'report', snap], capture_output=True,
                              text=True).stdout
        lines = text.splitlines()
        i = next((k for k, x in enumerate(lines) if x.startswith('origin ')), -1)
        T.diag('\n'.join(lines[i:i + 5]) if i >= 0 else text)
        ok(i >= 0 and 'rax = 0x0' in lines[i] and
           'find_user returned rax = 0x0 into greet (crashdemo.c:38)' in '\n'.join(lines[i:i + 5]) and
           'crashdemo.c:33)  mov eax, 0' in '\n'.join(lines[i:i + 5]),
           'the text report says the same')
        v = subprocess.run([btrace, 'decode', '--insn', '--values', snap],
                           capture_output=True, text=True)
        vl = v.stdout.splitlines()
        mov = [x for x in vl if 'mov eax, 0' in x and 'find_user' in x]
        ok(v.returncode == 0 and mov and mov[-1].rstrip().endswith('-> rax=0x0'),
           'decode --insn --values: rax=0x0 after mov eax, 0 (%s)' % (mov[-1:] or v.stderr))
        at = [x for x in vl if x.strip().startswith('at the fault:')]
        ok(at and ' rax=0x0 ' in at[-1] + ' ',
           'decode --insn --values: rax=0x0 at the fault (%s)' % at[-1:])
    return T.done()


if __name__ == '__main__':
    e2elib.run_main(main)
