#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""nobody replaces a recorded program's file before root reads the snapshot (TAP).

    attack-paths.py BTRACE E2E PROG...

Each PROG is a crashing program: tests/qemu/progs/crash-fnptr (with a build
ID: the decoder looks for its file by build ID) and e2e-noid (without: the
decoder takes the file at the recorded path only if it holds the bytes the
snapshot embedded from it).  Needs root, the
user nobody and a qemu-x86_64 with plugin support; skips otherwise.

root records PROG copied into a directory nobody owns.  The snapshot names
that path; where it lacks code, the decoder looks at the file there (by
build ID, or, without one, by the bytes the snapshot embedded).  nobody
replaces the file with a FIFO (an open for reading waited for a writer:
`report` and `decode` hung for ever), a link to /dev/zero, a sparse 1 TiB
file, another program and a link to a root-only file.  Every command of
root's finishes (no hang: the time limit is far above the normal run), exits
0, prints no sanitizer report, and says the file was not used; nothing of
the root-only file appears in the output.
"""
import os
import shutil
import subprocess
import sys
import tempfile

btrace, e2e = [os.path.abspath(a) for a in sys.argv[1:3]]
progs = [os.path.abspath(a) for a in sys.argv[3:]]
sys.path.insert(0, e2e)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402
import seclib as S  # noqa: E402

HANG = 300   # a hang guard, not a speed limit
SECRET = 'btrace-root-secret-51c9'


def main():
    S.need_root_and_nobody()
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    t = e2elib.Tap()
    for prog in progs:
        one(t, prog)
    return t.done()


def one(t, prog):
    work = tempfile.mkdtemp(prefix='bt-sec-paths-')
    os.chmod(work, 0o755)
    name = os.path.basename(prog)
    try:
        nob = os.path.join(work, 'nobodys')
        os.mkdir(nob, 0o755)
        os.chown(nob, S.nobody_uid(), -1)
        exe = os.path.join(nob, 'prog')
        shutil.copy(prog, exe)
        os.chown(exe, S.nobody_uid(), -1)
        secret = os.path.join(work, 'secret')
        with open(secret, 'w') as f:
            f.write(SECRET + '\n')
        os.chmod(secret, 0o600)
        tmp = os.path.join(work, 'tmp')
        os.mkdir(tmp, 0o700)
        snap = os.path.join(work, 'p.btrace')
        r = S.run([btrace, 'record', '-b', 'qemu', '-o', snap, '--', exe],
                  env=dict(os.environ, TMPDIR=tmp), cwd=work, text=True,
                  timeout=HANG)
        if not t.ok(os.path.exists(snap), '%s: root recorded %s (exit %d)' %
                    (name, exe, r.returncode)):
            t.diag(r.stdout + r.stderr)
            return
        swaps = [
            ('a FIFO', 'import os; os.unlink(P); os.mkfifo(P)'),
            ('a link to /dev/zero',
             'import os; os.unlink(P); os.symlink("/dev/zero", P)'),
            ('a sparse 1 TiB file',
             'import os; os.unlink(P); f = open(P, "wb"); '
             'f.truncate(1 << 40)'),
            ('another program',
             'import os, shutil; os.unlink(P); shutil.copy("/bin/true", P)'),
            ('a link to a root-only file',
             'import os; os.unlink(P); os.symlink(%r, P)' % secret),
        ]
        cmds = [['report'], ['report', '--json'], ['decode', '--calls'],
                ['info']]
        for what, code in swaps:
            r = S.nobody_py('import sys; P = sys.argv[1]\n' + code, exe)
            what = '%s, %s' % (name, what)
            if not t.ok(r.returncode == 0, 'nobody replaced the program '
                        'with %s' % what):
                t.diag(r.stderr)
                continue
            for c in cmds:
                try:
                    p = subprocess.run([btrace] + c + [snap],
                                       capture_output=True, text=True,
                                       errors='replace', timeout=HANG,
                                       stdin=subprocess.DEVNULL)
                    rc, out = p.returncode, p.stdout + p.stderr
                except subprocess.TimeoutExpired:
                    rc, out = 'a hang', ''
                t.ok(rc == 0 and not S.sanitizer_report(out) and
                     SECRET not in out,
                     '%s: btrace %s finishes (exit %s), nothing of the '
                     'root-only file shown' % (what, ' '.join(c), rc))
            try:
                out = subprocess.run([btrace, 'report', snap],
                                     capture_output=True, text=True,
                                     errors='replace', timeout=HANG,
                                     stdin=subprocess.DEVNULL).stdout
            except subprocess.TimeoutExpired:
                out = ''
            t.ok(exe in out and 'not in the snapshot' in out,
                 '%s: the report says the code at %s was not used' %
                 (what, exe))
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
