# SPDX-License-Identifier: MIT
"""btrace under hostile limits (issue item 10; docs/security.md).

  - `ulimit -s 64`: btrace itself does not crash; the program's own crash
    is recorded and its status passes through;
  - `ulimit -f`: btrace refuses before the program runs, with a clear
    error naming the limit (no SIGXFSZ death, no misleading hint);
  - a bad -o (missing directory, a directory) is refused before the
    program runs, so no run is lost.
The program is /bin/sh killing itself with SIGSEGV (QEMU backend).
"""
import os
import subprocess
import sys
import tempfile

btrace, e2e = os.path.abspath(sys.argv[1]), sys.argv[2]
sys.path.insert(0, e2e)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import Tap, qemu_available  # noqa: E402
import seclib as S  # noqa: E402

if not qemu_available():
    S.skip_all('qemu-x86_64 is not installed')
t = Tap()
work = tempfile.mkdtemp(prefix='bt-sec-lim-')
mark = os.path.join(work, 'ran')
prog = ['/bin/sh', '-c', 'touch %s; kill -SEGV $$' % mark]


def sh(limit, argv):
    q = ' '.join("'%s'" % a.replace("'", "'\\''") for a in argv)
    return S.run(['/bin/sh', '-c', '%s; exec %s' % (limit, q)], text=True,
                 cwd=work, timeout=600)


# small stack
snap = os.path.join(work, 's.btrace')
r = sh('ulimit -s 64', [btrace, 'record', '-b', 'qemu', '-q', '-o', snap,
                        '--'] + prog)
t.ok(r.returncode == 128 + 11 and os.path.exists(snap) and
     not S.sanitizer_report(r.stderr),
     'ulimit -s 64: the program\'s SIGSEGV is recorded and its status (139) passes through')
t.diag(r.stderr[-800:])
if os.path.exists(snap):
    r2 = S.run([btrace, 'report', '--no-disk', snap], text=True)
    t.ok(r2.returncode == 0 and 'SIGSEGV' in r2.stdout,
         'ulimit -s 64: the snapshot reports the SIGSEGV')
    os.unlink(snap)
if os.path.exists(mark):
    os.unlink(mark)

# file size limit
r = sh('ulimit -f 64', [btrace, 'record', '-b', 'qemu', '-q', '-o', snap,
                        '--'] + prog)
t.ok(r.returncode == 1 and 'ulimit -f' in r.stderr and
     'plugin' not in r.stderr and not os.path.exists(mark),
     'ulimit -f: refused before the program runs, with a clear error')
t.diag(r.stderr)

# bad -o
for out, why in ((os.path.join(work, 'missing', 'x.btrace'), 'No such file'),
                 (work, 'is a directory')):
    r = S.run([btrace, 'record', '-b', 'qemu', '-q', '-o', out, '--'] + prog,
              text=True, cwd=work)
    t.ok(r.returncode == 1 and why in r.stderr and not os.path.exists(mark),
         '-o %s: refused before the program runs (%s)' %
         (os.path.relpath(out, work), why))
    t.diag(r.stderr)
r = S.run([btrace, 'snapshot', '-o', os.path.join(work, 'missing', 'y'), '1'],
          text=True)
t.ok(r.returncode == 1 and 'No such file' in r.stderr,
     'snapshot -o into a missing directory: refused before asking the owner')
t.diag(r.stderr)

subprocess.run(['rm', '-rf', work])
sys.exit(t.done())
