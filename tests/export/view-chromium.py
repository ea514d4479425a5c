#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""btrace view's page in a real browser: headless Chromium (TAP).

  view-chromium.py BTRACE TEST_TIMELINE SNAPSHOT OUTDIR [TURNS]

Writes the page of SNAPSHOT (a real recording: fixtures/recorded/thread),
the pages of the synthetic decode result with and without times
(tests/decode/test-timeline.c) and, with TURNS (tests/e2e/progs/
timeline-turns.c) and qemu-x86_64, the page of a QEMU recording of it,
whose timeline has times (one clock for all threads: the page says so);
opens each with `chromium --headless
--dump-dom` and checks: no console message (the page logs nothing: any
message is an error, an uncaught exception among them), the page's own
state `data-status="ok"` (its script ran to the end), the crashed thread's
lane first and the fault marker in the DOM, the report text beside it.
A screenshot of each (`--screenshot`) is kept in OUTDIR (view-*.png) as
the test's artefact.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

N = 0
FAILED = 0


def ok(cond, desc, detail=None):
    global N, FAILED
    N += 1
    print('%s %d - %s' % ('ok' if cond else 'not ok', N, desc), flush=True)
    if not cond:
        FAILED += 1
        for ln in str(detail or '').splitlines()[:30]:
            print('# ' + ln)
    return cond


def chromium(profile, *args):
    exe = shutil.which('chromium') or shutil.which('chromium-browser')
    cmd = [exe, '--headless', '--disable-gpu', '--no-first-run',
           '--disable-extensions', '--disable-background-networking',
           '--disable-sync', '--user-data-dir=' + profile,
           '--enable-logging=stderr', '--v=0', '--hide-scrollbars',
           '--window-size=1400,800', '--virtual-time-budget=3000']
    if os.geteuid() == 0:
        cmd.append('--no-sandbox')   # Chromium refuses root otherwise
    return subprocess.run(cmd + list(args), capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=180)


def check_page(name, page, outdir, crashed_tid):
    url = 'file://' + os.path.abspath(page)
    with tempfile.TemporaryDirectory(prefix='btrace-chromium.') as prof:
        r = chromium(prof, '--dump-dom', url)
    dom = r.stdout
    console = [ln for ln in r.stderr.splitlines() if ':CONSOLE' in ln]
    ok(r.returncode == 0 and '<body' in dom, '%s: chromium --dump-dom' % name,
       r.stderr[-2000:])
    ok(not console, '%s: no console message (no uncaught error)' % name,
       '\n'.join(console))
    m = re.search(r'<body[^>]*data-status="([a-z]+)"', dom)
    errs = re.search(r'<div id="errors">(.*?)</div>', dom, re.S)
    ok(m and m.group(1) == 'ok', '%s: the page says data-status="ok"' % name,
       'status %s, errors: %s' % (m and m.group(1), errs and errs.group(1)))
    lanes = re.findall(r'<div class="lane[^"]*" data-tid="(\d+)"', dom)
    ok(lanes and lanes[0] == str(crashed_tid) and
       re.search(r'<div class="lane crashed" data-tid="%d" '
                 r'id="crashed-thread">' % crashed_tid, dom),
       '%s: the crashed thread %d is in the DOM, first' % (name, crashed_tid),
       'lanes: %s' % lanes)
    # The slices are drawn on each lane's canvas, as tall as the thread's
    # deepest nesting (ROW = 18 px a level): from the page's own data, each
    # thread's depth; a lane whose canvas has no row drew no slice.
    with open(page, encoding='utf-8') as f:
        m = re.search(r'<script type="application/json" id="btrace-data">'
                      r'(.*?)</script>', f.read(), re.S)
    depth = {}
    if m:
        level = {}
        for e in json.loads(m.group(1)).get('traceEvents', []):
            t = str(e.get('tid'))
            if e.get('ph') == 'B':
                level[t] = level.get(t, 0) + 1
                depth[t] = max(depth.get(t, 0), level[t])
            elif e.get('ph') == 'E':
                level[t] = level.get(t, 0) - 1
    canvas = dict(re.findall(r'<div class="lane[^"]*" data-tid="(\d+)"[^>]*>'
                             r'<div class="label">[^<]*</div><div class="plot">'
                             r'<canvas height="\d+" style="height: (\d+)px;',
                             dom))
    ok(lanes and all(depth.get(t, 0) >= 1 for t in lanes) and
       all(canvas.get(t) == str(18 * depth[t]) for t in lanes),
       '%s: every lane draws its slices (canvas rows = the thread\'s '
       'nesting depth)' % name,
       'depth from the data %s, canvas heights %s' % (depth, canvas))
    fm = re.search(r'<div class="fault-marker[^"]*" id="fault-marker" '
                   r'data-ts="[0-9.]+"[^>]*><span>([^<]*SIGSEGV[^<]*)</span>',
                   dom)
    ok(fm, '%s: the fault marker is in the DOM, naming the signal' % name,
       re.findall(r'<div class="fault-marker.{0,200}', dom))
    ok('<pre id="report-text">btrace report:' in dom,
       '%s: the report text beside the timeline' % name)
    shot = os.path.join(outdir, 'view-%s.png' % name)
    if os.path.exists(shot):
        os.unlink(shot)
    with tempfile.TemporaryDirectory(prefix='btrace-chromium.') as prof:
        r = chromium(prof, '--screenshot=' + shot, url)
    size = os.path.getsize(shot) if os.path.exists(shot) else 0
    with open(shot, 'rb') if size else open(os.devnull, 'rb') as f:
        magic = f.read(8)
    ok(size > 10000 and magic == b'\x89PNG\r\n\x1a\n',
       '%s: screenshot kept: %s (%d bytes)' % (name, shot, size),
       r.stderr[-1000:])


def main():
    btrace, prog, snap, outdir = sys.argv[1:5]
    if not (shutil.which('chromium') or shutil.which('chromium-browser')):
        # tools/deps.sh installs it; without it the page cannot be opened
        print('1..0 # SKIP chromium is not installed (Debian package '
              'chromium)')
        return 0
    os.makedirs(outdir, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix='btrace-view.') as d:
        page = os.path.join(d, 'thread.html')
        r = subprocess.run([btrace, 'view', snap, '-o', page],
                           capture_output=True, text=True)
        if ok(r.returncode == 0, 'btrace view of %s' % os.path.basename(snap),
              r.stderr):
            # the crashed thread: the report's
            rep = subprocess.run([btrace, 'report', '--json', snap],
                                 capture_output=True, text=True).stdout
            tid = int(re.search(r'"fault": \{\s*"tid": (\d+)', rep).group(1))
            check_page('thread', page, outdir, tid)
        r = subprocess.run([prog, '--write', d], capture_output=True,
                           text=True)
        if ok(r.returncode == 0, 'test-timeline --write', r.stderr):
            for mode in ('timed', 'untimed'):
                check_page('synthetic-' + mode,
                           os.path.join(d, mode + '.html'), outdir, 101)
        qemu = shutil.which('qemu-x86_64')
        if len(sys.argv) > 5 and qemu:
            snap = os.path.join(d, 'turns.btrace')
            r = subprocess.run([btrace, 'record', '-b', 'qemu', '-q', '-o',
                                snap, '--', sys.argv[5]], capture_output=True,
                               text=True, stdin=subprocess.DEVNULL,
                               timeout=300)
            page = os.path.join(d, 'turns.html')
            v = subprocess.run([btrace, 'view', snap, '-o', page],
                               capture_output=True, text=True)
            if ok(r.returncode == 139 and v.returncode == 0,
                  'a QEMU recording of timeline-turns and its page',
                  r.stderr + v.stderr):
                rep = subprocess.run([btrace, 'report', '--json', snap],
                                     capture_output=True, text=True).stdout
                tid = int(re.search(r'"fault": \{\s*"tid": (\d+)',
                                    rep).group(1))
                with open(page, encoding='utf-8') as f:
                    html = f.read()
                ok('one clock for all threads' in html,
                   'turns: the page says its time axis is one clock for all '
                   'threads')
                check_page('turns', page, outdir, tid)
    print('1..%d' % N)
    return 1 if FAILED else 0


if __name__ == '__main__':
    sys.exit(main())
