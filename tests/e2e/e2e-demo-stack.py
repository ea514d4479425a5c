#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The README demo's stack, against gdb on the native run (TAP).

    e2e-demo-stack.py BTRACE CRASHDEMO README

Records the demo program (fixtures/demo/crashdemo.c) with the QEMU backend
and compares the stack of the default report (a tail-only decode) with
gdb's backtrace of the native run, past main (`set backtrace past-main
on`: down to _start):

- the report's frames are gdb's outermost-last frames, in order, from the
  fault down (a prefix: the tail decode may stop early);
- where the report's stack ends above gdb's outermost frame, the line
  under its last frame says how much older trace the tail decode did not
  read and that `btrace report --full` decodes it (not "callers unknown":
  the callers are in the snapshot);
- `btrace report --full` shows all of gdb's frames, down to _start;
- README.md's sample report has the same stack section as the report of
  this build (addresses, offsets and byte counts masked).
Skipped when qemu-x86_64 or gdb is missing.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

T = e2elib.Tap()
ok = T.ok
_LINE = re.compile(r'^  #\d+\s+0x[0-9a-f]+ (\S+)')


def gdb_frames(demo, cwd):
    r = subprocess.run(['gdb', '-nx', '-batch', '-ex',
                        'set backtrace past-main on', '-ex', 'run', '-ex',
                        'bt', '--args', demo], cwd=cwd, capture_output=True,
                       text=True, stdin=subprocess.DEVNULL, timeout=300)
    names = []
    for ln in r.stdout.splitlines():
        m = re.match(r'^#\d+\s+(?:0x[0-9a-f]+ in )?(\S+) \(', ln)
        if m:
            names.append(m.group(1))
    return names, r.stdout + r.stderr


def stack_section(text):
    """The lines of the 'stack at the fault' section of a text report."""
    out, on = [], False
    for ln in text.splitlines():
        if ln.startswith('stack at '):
            on = True
        elif on and not ln.strip():
            break
        if on:
            out.append(ln)
    return out


def names(section):
    res = []
    for ln in section:
        m = _LINE.match(ln)
        if m:
            res.append(re.sub(r'\+0x[0-9a-f]+$', '', m.group(1)))
    return res


def same(rep, gdb):
    """A report name (cut to the column with '~') is gdb's name."""
    alias = e2elib.ALIASES.get(gdb, gdb)
    if rep.endswith('~'):
        return gdb.startswith(rep[:-1]) or alias.startswith(rep[:-1])
    return rep in (gdb, alias)


def prefix_of(rep, gdb):
    return len(rep) <= len(gdb) and all(same(a, b) for a, b in zip(rep, gdb))


def mask(lines):
    return [re.sub(r'\d+ bytes', 'N bytes',
                   re.sub(r'\+0x[0-9a-f]+', '+OFF',
                          re.sub(r'0x[0-9a-f]{6,}', 'ADDR', ln)))
            for ln in lines]


def main():
    btrace, demo, readme = [os.path.abspath(a) for a in sys.argv[1:4]]
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    if not shutil.which('gdb'):
        return e2elib.skip_all('gdb is not installed (the native oracle)')
    with tempfile.TemporaryDirectory() as d:
        want, gtext = gdb_frames(demo, d)
        if not ok(want[:3] == ['greet', 'serve', 'main'] and
                  want[-1] == '_start',
                  'gdb: greet, serve, main ... _start natively (%s)' % want):
            T.diag(gtext[-1500:])
        snap = os.path.join(d, 'demo.btrace')
        # as tools/demo.sh runs it, from a shell: without meson test's
        # LD_LIBRARY_PATH and MALLOC_PERTURB_ (which change the work of
        # the dynamic loader and of malloc, so the trace)
        env = {k: v for k, v in os.environ.items()
               if k not in ('LD_LIBRARY_PATH', 'MALLOC_PERTURB_')}
        p = subprocess.run([btrace, 'record', '-b', 'qemu', '-q', '-o', snap,
                            '--', demo], env=env, cwd=d, capture_output=True,
                           text=True, stdin=subprocess.DEVNULL, timeout=600)
        ok(p.returncode == 128 + 11, 'the demo dies of SIGSEGV (%d)' %
           p.returncode)
        text = subprocess.run([btrace, 'report', snap], capture_output=True,
                              text=True).stdout
        full = subprocess.run([btrace, 'report', '--full', snap],
                              capture_output=True, text=True).stdout
        sec = stack_section(text)
        got = names(sec)
        ok(got and prefix_of(got, want),
           'the default stack is gdb\'s from the fault down (%s)' % got)
        tail = ' '.join(ln.strip() for ln in sec[len(got) + 1:])
        if len(got) < len(want):
            ok('callers unknown' not in tail and '--full' in tail and
               re.search(r'older \d+(\.\d)? (bytes|KiB|MiB) of trace', tail),
               'the stack ends above gdb\'s %s: it says what the tail '
               'decode did not read and names --full (%s)' %
               (want[-1], tail))
        else:
            ok('--full' not in tail, 'the whole stack: no --full hint')
        fgot = names(stack_section(full))
        ok(len(fgot) == len(want) and prefix_of(fgot, want),
           '--full: all of gdb\'s frames, down to _start (%s)' % fgot)
        with open(readme) as f:
            rd = stack_section(f.read())
        ok(rd and mask(rd) == mask(sec),
           'README.md\'s sample stack is this build\'s report')
        if mask(rd) != mask(sec):
            T.diag('README:\n%s\nreport:\n%s' % ('\n'.join(rd),
                                                  '\n'.join(sec)))
    return T.done()


if __name__ == '__main__':
    sys.exit(main())
