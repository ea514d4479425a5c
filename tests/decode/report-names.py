#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""btrace report names every function the same way in text and JSON (TAP).

    report-names.py BTRACE BT_GEN_FIXTURE PROG

Writes a synthetic snapshot of PROG (a real program single-stepped to its
death by bt-gen-fixture; the handler fixture runs through the C library:
raise, pthread_kill, inlined code), then reads `btrace report` and
`btrace report --json` with the same options and checks, entry by entry,
that the fault, the stack, the last calls and the last blocks carry the
same function name in both, and that no name carries a symbol version
(`pthread_kill@@GLIBC_2.34` is shown `pthread_kill`, as gdb shows it).
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import e2elib  # noqa: E402  (its TAP writer)

T = e2elib.Tap()
ok = T.ok


def name_of(text_field):
    """The function name of a text field: "f+0x12" -> "f"."""
    return re.sub(r'\+0x[0-9a-f]+~?$', '', text_field)


def same(text_name, json_name):
    """Equal, or the text was cut to its column (ends with "~", or with
    "~+0x.." when the cut keeps the offset)."""
    if json_name is None:
        return True   # text shows module+offset or an address
    if name_of(text_name).endswith('~'):
        return json_name.startswith(name_of(text_name)[:-1])
    return name_of(text_name) == json_name


def sections(text):
    out, cur = {}, None
    for line in text.splitlines():
        if line.startswith('stack at the fault'):
            cur = out.setdefault('stack', [])
        elif line.startswith('last calls'):
            cur = out.setdefault('calls', [])
        elif line.startswith('last blocks'):
            cur = out.setdefault('tail', [])
        elif not line.strip() or line.startswith('history'):
            cur = None
        elif line.startswith('fault     '):
            out['fault'] = line[10:].split(' at ')[0].strip()
        elif cur is not None:
            cur.append(line)
    return out


def main():
    btrace, gen, prog = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as tmp:
        snap = os.path.join(tmp, 'names.btrace')
        r = subprocess.run([gen, '-r', '-o', snap, '--', prog],
                           capture_output=True, text=True)
        if r.returncode != 0:
            # ptrace forbidden on this machine (Yama scope 3): a skip;
            # any other failure of the generator fails the test.
            try:
                with open('/proc/sys/kernel/yama/ptrace_scope') as f:
                    scope = f.read().strip()
            except OSError:
                scope = None
            if scope == '3':
                print('1..0 # SKIP ptrace is disabled (kernel.yama.'
                      'ptrace_scope = 3)')
                return 0
            print('not ok 1 - bt-gen-fixture: %s' % r.stderr.strip())
            print('1..1')
            return 1
        opts = ['--calls', '48', '--blocks', '48']
        text = subprocess.run([btrace, 'report'] + opts + [snap],
                              capture_output=True, text=True, check=True).stdout
        rep = json.loads(subprocess.run(
            [btrace, 'report', '--json'] + opts + [snap],
            capture_output=True, text=True, check=True).stdout)
    thr = rep['threads'][0]
    sec = sections(text)

    ok('@' not in text.replace('@plt', ''),
       'text: no symbol versions (@@GLIBC_...) in names')
    names = [f.get('function') or '' for f in thr['stack'] + thr['calls'] +
             thr['tail']] + [(rep.get('fault') or {}).get('function') or '']
    bad = [x for x in names if '@' in x and not x.endswith('@plt')]
    ok(not bad, 'JSON: no symbol versions in names %s' % bad[:3])

    f_json = (rep.get('fault') or {}).get('function')
    ok(f_json is not None and same(sec.get('fault', ''), f_json),
       'fault: text %r, JSON %r' % (sec.get('fault'), f_json))

    # stack: "  #N  0xADDR NAME SRC [flags]"
    st = [ln for ln in sec.get('stack', []) if ln.lstrip().startswith('#')]
    diffs = []
    for ln, fr in zip(st, thr['stack']):
        tn = ln.split()[2]
        if not same(tn, fr.get('function')):
            diffs.append('%s/%s' % (tn, fr.get('function')))
    ok(len(st) == len(thr['stack']) and len(st) >= 3 and not diffs,
       'stack: %d frames, text and JSON name them alike %s' %
       (len(st), diffs[:3]))

    # calls: one line per entry (a gap is two lines), then "=> fault in"
    calls = []
    lines = sec.get('calls', [])
    i = 0
    while i < len(lines):
        ln = lines[i].strip()
        if ln.startswith('[gap:'):
            calls.append(None)
            i += 2
            continue
        if not ln.startswith('=>'):
            calls.append(ln.split()[0])
        i += 1
    jcalls = thr['calls']
    diffs = [(a, b.get('function')) for a, b in zip(calls, jcalls)
             if a is not None and not same(a, b.get('function'))]
    inl = sum(1 for c in jcalls if c.get('function'))
    ok(len(calls) == len(jcalls) and inl >= 10 and not diffs,
       'calls: %d entries, text and JSON name them alike %s' %
       (len(calls), diffs[:3]))

    # tail: "  0xADDR NNN  NAME SRC [(xN)]"; events and gaps skipped
    tail = [ln.split()[2] for ln in sec.get('tail', [])
            if re.match(r'\s+0x[0-9a-f]+\s+\d+\s', ln)]
    # (the last JSON entry is the fault itself: the text's "=> fault" line)
    jtail = [b for b in thr['tail'] if b.get('ip') and not b.get('fault')]
    # the text folds repeats "(xN)": expand JSON the same way
    folded = []
    for b in jtail:
        if folded and folded[-1]['ip'] == b['ip'] and \
                folded[-1]['ninsn'] == b['ninsn']:
            continue
        folded.append(b)
    diffs = [(a, b.get('function')) for a, b in zip(tail, folded)
             if not same(a, b.get('function'))]
    ok(len(tail) == len(folded) and len(tail) >= 10 and not diffs,
       'last blocks: %d, text and JSON name them alike %s' %
       (len(tail), diffs[:3]))
    return T.done()


if __name__ == '__main__':
    sys.exit(main())
