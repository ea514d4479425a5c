#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""End-to-end test of the QEMU backend on one real crashing program (TAP).

    e2e-crash.py BTRACE PROGDIR SRCDIR CASE

Records CASE's program with `btrace record -b qemu`, reads `btrace report
--json`, runs the same program natively under gdb (`gdb -batch -ex run -ex
bt`), and checks:

- the signal (number and name) is the one gdb saw;
- the crashed thread: a thread of the recorded process, the first in the
  report; for crash-thread, not the main thread, as in gdb;
- the faulting function and line: frame 0 (or, when the fault is inside the
  C library, the first frame in the program's own files) is the function
  the source marks with "e2e: fault", at that line;
- the stack: the top frames, down to main, name the same functions as gdb's
  backtrace (see stack_compare() for the rules: IFUNC variants, glibc's
  internal aliases, gdb's synthesized tail-call frames);
- per case extras (a wrapped ring, the handler's original fault, ...).

si_code must equal gdb's $_siginfo.si_code, for the signals the emulator
raises itself (SIGFPE, SIGILL, SIGABRT) too: see docs/fixtures.md.

Skipped (TAP "1..0 # SKIP") when this machine has no gdb, or no qemu-x86_64
with plugin support.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as L  # noqa: E402

# The cases: program, arguments, source with the marker, signal, the
# function marked, and options (cwd: run in PROGDIR; size: --size).
CASES = {
    'fnptr': dict(prog='e2e-crash-fnptr', src='crash-fnptr.c',
                  sig='SIGSEGV', fault_fn='op_add'),
    'reraise': dict(prog='e2e-crash-reraise', src='crash-reraise.c',
                    sig='SIGSEGV', fault_fn='crash_here'),
    'thread': dict(prog='e2e-crash-thread', src='crash-thread.c',
                   sig='SIGSEGV', fault_fn='worker_crash', thread=True),
    'abort': dict(prog='e2e-crash-abort', src='crash-abort.c',
                  sig='SIGABRT', fault_fn='check', in_libc=True),
    'fpe': dict(prog='e2e-crash-fpe', src='crash-fpe.c',
                sig='SIGFPE', fault_fn='divide'),
    'ill': dict(prog='e2e-crash-ill', src='crash-ill.c',
                sig='SIGILL', fault_fn='do_trap'),
    'dlopen': dict(prog='e2e-crash-dlopen', src='crashlib.c',
                   args=['./libe2e-crashlib.so'], cwd=True,
                   sig='SIGSEGV', fault_fn='lib_inner',
                   extra_modules=['libe2e-crashlib.so']),
    'long-run': dict(prog='e2e-long-run', src='long-run.c',
                     args=['2000000'], size='64K',
                     sig='SIGSEGV', fault_fn='main', wrap=True),
}


def main():
    if len(sys.argv) != 5 or sys.argv[4] not in CASES:
        sys.stderr.write('usage: e2e-crash.py BTRACE PROGDIR SRCDIR CASE\n'
                         'cases: %s\n' % ' '.join(CASES))
        return 2
    btrace, progdir, srcdir, name = sys.argv[1:5]
    btrace, progdir = os.path.abspath(btrace), os.path.abspath(progdir)
    c = CASES[name]
    if not shutil.which('gdb'):
        return L.skip_all('gdb is not installed')
    why = L.qemu_skip_reason()
    if why:
        return L.skip_all(why)
    prog = os.path.join(progdir, c['prog'])
    argv = [prog] + c.get('args', [])
    cwd = progdir if c.get('cwd') else None
    work = tempfile.mkdtemp(prefix='btrace-e2e.')
    t = L.Tap()
    try:
        snap = os.path.join(work, name + '.btrace')
        rec = L.record(btrace, snap, argv, cwd=cwd, size=c.get('size'))
        if not os.path.exists(snap):
            t.ok(False, 'snapshot written (btrace record: %s)' %
                 rec.stderr.strip().replace('\n', ' | '))
            return t.done()
        rep = L.report_json(btrace, snap)
        gdb = L.gdb_native(argv, cwd=cwd)
        src = os.path.join(srcdir, c['src'])
        mline = L.marker_line(src)
        own = [os.path.basename(prog)] + c.get('extra_modules', [])
        check_case(t, c, rep, gdb, mline, own, btrace, snap)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return t.done()


def check_case(t, c, rep, gdb, mline, own, btrace, snap):
    sig = rep.get('signal') or {}
    t.ok(gdb['signal'] == c['sig'],
         'gdb: native run dies of %s (got %s)' % (c['sig'], gdb['signal']))
    t.ok(sig.get('name') == c['sig'] == gdb['signal'] and
         sig.get('number') == L.SIGNO.get(c['sig']),
         'signal %s %s, gdb %s' % (sig.get('number'), sig.get('name'),
                                   gdb['signal']))
    t.ok(sig.get('code') == gdb['si_code'],
         'si_code %s, gdb %s' % (sig.get('code'), gdb['si_code']))

    # The crashed thread.
    fault = rep.get('fault') or {}
    thr = rep['threads'][0] if rep.get('threads') else {}
    t.ok(thr.get('crashed') is True and fault.get('tid') == thr.get('tid'),
         'first thread %s is the crashed one, fault.tid %s' %
         (thr.get('tid'), fault.get('tid')))
    pid = rep['process']['pid']
    if c.get('thread'):
        t.ok(thr.get('tid') != pid and gdb['lwp'] != gdb['pid'],
             'crash in a worker thread: tid %s, pid %s (gdb: LWP %s, pid %s)'
             % (thr.get('tid'), pid, gdb['lwp'], gdb['pid']))
        # The other four: main in pthread_join, three in busy().  A busy
        # thread may not have run yet when the crasher dies (QEMU runs them
        # 3-7x slower on 2 CPUs): its trace then ends where it started,
        # with no instruction decoded, and it is not checked.
        others = [x for x in rep['threads'] if not x.get('crashed')]
        mainthr = [x for x in others if x['tid'] == pid and
                   any(f.get('function') == 'main' for f in x['stack'])]
        workers = [x for x in others if x['tid'] != pid]
        ran = [x for x in workers if x['history'].get('instructions')]
        busy = [x for x in ran
                if any(f.get('function') in ('busy', 'spin_work')
                       for f in x['stack'])]
        if not t.ok(len(others) == 4 and len(mainthr) == 1 and
                    len(workers) == 3 and len(ran) >= 1 and
                    len(busy) == len(ran) and
                    sum(1 for x in rep['threads'] if x.get('crashed')) == 1,
                    'other threads: %d, main in main: %d, busy threads that '
                    'ran: %d, in busy(): %d' % (len(others), len(mainthr),
                                                len(ran), len(busy))):
            for x in others:
                t.diag('thread %s stack: %s' % (x['tid'], ' < '.join(
                    '%s:%s' % (f.get('function'), f.get('line'))
                    for f in x['stack'])))
    else:
        t.ok(thr.get('tid') == pid and len(rep['threads']) == 1,
             'single-threaded: crashed tid %s = pid %s, %d thread(s)' %
             (thr.get('tid'), pid, len(rep['threads'])))

    # The faulting function and line (the program's own frame).
    stack = thr.get('stack', [])
    own_frames = [f for f in stack
                  if os.path.basename(f.get('module') or '') in own]
    top = own_frames[0] if own_frames else {}
    if c.get('in_libc'):
        t.ok(stack and stack[0] is not top and
             L.base(stack[0].get('module')).startswith('libc.so'),
             'fault inside libc: %s in %s' %
             (fault.get('function'), L.base(fault.get('module'))))
    else:
        t.ok(stack and stack[0] is top and fault.get('exact') is True,
             'fault in the program, exact (%s)' % fault.get('how'))
    t.ok(top.get('function') == c['fault_fn'] and top.get('line') == mline,
         'faulting frame %s:%s, source marker %s:%s' %
         (top.get('function'), top.get('line'), c['fault_fn'], mline))

    # The stack against gdb's backtrace.
    ok, msg = L.stack_compare(stack, gdb['frames'], own)
    t.ok(ok, 'stack matches gdb: ' + msg)

    if c.get('wrap'):
        info = subprocess.run([btrace, 'info', snap], capture_output=True,
                              text=True)
        t.ok(re.search(r'\bwrapped\b', info.stdout) is not None,
             'the trace buffer wrapped (btrace info flags)')
        h = thr.get('history', {})
        t.ok(h.get('gaps') == [] and h.get('instructions', 0) > 1000,
             'wrapped history decodes without gaps: %s instructions' %
             h.get('instructions'))
    if c['prog'].endswith('reraise'):
        # The handler ran after the fault: after_fault shows it; the
        # calls (up to the fault) and the stack at the fault must not.
        after = (thr.get('after_fault') or {}).get('calls', [])
        names = [x.get('function') for x in after]
        t.ok('on_segv' in names and 'on_segv' not in
             [x.get('function') for x in thr.get('calls', [])],
             'the handler on_segv is in after_fault, not in the calls')
        t.ok(not any(f.get('signal') for f in stack),
             'no signal frame in the stack at the original fault')


if __name__ == '__main__':
    L.run_main(main)
