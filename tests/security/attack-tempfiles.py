# SPDX-License-Identifier: MIT
"""Planted links at the names root's btrace writes (docs/security.md).

root works in a directory nobody owns (a shared project directory; not a
sticky one, where the kernel's protected_symlinks would already stop it):
  - `btrace snapshot -o OUT`: nobody plants links at OUT.tmp<pid> for the
    next few hundred pids and at OUT itself; the snapshot is written under
    an unpredictable name and renamed, the linked files are untouched;
  - `btrace export`: a link or a directory of nobody's at OUT.symfs is
    refused, nothing is written through it; in root's own directory the
    same export works.
"""
import os
import re
import stat
import subprocess
import sys
import tempfile

btrace, regtool, fixture, e2e = sys.argv[1:5]
sys.path.insert(0, e2e)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import Tap  # noqa: E402
import seclib as S  # noqa: E402

S.need_root_and_nobody()
t = Tap()
work = tempfile.mkdtemp(prefix='bt-sec-tmp-')
os.chmod(work, 0o755)
nob = S.nobody_uid()
shared = os.path.join(work, 'shared')
os.mkdir(shared, 0o755)
os.chown(shared, nob, -1)
victim = os.path.join(work, 'victim')
with open(victim, 'w') as f:
    f.write('precious\n')
os.chmod(victim, 0o644)
vdir = os.path.join(work, 'rootonly')
os.mkdir(vdir, 0o700)


def intact():
    return S.read(victim) == b'precious\n' and os.listdir(vdir) == []


# snapshot -o through planted links
target = subprocess.Popen(['sleep', '600'])
reg = os.path.join(work, 'reg')
srv = subprocess.Popen([regtool, 'serve', str(target.pid), fixture, '60'],
                       env=S.env_without(BTRACE_REGISTRY=reg),
                       stdout=subprocess.PIPE, text=True)
srv.stdout.readline()
out = os.path.join(shared, 'out.btrace')
with open('/proc/sys/kernel/ns_last_pid') as f:
    last = int(f.read())
PLANT = r'''
import os, sys
out, victim, first = sys.argv[1], sys.argv[2], int(sys.argv[3])
n = 0
for p in range(first, first + 400):
    os.symlink(victim, '%s.tmp%d' % (out, p)); n += 1
os.symlink(victim, out)
print(n + 1)
'''
r = S.nobody_py(PLANT, out, victim, last + 1)
t.ok(r.returncode == 0 and int(r.stdout) == 401,
     'nobody planted 401 links at the output and its old temporary names')
t.diag(r.stderr)
r = S.run([btrace, 'snapshot', '-o', out, str(target.pid)],
          env=S.env_without(BTRACE_REGISTRY=reg), text=True)
st = os.lstat(out)
t.ok(r.returncode == 0 and stat.S_ISREG(st.st_mode) and st.st_uid == 0 and
     stat.S_IMODE(st.st_mode) == 0o600 and S.read(out) == S.read(fixture),
     'snapshot -o: the output is a new file of root\'s, 0600, with the snapshot')
t.diag(r.stderr)
t.ok(intact(), 'snapshot -o: no planted link was followed (the victim is intact)')
left = [n for n in os.listdir(shared) if not n.startswith('out.btrace.tmp') and
        n != 'out.btrace']
t.ok(left == [], 'snapshot -o: no temporary file left behind')
srv.kill()
srv.wait()
target.kill()
target.wait()

# export: OUT.symfs is a link of nobody's to a root-only directory
exp = os.path.join(shared, 'out.data')
r = S.nobody_py('import os,sys; os.symlink(sys.argv[2], sys.argv[1] + ".symfs")',
                exp, vdir)
r = S.run([btrace, 'export', '--perf-data', exp, '-q', fixture], text=True)
t.ok(r.returncode == 1 and intact() and not os.path.exists(exp),
     'export: a link of nobody\'s at OUT.symfs is refused, nothing written through it')
t.diag(r.stderr)
t.ok('another user' in r.stderr or 'link' in r.stderr,
     'export: the error says why (a link or another user\'s directory)')

# export: OUT.symfs is nobody's directory with links planted inside
exp2 = os.path.join(shared, 'two.data')
PLANT2 = r'''
import os, sys
d = sys.argv[1] + '.symfs/.debug'
os.makedirs(d, 0o777)
os.chmod(sys.argv[1] + '.symfs', 0o777); os.chmod(d, 0o777)
for p in range(int(sys.argv[3]), int(sys.argv[3]) + 50):
    os.symlink(sys.argv[2], os.path.join(d, 'x.tmp%d' % p))
'''
with open('/proc/sys/kernel/ns_last_pid') as f:
    last = int(f.read())
r0 = S.nobody_py(PLANT2, exp2, victim, last + 1)
r = S.run([btrace, 'export', '--perf-data', exp2, '-q', fixture], text=True)
t.ok(r0.returncode == 0 and r.returncode == 1 and intact() and
     not os.path.exists(exp2),
     "export: a directory of nobody's at OUT.symfs is refused")
t.diag(r0.stderr + r.stderr)

# the same export in root's own directory works (the refusals above are
# about who owns the place, not a blanket failure)
mine = os.path.join(work, 'mine.data')
r = S.run([btrace, 'export', '--perf-data', mine, '-q', fixture], text=True)
t.ok(r.returncode == 0 and os.path.isfile(mine) and
     os.path.isdir(mine + '.symfs/.debug'),
     'export in root\'s own directory writes perf.data and its build-id cache')
t.diag(r.stderr)
# temporary names are NAME.XXXXXX (mkostemp); the cache holds "elf" files
# and "code/*.bin"
bad = [os.path.join(d, n) for d, _, ns in os.walk(mine + '.symfs') for n in ns
       if re.search(r'\.(tmp\d*|[A-Za-z0-9]{6})$', n) and not n.endswith('.bin')]
t.ok(bad == [], 'export: no temporary file left in the cache')

subprocess.run(['rm', '-rf', work])
sys.exit(t.done())
