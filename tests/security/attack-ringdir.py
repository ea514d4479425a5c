#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Attacks by nobody on the QEMU backend's ring directory of root (TAP).

    attack-ringdir.py BTRACE PROGDIR E2E HOSTILE-RING

PROGDIR holds fork-status, sig-report and exit-code (tests/qemu/progs/).
Needs root, the user nobody and a qemu-x86_64 with plugin support; skips
otherwise.  Every attack is performed for real (docs/security.md, "The QEMU
backend's rings"):

  1. TMPDIR is a directory nobody owns (or one anyone may write, not
     sticky, or one below a directory of nobody's): nobody swaps root's
     ring directory for a link to a root-only directory as soon as it
     appears; root's btrace then removed every file there (what it reached
     by the directory's path).  Now btrace refuses such a TMPDIR before
     the program runs, and the root-only files are intact.
  2. TMPDIR is shared and sticky, as /tmp: while root's program forks (each
     child hands its ring over the socket), nobody tries to rename, replace
     or enter the ring directory, send a ring to its socket, and read the
     rings through /proc of btrace and of the emulator; every try fails, the
     recording is complete, and nothing of root's is left.
  3. Stale directories (btrace and its janitor both killed with SIGKILL)
     are removed by the next run; what is not provably stale stays: a
     directory of nobody's with a dead socket, nobody's link to a root
     directory with a dead socket, a root directory without a socket (kept
     rings) and one whose socket is alive.
  4. The traced program's data is untrusted too: a program that hands
     btrace a hostile ring of its own (hostile-ring: ring entries that
     wrap the slot size, a child's ring that names itself as its table's
     owner) and crashes.  btrace crashed reading it (SIGSEGV: an index past
     the file, an endless recursion); now it says which ring is bad and
     exits with the program's status.
"""
import ctypes
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import time

btrace, progs, e2e, hostile = [os.path.abspath(a) for a in sys.argv[1:5]]
sys.path.insert(0, e2e)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402
import seclib as S  # noqa: E402

HANG = 300   # a hang guard, not a speed limit
PREFIX = 'btrace-qemu-'
PR_SET_CHILD_SUBREAPER = 36
# nobody runs the system's interpreter (root's may live under /root).
NPY = '/usr/bin/python3' if os.access('/usr/bin/python3', os.X_OK) \
    else sys.executable

SWAPPER = r'''
import os, sys, time
tmp, target, out = sys.argv[1], sys.argv[2], sys.argv[3]
end = time.time() + float(sys.argv[4])
mode = sys.argv[5]
done = []
while time.time() < end and not done:
    for n in os.listdir(tmp):
        p = os.path.join(tmp, n)
        if n.startswith('btrace-qemu-') and not os.path.islink(p):
            try:
                if mode == 'dir':
                    # the ring directory itself, for a link
                    os.rename(p, os.path.join(tmp, 'moved-' + n))
                else:
                    # TMPDIR, for a directory of nobody's with the link
                    os.rename(tmp, tmp + '.moved')
                    os.mkdir(tmp)
                os.symlink(target, p)
                done.append(n)
            except OSError as e:
                done.append('%s: %s' % (n, e))
            break
    time.sleep(0.0005)
with open(out, 'w') as f:
    f.write(' '.join(done))
'''

PROBER = r'''
import os, socket, sys, array
tmp, btpid, emupid, out = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
res = []
def tried(what, f):
    try:
        f()
        res.append('WORKED ' + what)
    except OSError as e:
        res.append('failed %s: %s' % (what, e.strerror))
dirs = sys.argv[5:]   # root's ring directories
for n in dirs:
    p = os.path.join(tmp, n)
    tried('rename ' + n, lambda: os.rename(p, p + '.x'))
    tried('rmdir ' + n, lambda: os.rmdir(p))
    tried('list ' + n, lambda: os.listdir(p))
    tried('chmod ' + n, lambda: os.chmod(p, 0o777))
    def send():
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        fd = os.memfd_create('fake')
        os.write(fd, b'BTQRING1' + b'\0' * 4088)
        s.sendmsg([b'RQTB'], [(socket.SOL_SOCKET, socket.SCM_RIGHTS,
                               array.array('i', [fd]))], 0,
                   os.path.join(p, 'sock'))
    tried('send a ring to %s/sock' % n, send)
    tried('open %s/ring.%d' % (n, emupid),
          lambda: open(os.path.join(p, 'ring.%d' % emupid), 'rb').read(8))
for pid in (btpid, emupid):
    for sub in ('fd', 'map_files'):
        d = '/proc/%d/%s' % (pid, sub)
        tried('list ' + d, lambda: os.listdir(d))
    for fd in range(64):
        try:
            open('/proc/%d/fd/%d' % (pid, fd), 'rb').read(8)
            res.append('WORKED read /proc/%d/fd/%d' % (pid, fd))
        except OSError:
            pass
    res.append('failed read /proc/%d/fd/0..63' % pid)
    tried('read /proc/%d/mem' % pid,
          lambda: open('/proc/%d/mem' % pid, 'rb').read(1))
with open(out, 'w') as f:
    f.write('\n'.join(res))
'''


def run(argv, env=None, cwd=None, timeout=HANG):
    p = subprocess.run(argv, capture_output=True, text=True, env=env,
                       cwd=cwd, timeout=timeout, stdin=subprocess.DEVNULL)
    return p.returncode, p.stdout + p.stderr


lines = e2elib.lines


def wait_for(pred, limit=HANG):
    return e2elib.wait_for(pred, limit)


children, comm, reap = e2elib.children, e2elib.comm, e2elib.reap


def env_tmp(tmp):
    e = dict(os.environ)
    e['TMPDIR'] = tmp
    return e


def victim_dir(work, name):
    v = os.path.join(work, name)
    os.mkdir(v, 0o700)
    for f in ('precious', 'ring.1', 'sock'):
        with open(os.path.join(v, f), 'w') as fh:
            fh.write('precious\n')
    return v


def victim_intact(v):
    try:
        return sorted(os.listdir(v)) == ['precious', 'ring.1', 'sock'] and \
            all(S.read(os.path.join(v, f)) == b'precious\n'
                for f in ('precious', 'ring.1', 'sock'))
    except OSError:
        return False


def unsafe_tmpdirs(t, work, nobody):
    prog = os.path.join(progs, 'fork-status')
    shared = os.path.join(work, 'x')
    os.mkdir(shared, 0o755)
    cases = []
    own = os.path.join(shared, 'nobodys')
    os.mkdir(own, 0o755)
    os.chown(own, nobody, -1)
    cases.append(('a TMPDIR nobody owns', own, own, 'dir'))
    ww = os.path.join(shared, 'open')
    os.mkdir(ww)
    os.chmod(ww, 0o777)
    cases.append(('a TMPDIR anyone may write (not sticky)', ww, ww, 'dir'))
    parent = os.path.join(shared, 'nobodys-parent')
    os.mkdir(parent, 0o755)
    os.chown(parent, nobody, -1)
    below = os.path.join(parent, 'roots')
    os.mkdir(below, 0o755)
    cases.append(('a TMPDIR of root\'s in a directory nobody owns', below,
                  parent, 'parent'))
    for what, tmp, named, mode in cases:
        victim = victim_dir(work, 'victim-%d' % len(os.listdir(work)))
        out = os.path.join(work, 'swapped-%d.txt' % len(os.listdir(work)))
        open(out, 'w').close()
        os.chown(out, nobody, -1)
        # nobody swaps the ring directory for a link as soon as it exists
        # (in the third case it could swap `roots` itself: the same).
        sw = subprocess.Popen(S.nobody_argv([NPY, '-c', SWAPPER, tmp,
                                             victim, out, '20', mode]),
                              stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
        time.sleep(0.3)
        snap = os.path.join(work, 'unsafe.btrace')
        rc, log = run([btrace, 'record', '-b', 'qemu', '-o', snap, '--',
                       prog, '3', 'crash'], env=env_tmp(tmp), cwd=work)
        sw.kill()
        sw.wait()
        t.ok(victim_intact(victim),
             '%s: the root-only files nobody linked to are intact' % what)
        t.ok(rc == 1 and 'use as TMPDIR failed' in log and named in log,
             '%s: btrace refuses it, naming %s (exit %d)' %
             (what, named, rc))
        if rc != 1:
            t.diag(log[-1500:])
        t.diag('nobody swapped: %s' % (lines(out) or ['nothing'])[0])


def shared_tmpdir(t, work, nobody):
    tmp = os.path.join(work, 'shared')
    os.mkdir(tmp)
    os.chmod(tmp, 0o1777)
    # Names nobody planted ahead of time.
    planted = []
    for n in ('AAAAAA', 'XXXXXX', 'sock', 'ring.1'):
        r = S.as_nobody(['mkdir', os.path.join(tmp, PREFIX + n)])
        if r.returncode == 0:
            planted.append(PREFIX + n)
    rep = os.path.join(work, 'forks.txt')
    snap = os.path.join(work, 'shared.btrace')
    p = subprocess.Popen([btrace, 'record', '-b', 'qemu', '-o', snap, '--',
                          os.path.join(progs, 'sig-report'), 'forks', rep],
                         env=env_tmp(tmp), cwd=work, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         text=True)
    wait_for(lambda: sum(x.startswith('fork ') for x in lines(rep)) >= 3)
    emu = wait_for(lambda: [k for k in children(p.pid)
                            if comm(k) != 'btrace-janitor'])
    out = os.path.join(work, 'probe.txt')
    open(out, 'w').close()
    os.chown(out, nobody, -1)
    ring_dirs = [n for n in os.listdir(tmp)
                 if n.startswith(PREFIX) and n not in planted]
    S.as_nobody([NPY, '-c', PROBER, tmp, str(p.pid),
                 str(emu[0] if emu else 0), out] + ring_dirs, timeout=HANG)
    res = lines(out)
    worked = [x for x in res if x.startswith('WORKED')]
    t.ok(bool(ring_dirs) and bool(emu) and len(res) > 10 and not worked,
         'nobody cannot rename, remove, enter or list root\'s ring '
         'directory, send a ring to its socket, or read a ring through '
         '/proc of btrace or the emulator (%d tries)' % len(res))
    for x in worked:
        t.diag(x)
    n0 = sum(x.startswith('fork ') for x in lines(rep))
    wait_for(lambda: sum(x.startswith('fork ') for x in lines(rep)) >= n0 + 3)
    open(rep + '.stop', 'w').close()
    log, _ = p.communicate(timeout=HANG)
    t.ok(p.returncode == 7, 'the program forked on and exited 7 as natively '
         '(btrace exits %d)' % p.returncode)
    if p.returncode != 7:
        t.diag(log[-1500:])
    left = sorted(set(os.listdir(tmp)) - set(planted))
    t.ok(not left and all(os.path.isdir(os.path.join(tmp, n))
                          for n in planted),
         'TMPDIR holds nothing of root\'s afterwards, nobody\'s planted '
         'directories are untouched (%s)' % (' '.join(left) or 'nothing'))


def dead_socket(path):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.close()


def stale(t, work, nobody):
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        t.diag('stale directories not tried: cannot become a child '
               'subreaper')
        return
    tmp = os.path.join(work, 'stale')
    os.mkdir(tmp)
    os.chmod(tmp, 0o1777)
    rep = os.path.join(work, 'stale-forks.txt')
    log = open(os.path.join(work, 'stale-btrace.log'), 'w')
    p = subprocess.Popen([btrace, 'record', '-b', 'qemu', '-o',
                          os.path.join(work, 'stale.btrace'), '--',
                          os.path.join(progs, 'sig-report'), 'forks', rep],
                         env=env_tmp(tmp), cwd=work, stdin=subprocess.DEVNULL,
                         stdout=log, stderr=log)
    wait_for(lambda: sum(x.startswith('fork ') for x in lines(rep)) >= 2)
    kids = children(p.pid)
    jan = [k for k in kids if comm(k) == 'btrace-janitor']
    emu = [k for k in kids if comm(k) != 'btrace-janitor']
    for k in jan:
        os.kill(k, signal.SIGKILL)
    p.kill()
    p.wait()
    for k in jan:
        reap(k, 60)
    open(rep + '.stop', 'w').close()
    for k in emu:
        reap(k, HANG)
    log.close()
    left = [n for n in os.listdir(tmp) if n.startswith(PREFIX)]
    t.ok(len(jan) == 1 and len(left) == 1,
         'btrace and its janitor killed with SIGKILL leave their ring '
         'directory (%s)' % ' '.join(left))
    # What is not provably stale.
    keep = {}
    nd = os.path.join(tmp, PREFIX + 'nobody')
    S.as_nobody([NPY, '-c', 'import os,socket,sys\n'
                 'os.mkdir(sys.argv[1], 0o700)\n'
                 's=socket.socket(socket.AF_UNIX,socket.SOCK_DGRAM)\n'
                 's.bind(sys.argv[1]+"/sock");s.close()\n', nd])
    keep['nobody\'s directory with a dead socket'] = nd
    rootdir = os.path.join(work, 'root-target')
    os.mkdir(rootdir, 0o700)
    dead_socket(os.path.join(rootdir, 'sock'))
    with open(os.path.join(rootdir, 'precious'), 'w') as f:
        f.write('precious\n')
    ln = os.path.join(tmp, PREFIX + 'link01')
    S.as_nobody(['ln', '-s', rootdir, ln])
    keep['nobody\'s link to a root directory with a dead socket'] = ln
    kd = os.path.join(tmp, PREFIX + 'kept01')
    os.mkdir(kd, 0o700)
    with open(os.path.join(kd, 'ring.1'), 'w') as f:
        f.write('kept\n')
    keep['a directory of root\'s without a socket (kept rings)'] = kd
    ld = os.path.join(tmp, PREFIX + 'live01')
    os.mkdir(ld, 0o700)
    live = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    live.bind(os.path.join(ld, 'sock'))
    keep['a directory of root\'s whose socket is alive'] = ld
    rc, out = run([btrace, 'record', '-b', 'qemu', '-o',
                   os.path.join(work, 'next.btrace'), '--',
                   os.path.join(progs, 'exit-code'), '3'],
                  env=env_tmp(tmp), cwd=work)
    t.ok(not any(os.path.lexists(os.path.join(tmp, n)) for n in left),
         'the next btrace run removed the stale directory (exit %d)' % rc)
    for what, path in keep.items():
        t.ok(os.path.lexists(path) and
             (not os.path.isdir(path) or os.listdir(path)),
             'it left %s alone' % what)
    t.ok(os.path.isfile(os.path.join(rootdir, 'precious')) and
         os.path.exists(os.path.join(rootdir, 'sock')),
         'and what nobody\'s link points to')
    live.close()


def hostile_rings(t, work):
    tmp = os.path.join(work, 'hostile')
    os.mkdir(tmp)
    os.chmod(tmp, 0o1777)
    for mode, what in (('entries', 'ring entries of 2^62 (the slot size '
                        'wraps)'), ('loop', 'a ring whose TB table is '
                        'its own, which has none')):
        rc, log = run([btrace, 'record', '-b', 'qemu', '-o',
                       os.path.join(work, 'hostile.btrace'), '--', hostile,
                       mode, tmp], env=env_tmp(tmp), cwd=work)
        t.ok(rc == 128 + signal.SIGSEGV and 'read ring failed' in log and
             not S.sanitizer_report(log),
             '%s: btrace refuses the ring and exits with the program\'s '
             'status %d (%d)' % (what, 128 + signal.SIGSEGV, rc))
        if rc != 128 + signal.SIGSEGV:
            t.diag(log[-1500:])
    t.ok(not os.listdir(tmp), 'nothing left in TMPDIR')


def main():
    S.need_root_and_nobody()
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    t = e2elib.Tap()
    nobody = S.nobody_uid()
    work = tempfile.mkdtemp(prefix='bt-sec-ringdir-')
    os.chmod(work, 0o755)
    try:
        unsafe_tmpdirs(t, work, nobody)
        shared_tmpdir(t, work, nobody)
        stale(t, work, nobody)
        hostile_rings(t, work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
