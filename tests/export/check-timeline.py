#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The timeline's outputs, checked (TAP; docs/export.md "Timeline").

  check-timeline.py synthetic TEST_TIMELINE
      the renderers on a synthetic decode result with times and without
      (tests/decode/test-timeline.c --write): the report's text and JSON
      timeline, the Chrome Trace Event JSON, the HTML page
  check-timeline.py fixtures BTRACE FIXTURES_DIR
      btrace export --timeline, btrace report --json and btrace decode
      --calls --all-threads of the recorded fixtures
  check-timeline.py damaged BTRACE COUNT SNAPSHOT...
      COUNT copies of the snapshots with random bytes changed (seeded,
      the same every run): btrace view, export --timeline and decode
      --calls --all-threads exit 0 or 1 (1 with a message naming the
      snapshot), never crash, hang or trip a sanitizer, and leave no
      output behind when they fail

The Chrome JSON must have: slices (the synthetic threads' exactly, a
fixture's thread a slice for each function its last calls in the report
name), every slice closed, slices nested per thread
(an end closes the innermost open slice of its thread, never before it
began), times non-decreasing per thread, the fault event present (on the
crashed thread, with the signal), thread names and the crashed thread
sorted first, and the time axis said.
"""
import html
import json
import os
import re
import subprocess
import sys
import tempfile

N = 0
FAILED = 0


def ok(cond, desc, detail=None):
    global N, FAILED
    N += 1
    print('%s %d - %s' % ('ok' if cond else 'not ok', N, desc))
    if not cond:
        FAILED += 1
        if detail:
            for ln in str(detail).splitlines()[:20]:
                print('# ' + ln)
    return cond


def slices_by_tid(d):
    """{tid: [the names of its slices, in the order they begin]}."""
    out = {}
    for e in d.get('traceEvents') or []:
        if isinstance(e, dict) and e.get('ph') == 'B':
            out.setdefault(e.get('tid'), []).append(e.get('name'))
    return out


def chrome_problems(d, want_axis=None, want_slices=None):
    """What is wrong with a Chrome Trace Event JSON object, [] if nothing.
    @want_slices: {tid: names} that must be among the thread's slices (a
    list: exactly these, in this order; a set: at least these)."""
    bad = []
    ev = d.get('traceEvents')
    if not isinstance(ev, list):
        return ['no traceEvents array']
    other = d.get('otherData', {})
    axis = other.get('time_axis')
    if axis not in ('ns', 'instructions'):
        bad.append('otherData.time_axis is %r' % axis)
    if want_axis and axis != want_axis:
        bad.append('time axis %r, want %r' % (axis, want_axis))
    crashed = other.get('crashed_tid')
    stacks, last, names, sort, faults = {}, {}, {}, {}, []
    for i, e in enumerate(ev):
        ph, tid = e.get('ph'), e.get('tid')
        if ph == 'M':
            if e.get('name') == 'thread_name':
                names[tid] = e['args']['name']
            elif e.get('name') == 'thread_sort_index':
                sort[tid] = e['args']['sort_index']
            continue
        ts = e.get('ts')
        if not isinstance(ts, (int, float)):
            bad.append('event %d: no ts' % i)
            continue
        if ts < last.get(tid, 0):
            bad.append('event %d (tid %s): time goes back %s -> %s'
                       % (i, tid, last[tid], ts))
        last[tid] = ts
        st = stacks.setdefault(tid, [])
        if ph == 'B':
            if not e.get('name'):
                bad.append('event %d: a slice without a name' % i)
            st.append(e)
        elif ph == 'E':
            if not st:
                bad.append('event %d (tid %s): an end without a begin'
                           % (i, tid))
            elif st.pop()['ts'] > ts:
                bad.append('event %d: a slice ends before it began' % i)
        elif ph == 'i':
            if e.get('cat') == 'fault':
                faults.append(e)
        else:
            bad.append('event %d: unexpected ph %r' % (i, ph))
    for tid, st in stacks.items():
        if st:
            bad.append('tid %s: %d slices not closed (%s)'
                       % (tid, len(st), st[-1].get('name')))
        if tid not in names:
            bad.append('tid %s: no thread_name' % tid)
        elif axis == 'instructions' and \
                not names[tid].endswith('instructions, not time'):
            bad.append('tid %s: the name %r does not say the axis is '
                       'instructions' % (tid, names[tid]))
    if crashed is not None:
        if sort.get(crashed) != 0:
            bad.append('the crashed thread %s is not sorted first' % crashed)
        cf = [f for f in faults if f.get('tid') == crashed]
        if not cf:
            bad.append('no fault event on the crashed thread %s' % crashed)
        elif other.get('signal') and \
                cf[0].get('args', {}).get('signal') != other['signal']:
            bad.append('the fault event does not name the signal')
    elif not faults:
        bad.append('no fault event')
    got = slices_by_tid(d)
    if not got:
        bad.append('no slice at all: the timeline shows nothing')
    for tid, names in (want_slices or {}).items():
        have = got.get(tid, [])
        if isinstance(names, list):
            if have != names:
                bad.append('tid %s: slices %s, want %s' % (tid, have, names))
        elif not set(names) <= set(have):
            bad.append('tid %s: no slice for %s (has %d slices)'
                       % (tid, sorted(set(names) - set(have)), len(have)))
    return bad


SCRIPT_OPEN = re.compile(r'<script\b', re.I)
SCRIPT_CLOSE = re.compile(r'</script', re.I)


def page_problems(text, report_text=None):
    """What is wrong with a page of btrace view, [] if nothing."""
    bad = []
    if len(SCRIPT_OPEN.findall(text)) != 2 or \
            len(SCRIPT_CLOSE.findall(text)) != 2:
        bad.append('%d <script and %d </script (want 2 each): something '
                   'closed an element early' % (len(SCRIPT_OPEN.findall(text)),
                                                 len(SCRIPT_CLOSE.findall(text))))
    for ref in ('http:', 'https:', '<link', ' src=', 'url(', '@import',
                '<iframe', '<img'):
        if ref in text:
            bad.append('an external reference: %r' % ref)
    if "default-src 'none'" not in text:
        bad.append('no Content-Security-Policy')
    m = re.search(r'<script type="application/json" id="btrace-data">(.*?)'
                  r'</script>', text, re.S)
    if not m:
        return bad + ['no data element']
    try:
        data = json.loads(m.group(1))
        bad += ['data: ' + p for p in chrome_problems(data)]
    except ValueError as e:
        bad.append('data: not JSON: %s' % e)
    m = re.search(r'<pre id="report-text">(.*?)</pre>', text, re.S)
    if not m:
        bad.append('no report text')
    elif report_text is not None and html.unescape(m.group(1)) != report_text:
        bad.append('the report text differs from btrace report\'s')
    return bad


def synthetic(prog):
    with tempfile.TemporaryDirectory(prefix='btrace-tl.') as d:
        r = subprocess.run([prog, '--write', d], capture_output=True,
                           text=True)
        if not ok(r.returncode == 0, 'test-timeline --write', r.stderr):
            return
        for mode in ('timed', 'untimed'):
            def read(ext):
                with open(os.path.join(d, mode + '.' + ext), 'rb') as f:
                    return f.read().decode('utf-8')
            rep = json.loads(read('json'))
            tl = rep.get('timeline') or []
            seq = ['%s:%s:%s' % (e['tid'], e['kind'],
                                 'evil' if (e['function'] or '').startswith(
                                     'evil') else e['function'] or '-')
                   for e in tl]
            if mode == 'timed':
                want = ('101:start:main 102:start:b1 103:start:evil '
                        '101:call:a1 102:call:b2 101:return:main '
                        '102:syscall:b2 101:call:a2 101:gap:- '
                        '102:return:b1 101:start:a3 101:fault:a3').split()
                ok(rep.get('timeline_order') == 'time',
                   'timed: JSON timeline_order "time"')
                ok(seq == want, 'timed: JSON timeline merged by time, '
                   'ending at the fault', 'got  %s\nwant %s' % (seq, want))
                times = [e['time_ns'] for e in tl]
                ok(times[0] == 100 and times[-1] == 950 and
                   times[seq.index('101:gap:-')] is None and
                   all(t is None or t > 0 for t in times),
                   'timed: JSON time_ns (null for the gap)', times)
                th = {t['tid']: t for t in rep['threads']}
                ok([c['time_ns'] for c in th[102]['calls']] ==
                   [200, 400, 800, 1000] and
                   th[101]['tail'][-1]['fault'] and
                   th[101]['tail'][-1]['time_ns'] == 950,
                   'timed: calls and tail entries carry time_ns')
                txt = read('txt')
                ok('all threads, last 12 events before the fault, in time '
                   'order' in txt, 'timed: text heading says time order')
                lines = [ln for ln in txt.split('in time order', 1)[-1]
                         .splitlines() if ' tid ' in ln]
                ok([re.search(r'tid (\d+)', ln).group(1) for ln in lines] ==
                   [s.split(':')[0] for s in want],
                   'timed: text lines in the merged order', '\n'.join(lines))
            else:
                ok(rep.get('timeline_order') == 'per_thread',
                   'untimed: JSON timeline_order "per_thread"')
                tids = [e['tid'] for e in tl]
                ok(tids == sorted(tids, key=lambda t: {102: 0, 103: 1,
                                                       101: 2}[t]) and
                   tids[-1] == 101 and tl[-1]['kind'] == 'fault',
                   'untimed: thread after thread, the crashed thread last',
                   tids)
                ok(all(e['time_ns'] is None for e in tl) and
                   all(c['time_ns'] is None for t in rep['threads']
                       for c in t['calls'] + t['tail']),
                   'untimed: every time_ns null')
                ok('times not known: the order across threads is not known'
                   in read('txt'), 'untimed: the text says the order is not '
                   'known')
            chrome = json.loads(read('chrome.json'))
            # the synthetic threads' calls (test-timeline.c): one slice
            # each, the gap too, in the order they began
            want_slices = {101: ['main', 'a1', 'a2', 'gap', 'a3'],
                           102: ['b1', 'b2', 'b3'], 103: ['evil']}
            got = {tid: ['gap' if n.startswith('gap') else
                         'evil' if n.startswith('evil') else n
                         for n in names]
                   for tid, names in slices_by_tid(chrome).items()}
            ok(got == want_slices, '%s: Chrome JSON has the slices of every '
               'thread\'s calls' % mode,
               'got  %s\nwant %s' % (got, want_slices))
            p = chrome_problems(chrome, 'ns' if mode == 'timed'
                                else 'instructions')
            ok(not p, '%s: Chrome JSON valid (closed, nested, times '
               'non-decreasing, fault present)' % mode, '\n'.join(p))
            names = [e.get('name') for e in chrome['traceEvents']]
            ok(any(n and n.startswith('evil</script>') and n.endswith('\xff')
                   for n in names),
               '%s: a name with </script> and a non-UTF-8 byte kept '
               '(as U+00FF)' % mode)
            if mode == 'timed':
                b = [(e['tid'], e['name'], e['ts'])
                     for e in chrome['traceEvents'] if e['ph'] == 'B']
                ok((101, 'a1', 0.2) in b and (102, 'b2', 0.3) in b,
                   'timed: slices placed at their times (us from the '
                   'earliest)', b)
            page = read('html')
            p = page_problems(page, read('txt'))
            ok(not p, '%s: the page is self-contained, its data intact, the '
               'report beside it' % mode, '\n'.join(p))


# A line of `btrace decode --calls --all-threads`: [time us] tid N  number
LISTED = re.compile(r'^\s*(?:([0-9.]+) us\s+)?tid (\d+)\s+(\d+)\s')


def fixture_order(d):
    """TIMELINE_ORDER of the fixture in @d (its fixture.env), or None."""
    try:
        with open(os.path.join(d, 'fixture.env')) as f:
            for ln in f:
                m = re.match(r'^TIMELINE_ORDER=(\S+)\s*$', ln)
                if m:
                    return m.group(1)
    except OSError:
        pass
    return None


def fixtures(btrace, root):
    with tempfile.TemporaryDirectory(prefix='btrace-tl.') as d:
        for s in sorted(os.listdir(root)):
            snap = [f for f in os.listdir(os.path.join(root, s))
                    if f.endswith('.btrace')] if os.path.isdir(
                os.path.join(root, s)) else []
            if not snap:
                continue
            path = os.path.join(root, s, snap[0])
            out = os.path.join(d, s + '.json')
            r = subprocess.run([btrace, 'export', path, '--timeline', out],
                               capture_output=True, text=True)
            if not ok(r.returncode == 0, '%s: export --timeline' % s,
                      r.stderr):
                continue
            ok(os.stat(out).st_mode & 0o077 == 0,
               '%s: the timeline is not readable by others' % s)
            with open(out, encoding='utf-8') as f:
                chrome = json.load(f)
            rep = json.loads(subprocess.run(
                [btrace, 'report', '--json', path], capture_output=True,
                text=True).stdout)
            # the order the recording allows, from the fixture (a fact of
            # how it was recorded), not from btrace's report
            order = fixture_order(os.path.join(root, s))
            if not ok(order in ('time', 'per_thread'),
                      '%s: fixture.env says TIMELINE_ORDER (%s)' % (s, order)):
                continue
            ok(rep['timeline_order'] == order,
               '%s: the report\'s timeline_order is the recording\'s (%s, '
               'want %s)' % (s, rep['timeline_order'], order))
            axis = 'ns' if order == 'time' else 'instructions'
            # each thread's last calls the report names are slices of it
            want = {t['tid']: {c['function'] for c in t['calls']
                               if c.get('function')}
                    for t in rep['threads']}
            p = chrome_problems(chrome, axis, want)
            ok(not p, '%s: Chrome JSON valid (axis %s)' % (s, axis),
               '\n'.join(p))
            r = subprocess.run([btrace, 'export', path, '--timeline', out],
                               capture_output=True, text=True)
            ok(r.returncode == 1 and 'exists' in r.stderr,
               '%s: an existing file is not replaced without --force' % s,
               r.stderr)
            r = subprocess.run([btrace, 'decode', '--calls', '--all-threads',
                                '--last', '8', path], capture_output=True,
                               text=True)
            lines = r.stdout.splitlines()
            ents = [m.groups() for m in
                    (LISTED.match(ln) for ln in lines) if m]
            tids = [e[1] for e in ents]
            # each thread's entries in its own order (their numbers grow)
            seen = {}
            good = bool(ents)
            for _, tid, no in ents:
                good &= int(no) > seen.get(tid, -1)
                seen[tid] = int(no)
            if order == 'time':
                # the real order: every entry's time, none before the one
                # listed above it
                times = [float(e[0]) if e[0] else None for e in ents]
                known = [t for t in times if t is not None]
                good &= (lines[0].startswith('all threads, in time order')
                         and len(known) == len(times) and
                         known == sorted(known))
            else:
                # thread after thread, the crashed one last
                runs = [t for i, t in enumerate(tids)
                        if i == 0 or tids[i - 1] != t]
                crashed = [str(t['tid']) for t in rep['threads']
                           if t['crashed']]
                good &= (lines[0].startswith('all threads (times not known')
                         and len(runs) == len(set(runs)) and
                         (not crashed or runs[-1] == crashed[0]))
            ok(r.returncode == 0 and good and
               len(set(tids)) == len(rep['threads']),
               '%s: decode --calls --all-threads (%s)' %
               (s, rep['timeline_order']), r.stdout[:2000] + r.stderr)


SAN = ('Sanitizer', 'runtime error:', 'LeakSanitizer')


def damaged(btrace, count, snaps):
    import random
    rnd = random.Random(18)
    with tempfile.TemporaryDirectory(prefix='btrace-tl.') as d:
        for n in range(count):
            src = snaps[n % len(snaps)]
            with open(src, 'rb') as f:
                data = bytearray(f.read())
            for _ in range(rnd.randint(1, 24)):
                data[rnd.randrange(len(data))] = rnd.randrange(256)
            snap = os.path.join(d, 'damaged-%d.btrace' % n)
            with open(snap, 'wb') as f:
                f.write(data)
            out = os.path.join(d, 'out-%d' % n)
            bad = []
            for cmd in (['view', snap, '-o', out + '.html'],
                        ['export', snap, '--lenient', '--timeline',
                         out + '.json'],
                        ['decode', '--calls', '--all-threads', '--last', '64',
                         snap]):
                try:
                    r = subprocess.run([btrace] + cmd, capture_output=True,
                                       text=True, errors='replace',
                                       timeout=300)
                except subprocess.TimeoutExpired:
                    bad.append('%s: hung' % cmd[0])
                    continue
                if r.returncode not in (0, 1) or \
                        any(x in r.stderr for x in SAN):
                    bad.append('%s: exit %d\n%s' % (cmd[0], r.returncode,
                                                     r.stderr[-1500:]))
                elif r.returncode == 1 and 'damaged-%d' % n not in r.stderr:
                    bad.append('%s: exit 1 without naming the snapshot: %s'
                               % (cmd[0], r.stderr[-500:]))
                elif r.returncode == 1 and cmd[0] != 'decode' and \
                        any(f.startswith('out-%d.' % n) for f in os.listdir(d)):
                    bad.append('%s: failed but left its output' % cmd[0])
            ok(not bad, 'damaged copy %d of %s' % (n, os.path.basename(src)),
               '\n'.join(bad))
            for f in os.listdir(d):
                os.unlink(os.path.join(d, f))


def main():
    if len(sys.argv) >= 5 and sys.argv[1] == 'damaged':
        damaged(sys.argv[2], int(sys.argv[3]), sys.argv[4:])
    elif len(sys.argv) == 3 and sys.argv[1] == 'synthetic':
        synthetic(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == 'fixtures':
        fixtures(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
    print('1..%d' % N)
    return 1 if FAILED or not N else 0


if __name__ == '__main__':
    sys.exit(main())
