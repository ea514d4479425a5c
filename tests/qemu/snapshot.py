#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""On-demand snapshots and joins of a QEMU recording (TAP; issue #17).

  snapshot.py running BTRACE PROGDIR   `btrace snapshot PID` of a running
                                       program: its path so far, the program
                                       goes on (and a stopped one stays so)
  snapshot.py join    BTRACE PROGDIR   a second `btrace record -p PID` joins
                                       and gets the crash snapshot
  snapshot.py native  BTRACE PROGDIR   a process running natively: one clear
                                       message saying what to do instead
  snapshot.py user    BTRACE PROGDIR   another user's request is refused
                                       (per-user registry, SO_PEERCRED)
  snapshot.py progress BTRACE PROGDIR  btrace decode of a large buffer: a
                                       progress line on a terminal's stderr
                                       only, the listing unchanged

PROGDIR holds snap-wait (tests/qemu/progs/snap-wait.c): it runs
snap_stage_one() and snap_stage_two(), prints "ready PID", blocks reading
stdin, then crashes in snap_after(), which it never ran before.
"""
import os
import pwd
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import e2elib  # noqa: E402

T = e2elib.Tap()
HANG = 600   # a hang guard, not a speed limit


def skip(desc, why):
    """One skipped test point (Tap.ok escapes a '#' in its text)."""
    T.n += 1
    print('ok %d - %s # SKIP %s' % (T.n, desc, why), flush=True)


def state(pid):
    """The process state letter from /proc, or None when it is gone."""
    try:
        with open('/proc/%d/stat' % pid) as f:
            s = f.read()
    except OSError:
        return None
    return s[s.rindex(')') + 2]


def starttime(pid):
    with open('/proc/%d/stat' % pid) as f:
        s = f.read()
    return int(s[s.rindex(')') + 2:].split()[19])


def calls(btrace, snap):
    r = subprocess.run([btrace, 'decode', '--calls', snap],
                       capture_output=True, text=True, timeout=HANG)
    return r.returncode, r.stdout, r.stderr


class Recording:
    """btrace record -b qemu -- snap-wait, stopped at its "ready" line."""

    def __init__(self, btrace, progs, work, name, env=None):
        self.snap = os.path.join(work, name + '.btrace')
        self.errpath = os.path.join(work, name + '.err')
        e = dict(os.environ)
        e.update(env or {})
        with open(self.errpath, 'w') as err:
            self.p = subprocess.Popen(
                [btrace, 'record', '-b', 'qemu', '-o', self.snap, '--',
                 os.path.join(progs, 'snap-wait')],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=err,
                text=True, env=e, cwd=work)
        line = self.p.stdout.readline().split()
        self.pid = int(line[1]) if len(line) == 2 and line[0] == 'ready' \
            else None

    def finish(self, text='go\n'):
        """Let the program go on (it crashes unless @text is "exit")."""
        try:
            self.p.stdin.write(text)
            self.p.stdin.close()
        except OSError:
            pass
        rc = self.p.wait(timeout=HANG)
        with open(self.errpath) as f:
            return rc, f.read()


def case_running(btrace, progs, work):
    rec = Recording(btrace, progs, work, 'crash')
    if not T.ok(rec.pid, 'the recorded program runs and says ready'):
        T.diag(rec.finish()[1])
        return
    snap = os.path.join(work, 'ondemand.btrace')
    r = subprocess.run([btrace, 'snapshot', '-o', snap, str(rec.pid)],
                       capture_output=True, text=True, timeout=HANG)
    T.ok(r.returncode == 0 and os.path.exists(snap) and
         stat.S_IMODE(os.stat(snap).st_mode) == 0o600,
         'btrace snapshot PID of a QEMU recording: exit 0, a 0600 file')
    T.diag(r.stderr)
    info = subprocess.run([btrace, 'info', snap], capture_output=True,
                          text=True)
    T.ok('crash mode on-demand' in info.stdout,
         'the snapshot says it was taken on demand')
    rc, out, err = calls(btrace, snap)
    T.ok(rc == 0 and 'snap_stage_one' in out and 'snap_stage_two' in out,
         'it decodes to the path so far (snap_stage_one, snap_stage_two)')
    T.ok(rc == 0 and 'snap_after' not in out,
         'and not to what the program had not run yet (snap_after)')
    T.diag(err)
    rep = e2elib.report_json(btrace, snap)
    stack = [f.get('function') or '' for f in rep['threads'][0]['stack']]
    T.ok(rep['signal'] is None or not rep['signal'].get('name'),
         'no signal in an on-demand snapshot')
    T.ok(len(stack) > 1 and 'read' in stack[0] and 'main' in stack,
         'its stack is where the program waits: %s' % ' < '.join(stack[:3]))
    # The program was continued: it sleeps in read(), it is not stopped.
    st = state(rec.pid)
    T.ok(st in ('S', 'R'), 'the program runs on after the snapshot (state %s)'
         % st)
    # A program that was stopped already stays stopped.
    os.kill(rec.pid, 19)   # SIGSTOP
    e2elib_wait(lambda: state(rec.pid) == 'T')
    snap2 = os.path.join(work, 'stopped.btrace')
    r = subprocess.run([btrace, 'snapshot', '-o', snap2, str(rec.pid)],
                       capture_output=True, text=True, timeout=HANG)
    time.sleep(0.2)
    T.ok(r.returncode == 0 and state(rec.pid) == 'T',
         'a stopped program: snapshot written, the program stays stopped')
    T.diag(r.stderr)
    os.kill(rec.pid, 18)   # SIGCONT
    rc, err = rec.finish()
    T.ok(rc == 128 + 11 and os.path.exists(rec.snap),
         'then it crashes as it would have (status %d), crash snapshot '
         'written' % rc)
    T.diag(err)
    rc, out, _ = calls(btrace, rec.snap)
    T.ok(rc == 0 and 'snap_after' in out and 'snap_stage_two' in out,
         'the crash snapshot has the whole path, snap_after included')


def e2elib_wait(pred, limit=HANG):
    end = time.monotonic() + limit
    while time.monotonic() < end and not pred():
        time.sleep(0.02)
    return pred()


def case_join(btrace, progs, work):
    rec = Recording(btrace, progs, work, 'owner')
    if not T.ok(rec.pid, 'the recorded program runs and says ready'):
        T.diag(rec.finish()[1])
        return
    joined = os.path.join(work, 'joined.btrace')
    # a second joiner without -o: its default name is the program's
    jdir = os.path.join(work, 'jdir')
    os.mkdir(jdir)
    joiners = []
    for extra, cwd in ((['-o', joined], work), ([], jdir)):
        j = subprocess.Popen([btrace, 'record', '-p', str(rec.pid)] + extra,
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.PIPE, text=True, cwd=cwd)
        said = ''
        while 'joined' not in said:
            line = j.stderr.readline()
            if not line:
                break
            said += line
        T.ok('joined' in said and 'attach failed' not in said,
             'a btrace record -p PID %sjoins the QEMU recording'
             % ('-o FILE ' if extra else ''))
        T.diag(said)
        joiners.append(j)
    rc, err = rec.finish()
    jout = [j.stderr.read() for j in joiners]
    jrc = [j.wait(timeout=HANG) for j in joiners]
    T.ok(rc == 128 + 11 and os.path.exists(rec.snap),
         'the program crashes, the owner writes its snapshot')
    T.diag(err)
    T.ok(jrc[0] == 0 and os.path.exists(joined) and
         open(joined, 'rb').read() == open(rec.snap, 'rb').read(),
         'the joined btrace receives the same snapshot and exits 0')
    T.diag(jout[0])
    named = os.path.join(jdir, 'btrace-snap-wait-%d.btrace' % rec.pid)
    T.ok(jrc[1] == 0 and os.listdir(jdir) == [os.path.basename(named)] and
         open(named, 'rb').read() == open(rec.snap, 'rb').read(),
         'without -o the joiner names the file after the program, not the '
         'emulator: %s' % os.listdir(jdir))
    T.diag(jout[1])
    # Equal bytes prove nothing if both are wrong the same way: each file
    # decodes to the crash the program made (SIGSEGV in snap_after, after
    # snap_stage_one and snap_stage_two), and to the same report.
    reps = []
    for path in (rec.snap, joined, named):
        if not os.path.exists(path):
            reps.append(None)
            continue
        try:
            rep = e2elib.report_json(btrace, path)
        except RuntimeError as e:
            T.diag(str(e))
            rep = None
        rc2, out, _ = calls(btrace, path)
        reps.append((rep, rc2, out))
    for what, got in zip(('the owner\'s', 'the joined', 'the named'), reps):
        rep, rc2, out = got or (None, 1, '')
        sig = (rep or {}).get('signal') or {}
        fault = (rep or {}).get('fault') or {}
        T.ok(rep is not None and sig.get('name') == 'SIGSEGV' and
             fault.get('function') == 'snap_after' and rc2 == 0 and
             'snap_stage_one' in out and 'snap_stage_two' in out and
             'snap_after' in out,
             '%s snapshot decodes to the crash: %s in %s after the stages' %
             (what, sig.get('name'), fault.get('function')))
    strip = lambda r: {k: v for k, v in r.items() if k != 'btrace_report'}
    T.ok(all(r and r[0] is not None for r in reps) and
         strip(reps[1][0]) == strip(reps[0][0]) and
         strip(reps[2][0]) == strip(reps[0][0]),
         'the joined snapshots report what the owner\'s reports')


def intel_cpu():
    try:
        with open('/proc/cpuinfo') as f:
            return 'GenuineIntel' in f.read()
    except OSError:
        return False


def case_native(btrace, progs, work):
    prog = subprocess.Popen([os.path.join(progs, 'snap-wait')],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True)
    line = prog.stdout.readline().split()
    pid = int(line[1])
    try:
        # -b qemu: refused everywhere, with the way out.
        r = subprocess.run([btrace, 'record', '-b', 'qemu', '-p', str(pid)],
                           capture_output=True, text=True, timeout=HANG)
        T.ok(r.returncode == 1 and r.stderr.count('runs natively') == 1 and
             'btrace record -- PROGRAM' in r.stderr,
             'record -b qemu -p PID of a native process: exit 1, one clear '
             'message with what to do instead')
        T.diag(r.stderr)
        # auto: the same single message when no hardware trace exists.
        if intel_cpu():
            skip('record -p PID without PT/BTS',
                 'an Intel CPU: hardware tracing may attach')
        else:
            r = subprocess.run([btrace, 'record', '-p', str(pid)],
                               capture_output=True, text=True, timeout=HANG)
            T.ok(r.returncode == 1 and
                 r.stderr.count('runs natively') == 1 and
                 'btrace record -- PROGRAM' in r.stderr and
                 'using the QEMU' not in r.stderr and
                 r.stderr.count('btrace record:') == 1,
                 'record -p PID of a native process without PT or BTS: one '
                 'message, not the probes\' lines')
            T.diag(r.stderr)
        out = os.path.join(work, 'native.btrace')
        r = subprocess.run([btrace, 'snapshot', '-o', out, str(pid)],
                           capture_output=True, text=True, timeout=HANG)
        T.ok(r.returncode == 1 and 'no btrace recording owns' in r.stderr and
             'btrace record -- PROGRAM' in r.stderr and
             not os.path.exists(out),
             'snapshot PID of a native process: exit 1, says how to get one')
        T.diag(r.stderr)
        r = subprocess.run([btrace, 'record', '-b', 'qemu', '-p', '999999999'],
                           capture_output=True, text=True, timeout=HANG)
        T.ok(r.returncode == 2 or 'no such process' in r.stderr,
             'a pid that does not exist is not called native')
        T.diag(r.stderr)
    finally:
        prog.kill()
        prog.wait()


def nobody_argv(argv):
    if shutil.which('setpriv'):
        return ['setpriv', '--reuid=nobody', '--regid=nogroup',
                '--clear-groups'] + list(argv)
    return ['runuser', '-u', 'nobody', '--'] + list(argv)


CLIENT = r'''
import socket, sys
c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
c.settimeout(10)
c.connect(sys.argv[1])
try:
    c.sendall(b'SNAPSHOT %s\n' % sys.argv[2].encode())
except OSError:
    pass
try:
    msg, fds, _, _ = socket.recv_fds(c, 200, 4)
except OSError as e:
    msg, fds = str(e).encode(), []
print(len(fds), msg.decode(errors='replace').strip())
'''


def case_user(btrace, progs, work):
    if os.geteuid() != 0:
        skip('another user', 'not root: cannot become nobody')
        return
    try:
        pwd.getpwnam('nobody')
    except KeyError:
        skip('another user', 'no user nobody')
        return
    if not (shutil.which('setpriv') or shutil.which('runuser')):
        skip('another user', 'neither setpriv nor runuser')
        return
    os.chmod(work, 0o755)
    reg = os.path.join(work, 'reg')
    drop = os.path.join(work, 'drop')
    os.mkdir(drop)
    os.chmod(drop, 0o1777)
    rec = Recording(btrace, progs, work, 'root', env={'BTRACE_REGISTRY': reg})
    if not T.ok(rec.pid, 'root records the program'):
        T.diag(rec.finish()[1])
        return
    out = os.path.join(drop, 'nobody.btrace')
    env = {k: v for k, v in os.environ.items()
           if k not in ('BTRACE_REGISTRY', 'XDG_RUNTIME_DIR')}
    # nobody may not enter the build tree (a clone in a private
    # directory): it runs a copy made for it
    others = e2elib.ForOthers(btrace)
    theirs = others.path(btrace)
    try:
        r = subprocess.run(nobody_argv([theirs, 'snapshot', '-o', out,
                                        str(rec.pid)]),
                           capture_output=True, text=True, env=env,
                           timeout=HANG)
        T.ok(r.returncode == 1 and not os.path.exists(out) and
             'no btrace recording owns this process' in r.stderr,
             "nobody's btrace snapshot of root's QEMU recording: exit 1, "
             'nothing written (registries are per user)')
        T.diag(r.stderr)
        env['BTRACE_REGISTRY'] = reg
        r = subprocess.run(nobody_argv([theirs, 'snapshot', '-o', out,
                                        str(rec.pid)]),
                           capture_output=True, text=True, env=env,
                           timeout=HANG)
    finally:
        others.close()
    T.ok(r.returncode == 1 and not os.path.exists(out) and
         'registry' in r.stderr and 'Permission denied' in r.stderr,
         "nobody pointed at root's registry is refused, nothing written")
    T.diag(r.stderr)
    # Even with the directory and socket opened up, the owner checks its
    # peer (SO_PEERCRED) and sends no descriptor.
    sock = os.path.join(reg, '%d-%d.sock' % (rec.pid, starttime(rec.pid)))
    T.ok(os.path.exists(sock) and
         stat.S_IMODE(os.lstat(sock).st_mode) & 0o077 == 0,
         'the QEMU recorder registered its program; socket private')
    os.chmod(reg, 0o755)
    os.chmod(sock, 0o666)
    r = subprocess.run(nobody_argv([sys.executable, '-c', CLIENT, sock,
                                    str(rec.pid)]),
                       capture_output=True, text=True, timeout=HANG)
    T.ok(r.stdout.startswith('0 ') and 'permission denied' in r.stdout,
         "nobody connecting to the owner's socket gets no descriptor")
    T.diag(r.stdout + r.stderr)
    os.chmod(reg, 0o700)
    mine = os.path.join(work, 'mine.btrace')
    r = subprocess.run([btrace, 'snapshot', '-o', mine, str(rec.pid)],
                       capture_output=True, text=True, timeout=HANG,
                       env=dict(os.environ, BTRACE_REGISTRY=reg))
    T.ok(r.returncode == 0 and os.path.exists(mine) and state(rec.pid) != 'T',
         'root still gets its snapshot, and the program runs on')
    T.diag(r.stderr)
    rc, err = rec.finish('exit\n')
    T.ok(rc == 0 and not os.path.exists(sock),
         'the program exits 0; the registration is gone')
    T.diag(err)


def pty_stderr(argv, stdout):
    """Run @argv with stderr on a new terminal; (status, what it wrote)."""
    import pty
    m, s = pty.openpty()
    p = subprocess.Popen(argv, stdout=stdout, stderr=s,
                         stdin=subprocess.DEVNULL)
    os.close(s)
    data = b''
    while True:
        try:
            d = os.read(m, 65536)
        except OSError:
            break
        if not d:
            break
        data += d
    os.close(m)
    return p.wait(timeout=HANG), data.decode(errors='replace')


def case_progress(btrace, progs, work):
    snap = os.path.join(work, 'big.btrace')
    r = subprocess.run([btrace, 'record', '-q', '-b', 'qemu', '--size', '8M',
                        '-o', snap, '--', os.path.join(progs, 'long-run'),
                        '4000000'], capture_output=True, text=True,
                       timeout=HANG)
    info = subprocess.run([btrace, 'info', '--json', snap],
                          capture_output=True, text=True)
    try:
        import json
        size = sum(b['size'] for b in json.loads(info.stdout)['buffers'])
    except (ValueError, KeyError, TypeError):
        size = 0
    if not T.ok(size >= 1 << 20, 'a snapshot with %d bytes of trace (at '
                'least 1 MiB: the progress threshold)' % size):
        T.diag(r.stderr + info.stderr)
        return
    out_tty = os.path.join(work, 'tty.out')
    with open(out_tty, 'w') as f:
        rc, err = pty_stderr([btrace, 'decode', '--calls', snap], f)
    T.ok(rc == 0 and 'btrace decode: decoding' in err and
         'of trace (' in err,
         'stderr a terminal: a progress line while decoding (and while '
         'listing when the call entries are more than the first pass keeps)')
    T.ok(err.endswith('\r\x1b[K'), 'the line is erased at the end')
    T.ok(all(len(x) <= 80 for x in err.replace('\x1b[K', '').split('\r')),
         'each progress line fits 80 columns')
    r = subprocess.run([btrace, 'decode', '--calls', snap],
                       capture_output=True, text=True, timeout=HANG)
    T.ok(r.returncode == 0 and r.stderr == '',
         'stderr not a terminal: no progress line')
    T.ok(r.stdout == open(out_tty).read() and len(r.stdout) > 1000,
         'the listing is the same either way')
    with open(os.devnull, 'w') as f:  # --blocks: decoded twice
        rc, err = pty_stderr([btrace, 'decode', '--blocks', snap], f)
    T.ok(rc == 0 and 'btrace decode: listing' in err and
         err.endswith('\r\x1b[K'), 'stderr a terminal: --blocks (a second '
         'decode for the listing) shows the listing pass too, erased at '
         'the end')

def main():
    if len(sys.argv) != 4:
        print('usage: snapshot.py running|join|native|user|progress BTRACE '
              'PROGDIR',
              file=sys.stderr)
        return 2
    mode, btrace, progs = sys.argv[1:]
    btrace, progs = os.path.abspath(btrace), os.path.abspath(progs)
    why = e2elib.qemu_skip_reason()
    if why and mode != 'native':   # refusing needs no emulator
        return e2elib.skip_all(why)
    with tempfile.TemporaryDirectory(prefix='qsnap-') as work:
        {'running': case_running, 'join': case_join, 'native': case_native,
         'user': case_user, 'progress': case_progress}[mode](btrace, progs,
                                                            work)
    return T.done()


if __name__ == '__main__':
    e2elib.run_main(main)
