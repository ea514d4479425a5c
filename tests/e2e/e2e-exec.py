#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A program started through execve() stays traced (TAP).

    e2e-exec.py BTRACE PROGDIR PRELOAD_LIB

The crashing program e2e-crash-fnptr is recorded not directly but through
/bin/sh, three ways:
  1. sh -c 'exec PROG 3'            the launched process execs the program
  2. sh -c 'PROG 3; exit 5'         a forked child execs it; sh goes on
  3. sh -c './script.sh; exit 6'    a "#!/bin/sh" script (run through its
                                    interpreter, under QEMU) execs it
Each snapshot must be the program's, not the shell's: its command is
e2e-crash-fnptr, the fault is in op_add at the marked line, the stack goes
on through run and main, and the exit status is the one sh gives.  A
set-user-ID copy runs natively, and the report says so.  LD_PRELOAD set for
btrace reaches the shell and the program it execs, and never the emulator
(the library says where it was loaded).  Skipped (TAP "1..0 # SKIP") when
this machine's qemu-x86_64 is missing or has no plugin support.
"""
import glob
import subprocess
import os
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

T = e2elib.Tap()
ok = T.ok


def check(btrace, snap, desc, want_line):
    try:
        r = e2elib.report_json(btrace, snap)
    except (RuntimeError, ValueError) as e:
        ok(False, '%s: report: %s' % (desc, e))
        return
    ok(r['process']['command'] == 'e2e-crash-fnptr',
       '%s: the snapshot is the exec\'d program\'s (command %r)' %
       (desc, r['process']['command']))
    ok(r['signal']['name'] == 'SIGSEGV', '%s: SIGSEGV' % desc)
    f = r['fault'] or {}
    ok(f.get('function') == 'op_add' and f.get('line') == want_line,
       '%s: fault in op_add at line %s (%s:%s)' %
       (desc, want_line, f.get('function'), f.get('line')))
    crashed = [t for t in r['threads'] if t['crashed']]
    names = [x['function'] for x in crashed[0]['stack']] if crashed else []
    ok(names[:3] == ['op_add', 'run', 'main'],
       '%s: stack op_add, run, main (%s)' % (desc, names[:4]))


def main():
    btrace, progdir, preload = sys.argv[1:4]
    prog = os.path.join(progdir, 'e2e-crash-fnptr')
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), '..',
                       'qemu', 'progs', 'crash-fnptr.c')
    line = e2elib.marker_line(src)
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    with tempfile.TemporaryDirectory() as d:
        snap = os.path.join(d, 's.btrace')
        p = e2elib.record(btrace, snap, ['/bin/sh', '-c', 'exec %s 3' % prog])
        ok(p.returncode == 128 + 11,
           'sh -c "exec PROG": exit status 139 (%d)' % p.returncode)
        if os.path.exists(snap):
            check(btrace, snap, 'exec in the launched process', line)
        else:
            ok(False, 'exec in the launched process: no snapshot: %s' %
               p.stderr.strip()[-200:])

        # A forked child that execs (its own snapshot, named f-<pid>.btrace),
        # and a "#!" script, through its interpreter, then the program.
        script = os.path.join(d, 'script.sh')
        with open(script, 'w') as f:
            f.write('#!/bin/sh -e\nexec %s "$@"\n' % prog)
        os.chmod(script, 0o755)
        for name, run, status, desc in (
                ('f', prog, 5, 'exec in a forked child'),
                ('x', script, 6, 'script then exec')):
            snap = os.path.join(d, name + '.btrace')
            p = e2elib.record(btrace, snap, ['/bin/sh', '-c',
                                             '%s 3; exit %d' % (run, status)])
            ok(p.returncode == status, '%s: sh\'s status %d (%d)' %
               (desc, status, p.returncode))
            child = glob.glob(os.path.join(d, name + '-*.btrace'))
            ok(len(child) == 1 and not os.path.exists(snap),
               '%s: one snapshot, the child\'s (%s)' %
               (desc, [os.path.basename(x) for x in child]))
            if child:
                check(btrace, child[0], desc, line)

        # A set-user-ID copy runs natively (under QEMU it would lose its
        # privileges): the report says so instead of passing the shell's
        # execve() off as the crash.
        suid = os.path.join(d, 'suid-crash')
        with open(prog, 'rb') as f, open(suid, 'wb') as g:
            g.write(f.read())
        os.chmod(suid, 0o4755)
        snap = os.path.join(d, 'n.btrace')
        p = e2elib.record(btrace, snap, ['/bin/sh', '-c', 'exec %s 3' % suid])
        ok(p.returncode == 128 + 11,
           'set-user-ID program: status 139 (%d)' % p.returncode)
        try:
            r = e2elib.report_json(btrace, snap)
        except (RuntimeError, ValueError) as e:
            r = {}
            ok(False, 'set-user-ID program: report: %s' % e)
        ok(r.get('native_exec') == suid,
           'set-user-ID program: JSON native_exec names it (%r)' %
           r.get('native_exec'))
        text = subprocess.run([btrace, 'report', snap],
                              capture_output=True, text=True).stdout
        ok(any(x.startswith('exec ') and 'ran natively, untraced' in x
               for x in text.splitlines()),
           'set-user-ID program: the text report has the exec line')

        # LD_PRELOAD: the guest's, not the emulator's (an instrumented
        # btrace must not insist on its runtime coming first).
        env = {'LD_PRELOAD': os.path.abspath(preload),
               'ASAN_OPTIONS': (os.environ.get('ASAN_OPTIONS', '') +
                                ':verify_asan_link_order=0').lstrip(':')}
        p = e2elib.record(btrace, os.path.join(d, 'p.btrace'),
                          ['/bin/sh', '-c', 'exec /bin/true'], env=env)
        where = [x.split(' into ', 1)[1] for x in p.stderr.splitlines()
                 if x.startswith('e2e-preload: loaded into ')]
        T.diag('loaded into: %s' % where)
        ok(p.returncode == 0, 'LD_PRELOAD: exit status 0 (%d)' % p.returncode)
        ok(not any('qemu' in os.path.basename(x) for x in where),
           'LD_PRELOAD: not loaded into the emulator')
        ok(any(os.path.basename(x) in ('sh', 'dash', 'bash') for x in where)
           and ('/usr/bin/true' in where or '/bin/true' in where),
           'LD_PRELOAD: loaded into the shell and the program it exec\'d')
    return T.done()


if __name__ == '__main__':
    sys.exit(main())
