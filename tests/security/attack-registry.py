# SPDX-License-Identifier: MIT
"""Attacks on root's single-owner registry by nobody (docs/security.md).

Each attack is performed for real; it must fail, and what it aimed at
(a file of root's, a snapshot, root's btrace) must be untouched:
  - the registry is per user: root's is /run/btrace/0, 0700, and nobody
    cannot create anything in it or in /run/btrace;
  - a link planted at the lock file is not followed; a registry directory
    another user owns is refused;
  - a fake owner socket served by nobody is refused (SO_PEERCRED) by
    `record -p` and `snapshot`; a silent owner times out with a clear
    error; an owner that sends /dev/zero or a file that is no snapshot is
    refused;
  - nobody connecting to root's owner socket (even with the old 0666
    modes) gets no descriptor; root itself still gets its snapshot.
"""
import os
import socket
import stat
import subprocess
import sys
import tempfile
import time

btrace, regtool, fixture, e2e = sys.argv[1:5]
sys.path.insert(0, e2e)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import Tap  # noqa: E402
import seclib as S  # noqa: E402

S.need_root_and_nobody()
t = Tap()
work = tempfile.mkdtemp(prefix='bt-sec-reg-')
os.chmod(work, 0o755)
victim = os.path.join(work, 'victim')
with open(victim, 'w') as f:
    f.write('precious\n')
os.chmod(victim, 0o600)
target = subprocess.Popen(['sleep', '600'])
pid = target.pid
name = S.reg_name(pid)
env0 = S.env_without('BTRACE_REGISTRY', 'XDG_RUNTIME_DIR')


def victim_intact():
    return S.read(victim) == b'precious\n'


# 1. root's registry directory is root's alone.
r = S.run([regtool, 'dir'], env=env0, text=True)
regdir = r.stdout.strip()
st = os.lstat(regdir) if r.returncode == 0 else None
t.ok(regdir == '/run/btrace/0' and st and stat.S_ISDIR(st.st_mode) and
     st.st_uid == 0 and stat.S_IMODE(st.st_mode) == 0o700,
     "root's registry is /run/btrace/0, a directory of root's, mode 0700")
pst = os.lstat('/run/btrace')
t.ok(pst.st_uid == 0 and not (pst.st_mode & 0o022),
     '/run/btrace is root\'s and no one else may write it')
r = S.nobody_py('import os,sys\n'
                'for p in sys.argv[1:]:\n'
                '    try:\n'
                '        os.symlink("/etc/shadow", p); print("planted", p)\n'
                '    except OSError as e:\n'
                '        print("refused", p, e.errno)\n',
                os.path.join(regdir, name + '.lock'),
                os.path.join('/run/btrace', name + '.lock'),
                os.path.join('/run/btrace', name + '.sock'))
t.ok(r.returncode == 0 and 'planted' not in r.stdout and
     r.stdout.count('refused') == 3,
     'nobody cannot plant a lock or socket in /run/btrace or /run/btrace/0')
t.diag(r.stdout + r.stderr)

# 2. a link at the lock file is not followed.
reg = os.path.join(work, 'reg')
os.mkdir(reg, 0o700)
os.symlink(victim, os.path.join(reg, name + '.lock'))
r = S.run([regtool, 'claim', str(pid)], env=S.env_without(BTRACE_REGISTRY=reg),
          text=True)
t.ok(r.returncode == 2 and 'error' in r.stdout and victim_intact(),
     'a symlink at the lock file: the claim fails, the linked file is untouched')
t.diag(r.stdout)
os.unlink(os.path.join(reg, name + '.lock'))

# ... and a registry directory nobody owns is refused.
nobdir = os.path.join(work, 'nobody')
os.mkdir(nobdir)
os.chown(nobdir, S.nobody_uid(), -1)
evil = os.path.join(nobdir, 'evilreg')
r = S.nobody_py('import os,sys\nos.mkdir(sys.argv[1], 0o777)\n'
                'os.chmod(sys.argv[1], 0o777)\n'
                'os.symlink(sys.argv[2], os.path.join(sys.argv[1], sys.argv[3]))',
                evil, victim, name + '.lock')
r2 = S.run([regtool, 'claim', str(pid)], env=S.env_without(BTRACE_REGISTRY=evil),
           text=True)
t.ok(r.returncode == 0 and r2.returncode == 2 and 'owned by uid' in r2.stdout
     and victim_intact(),
     'a registry directory owned by nobody is refused')
t.diag(r.stderr + r2.stdout)

# 3. fake owners.  The socket file is bound by root in root's registry (the
# only place root looks); the process that listens and answers is nobody.
FAKE = r'''
import os, socket, sys, time
path, mode, uid, gid = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
if uid:
    os.setgroups([]); os.setgid(gid); os.setuid(uid)
s.listen(8)
print('listening', os.getuid(), flush=True)
zero = os.open('/dev/zero', os.O_RDONLY)
other = os.open('/etc/hostname', os.O_RDONLY)
end = time.time() + 60
s.settimeout(1)
while time.time() < end:
    try:
        c, _ = s.accept()
    except socket.timeout:
        continue
    c.settimeout(5)
    try:
        req = c.recv(100)
        if mode == 'silent':
            time.sleep(90)
        elif req.startswith(b'JOIN'):
            c.sendall(b'OK owner=1 backend=1\n')
            socket.send_fds(c, [b'SNAP fake\n'], [zero if mode != 'other' else other])
            time.sleep(5)
        else:
            socket.send_fds(c, [b'SNAP fake\n'], [zero if mode != 'other' else other])
    except OSError:
        pass
    c.close()
'''


def fake_owner(mode, uid):
    sock = os.path.join(reg, name + '.sock')
    if os.path.exists(sock):
        os.unlink(sock)
    p = subprocess.Popen([sys.executable, '-c', FAKE, sock, mode, str(uid),
                          str(65534)], stdout=subprocess.PIPE, text=True)
    p.stdout.readline()
    return p


def attack(mode, uid, what):
    env = S.env_without(BTRACE_REGISTRY=reg)
    p = fake_owner(mode, uid)
    out = os.path.join(work, 'rec-%s.btrace' % mode)
    t0 = time.time()
    rec = S.run([btrace, 'record', '-q', '-o', out, '-p', str(pid)], env=env,
                text=True, timeout=120)
    dt = time.time() - t0
    snap = os.path.join(work, 'snap-%s.btrace' % mode)
    sn = S.run([btrace, 'snapshot', '-o', snap, str(pid)], env=env, text=True,
               timeout=200)
    p.kill()
    p.wait()
    return rec, dt, sn, out, snap


nob = S.nobody_uid()
rec, dt, sn, out, snap = attack('zero', nob, 'nobody')
t.ok(rec.returncode == 1 and 'refused' in rec.stderr and not os.path.exists(out),
     'record -p: a fake owner served by nobody is refused (SO_PEERCRED), nothing saved')
t.diag(rec.stderr)
t.ok(sn.returncode == 1 and 'refused' in sn.stderr and not os.path.exists(snap),
     'snapshot: a fake owner served by nobody is refused, exit 1, nothing saved')
t.diag(sn.stderr)

rec, dt, sn, out, snap = attack('zero', 0, 'root')
t.ok(rec.returncode == 1 and 'not a regular file' in rec.stderr and
     not os.path.exists(out) and dt < 60,
     'record -p: an owner that sends /dev/zero is refused at once (%.1f s)' % dt)
t.diag(rec.stderr)
t.ok(sn.returncode == 1 and 'not a regular file' in sn.stderr and
     not os.path.exists(snap),
     'snapshot: an owner that sends /dev/zero is refused')
t.diag(sn.stderr)

rec, dt, sn, out, snap = attack('other', 0, 'root')
t.ok(rec.returncode == 1 and 'not a btrace snapshot' in rec.stderr and
     not os.path.exists(out),
     'record -p: an owner that sends a file that is no snapshot is refused')
t.diag(rec.stderr)
t.ok(sn.returncode == 1 and 'not a btrace snapshot' in sn.stderr and
     not os.path.exists(snap),
     'snapshot: a file that is no snapshot is refused, exit 1')
t.diag(sn.stderr)

rec, dt, sn, out, snap = attack('silent', 0, 'root')
t.ok(rec.returncode == 1 and 'time limit' in rec.stderr and dt < 100,
     'record -p: an owner that never answers times out with a clear error (%.1f s)' % dt)
t.diag(rec.stderr)
t.ok(sn.returncode == 1 and 'time limit' in sn.stderr and
     not os.path.exists(snap),
     'snapshot: an owner that never answers times out, nothing saved')
t.diag(sn.stderr)

# 4. nobody connects to root's real owner: even with the old modes (socket
# 0666 in a directory others may enter) it gets no descriptor.
sock = os.path.join(reg, name + '.sock')
if os.path.exists(sock):
    os.unlink(sock)
srv = subprocess.Popen([regtool, 'serve', str(pid), fixture, '40'],
                       env=S.env_without(BTRACE_REGISTRY=reg),
                       stdout=subprocess.PIPE, text=True)
ready = srv.stdout.readline().strip()
t.ok(ready == 'ready' and stat.S_IMODE(os.lstat(sock).st_mode) & 0o077 == 0,
     'root owns the recording; its socket is not accessible to others (mode %o)'
     % stat.S_IMODE(os.lstat(sock).st_mode) if os.path.exists(sock) else
     'root owns the recording')
os.chmod(reg, 0o755)
os.chmod(sock, 0o666)
CLIENT = r'''
import socket, sys
got = []
for req in (b'SNAPSHOT %s\n' % sys.argv[2].encode(), b'JOIN %s\n' % sys.argv[2].encode()):
    c = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    c.settimeout(10)
    c.connect(sys.argv[1])
    try:
        c.sendall(req)
    except OSError:
        pass
    try:
        msg, fds, _, _ = socket.recv_fds(c, 200, 4)
    except OSError as e:
        msg, fds = str(e).encode(), []
    print(req.split()[0].decode(), len(fds), msg.decode(errors='replace').strip())
'''
r = S.nobody_py(CLIENT, sock, pid)
t.ok(r.returncode == 0 and r.stdout.count(' 0 ') == 2 and
     'permission denied' in r.stdout,
     "nobody connecting to root's owner socket gets no descriptor (SO_PEERCRED)")
t.diag(r.stdout + r.stderr)
mine = os.path.join(work, 'mine.btrace')
r = S.run([btrace, 'snapshot', '-o', mine, str(pid)],
          env=S.env_without(BTRACE_REGISTRY=reg), text=True)
ok = r.returncode == 0 and os.path.exists(mine) and S.read(mine) == S.read(fixture)
t.ok(ok and stat.S_IMODE(os.stat(mine).st_mode) == 0o600,
     'root itself still gets the snapshot (0600)')
t.diag(r.stderr)
srv.kill()
srv.wait()
lines = srv.stdout.read()
t.ok(lines.count('refused') >= 2 and 'served' in lines,
     'the owner refused nobody and served root')
t.diag(lines)

target.kill()
target.wait()
subprocess.run(['rm', '-rf', work])
sys.exit(t.done())
