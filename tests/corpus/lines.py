#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Source lines of the stack against gdb's line table (TAP).

    lines.py BTRACE BUILDDIR

Two corpus programs (progs/cxx_fn.cc `lambda` and progs/tailcall.c, -O2,
built without PIE so that an address in the report is an address in the
file) are recorded with `btrace record --snapshot --backend auto` and
reported (`--json`).  For every physical frame of the crashed thread in the
program's own file that no inline frame shares (an inline frame's caller is
shown at its call site, not at the line table's line), gdb's
`info line *ADDRESS` on the file must say the same: the same line, or no
line when btrace gives none.  The frames include `_start` (crt code without
debug info, in a gap between the units' address ranges, where libdwfl
answers with the unit before it and the last line of that unit: a line
that is not there).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'tests', 'e2e'))
import e2elib as L  # noqa: E402

PROGS = [('cxx-lines', 'g++', 'cxx_fn.cc', ['lambda']),
         ('c-lines', 'gcc', 'tailcall.c', [])]


def gdb_lines(exe, addrs):
    """{address: (file basename, line) or None} from gdb's line table."""
    cmd = ['gdb', '-batch', '-nx']
    for a in addrs:
        cmd += ['-ex', 'info line *0x%x' % a]
    r = subprocess.run(cmd + [exe], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    out = {}
    it = iter(addrs)
    for ln in r.stdout.splitlines():
        m = re.match(r'^Line (\d+) of "([^"]+)"', ln)
        if m:
            out[next(it)] = (os.path.basename(m.group(2)), int(m.group(1)))
        elif ln.startswith('No line number information'):
            out[next(it)] = None
    return out


def main():
    btrace, bindir = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    t = L.Tap()
    for tool in ('gdb', 'gcc', 'g++'):
        if not shutil.which(tool):
            print('1..0 # SKIP %s is not installed' % tool)
            return 0
    why = L.qemu_skip_reason()
    if why:
        print('1..0 # SKIP %s' % why)
        return 0
    os.makedirs(bindir, exist_ok=True)
    work = tempfile.mkdtemp(prefix='btrace-lines.')
    try:
        for name, cc, src, args in PROGS:
            exe = os.path.join(bindir, name)
            subprocess.run([cc, '-O2', '-g', '-fno-omit-frame-pointer',
                            '-no-pie', '-o', exe,
                            os.path.join(HERE, 'progs', src)], check=True,
                           stdin=subprocess.DEVNULL)
            snap = os.path.join(work, name + '.btrace')
            subprocess.run([btrace, 'record', '--snapshot', '--backend',
                            'auto', '-o', snap, '--', exe] + args,
                           capture_output=True, cwd=work, timeout=900,
                           stdin=subprocess.DEVNULL)
            if not t.ok(os.path.exists(snap), '%s: a snapshot' % name):
                continue
            r = subprocess.run([btrace, 'report', '--json', snap],
                               capture_output=True, text=True, timeout=300)
            stack = []
            for th in json.loads(r.stdout).get('threads', []):
                if th.get('crashed'):
                    stack = th.get('stack') or []
            ips = [int(f['ip'], 16) for f in stack]
            own = [f for f in stack
                   if not f.get('inlined') and
                   os.path.realpath(f.get('module') or '') ==
                   os.path.realpath(exe) and
                   ips.count(int(f['ip'], 16)) == 1]
            t.ok(any(f.get('function') == '_start' for f in own) and
                 any(f.get('function') == 'main' for f in own),
                 '%s: the frames compared include main and _start (%s)' %
                 (name, ' < '.join(str(f.get('function')) for f in own)))
            g = gdb_lines(exe, [int(f['ip'], 16) for f in own])
            for f in own:
                ip = int(f['ip'], 16)
                want = g.get(ip, 'gdb said nothing')
                have = (os.path.basename(f['file']), f['line']) \
                    if f.get('file') and f.get('line') else None
                t.ok(have == want, '%s: %s at 0x%x: btrace %s, gdb %s' % (
                    name, f.get('function'), ip, have, want))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
