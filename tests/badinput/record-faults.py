#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Crashes that `btrace record` itself must not lose or change (TAP).

    record-faults.py BTRACE STRESS [CASE...]

Each case runs bt-stress (tests/badinput/stress.c) under `btrace record -b
qemu` and, where the program's own view matters, natively too:
  sigchld   started with SIGCHLD ignored (a daemon, `trap '' CHLD`): the
            crash is written and its status 139 passed through, and the
            program still sees SIGCHLD ignored, as natively
  sigwrite  SIGTERM, SIGINT or SIGHUP to btrace while the crash snapshot is
            being written (btrace is stopped with its temporary file there,
            the signal sent, then it is continued): the snapshot is finished
            and the program's 139 passed through
  pgrp      the program's process group as natively: started as its own
            group's leader (a shell's job), in its parent's group (a
            script), and as an interactive shell's foreground job on a
            terminal, where ^C and ^Z reach the program and `fg` goes on
  sameout   two recordings that crash into the same -o file: both kept, the
            second under a new name its summary gives; a file from before
            the recording is replaced
All cases by default.  Skipped when this machine's qemu-x86_64 is missing or
has no plugin support.
"""
import os
import pty
import select
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import e2elib  # noqa: E402

T = e2elib.Tap()
ok = T.ok


def run(cmd, preexec=None, timeout=300, **kw):
    return subprocess.run(cmd, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout,
                          preexec_fn=preexec, **kw)


def ignore_chld():
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)


def case_sigchld(bt, stress, work):
    snap = os.path.join(work, 'chld.btrace')
    r = run([bt, 'record', '-b', 'qemu', '-o', snap, '--', stress,
             'close-stdio', 'crash'], preexec=ignore_chld)
    ok(r.returncode == 139, 'SIGCHLD ignored: exit %d, the program\'s '
       'status is 139 (%s)' % (r.returncode, r.stderr.strip()[-200:]))
    ok(os.path.exists(snap), 'SIGCHLD ignored: the crash is written')
    r = run([bt, 'record', '-b', 'qemu', '-o', snap, '--', stress,
             'close-stdio'], preexec=ignore_chld)
    ok(r.returncode == 3, 'SIGCHLD ignored: a clean exit 3 passes through '
       '(got %d)' % r.returncode)
    # The program's own view: natively an ignored SIGCHLD is inherited
    # through execve() and its children are reaped by the kernel.
    nat = run([stress, 'sigchld'], preexec=ignore_chld)
    under = run([bt, 'record', '-b', 'qemu', '-q', '-o', snap, '--', stress,
                 'sigchld'], preexec=ignore_chld)
    ok(nat.stdout.split() == ['sigchld=ign', 'reaped=1'],
       'SIGCHLD ignored, natively: %r' % nat.stdout)
    ok(under.returncode == 0 and under.stdout == nat.stdout,
       'SIGCHLD ignored: the program sees what it sees natively: %r '
       '(natively %r; exit %d)' % (under.stdout, nat.stdout,
                                   under.returncode))
    nat = run([stress, 'sigchld'])
    under = run([bt, 'record', '-b', 'qemu', '-q', '-o', snap, '--', stress,
                 'sigchld'])
    ok(under.returncode == 0 and under.stdout == nat.stdout,
       'SIGCHLD default: the program sees %r, natively %r'
       % (under.stdout, nat.stdout))


def proc_state(pid):
    try:
        with open('/proc/%d/stat' % pid) as f:
            return f.read().rsplit(')', 1)[1].split()[0]
    except OSError:
        return None


def default_signals():
    # as a shell's foreground job: not the ignored SIGINT of a background
    # one, whatever ran this test
    for s in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(s, signal.SIG_DFL)


def case_sigwrite(bt, stress, work):
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        name = signal.Signals(sig).name
        hit = False
        for attempt in range(6):
            d = tempfile.mkdtemp(dir=work)
            snap = os.path.join(d, 'w.btrace')
            p = subprocess.Popen([bt, 'record', '-b', 'qemu', '-q',
                                  '--memory', '128M', '-o', snap, '--',
                                  stress, 'heap', '96', 'crash'],
                                 stdin=subprocess.DEVNULL,
                                 stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True,
                                 preexec_fn=default_signals)
            # the snapshot being written: a file btrace has open in @d
            # (with no name until it is complete, or NAME.tmp.XXXXXX)
            tmp = None
            end = time.monotonic() + 120
            while time.monotonic() < end and p.poll() is None and not tmp:
                tmp = e2elib.writing_into(p.pid, d)
            if tmp and p.poll() is None:
                os.kill(p.pid, signal.SIGSTOP)
                e2elib.wait_for(lambda: proc_state(p.pid) in ('T', 'Z',
                                                              None), 10)
                # stopped in the middle of the write: the file is open
                # and the snapshot is not there
                if (proc_state(p.pid) == 'T' and
                        e2elib.writing_into(p.pid, d) and
                        not os.path.exists(snap)):
                    hit = True
                    os.kill(p.pid, sig)
                os.kill(p.pid, signal.SIGCONT)
            out, err = p.communicate(timeout=300)
            if not hit:
                T.diag('%s: attempt %d missed the write' % (name, attempt))
                continue
            rc = p.returncode if p.returncode >= 0 else 128 - p.returncode
            ok(rc == 139, '%s during the write: exit %d, the program\'s '
               'status is 139 (%s)' % (name, rc, err.strip()[-200:]))
            ok(os.path.exists(snap), '%s during the write: the snapshot is '
               'finished' % name)
            left = [f for f in os.listdir(d) if f != 'w.btrace']
            ok(not left, '%s during the write: no temporary file left (%s)'
               % (name, ' '.join(left)))
            if os.path.exists(snap):
                r = run([bt, 'info', snap])
                ok(r.returncode == 0, '%s during the write: the snapshot '
                   'reads back (%s)' % (name, r.stderr.strip()[-200:]))
            break
        if not hit:
            ok(False, '%s: could not stop btrace during the write in 6 '
               'tries' % name)


# A minimal job-control shell on a terminal: the session leader runs
# ARGV as a foreground job in its own process group (as bash, zsh and
# dash -i do), answers "stopped" when the job stops, and then `fg`s it.
SHELL = r'''
import os, signal, sys, time
argv = sys.argv[1:]
signal.signal(signal.SIGTTOU, signal.SIG_IGN)
signal.signal(signal.SIGINT, signal.SIG_IGN)
signal.signal(signal.SIGTSTP, signal.SIG_IGN)
pid = os.fork()
if pid == 0:
    os.setpgid(0, 0)
    os.tcsetpgrp(0, os.getpid())
    for s in (signal.SIGTTOU, signal.SIGINT, signal.SIGTSTP):
        signal.signal(s, signal.SIG_DFL)
    os.execv(argv[0], argv)
os.setpgid(pid, pid)
end = time.monotonic() + 200
while time.monotonic() < end:
    w, st = os.waitpid(pid, os.WUNTRACED | os.WNOHANG)
    if w == 0:
        time.sleep(0.02)
        continue
    if os.WIFSTOPPED(st):
        os.tcsetpgrp(0, os.getpgrp())
        print('shell: stopped by %d' % os.WSTOPSIG(st), flush=True)
        sys.stdin.readline()      # the test says "fg"
        os.tcsetpgrp(0, pid)
        os.killpg(pid, signal.SIGCONT)
        continue
    os.tcsetpgrp(0, os.getpgrp())
    print('shell: status %d' % (os.WEXITSTATUS(st) if os.WIFEXITED(st)
                                else 128 + os.WTERMSIG(st)), flush=True)
    sys.exit(0)
print('shell: job still running', flush=True)
os.killpg(pid, signal.SIGKILL)
'''


class Term:
    """A terminal whose session runs SHELL with @argv as its job."""

    def __init__(self, argv):
        self.pid, self.fd = pty.fork()
        if self.pid == 0:
            try:
                os.execv(sys.executable, [sys.executable, '-c', SHELL] +
                         argv)
            finally:
                os._exit(127)
        self.out = ''

    def expect(self, text, limit=120):
        end = time.monotonic() + limit
        while text not in self.out and time.monotonic() < end:
            r, _, _ = select.select([self.fd], [], [], 0.2)
            if r:
                try:
                    b = os.read(self.fd, 4096)
                except OSError:
                    break
                if not b:
                    break
                self.out += b.decode(errors='replace')
        return text in self.out

    def send(self, text):
        os.write(self.fd, text.encode())

    def close(self):
        try:
            os.kill(self.pid, signal.SIGKILL)
        except OSError:
            pass
        try:
            os.waitpid(self.pid, 0)
        except OSError:
            pass
        os.close(self.fd)


def case_pgrp(bt, stress, work):
    snap = os.path.join(work, 'pg.btrace')
    rec = [bt, 'record', '-b', 'qemu', '-q', '-o', snap, '--']
    ways = (('as its group\'s leader (a shell\'s job)', os.setpgrp),
            ('in its parent\'s group (a script)', None))
    for desc, pre in ways:
        nat = run([stress, 'pgrp'], preexec=pre)
        under = run(rec + [stress, 'pgrp'], preexec=pre)
        ok(under.returncode == 0 and nat.stdout == under.stdout,
           'started %s: the program sees %r, natively %r (%s)'
           % (desc, under.stdout.strip(), nat.stdout.strip(),
              under.stderr.strip()[-200:]))
    # kill -TERM -PGID of the job: natively the program's group; under
    # btrace, btrace's group, and the program's where it leads its own.
    for name, argv in (('natively', []), ('under btrace', rec)):
        p = subprocess.Popen(argv + [stress, 'wait',
                                     os.path.join(work, 'never')],
                             stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, preexec_fn=os.setpgrp)
        time.sleep(1 if not argv else 3)
        os.killpg(p.pid, signal.SIGTERM)
        p.communicate(timeout=120)
        rc = p.returncode if p.returncode >= 0 else 128 - p.returncode
        ok(rc == 143, 'SIGTERM to the job\'s process group %s: exit %d '
           '(143: the program died of it)' % (name, rc))
    # An interactive terminal: the view, then ^C, then ^Z and fg.
    views = []
    for argv in ([stress, 'pgrp'], rec + [stress, 'pgrp']):
        t = Term(argv)
        t.expect('shell: status')
        views.append([ln.strip() for ln in t.out.splitlines()
                      if ln.startswith(('leader=', 'shell:'))])
        t.close()
    ok(views[0] == ['leader=1 fg=1 setsid=EPERM', 'shell: status 0'],
       'terminal, natively: %r' % views[0])
    ok(views[1] == views[0], 'terminal: the program sees %r, natively %r'
       % (views[1], views[0]))
    for name, argv in (('natively', []), ('under btrace', rec)):
        go = os.path.join(work, 'go-int')
        t = Term(argv + [stress, 'wait', go])
        time.sleep(1 if not argv else 3)
        t.send('\x03')
        got = t.expect('shell: status')
        ok(got and 'shell: status 130' in t.out,
           'terminal, ^C %s: the job ends of SIGINT (%r)'
           % (name, t.out.strip()[-200:]))
        t.close()
    for name, argv in (('natively', []), ('under btrace', rec)):
        go = os.path.join(work, 'go-tstp-%d' % len(argv))
        t = Term(argv + [stress, 'wait', go])
        time.sleep(1 if not argv else 3)
        t.send('\x1a')
        stopped = t.expect('shell: stopped by', 30)
        ok(stopped, 'terminal, ^Z %s: the job stops (%r)'
           % (name, t.out.strip()[-200:]))
        if stopped:
            open(go, 'w').close()
            t.send('fg\n')
            done = t.expect('shell: status', 120)
            ok(done and 'shell: status 0' in t.out,
               'terminal, fg %s: the job goes on and exits 0 (%r)'
               % (name, t.out.strip()[-200:]))
        t.close()


def case_sameout(bt, stress, work):
    d = tempfile.mkdtemp(dir=work)
    snap = os.path.join(d, 'same.btrace')
    go = os.path.join(d, 'go')
    ps = [subprocess.Popen([bt, 'record', '-b', 'qemu', '-o', snap, '--',
                            stress, 'wait', go, 'crash'],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True)
          for _ in range(2)]
    time.sleep(2)
    open(go, 'w').close()
    res = [p.communicate(timeout=300) for p in ps]
    rcs = [p.returncode for p in ps]
    ok(rcs == [139, 139], 'two recordings into one -o: both exit 139 (%r)'
       % rcs)
    files = sorted(f for f in os.listdir(d) if f.endswith('.btrace'))
    ok(len(files) == 2, 'two recordings into one -o: both crashes kept (%r)'
       % files)
    other = [f for f in files if f != 'same.btrace']
    # the messages are wrapped at the terminal's width: one line of each
    said = ' '.join(''.join(e for _, e in res).split())
    why = [m for m in said.split('btrace record: ')
           if 'during this recording' in m]
    ok(len(other) == 1 and len(why) == 1 and other[0] in why[0] and
       'same.btrace' in why[0],
       'two recordings into one -o: the second\'s summary names its file '
       'and why (%r)' % said.strip()[-400:])
    for f in files:
        r = run([bt, 'info', os.path.join(d, f)])
        ok(r.returncode == 0, '%s reads back' % f)
    # A file from before the recording is replaced (a run again).
    before = os.stat(snap).st_ino
    r = run([bt, 'record', '-b', 'qemu', '-q', '-o', snap, '--', stress,
             'close-stdio', 'crash'])
    files2 = sorted(f for f in os.listdir(d) if f.endswith('.btrace'))
    ok(r.returncode == 139 and files2 == files and
       os.stat(snap).st_ino != before,
       'a run again replaces the file from before it (%r)' % files2)


CASES = {'sigchld': case_sigchld, 'sigwrite': case_sigwrite,
         'pgrp': case_pgrp, 'sameout': case_sameout}


def main():
    bt, stress = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    why = e2elib.qemu_skip_reason()
    if why:
        e2elib.skip_all(why)
    cases = sys.argv[3:] or list(CASES)
    with tempfile.TemporaryDirectory() as work:
        for c in cases:
            CASES[c](bt, stress, work)
    return T.done()


if __name__ == '__main__':
    e2elib.run_main(main)
