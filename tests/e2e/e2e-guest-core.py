#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Exact fault registers without a core in the working directory (TAP).

    e2e-guest-core.py BTRACE PROG

PROG is e2e-crash-core (tests/e2e/progs/crash-core.c): a NULL load in the
middle of a block (consume+N, N > 0).  It is recorded with the QEMU backend
where a guest core in the working directory cannot be written: a hard
RLIMIT_CORE of 0, a working directory deleted by the program, a working
directory the user cannot write, the main thread gone through
pthread_exit() before a worker faults; also through a re-executed emulator
(sh -c 'exec PROG') and in a forked child.  Each report must give the
faulting instruction exactly as gdb sees it on the native run (function
and offset, si_code, address) and say exact; the working directory must
hold nothing new but the snapshot, and TMPDIR nothing at all.

A program with 20,000 mappings (a guest core of as many program headers)
gets the same exact fault, and its text report says no more than its
JSON about a signal handler (none ran).

A stack overflow must be SEGV_MAPERR, with the fault address at the stack
pointer as natively (gdb's $_siginfo).
--keep-core keeps the guest core next to the snapshot, mode 0600.  The
guest never sees the emulator's preload library or its directory variable.
"""
import json
import os
import pwd
import re
import resource
import shutil
import stat
import subprocess
import sys
import tempfile

def qemu_without_plugins():
    """Why this machine's qemu-x86_64 cannot run the plugin, or None:
    decided from the machine (the emulator's own -h), not from btrace's
    messages (a regression there must fail, not skip)."""
    q = os.environ.get('BTRACE_QEMU') or shutil.which('qemu-x86_64')
    if not q:
        return 'qemu-x86_64 is not installed'
    h = subprocess.run([q, '-h'], capture_output=True, text=True,
                       stdin=subprocess.DEVNULL)
    if '-plugin' not in h.stdout + h.stderr:
        return '%s has no TCG plugin support (-plugin)' % q
    return None


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

T = e2elib.Tap()
ok = T.ok
SECRET = 'btrace-secret-5f0c1e'


def gdb_fault(argv, cwd):
    """Native run under gdb: function, offset, si_code, si_addr, rsp."""
    cmd = ['gdb', '-nx', '-batch', '-ex', 'run', '-ex', 'info symbol $pc',
           '-ex', 'p $_siginfo.si_code',
           '-ex', 'p/x (unsigned long)$_siginfo._sifields._sigfault.si_addr',
           '-ex', 'p/x $rsp', '--args'] + argv
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300,
                       env=dict(os.environ, BTRACE_TEST_SECRET=SECRET))
    out = r.stdout + r.stderr
    g = {'text': out}
    m = re.search(r'^(\S+)(?: \+ (\d+))? in section', out, re.M)
    g['function'] = m and m.group(1)
    g['offset'] = m and int(m.group(2) or 0)
    m = re.search(r'^\$1 = (-?\d+)', out, re.M)
    g['code'] = m and int(m.group(1))
    m = re.search(r'^\$2 = (0x[0-9a-f]+)', out, re.M)
    g['addr'] = m and int(m.group(1), 16)
    m = re.search(r'^\$3 = (0x[0-9a-f]+)', out, re.M)
    g['rsp'] = m and int(m.group(1), 16)
    return g


def listing(d):
    return sorted(os.listdir(d)) if os.path.isdir(d) else None


class Run:
    def __init__(self, btrace, argv, snap, cwd, tmpdir, user=None,
                 hard_core0=False, extra=(), core=None, env=None):
        cmd = [btrace, 'record', '-b', 'qemu', '-q', '-o', snap] + \
            list(extra) + ['--'] + argv
        if user:
            cmd = ['setpriv', '--reuid=' + user, '--regid=' + user_group(user),
                   '--clear-groups', '--'] + cmd
        env = dict(env or os.environ, TMPDIR=tmpdir,
                   BTRACE_TEST_SECRET=SECRET)

        def pre():
            if hard_core0:
                resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
            if core:
                resource.setrlimit(resource.RLIMIT_CORE, core)

        p = subprocess.run(cmd, cwd=cwd, env=env, preexec_fn=pre,
                           capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=600)
        self.rc = p.returncode
        self.stdout = p.stdout
        self.stderr = p.stderr
        self.report = None
        if os.path.exists(snap):
            r = subprocess.run([btrace, 'report', '--json', snap],
                               capture_output=True, text=True)
            if r.returncode == 0:
                self.report = json.loads(r.stdout)
            else:
                self.stderr += r.stderr


def user_group(user):
    return str(pwd.getpwnam(user).pw_gid)


def check_exact(name, run, g):
    """The report's fault against gdb's native view."""
    rep = run.report or {}
    f = rep.get('fault') or {}
    s = rep.get('signal') or {}
    ok(run.rc == 128 + 11, '%s: the program\'s SIGSEGV status passes through '
       '(%d)' % (name, run.rc))
    if not ok(run.report is not None, '%s: a snapshot that reports' % name):
        T.diag(run.stderr[-800:])
        return
    ok(g['function'] == 'consume' and g['offset'] > 0,
       '%s: gdb: the native fault is inside the block, %s+%s' %
       (name, g['function'], g['offset']))
    ok(f.get('function') == g['function'] and f.get('offset') == g['offset'],
       '%s: fault at %s+%s, gdb %s+%s' % (name, f.get('function'),
                                         f.get('offset'), g['function'],
                                         g['offset']))
    ok(f.get('exact') is True, '%s: the fault is exact (%s)' %
       (name, f.get('how')))
    ok(s.get('code') == g['code'], '%s: si_code %s, gdb %s' %
       (name, s.get('code'), g['code']))
    addr = s.get('address')
    ok(addr is not None and int(addr, 16) == g['addr'],
       '%s: fault address %s, gdb %#x' % (name, addr, g['addr'] or 0))


def check_no_handler(name, btrace, snap, run):
    """No handler ran: the JSON's death says so, and the text agrees."""
    d = (run.report or {}).get('death') or {}
    t = subprocess.run([btrace, 'report', snap], capture_output=True,
                       text=True).stdout
    ok(d.get('after_fault') is False and d.get('how') == 'at the fault',
       '%s: JSON: death at the fault, no handler ran (%s)' % (name, d))
    ok(t.startswith('btrace report:') and 'handler' not in t,
       '%s: the text report mentions no signal handler either' % name)
    for line in t.splitlines():
        if 'handler' in line or line.startswith(('death', 'limits')):
            T.diag(line)


def main():
    btrace, prog = [os.path.abspath(a) for a in sys.argv[1:3]]
    if not e2elib.qemu_available():
        print('1..0 # SKIP qemu-x86_64 is not installed')
        return 0
    if not shutil.which('gdb'):
        print('1..0 # SKIP gdb is not installed (the native oracle)')
        return 0
    root = os.geteuid() == 0
    try:
        pwd.getpwnam('nobody')
        have_nobody = root and shutil.which('setpriv') is not None
    except KeyError:
        have_nobody = False

    with tempfile.TemporaryDirectory() as top:
        os.chmod(top, 0o755)
        gcwd = os.path.join(top, 'native')
        os.mkdir(gcwd)
        g = gdb_fault([prog, 'plain'], gcwd)
        gp = gdb_fault([prog, 'pexit'], gcwd)
        gr = gdb_fault([prog, 'rmcwd'], gcwd)
        gm = gdb_fault([prog, 'manymaps'], gcwd)
        for name, x in (('plain', g), ('pexit', gp), ('rmcwd', gr),
                        ('manymaps', gm)):
            if x['function'] is None or x['code'] is None:
                T.diag(x['text'][-1500:])

        cases = [('plain', ['plain'], g, {}),
                 ('hard RLIMIT_CORE 0', ['plain'], g, {'hard_core0': True}),
                 ('deleted cwd', ['rmcwd'], gr, {}),
                 ('main thread pthread_exit', ['pexit'], gp, {}),
                 ('20,000 mappings', ['manymaps'], gm, {})]
        n = 0
        for name, args, oracle, kw in cases:
            n += 1
            cwd = os.path.join(top, 'cwd%d' % n)
            tmp = os.path.join(top, 'tmp%d' % n)
            os.mkdir(cwd)
            os.mkdir(tmp, 0o700)
            snap = os.path.join(cwd, 'snap.btrace')
            why = qemu_without_plugins() if n == 1 else None
            if why:
                print('1..0 # SKIP %s' % why)
                return 0
            run = Run(btrace, [prog] + args, snap, cwd, tmp, **kw)
            check_exact(name, run, oracle)
            if args == ['manymaps']:
                check_no_handler(name, btrace, snap, run)
            ok(listing(cwd) == ['snap.btrace'],
               '%s: the working directory holds only the snapshot (%s)' %
               (name, listing(cwd)))
            ok(listing(tmp) == [], '%s: TMPDIR is left empty (%s)' %
               (name, listing(tmp)))

        # A working directory the user cannot write.
        if have_nobody or not root:
            cwd = os.path.join(top, 'ro')
            out = os.path.join(top, 'out')
            tmp = os.path.join(top, 'tmp-ro')
            os.mkdir(cwd, 0o555)
            os.chmod(cwd, 0o555)
            os.mkdir(out)
            os.mkdir(tmp)
            if root:
                for d in (out, tmp):
                    os.chown(d, pwd.getpwnam('nobody').pw_uid,
                             pwd.getpwnam('nobody').pw_gid)
            os.chmod(tmp, 0o700)
            snap = os.path.join(out, 'snap.btrace')
            # nobody may not enter the build tree (a clone in a private
            # directory): it runs copies made for it
            with e2elib.ForOthers(btrace, prog) as o:
                run = Run(o.path(btrace), [o.path(prog), 'plain'], snap, cwd,
                          tmp, user='nobody' if root else None, env=o.env())
            check_exact('read-only cwd', run, g)
            ok(listing(cwd) == [], 'read-only cwd: still empty (%s)' %
               listing(cwd))
            ok(listing(out) == ['snap.btrace'],
               'read-only cwd: only the snapshot where -o said (%s)' %
               listing(out))
            ok(listing(tmp) == [], 'read-only cwd: TMPDIR is left empty')
        else:
            ok(True, 'read-only cwd # SKIP needs root with setpriv and '
               'the user nobody, or a non-root user')

        # Through the emulator re-executed at an execve(), and in a forked
        # child of a shell.
        for name, script, want in (
                ('re-executed emulator', 'exec "$0" plain', 'snap.btrace'),
                ('forked child', '"$0" plain; exit 0', None)):
            n += 1
            cwd = os.path.join(top, 'cwd%d' % n)
            tmp = os.path.join(top, 'tmp%d' % n)
            os.mkdir(cwd)
            os.mkdir(tmp, 0o700)
            snap = os.path.join(cwd, 'snap.btrace')
            run = Run(btrace, ['/bin/sh', '-c', script, prog], snap, cwd, tmp)
            names = listing(cwd)
            if want is None:
                kids = [x for x in names if re.match(r'snap-\d+\.btrace$', x)]
                want = kids[0] if len(kids) == 1 else None
                ok(run.rc == 0, '%s: the shell\'s status 0 passes through '
                   '(%d)' % (name, run.rc))
                if want:
                    rr = subprocess.run([btrace, 'report', '--json',
                                         os.path.join(cwd, want)],
                                        capture_output=True, text=True)
                    run.report = json.loads(rr.stdout) if \
                        rr.returncode == 0 else None
                    run.rc = 128 + 11   # the child's death, not the shell's
            if want:
                check_exact(name, run, g)
            else:
                ok(False, '%s: one snapshot of the child (%s)' % (name, names))
                T.diag(run.stderr[-800:])
            ok(names == [want], '%s: the working directory holds only the '
               'snapshot (%s)' % (name, names))
            ok(listing(tmp) == [], '%s: TMPDIR is left empty' % name)

        # Stack overflow: SEGV_MAPERR at the stack pointer, as natively.
        go = gdb_fault([prog, 'overflow'], gcwd)
        cwd = os.path.join(top, 'ovf')
        tmp = os.path.join(top, 'tmp-ovf')
        os.mkdir(cwd)
        os.mkdir(tmp, 0o700)
        run = Run(btrace, [prog, 'overflow'], os.path.join(cwd, 's.btrace'),
                  cwd, tmp)
        rep = run.report or {}
        s = rep.get('signal') or {}
        c = rep.get('cause') or {}
        ok(go['code'] == 1 and go['addr'] is not None,
           'overflow: gdb: SEGV_MAPERR natively (%s)' % go['code'])
        ok(s.get('code') == go['code'] and s.get('code_name') == 'SEGV_MAPERR',
           'overflow: si_code %s (%s), gdb %s' % (s.get('code'),
                                                  s.get('code_name'),
                                                  go['code']))
        # Which access meets the guard first (a call's push below the stack
        # pointer, or a store into the new frame at it) depends on where the
        # stack starts, which differs from the native run: both must be at
        # the stack pointer, within a few words.
        m = re.search(r'stack pointer(?: ([+-]) (\d+))?|(\d+) bytes (below|'
                      r'above) the stack pointer', c.get('text') or '')
        rel = None
        if m and m.group(3):
            rel = int(m.group(3)) * (-1 if m.group(4) == 'below' else 1)
        elif m:
            rel = int(m.group(2) or 0) * (-1 if m.group(1) == '-' else 1)
        want_rel = go['addr'] - go['rsp'] if go['addr'] is not None and \
            go['rsp'] is not None else None
        ok(want_rel is not None and abs(want_rel) <= 64,
           'overflow: gdb: the native fault address is at the stack pointer '
           '(%s)' % want_rel)
        ok(c.get('kind') == 'stack_overflow' and rel is not None and
           abs(rel) <= 64,
           'overflow: the fault address is at the stack pointer (%s), as '
           'natively (%s): %s' % (rel, want_rel, c.get('text')))
        ok((rep.get('fault') or {}).get('exact') is True,
           'overflow: the fault is exact')

        # --keep-core: next to the snapshot, 0600, a guest ELF core.
        cwd = os.path.join(top, 'keep')
        tmp = os.path.join(top, 'tmp-keep')
        os.mkdir(cwd)
        os.mkdir(tmp, 0o700)
        snap = os.path.join(cwd, 'k.btrace')
        run = Run(btrace, [prog, 'plain'], snap, cwd, tmp,
                  extra=['--keep-core'])
        core = snap + '.core'
        ok(listing(cwd) == ['k.btrace', 'k.btrace.core'],
           '--keep-core: the snapshot and its core (%s)' % listing(cwd))
        if os.path.exists(core):
            st = os.lstat(core)
            with open(core, 'rb') as fh:
                head = fh.read(18)
            ok(stat.S_ISREG(st.st_mode) and stat.S_IMODE(st.st_mode) == 0o600,
               '--keep-core: a regular file of mode 0600 (%o)' %
               stat.S_IMODE(st.st_mode))
            ok(head[:4] == b'\x7fELF' and head[16] == 4,
               '--keep-core: an ELF core file')
        else:
            ok(False, '--keep-core: the core exists')
        ok(listing(tmp) == [], '--keep-core: TMPDIR is left empty')

        # The guest's environment: no trace of the emulator's library.
        cwd = os.path.join(top, 'env')
        tmp = os.path.join(top, 'tmp-env')
        os.mkdir(cwd)
        os.mkdir(tmp, 0o700)
        Run(btrace, ['/bin/sh', '-c', 'env > e1; exec env > e2'],
            os.path.join(cwd, 'x.btrace'), cwd, tmp)
        for f in ('e1', 'e2'):
            p = os.path.join(cwd, f)
            text = open(p).read() if os.path.exists(p) else None
            ok(text is not None and 'BTRACE_QEMU_CORE_DIR' not in text and
               'btrace-qemu-preload' not in text and SECRET in text,
               'the guest\'s environment %s has no BTRACE_QEMU_CORE_DIR and '
               'no preload library%s' % (
                   'before' if f == 'e1' else 'after a re-execution',
                   '' if text is not None else ' (no output)'))

        # The guest's own RLIMIT_CORE, whatever way it asks, as natively.
        lim = (0, resource.RLIM_INFINITY)
        nat = subprocess.run([prog, 'limits'], capture_output=True, text=True,
                             preexec_fn=lambda: resource.setrlimit(
                                 resource.RLIMIT_CORE, lim))
        run = Run(btrace, [prog, 'limits'], os.path.join(cwd, 'l.btrace'),
                  cwd, tmp, core=lim)
        ok(nat.returncode == 0 and run.rc == 0 and
           run.stdout == nat.stdout and nat.stdout.count('\n') == 3,
           'the guest sees its own RLIMIT_CORE as natively')
        if run.stdout != nat.stdout:
            T.diag('native:\n%s\nbtrace:\n%s' % (nat.stdout, run.stdout))
    return T.done()


if __name__ == '__main__':
    sys.exit(main())
