#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Register values recovered on real QEMU recordings of the crash corpus,
against QEMU's own log of the registers at every block it runs.

    bench/values-qemu.py [--test] [--only GLOB] BUILD_DIR [RECORD_OPTION...]

Each program bench/values-corpus.py measures (tests/corpus, the same
choice) is recorded by `btrace record -b qemu` as a user would record it
(loop turns folded, the access log on, unless RECORD_OPTIONs say
otherwise, e.g. --accesses 0) under QEMU's `-d cpu,nochain`
(BTRACE_QEMU_ARGS), which logs the registers at the start of every block
QEMU runs, the turns the plugin folds out of the history too.  Then
`btrace decode --insn --values` of the snapshot is compared with that
log from the fault back (e2e-accesses.py's against_qemu_log()): each
instruction that starts the block QEMU ran next, with the registers it
reads, and the one before it with those it writes.  Printed per program
and in total: the instructions the recovery covers and the values it
knows there (btrace_values_build through tests/e2e/e2e-accread), the
share of the 16 registers known before each of the last 1,000 (known, not
checked: QEMU's log has registers at block starts only), the
values checked against QEMU's log and the wrong ones, as a Markdown
table (docs/performance.md, "Values and the origin").  With --test (the
test e2e-values-qemu): TAP, exit status 1 on any wrong value, a
conflict, a program with no value checked against QEMU's log or whose
share known in the last 1,000 instructions is below its floor in
tests/decode/values-floors.txt (or that has none there), or a program
that was not recorded or decoded, or
whose `btrace report` lacks the origin it declares (`origin_says`),
unless docs/report.md's "Known limits" names it (a program that does not
die under QEMU as it does on the CPU: skipped, with the reason).
--only GLOB[,GLOB...]: the corpus's C and C++ programs whose names
match, the ones left out above too (test e2e-values-signals: the
`c-sigval-*` programs, signals delivered at a system call's return,
tests/corpus/progs/sigvals.c, and a handler that runs after the fault).
"""
import fnmatch
import importlib.util
import json
import os
import re
import subprocess
import sys
import tempfile

top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(top, 'tests', 'corpus'))
sys.path.insert(0, os.path.join(top, 'tests', 'e2e'))
import corpus  # noqa: E402


def load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


acc = load('e2e_accesses', os.path.join(top, 'tests', 'e2e',
                                        'e2e-accesses.py'))
vc = load('values_corpus', os.path.join(top, 'bench', 'values-corpus.py'))


def share(known, ninsn):
    """The share of the 16 registers known before @ninsn instructions."""
    return '%.1f%%' % (100.0 * known / (16 * ninsn)) if ninsn else '-'


FLOORS = os.path.join(top, 'tests', 'decode', 'values-floors.txt')


def floors(config='e2e-values-qemu'):
    """{program: the share (percent) of the registers known before each of
    the last 1,000 instructions it must keep} (tests/decode/
    values-floors.txt, lines "CONFIG PROGRAM PERCENT")."""
    out = {}
    with open(FLOORS) as f:
        for ln in f:
            p = ln.split()
            if len(p) >= 3 and not p[0].startswith('#') and p[0] == config:
                out[p[1]] = float(p[2])
    return out


def runs(cases):
    """The recordings: each case as a user would record it; one with
    values_kept (a handler that ran after the fault: without its access
    log the recovery stops after the last block the plugin may fold at,
    2 instructions QEMU's log cannot check) first once more with every
    loop turn kept (BTRACE_QEMU_LOOPS=0), as NAME+kept, and the values
    that recording checks against QEMU's log count for it."""
    for case in cases:
        if case.get('values_kept'):
            yield dict(case, name=case['name'] + '+kept',
                       values_kept=False, kept_of=case['name'],
                       values_env={'BTRACE_QEMU_LOOPS': '0'})
        yield case


def log_facts(btrace, snap, listing):
    """What the comparison with QEMU's log must know of the recording:
    whether the plugin realigned every signal handler's entry (no
    limit.sigalign in the snapshot: QEMU's log has such an entry's
    registers from before the realignment, docs/report.md), and when a
    handler ran after the fault, (the fault, the handler's first
    instruction) where the decoded path left the fault for it."""
    r = subprocess.run([btrace, 'report', '--json', snap],
                       capture_output=True, text=True)
    if r.returncode != 0:
        return False, None
    rep = json.loads(r.stdout)
    realigned = not any(x['name'] == 'sigalign' for x in rep['limits'])
    fault = acc.faults(listing)
    if not fault or not any('after_fault' in t for t in rep['threads']):
        return realigned, None
    d = subprocess.run([btrace, 'decode', '--insn', snap],
                       capture_output=True, text=True)
    left = [int(m.group(1), 16) for m in re.finditer(
        r'\[interrupted at %#x, continued at (0x[0-9a-f]+)\]' % fault[-1],
        d.stdout)]
    return realigned, left and (fault[-1], left[0])


def main():
    args = sys.argv[1:]
    test = '--test' in args
    if test:
        args.remove('--test')
    only = None
    if '--only' in args and args.index('--only') + 1 < len(args):
        k = args.index('--only')
        only = args[k + 1]
        del args[k:k + 2]
    if not args:
        print(__doc__, file=sys.stderr)
        return 2
    build = os.path.abspath(args[0])
    extra = args[1:]
    btrace = os.path.join(build, 'src', 'cli', 'btrace')
    tool = os.path.join(build, 'tests', 'e2e', 'e2e-accread')
    why = acc.e2elib.qemu_skip_reason()
    if why:
        if test:
            print('1..0 # SKIP %s' % why)
            return 0
        print(why, file=sys.stderr)
        return 1
    lim = corpus.known_limits()
    floor = floors()
    rows = []
    fail = 0
    with tempfile.TemporaryDirectory(prefix='btrace-vq-') as d:
        n = 0
        kept = {}   # checked against QEMU's log with every turn kept
        for case in runs(corpus.CASES):
            if only is not None:
                base = case.get('kept_of', case['name'])
                if case['lang'] not in ('c', 'cxx') or not any(
                        fnmatch.fnmatch(base, g) for g in only.split(',')):
                    continue
            elif not vc.wanted(case):
                continue
            try:
                argv, _ = corpus.build(case, d)
            except Exception as e:  # a missing compiler: say so, go on
                print('# %s: not built: %s' % (case['name'], e))
                continue
            argv = argv + case.get('args', [])
            snap = os.path.join(d, case['name'] + '.btrace')
            qlog = os.path.join(d, case['name'] + '.qlog')
            p = acc.record(btrace, snap, argv, extra, env=dict(
                case.get('values_env', {}),
                BTRACE_QEMU_ARGS='-d cpu,nochain -D %s' % qlog))
            rc, known, unknown, listing = acc.known_values(btrace, snap)
            got = acc.accread(tool, snap, 'values')
            v = got['values']
            checked = wrong = 0
            bad = []
            realigned = 0
            if os.path.exists(qlog):
                ra, after = log_facts(btrace, snap, listing)
                checked, wrong, bad, _, realigned = acc.against_qemu_log(
                    qlog, listing, ra, after)
                os.unlink(qlog)
            n += 1
            limit = corpus.todo_for(lim, case['name'], 'values')
            if not os.path.exists(snap) and limit:
                # a program QEMU does not crash as the CPU does
                print('ok %d - %s # SKIP not recorded: %s' % (
                    n, case['name'], limit) if test else
                    '# %s: not recorded: %s' % (case['name'], limit))
                continue
            says = case.get('origin_says')
            if says and os.path.exists(snap):
                r = subprocess.run([btrace, 'report', snap],
                                   capture_output=True, text=True)
                if says not in r.stdout:
                    got['err'] += ' the report\'s origin is not "%s": %s' % (
                        says, r.stdout[r.stdout.find('origin'):][:300])
                    got['rc'] = got['rc'] or 1
            good = (os.path.exists(snap) and rc == 0 and got['rc'] == 0 and
                    v is not None and
                    v[2] == 0 and wrong == 0)
            # a program with nothing checked proves nothing; one that
            # knows less than its floor lost values
            why = []
            if case.get('kept_of'):
                kept[case['kept_of']] = checked
            if not checked and not kept.get(case['name']):
                why.append('nothing checked against QEMU\'s log%s' % (
                    ', nor with every turn kept' if case['name'] in kept
                    else ''))
            if case['name'] not in floor:
                why.append('no floor in %s: add one' % FLOORS)
            elif v is None or not v[3] or \
                    100.0 * v[4] / (16 * v[3]) < floor[case['name']]:
                why.append('known %s, below its floor %.0f%%' % (
                    v and share(v[4], v[3]), floor[case['name']]))
            good = good and not why
            fail |= not good
            rows.append((case['name'], v, checked, wrong))
            if test:
                print('%s %d - %s: %s instructions, %s values known (%s of the '
                      'last %s instructions\' registers), %d '
                      'checked against QEMU\'s log, %d wrong, %s conflicts%s'
                      % ('ok' if good else 'not ok', n, case['name'],
                         v and v[0], v and v[1], v and share(v[4], v[3]),
                         v and v[3], checked, wrong,
                         v and v[2], '' if good else ' (%s; %s; %s)' % (
                             '; '.join(why), got['err'][-600:],
                             p.stderr.strip()[-200:])))
                for b in bad:
                    print('# wrong: %s' % b)
                if realigned:
                    print('# %d values at handler entries compared as the '
                          'plugin realigned them (rsp, rsi, rdx 8 below '
                          'QEMU\'s log)' % realigned)
            for path in (snap,):
                if os.path.exists(path):
                    os.unlink(path)
    if only is not None and not rows:
        # a selection that checks nothing is a failure, not a pass
        print('# --only %s: no program recorded and checked' % only)
        fail = 1
    tot = [sum(r[1][0] for r in rows if r[1]), sum(r[1][1] for r in rows if r[1]),
           sum(r[2] for r in rows), sum(r[3] for r in rows)]
    lk = (sum(r[1][4] for r in rows if r[1]), sum(r[1][3] for r in rows if r[1]))
    if test:
        n += 1
        print('ok %d - total: %d instructions, %d values known (%s of the last '
              '1,000 instructions\' registers), %d checked, %d wrong' % (
                  n, tot[0], tot[1], share(*lk), tot[2], tot[3])
              if not fail else
              'not ok %d - total: %d wrong' % (n, tot[3]))
        print('1..%d' % n)
        return 1 if fail else 0
    print('| program | instructions covered | values known | known in the last 1,000 '
          '| checked against QEMU | wrong |')
    print('|---|---:|---:|---:|---:|---:|')
    for name, v, c, w in rows:
        print('| %s | %s | %s | %s | %d | %d |' % (
            name, v and v[0], v and v[1], v and share(v[4], v[3]), c, w))
    print('| **total** | %d | %d | %s | %d | %d |' % (tot[0], tot[1], share(*lk),
                                                     tot[2], tot[3]))
    return 1 if fail else 0


if __name__ == '__main__':
    sys.exit(main())
