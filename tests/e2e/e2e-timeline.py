#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The cross-thread timeline on a real recording (TAP).

  e2e-timeline.py BTRACE PROG

PROG (progs/timeline-turns.c) runs two threads that take turns through two
pipes: step_a1 step_b1 step_a2 step_b2 step_a3 step_b3, then thread b
faults.  Recorded with the QEMU backend, each thread's own order must be
right whatever the trace holds; the QEMU backend writes timing packets, so
the timeline must be in time order (`"timeline_order": "time"`), every call
entry must have its time, and the report's timeline, `btrace decode --calls
--all-threads` and the exported Chrome JSON must put all six steps in that
order across threads and end at b's fault.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

ORDER = ['step_a1', 'step_b1', 'step_a2', 'step_b2', 'step_a3', 'step_b3']


def main():
    btrace, prog = sys.argv[1:3]
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    tap = e2elib.Tap()
    with tempfile.TemporaryDirectory(prefix='btrace-e2e-tl.') as d:
        snap = os.path.join(d, 'turns.btrace')
        r = e2elib.record(btrace, snap, [prog])
        if not tap.ok(r.returncode == 139 and os.path.exists(snap),
                      'record: the program dies of SIGSEGV, snapshot written'):
            tap.diag(r.stderr)
            return tap.done()
        rep = e2elib.report_json(btrace, snap, '--calls', '400')
        crashed = rep['fault']['tid']
        tl = [e for e in rep['timeline'] if e['function'] in ORDER and
              e['kind'] == 'call']
        by_tid = {}
        for e in tl:
            by_tid.setdefault(e['tid'], []).append(e['function'])
        if not tap.ok(by_tid.get(crashed) == ORDER[1::2],
                      "the crashed thread's own steps in order: b1 b2 b3"):
            tap.diag(by_tid)
        others = [v for t, v in by_tid.items() if t != crashed]
        if not tap.ok(others == [ORDER[0::2]], "the other thread's own steps "
                      "in order: a1 a2 a3"):
            tap.diag(by_tid)
        tap.ok(rep['timeline'][-1]['kind'] == 'fault' and
               rep['timeline'][-1]['tid'] == crashed and
               rep['timeline'][-1]['function'] == 'crash_b',
               'the timeline ends at the fault in crash_b')
        # the QEMU backend writes timing packets (docs/qemu-backend.md)
        timed = rep['timeline_order'] == 'time'
        tap.ok(timed, 'the recording has times: "timeline_order": "time"')
        skip = None
        # a call entry's time does not depend on the decode window: the
        # last 400 entries of each thread have the times they have when
        # the whole history is kept (their first block left the window
        # with its time)
        big = e2elib.report_json(btrace, snap, '--calls', '1000000')
        differ = []
        for t in rep['threads']:
            bt = next(x for x in big['threads'] if x['tid'] == t['tid'])
            tail = bt['calls'][-len(t['calls']):] if t['calls'] else []
            for a, b in zip(t['calls'], tail):
                if a['function'] != b['function'] or \
                        a.get('time_ns') != b.get('time_ns'):
                    differ.append((t['tid'], a['function'], a.get('time_ns'),
                                   b.get('time_ns')))
        tap.ok(not differ, 'the calls entries\' times are those of the '
               'whole history (%d differ: %s)' % (len(differ), differ[:3]))
        def order_ok(cond, desc, detail):
            # the merged order: checked with times, else skipped
            if skip:
                tap.n += 1
                print('ok %d - %s # SKIP %s' % (tap.n, desc, skip))
            elif not tap.ok(cond, desc):
                tap.diag(detail)

        seq = [e['function'] for e in tl]
        order_ok(seq == ORDER, 'report --json timeline: a1 b1 a2 b2 a3 b3',
                 seq)
        r = subprocess.run([btrace, 'decode', '--calls', '--all-threads', snap],
                           capture_output=True, text=True)
        lines = [ln for ln in r.stdout.splitlines()
                 if any(re.search(r'\b%s\b' % s, ln) for s in ORDER)]
        dseq = [next(s for s in ORDER if re.search(r'\b%s\b' % s, ln))
                for ln in lines]
        if not timed:
            tap.ok(r.returncode == 0 and 'order across threads is not known'
                   in r.stdout, 'decode --calls --all-threads says the '
                   'order across threads is not known')
        order_ok(r.returncode == 0 and dseq == ORDER,
                 'decode --calls --all-threads: a1 b1 a2 b2 a3 b3',
                 '\n'.join(lines))
        out = os.path.join(d, 'turns.json')
        r = subprocess.run([btrace, 'export', snap, '--timeline', out],
                           capture_output=True, text=True)
        tap.ok(r.returncode == 0, 'export --timeline') or tap.diag(r.stderr)
        with open(out, encoding='utf-8') as f:
            chrome = json.load(f)
        b = sorted((e['ts'], e['name']) for e in chrome['traceEvents']
                   if e.get('ph') == 'B' and e.get('name') in ORDER)
        tap.ok(chrome['otherData']['time_axis'] ==
               ('ns' if timed else 'instructions'),
               'export --timeline says its time axis')
        order_ok([n for _, n in b] == ORDER,
                 'export --timeline: the steps in order on one time axis', b)
    return tap.done()


if __name__ == '__main__':
    sys.exit(e2elib.run_main(main))
