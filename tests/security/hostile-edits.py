# SPDX-License-Identifier: MIT
"""Snapshots changed below the public writer, every checksum right
(bt-snapedit, docs/security.md):

  acc-shuffle    the crashed thread's access log out of order
  acc-mark-last  the log ending in a fold mark with nothing after it
                 (before the fix: memmove of -8 bytes in values.c's
                 drop_front(), SIGSEGV or an ASan report)
  meta-overrun   a metadata record that runs 8 bytes past its section
                 (less than its field header's 16)

The access logs go through report, report --json, decode --insn
--values, export --timeline and view: each exits 0 (a log out of step
with the trace makes fewer values known, never a failure), prints no
sanitizer report, the JSON parses, and the fault and its origin stay what
the unchanged snapshot says of the fault.  The metadata goes through info
and info --json: the damage is named as a warning, what comes before it
is still shown, exit 0.  Code made of loops of direct jumps (code-loop),
and a crafted 52 KiB PT stream that enters libc's `hlt; jmp .-1` (pt-loop),
go through report and decode --calls: they end, exit 0, with a decode
error that names the trace offset (they ran forever before).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

btrace, snapedit, seed, fixture, abort_fixture, e2e = sys.argv[1:7]
sys.path.insert(0, e2e)
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from e2elib import Tap  # noqa: E402
import seclib as S  # noqa: E402

t = Tap()
work = tempfile.mkdtemp(prefix='bt-sec-edit-')


def make(mode, src):
    out = os.path.join(work, mode + '.btrace')
    r = S.run([snapedit, mode, src, out], text=True)
    if not t.ok(r.returncode == 0, 'bt-snapedit %s wrote the snapshot' % mode):
        t.diag(r.stderr)
        return None
    return out


def run(argv, timeout=300):
    r = subprocess.run(argv, capture_output=True, timeout=timeout)
    return r.returncode, r.stdout, r.stderr.decode('utf-8', 'replace')


def fault_of(snap):
    rc, out, err = run([btrace, 'report', '--json', '--no-disk', snap])
    if rc != 0:
        return None
    try:
        f = json.loads(out)['fault']
        return f and (f.get('ip'), f.get('function'), f.get('exact'))
    except (ValueError, KeyError, IndexError, TypeError):
        return None


want = fault_of(seed)
t.ok(want is not None, 'the unchanged snapshot has a fault: %s' % (want,))
for mode in ('acc-shuffle', 'acc-mark-last'):
    snap = make(mode, seed)
    if not snap:
        continue
    for cmd in (['report', '--no-disk'], ['report', '--json', '--no-disk'],
                ['decode', '--insn', '--values', '--no-disk'],
                ['export', '--timeline', os.path.join(work, mode + '.json'),
                 '-f'],
                ['view', '-o', os.path.join(work, mode + '.html'), '-f',
                 '--no-disk']):
        rc, out, err = run([btrace] + cmd + [snap])
        ok = rc == 0 and not S.sanitizer_report(err)
        if ok and '--json' in cmd:
            try:
                json.loads(out)
            except ValueError as e:
                ok = False
                err += 'invalid JSON: %s' % e
        if not t.ok(ok, '%s: btrace %s exits 0 (got %d), no sanitizer report'
                    % (mode, ' '.join(cmd[:2]), rc)):
            t.diag(err[-3000:])
    t.ok(fault_of(snap) == want,
         '%s: the fault is the one the unchanged snapshot has (%s)'
         % (mode, want,))

snap = make('meta-overrun', fixture)
if snap:
    rc, out, err = run([btrace, 'info', snap])
    text = out.decode('utf-8', 'replace')
    if not t.ok(rc == 0 and not S.sanitizer_report(err) and
                'field length runs past the section' in text and
                'sections:' in text and 'warnings: 1' in text,
                'meta-overrun: btrace info exits 0 (got %d), warns that the '
                'field runs past the section, shows the rest' % rc):
        t.diag(err[-3000:])
    rc, out, err = run([btrace, 'info', '--json', snap])
    ok = rc == 0 and not S.sanitizer_report(err)
    try:
        j = json.loads(out)
        ok = ok and any('runs past the section' in w
                        for w in j.get('warnings', []))
    except ValueError:
        ok = False
    if not t.ok(ok, 'meta-overrun: btrace info --json exits 0, valid JSON, '
                'the warning in it'):
        t.diag(err[-3000:] + out.decode('utf-8', 'replace')[-2000:])
# code that runs in a circle of direct jumps (no trace packet records
# them), made so (code-loop) or libc's own abort loop reached by a
# crafted 52 KiB PT stream (pt-loop): the decoder gave blocks forever
# (report, decode --calls hung);
# now it stops after a bounded number with a decode error naming the
# trace offset, and resumes at the next PSB
for mode, src in (('code-loop', fixture), ('pt-loop', abort_fixture)):
    snap = make(mode, src)
    if not snap:
        continue
    for cmd in (['report', '--no-disk'], ['decode', '--calls', '--no-disk']):
        try:
            rc, out, err = run([btrace] + cmd + [snap], timeout=240)
        except subprocess.TimeoutExpired:
            rc, out, err = None, b'', 'timed out after 240 s'
        text = out.decode('utf-8', 'replace')
        if not t.ok(rc == 0 and not S.sanitizer_report(err) and
                    re.search(r'decode error at trace offset \d+, ip 0x[0-9a-f]+: '
                              r'the code runs \d+ blocks on direct branches',
                              text) is not None,
                    '%s: btrace %s ends (exit %s) with a decode error '
                    'naming the trace offset' % (mode, ' '.join(cmd[:2]), rc)):
            t.diag(err[-2000:] + text[-2000:])
shutil.rmtree(work, ignore_errors=True)
sys.exit(t.done())
