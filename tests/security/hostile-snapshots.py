# SPDX-License-Identifier: MIT
"""Hostile snapshots (issue items 4-6; docs/security.md).

From a committed fixture, bt-mkattack writes:
  esc        terminal escapes, CR/LF forged lines, C1 controls and bytes
             that are not UTF-8 in names, paths and metadata: no command
             prints a control character; JSON output is valid UTF-8 JSON
             and keeps the bytes (escaped);
  code-wrap  a code section whose file_offset + size wraps past 2^64, and
  code-8g    one at file offset 8 GiB: the reader refuses the section
             (the other commands exit 0 with a warning naming it), export
             fails with a clear error and leaves nothing behind;
  bomb       a metadata value of 96 MiB in a few KiB of zstd: refused from
             its declared size, fast and in little memory.
No command may print a sanitizer report (run it in the ASan build too).
"""
import json
import os
import re
import resource
import subprocess
import sys
import tempfile
import time

btrace, mkattack, fixture, e2e = sys.argv[1:5]
sys.path.insert(0, e2e)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import Tap  # noqa: E402
import seclib as S  # noqa: E402

t = Tap()
work = tempfile.mkdtemp(prefix='bt-sec-snap-')


def make(mode):
    out = os.path.join(work, mode + '.btrace')
    r = S.run([mkattack, mode, fixture, out], text=True)
    if not t.ok(r.returncode == 0, 'bt-mkattack %s wrote the snapshot' % mode):
        t.diag(r.stderr)
        return None
    return out


def measured(argv, cwd=None):
    """Run @argv: (returncode, stdout bytes, stderr text, seconds, max RSS KiB)."""
    t0 = time.time()
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         cwd=cwd)
    out, err = p.communicate(timeout=600)
    return p.returncode, out, err.decode('utf-8', 'replace'), time.time() - t0


def child_rss(argv):
    """Peak RSS (KiB) of one run of @argv, and its exit status."""
    pid = os.fork()
    if pid == 0:
        fd = os.open(os.devnull, os.O_WRONLY)
        os.dup2(fd, 1)
        os.dup2(fd, 2)
        os.execv(argv[0], argv)
    _, status, ru = os.wait4(pid, 0)
    return ru.ru_maxrss, os.waitstatus_to_exitcode(status)


# 6. terminal and JSON safety
esc = make('esc')
if esc:
    bad = [b'\x1b', b'\x07', b'\r', b'\xc2\x9b', b'\xff']
    for cmd in (['info'], ['report', '--no-disk'],
                ['report', '--no-disk', '--all-threads', '--blocks', '20'],
                ['decode', '--calls', '--no-disk'],
                ['decode', '--blocks', '--no-disk'],
                ['export', '--perf-data', os.path.join(work, 'esc.data'), '-q']):
        rc, out, err, dt = measured([btrace] + cmd + [esc])
        both = out + err.encode('utf-8', 'surrogateescape')
        hits = [b for b in bad if b in out or b in err.encode()]
        forged = [ln for ln in both.split(b'\n')
                  if ln.startswith(b'signal    FORGED') or
                  ln.startswith(b'fault     FORGED')]
        # names are data: every command succeeds (exit 0), escaped
        t.ok(rc == 0 and not hits and not forged and
             not S.sanitizer_report(err),
             'esc: btrace %s exits 0, prints no control character and '
             'forges no line' % ' '.join(cmd))
        if hits or forged or rc != 0:
            t.diag('rc %d hits %r forged %r' % (rc, hits, forged[:2]))
            t.diag(err[-600:])
    t.ok(b'\\x1b]0;owned' in measured([btrace, 'info', esc])[1],
         'esc: the escapes are shown, escaped (\\x1b...), not dropped')
    for cmd in (['report', '--json', '--no-disk', '--full'],
                ['info', '--json']):
        rc, out, err, dt = measured([btrace] + cmd + [esc])
        try:
            doc = json.loads(out.decode('utf-8'))   # strict UTF-8
            ok = True
        except (UnicodeDecodeError, ValueError) as e:
            ok = False
            t.diag('invalid: %s' % e)
        text = json.dumps(doc) if ok else ''
        t.ok(rc == 0 and ok and '\\u001b]0;owned' in text and
             not S.sanitizer_report(err),
             'esc: btrace %s is valid UTF-8 JSON and keeps the bytes' % ' '.join(cmd))
        if ok:
            t.ok('\\u00ff\\u00fe' in text,
                 'esc: %s: bytes that are not UTF-8 read as Latin-1 (\\u00ff\\u00fe)'
                 % ' '.join(cmd))

# 4. code offsets that wrap or point 8 GiB into the file
for mode in ('code-wrap', 'code-8g'):
    f = make(mode)
    if not f:
        continue
    data = os.path.join(work, mode + '.data')
    rc, out, err, dt = measured([btrace, 'export', '--perf-data', data, '-q', f])
    t.ok(rc == 1 and 'code file offset' in err and not S.sanitizer_report(err),
         '%s: export fails with a clear error (exit 1)' % mode)
    t.diag(err[:400])
    t.ok(not [n for n in os.listdir(work) if n.startswith(mode + '.data')],
         '%s: the failed export leaves nothing behind' % mode)
    # The reader leaves the damaged code sections out and says which,
    # each at its place in the file; the rest of the snapshot is read:
    # every command exits 0 with that warning.
    warned = re.compile(r'read failed: section \d+ \(code\) damaged at byte '
                        r'0 of its decompressed payload \(section at file '
                        r'offset \d+\): code file offset and size end past '
                        r'4 GiB')
    for cmd in (['info'], ['report', '--no-disk'], ['report', '--json', '--no-disk'],
                ['decode', '--insn', '--no-disk']):
        rc, out, err, dt = measured([btrace] + cmd + [f])
        ok = rc == 0 and not S.sanitizer_report(err) and \
            warned.search(err + out.decode('utf-8', 'replace')) is not None
        if ok and '--json' in cmd and rc == 0:
            try:
                json.loads(out.decode('utf-8'))
            except ValueError:
                ok = False
        t.ok(ok, '%s: btrace %s exits 0 naming each damaged code section, '
             'no sanitizer report' % (mode, ' '.join(cmd)))
        if not ok:
            t.diag('rc %d: %s' % (rc, err[-400:]))

# 5. decompression bomb
f = make('bomb')
if f:
    t0 = time.time()
    rss, rc = child_rss([btrace, 'info', f])
    dt = time.time() - t0
    rc2, out, err, _ = measured([btrace, 'info', f])
    t.ok('decompressed' in out.decode() and 'may hold' in out.decode(),
         'bomb: info says which section and why (declared size over the limit)')
    t.ok(rc == 0 and rss < 100 * 1024 and dt < 60,
         'bomb: info takes %.1f s and %d MiB (the 96 MiB are never inflated)'
         % (dt, rss // 1024))
    data = os.path.join(work, 'bomb.data')
    rc, out, err, dt = measured([btrace, 'export', '--perf-data', data, '-q', f])
    t.ok(rc == 1 and 'may hold' in err and not os.path.exists(data) and
         not os.path.exists(data + '.symfs'),
         'bomb: export fails clearly, nothing left')

subprocess.run(['rm', '-rf', work])
sys.exit(t.done())
