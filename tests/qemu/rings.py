#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What btrace's QEMU backend does to the program around it (TAP).

  rings.py tmpdir  BTRACE PROGDIR   a full, tiny, inode-less or read-only
                                    TMPDIR (tmpfs mounts: needs root)
  rings.py signals BTRACE PROGDIR   signals sent to btrace reach the program
  rings.py killed  BTRACE PROGDIR   kill -9 of btrace in the middle of a run
  rings.py pgrp    BTRACE PROGDIR   signals sent to the whole process group
                                    (kill -SIG -PGID) reach the program once,
                                    as natively

PROGDIR holds fork-status and sig-report (tests/qemu/progs/).  Every case
compares the program's exit status with its native one, and checks that
TMPDIR holds nothing afterwards.
"""
import ctypes
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import e2elib  # noqa: E402

T = e2elib.Tap()
HANG = 600   # a hang guard, not a speed limit


def sanitizer_said(text):
    return any(s in text for s in ('ERROR: AddressSanitizer',
                                   'ERROR: LeakSanitizer', 'runtime error:',
                                   'UndefinedBehaviorSanitizer'))


def run(argv, env=None, cwd=None):
    p = subprocess.run(argv, capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=HANG, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout + p.stderr


def shell_status(rc):
    """subprocess's return code as a shell's $? (128+N for signal N)."""
    return 128 - rc if rc < 0 else rc


def listing(d):
    out = []
    for root, dirs, files in os.walk(d):
        out += [os.path.join(root, x) for x in dirs + files]
    return out


def wait_for(pred, limit=HANG):
    return e2elib.wait_for(pred, limit)


lines = e2elib.lines


def mount_tmpfs(path, opts):
    os.makedirs(path, exist_ok=True)
    p = subprocess.run(['mount', '-t', 'tmpfs', '-o', opts, 'tmpfs', path],
                       capture_output=True, text=True)
    return None if p.returncode == 0 else (p.stderr.strip() or 'mount failed')


def umount(path):
    subprocess.run(['umount', path], capture_output=True)


def fill_blocks(path):
    """Fill the file system at @path: no block left."""
    try:
        with open(os.path.join(path, 'filler'), 'wb') as f:
            while True:
                f.write(b'x' * 4096)
                f.flush()
    except OSError:
        pass


def fill_inodes(path):
    """Use up the (few: nr_inodes=) inodes of the file system at @path."""
    for n in range(100000):
        try:
            open(os.path.join(path, 'i%d' % n), 'w').close()
        except OSError:
            return


def env_tmp(tmp):
    e = dict(os.environ)
    e['TMPDIR'] = tmp
    return e


# ---- tmpdir: item 8 ----

def case_tmpdir(btrace, progs, work):
    if os.geteuid() != 0:
        return e2elib.skip_all('not root: the cases mount tmpfs file systems')
    fs = os.path.join(work, 'fs')
    why = mount_tmpfs(fs, 'size=64k')
    if why:
        return e2elib.skip_all('cannot mount a tmpfs: ' + why)
    umount(fs)
    prog = os.path.join(progs, 'fork-status')
    argv = [prog, '4', 'crash']
    native, _ = run(argv, cwd=work)
    T.diag('native: fork-status 4 crash exits %d' % native)
    out = os.path.join(work, 'out')
    os.mkdir(out)

    # A tiny TMPDIR (64 KiB), then one with no block left at all: the
    # children's rings are memory, so nothing the program does depends on
    # it; the crashing child's guest core does not fit (it is the only
    # thing btrace writes there).
    for name, filled in (('64 KiB TMPDIR', False), ('full TMPDIR', True)):
        why = mount_tmpfs(fs, 'size=64k,mode=0755')
        if why:
            T.ok(False, '%s: mount: %s' % (name, why))
            continue
        try:
            if filled:
                fill_blocks(fs)
            before = set(listing(fs))
            snap = os.path.join(out, name.split()[0] + '.btrace')
            rc, log = run([btrace, 'record', '-b', 'qemu', '-o', snap,
                           '--'] + argv, env=env_tmp(fs), cwd=work)
            T.ok(not sanitizer_said(log), '%s: no sanitizer report' % name)
            T.ok(rc == native and 'Bus error' not in log and
                 'wait status' not in log,
                 '%s: fork-status exits %d as natively (every child died as '
                 'it meant to), btrace %d' % (name, native, rc))
            if rc != native:
                T.diag(log[-3000:])
            kids = [f for f in os.listdir(out)
                    if f.startswith(name.split()[0] + '-')]
            # (with no guest core, how the child died comes from its
            # status only: read while its parent may be reaping it)
            T.ok(len(kids) == 1, '%s: the crashing child has its snapshot '
                 '(%s)' % (name, ' '.join(kids)))
            if len(kids) != 1:
                T.diag(log[-3000:])
            for k in kids:
                os.unlink(os.path.join(out, k))
            left = sorted(set(listing(fs)) - before)
            T.ok(not left, '%s: nothing left in TMPDIR (%s)' % (name, left))
        finally:
            umount(fs)

    # Unusable TMPDIRs: btrace fails before the program runs, and says
    # which directory and why.
    marker = os.path.join(work, 'ran')
    sh = ['/bin/sh', '-c', 'echo > ' + marker]
    for name, opts, filled in (('read-only TMPDIR', 'size=64k,ro', False),
                               ('TMPDIR without inodes',
                                'size=64k,nr_inodes=16', True)):
        why = mount_tmpfs(fs, opts)
        if why:
            T.ok(False, '%s: mount: %s' % (name, why))
            continue
        try:
            if filled:
                fill_inodes(fs)
            rc, log = run([btrace, 'record', '-b', 'qemu', '--'] + sh,
                          env=env_tmp(fs), cwd=work)
            T.ok(rc == 1 and not os.path.exists(marker),
                 '%s: btrace exits 1 and the program never ran (exit %d)' %
                 (name, rc))
            T.ok(fs in log and ('Read-only' in log or 'No space' in log),
                 '%s: the error names TMPDIR and the reason: %s' %
                 (name, log.strip().splitlines()[0] if log.strip() else ''))
            if os.path.exists(marker):
                os.unlink(marker)
        finally:
            umount(fs)

    # A child whose ring cannot be handed over (btrace's socket is gone)
    # runs untraced, at once, and its parent's snapshot says so.
    tmp = os.path.join(work, 'tmp-untraced')
    os.mkdir(tmp)
    rep = os.path.join(work, 'untraced.txt')
    snap = os.path.join(out, 'untraced.btrace')
    p = subprocess.Popen([btrace, 'record', '-b', 'qemu', '--on', 'exit',
                          '-o', snap, '--',
                          os.path.join(progs, 'sig-report'), 'forks', rep],
                         env=env_tmp(tmp), cwd=work, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    wait_for(lambda: any(x.startswith('fork 2 ') for x in lines(rep)))
    socks = [os.path.join(r, f) for r, _, fl in os.walk(tmp) for f in fl
             if f == 'sock']
    for s in socks:
        os.unlink(s)
    n0 = sum(x.startswith('fork ') for x in lines(rep))
    wait_for(lambda: sum(x.startswith('fork ') for x in lines(rep)) >= n0 + 3)
    open(rep + '.stop', 'w').close()
    log, _ = p.communicate(timeout=HANG)
    T.ok(len(socks) == 1 and p.returncode == 7,
         'untraced children: the program exits 7 as natively (btrace %d)' %
         p.returncode)
    rc, js = run([btrace, 'report', '--json', snap])
    lim = {}
    try:
        lim = {x['name']: x['text'] for x in json.loads(js).get('limits', [])}
    except ValueError:
        T.diag(js[-2000:])
    T.ok('untraced-children' in lim,
         'untraced children: the report says so: %s' %
         lim.get('untraced-children'))
    T.ok('limit.untraced-children' in log,
         'untraced children: said on stderr at record time')
    T.ok(not listing(tmp), 'untraced children: nothing left in TMPDIR')
    return T.done()


# ---- signals: item 9 ----

def case_signals(btrace, progs, work):
    prog = os.path.join(progs, 'sig-report')
    tmp = os.path.join(work, 'tmp')
    os.mkdir(tmp)
    sigs = [signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2, signal.SIGHUP,
            signal.SIGINT]
    names = [s.name[3:] for s in sigs]

    # Handled signals: each reaches the program's handler, once.
    rep = os.path.join(work, 'handled.txt')
    p = subprocess.Popen([btrace, 'record', '-b', 'qemu', '--', prog,
                          'signals', rep], env=env_tmp(tmp), cwd=work,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True)
    ok = wait_for(lambda: lines(rep)[:1] and lines(rep)[0].startswith('ready'))
    T.ok(bool(ok), 'the program runs under btrace')
    for s, n in zip(sigs, names):
        os.kill(p.pid, s)
        got = wait_for(lambda: n in lines(rep), 60)
        T.ok(bool(got), 'SIG%s sent to btrace reaches the program\'s handler'
             % n)
    os.kill(p.pid, signal.SIGTERM)
    log, _ = p.communicate(timeout=HANG)
    got = lines(rep)[1:]
    T.ok(got == names + ['TERM', 'exit'],
         'each signal once, in order: %s' % ' '.join(got))
    T.ok(p.returncode == len(names) + 1,
         'btrace exits with the program\'s status %d (%d)' %
         (len(names) + 1, p.returncode))
    T.ok(not sanitizer_said(log), 'no sanitizer report')
    if p.returncode != len(names) + 1:
        T.diag(log[-2000:])

    # A signal the program does not handle kills it as natively; btrace
    # says 128+N and writes no snapshot (SIGALRM is not a crash).
    for s in (signal.SIGALRM, signal.SIGRTMIN + 2):
        rep = os.path.join(work, 'default-%d.txt' % s)
        snap = os.path.join(work, 'default-%d.btrace' % s)
        p = subprocess.Popen([btrace, 'record', '-b', 'qemu', '-o', snap,
                              '--', prog, 'signals', rep], env=env_tmp(tmp),
                             cwd=work, stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                             text=True)
        wait_for(lambda: lines(rep)[:1])
        os.kill(p.pid, s)
        log, _ = p.communicate(timeout=HANG)
        T.ok(p.returncode == 128 + s and not os.path.exists(snap),
             'signal %d, not handled, kills the program: btrace exits %d '
             '(%d), no snapshot' % (s, 128 + s, p.returncode))
    T.ok(not listing(tmp), 'nothing left in TMPDIR')
    return T.done()


# ---- killed: item 9 ----

PR_SET_CHILD_SUBREAPER = 36


children, comm, reap = e2elib.children, e2elib.comm, e2elib.reap


def case_killed(btrace, progs, work):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        return e2elib.skip_all('cannot become a child subreaper')
    prog = os.path.join(progs, 'sig-report')
    tmp = os.path.join(work, 'tmp')
    os.mkdir(tmp)
    rep = os.path.join(work, 'forks.txt')
    # btrace's output to a file: the emulator, which outlives it, keeps a
    # pipe open.
    with open(os.path.join(work, 'btrace.log'), 'w') as logf:
        p = subprocess.Popen([btrace, 'record', '-b', 'qemu', '--', prog,
                              'forks', rep], env=env_tmp(tmp), cwd=work,
                             stdin=subprocess.DEVNULL, stdout=logf,
                             stderr=subprocess.STDOUT)

    def forks():
        return [x.split() for x in lines(rep) if x.startswith('fork ')]

    wait_for(lambda: len(forks()) >= 3)
    kids = children(p.pid)
    emu = [k for k in kids if comm(k) != 'btrace-janitor']
    jan = [k for k in kids if comm(k) == 'btrace-janitor']
    T.ok(len(emu) == 1 and len(jan) == 1,
         'btrace runs the emulator and its janitor (%s)' %
         ', '.join('%d %s' % (k, comm(k)) for k in kids))
    T.ok(any(os.path.basename(x).startswith('btrace-qemu-')
             for x in listing(tmp)), 'the ring directory is in TMPDIR')
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=HANG)
    T.ok(p.returncode == -signal.SIGKILL, 'btrace died of SIGKILL')
    n0 = len(forks())

    # Nothing is left in TMPDIR: the rings are memory, the janitor
    # removes the directory.
    empty = wait_for(lambda: not listing(tmp), 60)
    T.ok(bool(empty), 'nothing left in TMPDIR after kill -9 of btrace (%s)' %
         listing(tmp))
    if jan:
        T.ok(reap(jan[0], 60) is not None, 'the janitor is gone')

    # The program goes on, untraced, and forks without waiting for btrace
    # (a child waited 2 s for a btrace that was gone): the median fork is
    # well under that (slow moments on a busy machine do not move it).
    more = wait_for(lambda: len(forks()) >= n0 + 9, HANG)
    after = [int(x[2]) for x in forks()[n0:]]
    T.ok(bool(more) and statistics.median(after) < 2000,
         'the program runs on and forks without a stall: %d forks after '
         'the kill, median %s ms' % (len(after),
                                     statistics.median(after) if after
                                     else '-'))
    open(rep + '.stop', 'w').close()
    st = reap(emu[0], 120) if emu else None
    if emu and st is None:
        os.kill(emu[0], signal.SIGKILL)
        reap(emu[0], 60)
    T.ok(st is not None and os.waitstatus_to_exitcode(st) == 7,
         'the program exits 7, its own status (wait status %s)' % st)
    T.ok(lines(rep)[-1:] == ['exit'], 'the program ended normally')
    stray = []
    for d in os.listdir('/proc'):
        if d.isdigit():
            try:
                with open('/proc/%s/cmdline' % d, 'rb') as f:
                    if tmp.encode() in f.read():
                        stray.append(int(d))
            except OSError:
                pass
    T.ok(not stray, 'no process of the run is left (%s)' % stray)
    T.ok(not listing(tmp), 'TMPDIR is still empty')
    return T.done()


# ---- pgrp: a signal to the whole process group arrives once ----

def pgrp_run(argv, rep, work, tmp, plan):
    """Run @argv in a process group of its own (as a shell runs a job),
    send the group each (signal, 'group'|'leader') of @plan once the
    program is ready (waiting for each to be reported), then SIGTERM to the
    group.  Returns (exit status, the program's report lines)."""
    p = subprocess.Popen(argv, env=env_tmp(tmp), cwd=work,
                         stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, text=True,
                         start_new_session=True)
    wait_for(lambda: lines(rep)[:1] and lines(rep)[0].startswith('ready'))
    for s, to in plan:
        n0 = len(lines(rep))
        if to == 'group':
            os.killpg(p.pid, s)
        else:
            os.kill(p.pid, s)
        wait_for(lambda: len(lines(rep)) > n0, 60)
        # A second copy, if any, comes within this time.
        time.sleep(0.5)
    os.killpg(p.pid, signal.SIGTERM)
    out, _ = p.communicate(timeout=HANG)
    if p.returncode < 0 or p.returncode > 64:
        T.diag(out[-1500:])
    return p.returncode, lines(rep)[1:], out


def case_pgrp(btrace, progs, work):
    prog = os.path.join(progs, 'sig-report')
    tmp = os.path.join(work, 'tmp')
    os.mkdir(tmp)
    plan = [(signal.SIGUSR1, 'group'), (signal.SIGHUP, 'group'),
            (signal.SIGUSR2, 'leader'), (signal.SIGINT, 'group'),
            (signal.SIGUSR1, 'leader'), (signal.SIGQUIT, 'group'),
            (signal.SIGUSR1, 'group')]
    rep = os.path.join(work, 'native.txt')
    nst, native, _ = pgrp_run([prog, 'signals', rep], rep, work, tmp, plan)
    T.diag('native: exit %d, got %s' % (nst, ' '.join(native)))
    rep = os.path.join(work, 'btrace.txt')
    bst, got, log = pgrp_run([btrace, 'record', '-b', 'qemu', '-o',
                              os.path.join(work, 'pg.btrace'), '--', prog,
                              'signals', rep], rep, work, tmp, plan)
    T.ok(nst == len(plan) + 1 and native[-2:] == ['TERM', 'exit'],
         'natively, each signal (to the group or the leader) arrives once: '
         '%d signals' % (nst - 1))
    T.ok(got == native,
         'under btrace, the program gets the same signals as natively, '
         'each once, in order: %s' % ' '.join(got))
    T.ok(bst == nst, 'btrace exits with the program\'s status %d (%d)' %
         (nst, bst))
    T.ok(not sanitizer_said(log), 'no sanitizer report')
    T.ok(not listing(tmp), 'nothing left in TMPDIR')
    return T.done()


def main():
    if len(sys.argv) != 4:
        print('usage: rings.py tmpdir|signals|killed|pgrp BTRACE PROGDIR',
              file=sys.stderr)
        return 2
    mode, btrace, progs = sys.argv[1:]
    btrace, progs = os.path.abspath(btrace), os.path.abspath(progs)
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    with tempfile.TemporaryDirectory(prefix='rings-') as work:
        try:
            return {'tmpdir': case_tmpdir, 'signals': case_signals,
                    'killed': case_killed,
                    'pgrp': case_pgrp}[mode](btrace, progs, work)
        finally:
            umount(os.path.join(work, 'fs'))


if __name__ == '__main__':
    sys.exit(main())
