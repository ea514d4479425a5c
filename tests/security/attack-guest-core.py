#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Another user cannot steer or read the QEMU guest core of root's btrace (TAP).

    attack-guest-core.py BTRACE PROG

PROG is e2e-crash-core (tests/e2e/progs/crash-core.c).  Needs root, the
user nobody and setpriv; skips otherwise.

The attack: root's `btrace record -b qemu` runs a crashing program (its
environment holds a secret) in a mode-1777 directory, as in /tmp, with
TMPDIR another such directory and RLIMIT_CORE unlimited.  Meanwhile
`nobody` watches /proc for the emulator and, as soon as its pid is known,
plants symbolic links to a root-only file under every name QEMU's guest
core could get (qemu_<prog>_<YYYYMMDD-HHMMSS>_<pid>.core for the next
seconds) and under the host core's names (core, core.<pid>); it reads,
and tries to hard-link, every file that appears in either directory.
Afterwards: the root-only file is unchanged, root created nothing in the
shared directory but the snapshot, nobody read the secret anywhere, and
TMPDIR holds nothing of root's.

Leftovers: with `ulimit -c 0`, SIGQUIT, SIGABRT (RLIMIT_CORE unlimited) and a
daemonised grandchild that faults after btrace has returned, the working
directory holds at most the requested snapshot, and TMPDIR nothing.
"""
import json
import os
import pwd
import resource
import signal
import shutil
import stat
import subprocess
import sys
import tempfile
import time

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


SECRET = 'btrace-secret-9d41a7'
BASE = 'e2e-crash-core'


def attacker(shared, tmpdir, victim, logdir, mode):
    """Runs as nobody until logdir/stop exists; writes logdir/found.json.
    @mode 'links': plant links and read; 'read': only read and hard-link
    (a core written in place of a link is not in the directory to read)."""
    planted, leaks, linked, seen_pids, errors = [], [], [], [], []
    own = set()
    checked = set()
    start = time.time()
    stolen = 0

    def plant(name):
        if mode != 'links':
            return
        p = os.path.join(shared, name)
        try:
            os.symlink(victim, p)
            own.add(name)
            planted.append(name)
        except OSError:
            pass

    def read_try(path):
        try:
            with open(path, 'rb') as f:
                data = f.read()
        except OSError:
            return
        if SECRET.encode() in data:
            leaks.append(path)

    while not os.path.exists(os.path.join(logdir, 'stop')) and \
            time.time() - start < 300:
        # The emulator's pid, from its command line (world-readable).
        for d in os.listdir('/proc'):
            if not d.isdigit() or int(d) in checked:
                continue
            try:
                with open('/proc/%s/cmdline' % d, 'rb') as f:
                    cmd = f.read().split(b'\0')
            except OSError:
                continue
            # Not yet the emulator (btrace between fork and exec, or in
            # the middle of the exec: an empty line): again.
            if any(cmd) and not any(BASE.encode() in a for a in cmd):
                checked.add(int(d))
            if cmd and b'qemu' in os.path.basename(cmd[0]) and \
                    any(BASE.encode() in a for a in cmd):
                checked.add(int(d))
                pid = int(d)
                seen_pids.append(pid)
                now = time.time()
                for dt in range(-2, 40):
                    stamp = time.strftime('%Y%m%d-%H%M%S',
                                          time.localtime(now + dt))
                    plant('qemu_%s_%s_%d.core' % (BASE, stamp, pid))
                plant('core.%d' % pid)
        if 'core' not in own:
            plant('core')
        # Whatever appears: read it, hard-link it.
        for top in (shared, tmpdir):
            for name in os.listdir(top):
                if top == shared and name in own:
                    continue
                p = os.path.join(top, name)
                read_try(p)
                if os.path.isdir(p):
                    try:
                        for sub in os.listdir(p):
                            read_try(os.path.join(p, sub))
                    except OSError:
                        pass
                    continue
                stolen += 1
                dst = os.path.join(logdir, 'stolen.%d' % stolen)
                try:
                    os.link(p, dst)
                    linked.append(name)
                    read_try(dst)
                except OSError:
                    pass
        time.sleep(0.01)
    with open(os.path.join(logdir, 'found.json'), 'w') as f:
        json.dump({'planted': planted, 'leaks': leaks, 'linked': linked,
                   'pids': seen_pids, 'errors': errors}, f)


class Tap:
    def __init__(self):
        self.n = self.failed = 0

    def ok(self, cond, desc):
        self.n += 1
        if not cond:
            self.failed += 1
        print('%s %d - %s' % ('ok' if cond else 'not ok', self.n,
                              desc.replace('#', '\\#')), flush=True)
        return cond

    def diag(self, text):
        for ln in str(text).splitlines():
            print('# ' + ln)

    def done(self):
        print('1..%d' % self.n)
        return 1 if self.failed or not self.n else 0


T = Tap()
ok = T.ok


def record(btrace, args, cwd, tmpdir, snap=None, core=None, extra=()):
    cmd = [btrace, 'record', '-b', 'qemu', '-q']
    if snap:
        cmd += ['-o', snap]
    cmd += list(extra) + ['--', PROG] + args
    env = dict(os.environ, TMPDIR=tmpdir, BTRACE_TEST_SECRET=SECRET)

    def pre():
        # a background job of a shell without job control ignores SIGINT
        # and SIGQUIT, and so would the program (natively too): the cases
        # are about the default action
        signal.signal(signal.SIGQUIT, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        if core is not None:
            resource.setrlimit(resource.RLIMIT_CORE, core)

    return subprocess.run(cmd, cwd=cwd, env=env, preexec_fn=pre,
                          capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)


def walk_root_files(top):
    found = []
    for dirpath, dirs, files in os.walk(top):
        for n in dirs + files:
            p = os.path.join(dirpath, n)
            if os.lstat(p).st_uid == 0:
                found.append(os.path.relpath(p, top))
    return sorted(found)


def nobody_python():
    """A Python nobody can run (sys.executable may be under /root)."""
    for p in (sys.executable, '/usr/bin/python3', '/usr/local/bin/python3'):
        r = subprocess.run(['setpriv', '--reuid=nobody', '--regid=%d' % NOGID,
                            '--clear-groups', '--', p, '-c', 'pass'],
                           capture_output=True)
        if r.returncode == 0:
            return p
    return None


def nobody_can_read_secret(paths):
    """Files among @paths (recursively) nobody can read that hold SECRET."""
    code = ('import os,sys\n'
            'hits=[]\n'
            'for top in sys.argv[2:]:\n'
            '  for d,ds,fs in os.walk(top):\n'
            '    for n in fs:\n'
            '      p=os.path.join(d,n)\n'
            '      try:\n'
            '        if sys.argv[1].encode() in open(p,"rb").read(): '
            'hits.append(p)\n'
            '      except OSError: pass\n'
            'print("\\n".join(hits))\n')
    r = subprocess.run(['setpriv', '--reuid=nobody', '--regid=%d' % NOGID,
                        '--clear-groups', '--', NOPY, '-c', code,
                        SECRET] + paths, capture_output=True, text=True)
    return [x for x in r.stdout.splitlines() if x]


def attack(btrace, top, mode):
    shared = os.path.join(top, 'shared-' + mode)
    tmpdir = os.path.join(top, 'tmp-' + mode)
    logdir = os.path.join(top, 'attacker-' + mode)
    victim = os.path.join(top, 'victim-' + mode)

    def check(cond, desc):
        return ok(cond, 'attack (%s): %s' % (mode, desc))
    for d in (shared, tmpdir):
        os.mkdir(d)
        os.chmod(d, 0o1777)
    os.mkdir(logdir)
    os.chown(logdir, NOUID, NOGID)
    with open(victim, 'w') as f:
        f.write('root-only\n')
    os.chmod(victim, 0o600)

    att = subprocess.Popen(['setpriv', '--reuid=nobody', '--regid=%d' % NOGID,
                            '--clear-groups', '--', NOPY,
                            ATTACKER, '--attacker', shared,
                            tmpdir, victim, logdir, mode])
    time.sleep(1)   # the attacker's first scan
    snap = os.path.join(shared, 'snap.btrace')
    r = record(btrace, ['slow'], shared, tmpdir, snap=snap,
               core=(resource.RLIM_INFINITY, resource.RLIM_INFINITY))
    time.sleep(1)   # the attacker sees the final state
    open(os.path.join(logdir, 'stop'), 'w').close()
    att.wait(timeout=120)
    try:
        with open(os.path.join(logdir, 'found.json')) as f:
            found = json.load(f)
    except (OSError, ValueError):
        found = None
    check(r.returncode == 128 + 11,
          'the program\'s SIGSEGV status passes through (%d)' % r.returncode)
    if r.returncode != 128 + 11:
        T.diag(r.stderr[-800:])
    if not check(found is not None, 'the attacker ran and reported'):
        return
    pid = None
    if os.path.exists(snap):
        rep = subprocess.run([btrace, 'report', '--json', snap],
                             capture_output=True, text=True)
        if rep.returncode == 0:
            pid = json.loads(rep.stdout)['process']['pid']
            fault = json.loads(rep.stdout).get('fault') or {}
            check(fault.get('exact') is True and
                  fault.get('function') == 'consume',
                  'the snapshot still has the exact fault (%s+%s)' %
                  (fault.get('function'), fault.get('offset')))
    mine = [n for n in found['planted']
            if n.startswith('qemu_%s_' % BASE) and
            n.endswith('_%s.core' % pid)]
    check(pid is not None and pid in found['pids'] and
          (mode != 'links' or mine),
          'nobody saw emulator %s%s' % (
              pid, ' and planted %d links at its guest core\'s predictable '
              'names' % len(mine) if mode == 'links' else ''))
    with open(victim, 'rb') as f:
        data = f.read()
    check(data == b'root-only\n', 'the root-only file the links point to is '
          'unchanged (%d bytes)' % len(data))
    check(found['leaks'] == [], 'nobody read the program\'s secret while it '
          'ran (%s)' % found['leaks'])
    check(found['linked'] == [], 'nobody hard-linked any of root\'s files '
          '(%s)' % found['linked'])
    check(walk_root_files(shared) == ['snap.btrace'],
          'root created nothing in the shared directory but the snapshot '
          '(%s)' % walk_root_files(shared))
    check(walk_root_files(tmpdir) == [], 'nothing of root\'s is left in '
          'TMPDIR (%s)' % walk_root_files(tmpdir))
    hits = nobody_can_read_secret([shared, tmpdir])
    check(hits == [], 'nothing nobody can read holds the secret (%s)' % hits)


def leftovers(btrace, top):
    inf = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)
    cases = [('ulimit -c 0', ['plain'], (0, resource.RLIM_INFINITY),
              128 + 11, ['s.btrace']),
             ('SIGQUIT', ['quit'], inf, 128 + 3, []),
             ('SIGABRT', ['abort'], inf, 128 + 6, ['s.btrace'])]
    for i, (name, args, core, status, want) in enumerate(cases):
        cwd = os.path.join(top, 'left%d' % i)
        tmp = os.path.join(top, 'ltmp%d' % i)
        os.mkdir(cwd)
        os.mkdir(tmp, 0o700)
        r = record(btrace, args, cwd, tmp, snap='s.btrace', core=core)
        ok(r.returncode == status, '%s: status %d passes through (%d)' %
           (name, status, r.returncode))
        ok(sorted(os.listdir(cwd)) == want, '%s: the working directory '
           'holds %s (%s)' % (name, want or 'nothing',
                              sorted(os.listdir(cwd))))
        ok(os.listdir(tmp) == [], '%s: TMPDIR is left empty' % name)

    # A daemonised grandchild that faults after btrace returned.
    cwd = os.path.join(top, 'daemon')
    tmp = os.path.join(top, 'dtmp')
    flags = os.path.join(top, 'flags')
    for d in (cwd, tmp, flags):
        os.mkdir(d, 0o700)
    pidfile = os.path.join(flags, 'pid')
    gofile = os.path.join(flags, 'go')
    r = record(btrace, ['daemon', pidfile, gofile], cwd, tmp, snap='s.btrace',
               core=inf)
    ok(r.returncode == 0, 'daemon: the launched process\'s status 0 passes '
       'through (%d)' % r.returncode)
    pid = None
    for _ in range(600):
        try:
            with open(pidfile) as f:
                pid = int(f.read())
            break
        except (OSError, ValueError):
            time.sleep(0.05)
    if not ok(pid is not None, 'daemon: the grandchild started (%s)' % pid):
        return
    open(gofile, 'w').close()
    for _ in range(1200):
        if not os.path.exists('/proc/%d' % pid):
            break
        time.sleep(0.05)
    ok(not os.path.exists('/proc/%d' % pid), 'daemon: the grandchild died')
    ok(os.listdir(cwd) == [], 'daemon: the working directory is left empty '
       '(%s)' % os.listdir(cwd))
    ok(os.listdir(tmp) == [], 'daemon: TMPDIR is left empty (%s)' %
       os.listdir(tmp))


def main():
    global PROG, NOUID, NOGID, NOPY, ATTACKER
    if len(sys.argv) > 1 and sys.argv[1] == '--attacker':
        attacker(*sys.argv[2:7])
        return 0
    btrace, PROG = [os.path.abspath(a) for a in sys.argv[1:3]]
    if os.geteuid() != 0:
        print('1..0 # SKIP needs root: the attacks are on root\'s btrace')
        return 0
    try:
        pw = pwd.getpwnam('nobody')
    except KeyError:
        print('1..0 # SKIP no user nobody')
        return 0
    NOUID, NOGID = pw.pw_uid, pw.pw_gid
    if not shutil.which('setpriv'):
        print('1..0 # SKIP setpriv (util-linux) is not installed')
        return 0
    NOPY = nobody_python()
    if not NOPY:
        print('1..0 # SKIP no Python the user nobody can run')
        return 0
    why = qemu_without_plugins()
    if why:
        print('1..0 # SKIP %s' % why)
        return 0
    with tempfile.TemporaryDirectory() as top:
        os.chmod(top, 0o755)
        # nobody may not enter the source tree (a clone in a private
        # directory): the attacker runs a copy of this script made for it
        ATTACKER = os.path.join(top, 'attacker.py')
        shutil.copyfile(os.path.abspath(__file__), ATTACKER)
        os.chmod(ATTACKER, 0o644)
        attack(btrace, top, 'links')
        attack(btrace, top, 'read')
        leftovers(btrace, top)
        # The shared directories are full of nobody's files: remove as root.
        shutil.rmtree(top, ignore_errors=True)
        os.makedirs(top, exist_ok=True)
    return T.done()


PROG = NOUID = NOGID = NOPY = ATTACKER = None

if __name__ == '__main__':
    sys.exit(main())
