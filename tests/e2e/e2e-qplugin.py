#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The QEMU plugin's recording side on programs that used to fool it (TAP).

    e2e-qplugin.py BTRACE PROGDIR CASE

CASE is one of:

- handled: programs that take SIGSEGV (probing memory), SIGILL, SIGTRAP and
  SIGFPE in handlers that recover, and a JIT that patches code it ran (QEMU
  write-protects translated pages and resolves those faults itself): each
  exits with the status it chose (0, or 3 for the JIT: a non-zero exit after
  a fault would ask for a snapshot) and no snapshot is written.
- jit: a JIT patches code it ran (also writing its own page), runs it again,
  poisons it with int3 bytes and crashes in C: the fault is the real one (the
  C store, SEGV_MAPERR at 0, not a write-protection fault of QEMU's), and the
  JIT code decodes with the bytes that ran: every instruction decoded at the
  JIT's addresses is one of the code's (never the int3 poison), both
  branches of its conditional were seen, and the snapshot says some blocks
  ran with bytes that were rewritten later.
- threads: 100 threads alive, thread 77 crashes: the crashed thread is the
  one that crashed (its tid, written by the program), with the stack gdb
  shows natively.
- spin-self, spin-cycle: a loop of one block (`for (;;)`) or of a few blocks
  is killed with SIGABRT from outside after a second: the history before the
  loop is kept (the calls of before_loop_step), and the stack names the
  looping function and main.
- callsig: a signal taken right after a direct call, at the callee's first
  instruction (its page is made executable by the SIGSEGV handler), then
  the callee returns, 32 times, then a crash in C: the history decodes
  without a decode error (a return-compressing encoder must count that
  call as done, as the decoder does: Go's SIGURG preemption did this at
  random), and every round's code ran once, each return going back to
  its caller; recorded as BTS, it decodes without a gap.
- inject: handlers that send the interrupted context elsewhere, as Go's
  runtime does (qp-inject.c): a SIGURG whose handler makes the thread call
  a stub that returns to the interrupted instruction, 8 times; a return
  into a page the SIGSEGV handler makes executable, 8 times (QEMU's
  records do not say where that return went); then a NULL store whose
  handler makes the thread call a function that is preempted 4 times more
  (a timer's signal while it spins) and aborts.  The fault is the
  store, the process dies of SIGABRT, and the stack at the fault is
  crash_here <- outer <- (the page) <- main, without a signal
  frame: no rt_sigreturn left a stale one, and neither the preemptions
  nor the handled faults elsewhere are taken for the fault.
- sysloop: loops of two, three and four blocks whose turns each make a system
  call (getpid through a `syscall` instruction in the loop, 15 turns), then
  a crash: the decoded history holds all 15 system calls of each loop
  (folding such a loop would leave one).
- gone-exe, gone-lib, gone-memfd: code whose file is gone at the death (the
  executable deleted itself, a library deleted after dlopen, a library
  loaded from a memfd): the crash decodes (the stack's top frame is the
  faulting instruction, the next is its caller, and the tail ends at the
  fault), with the addresses the program's own symbols give.

Skips (1..0) when qemu-x86_64 or gdb (threads) is missing.
"""
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as L  # noqa: E402


def nm(path):
    """Symbol name -> address (st_value) of @path's functions."""
    out = subprocess.run(['nm', path], capture_output=True, text=True).stdout
    syms = {}
    for ln in out.splitlines():
        p = ln.split()
        if len(p) == 3 and p[1] in 'tTwW':
            syms[p[2]] = int(p[0], 16)
    return syms


def fn_bounds(path, name):
    """(start, end) of function @name in @path, from nm -S."""
    out = subprocess.run(['nm', '-S', path], capture_output=True,
                         text=True).stdout
    for ln in out.splitlines():
        p = ln.split()
        if len(p) == 4 and p[3] == name:
            return int(p[0], 16), int(p[0], 16) + int(p[1], 16)
    raise RuntimeError('%s: no symbol %s' % (path, name))


def snapshot_meta(btrace, snap):
    r = subprocess.run([btrace, 'info', snap], capture_output=True,
                       text=True)
    meta = {}
    on = False
    for ln in r.stdout.splitlines():
        if ln.startswith('metadata:'):
            on = True
            continue
        if on:
            m = re.match(r'^  (\S+) (.*)$', ln)
            if not m:
                on = False
                continue
            meta[m.group(1)] = m.group(2)
    return meta


def case_handled(t, btrace, progdir, work):
    prog = os.path.join(progdir, 'qp-handled')
    for what, status in (('segv', 0), ('ill', 0), ('trap', 0), ('fpe', 0),
                         ('jit', 0), ('jit', 3), ('all', 0)):
        snap = os.path.join(work, 'h-%s-%d.btrace' % (what, status))
        rec = L.record(btrace, snap, [prog, what, str(status)], cwd=work)
        t.ok(rec.returncode == status,
             '%s, exit %d: the exit status passes through (got %d)' %
             (what, status, rec.returncode))
        t.ok(rec.stdout.startswith('ok '),
             '%s: the program ran to its end (%r)' % (what, rec.stdout[:40]))
        t.ok(not os.path.exists(snap),
             '%s, exit %d: handled signals are not a crash: no snapshot' %
             (what, status))
        if os.path.exists(snap) or rec.returncode != status:
            t.diag(rec.stderr[-600:])
    cores = [f for f in os.listdir(work) if f.startswith('qemu_')]
    t.ok(not cores, 'no guest core left behind (%s)' % cores)


def record_with_info(t, btrace, progdir, work, name):
    """Record qp-NAME, which writes what it did to an info file, until it
    dies of SIGSEGV: (snapshot, info text), or None when it did not."""
    prog = os.path.join(progdir, 'qp-' + name)
    info = os.path.join(work, name + '.txt')
    snap = os.path.join(work, name + '.btrace')
    rec = L.record(btrace, snap, [prog, info], cwd=work)
    t.ok(rec.returncode == 128 + 11, 'dies of SIGSEGV (status %d)' %
         rec.returncode)
    if not t.ok(os.path.exists(snap) and os.path.exists(info),
                'snapshot written'):
        t.diag(rec.stderr)
        return None
    with open(info) as f:
        return snap, f.read()


def case_jit(t, btrace, progdir, work):
    got = record_with_info(t, btrace, progdir, work, 'jit')
    if not got:
        return
    snap, text = got
    m = re.search(r'jit=0x([0-9a-f]+) fault=0x([0-9a-f]+)', text)
    jit, crash_fn = int(m.group(1), 16), int(m.group(2), 16)
    rep = L.report_json(btrace, snap)
    sig, fault = rep['signal'], rep['fault']
    t.ok(sig['name'] == 'SIGSEGV' and sig.get('code_name') == 'SEGV_MAPERR'
         and int(sig['address'], 16) == 0,
         'the signal is the real fault: SEGV_MAPERR at 0, not QEMU\'s own '
         'write-protection fault (%s)' % sig)
    t.ok(fault.get('function') == 'crash_after_jit' and fault.get('exact')
         and crash_fn <= int(fault['ip'], 16) < crash_fn + 16,
         'the fault is in crash_after_jit, exact (%s)' % fault)
    r = subprocess.run([btrace, 'decode', '--insn', '--last', '4000', snap],
                       capture_output=True, text=True)
    ran = {}
    for mm in re.finditer(r'^\s+0x([0-9a-f]+)\s+<[^>]*>\s+(.*)$', r.stdout,
                          re.M):
        a = int(mm.group(1), 16)
        if jit <= a < jit + 18:
            ran.setdefault(a - jit, set()).add(mm.group(2).strip())
    # The code's instructions at their offsets (qp-jit.c).
    want = {0: 'inc', 6: 'cmp', 9: 'jle', 11: 'sub', 14: 'lea', 17: 'ret'}
    bad = ['+%d %s' % (o, sorted(v)) for o, v in ran.items()
           if o not in want or any(not x.startswith(want[o]) for x in v)]
    t.ok(r.returncode == 0 and len(ran) == len(want) and not bad,
         'the JIT code decodes with the bytes that ran, not the int3 '
         'poison: offsets %s%s' % (sorted(ran), (' bad: %s' % bad)
                                   if bad else ''))
    meta = snapshot_meta(btrace, snap)
    t.ok('qemu.code_rewritten' in meta,
         'the snapshot says code was rewritten after it ran (%s)' %
         meta.get('qemu.code_rewritten'))


def case_callsig(t, btrace, progdir, work):
    got = record_with_info(t, btrace, progdir, work, 'callsig')
    if not got:
        return
    snap, text = got
    prog = os.path.join(progdir, 'qp-callsig')
    info = os.path.join(work, 'callsig.txt')
    pages = [int(m, 16) for m in re.findall(r'jit=0x([0-9a-f]+)', text)]
    rep = L.report_json(btrace, snap)
    gaps = [g for th in rep['threads'] for g in th['history']['gaps']
            if g['kind'] == 'decode-error']
    t.ok(not gaps, 'no decode error in the history (%s)' %
         [g['reason'] for g in gaps])
    t.ok(rep['fault'].get('function') == 'crash_after',
         'the fault is in crash_after (%s)' % rep['fault'].get('function'))
    r = subprocess.run([btrace, 'decode', '--insn', snap],
                       capture_output=True, text=True)
    path = re.findall(r'^\s+0x([0-9a-f]+)\s+<([^>+]*)[^>]*>\s+(\S+)',
                      r.stdout, re.M)
    seen = {}
    bad = []
    for i, (a, fn, mn) in enumerate(path):
        a = int(a, 16)
        for p in pages:
            # call B, ret; B: lea, ret (qp-callsig.c)
            for off, want in ((0, 'call'), (5, 'ret'), (4096, 'lea'),
                              (4099, 'ret')):
                if a == p + off:
                    seen[(p, off)] = seen.get((p, off), 0) + 1
                    if not mn.startswith(want):
                        bad.append('%#x: %s' % (a, mn))
                    if off == 5 and (i + 1 >= len(path) or
                                     path[i + 1][1] != 'call_jit'):
                        bad.append('%#x ret -> %s' % (
                            a, path[i + 1][1] if i + 1 < len(path)
                            else 'end'))
    twice = sorted('%#x+%d' % k for k, n in seen.items() if n != 1)
    t.ok(r.returncode == 0 and len(pages) == 32 and
         len(seen) == 4 * len(pages) and not twice and not bad,
         'each of the %d rounds ran its call, the callee and its return to '
         'call_jit once (%d of %d seen%s%s)' % (
             len(pages), len(seen), 4 * len(pages),
             ', not once: %s' % twice[:4] if twice else '',
             ', wrong: %s' % bad[:4] if bad else ''))
    # BTS: the call is a branch record of its own; without it the decoder
    # walked on past the call into bytes that never ran
    snap = os.path.join(work, 'callsig-bts.btrace')
    rec = subprocess.run([btrace, 'record', '-b', 'qemu', '--format', 'bts',
                          '-q', '-o', snap, '--', prog, info], cwd=work,
                         capture_output=True, text=True,
                         stdin=subprocess.DEVNULL, timeout=600)
    r = subprocess.run([btrace, 'decode', '--insn', snap],
                       capture_output=True, text=True)
    gaps = [ln for ln in r.stdout.splitlines() if ln.startswith('[gap:')]
    t.ok(rec.returncode == 128 + 11 and r.returncode == 0 and not gaps and
         r.stdout.count('<call_jit') > 0,
         'BTS: the history decodes without a gap (status %d, %s)' %
         (rec.returncode, gaps[:2]))


def case_jccsig(t, btrace, progdir, work):
    # A fault after a block's last Jcc, handled (the handler maps the
    # target): the signal frame holds the Jcc and rt_sigreturn goes to its
    # target, which jumps on to crash_after.  That episode is closed: the
    # crash that follows is the fault, and its stack has no signal frame.
    prog = os.path.join(progdir, 'qp-jccsig')
    snap = os.path.join(work, 'jccsig.btrace')
    rec = L.record(btrace, snap, [prog], cwd=work)
    t.ok(rec.returncode == 128 + signal.SIGSEGV, 'dies of SIGSEGV at the '
         'second fault, as natively (status %d)' % rec.returncode)
    if not t.ok(os.path.exists(snap), 'snapshot written'):
        t.diag(rec.stderr)
        return
    rep = L.report_json(btrace, snap)
    f = rep['fault']
    t.ok(f.get('function') == 'crash_after',
         'the fault is crash_after\'s, not the handled one at the Jcc\'s '
         'target (%s)' % f.get('function'))
    # the path before the fault goes through the handled episode: the
    # handler, its return to the Jcc's target B (a page start, 4096 after
    # A's), then the fault; not from A straight to the fault
    tail = rep['threads'][0]['tail']
    ips = [int(x['ip'], 16) if x.get('ip') else 0 for x in tail]
    fns = [x.get('function') for x in tail]
    t.ok(len(tail) >= 3 and tail[-1].get('fault') and
         fns[-1] == 'crash_after' and 'on_segv' in fns[:-1] and
         ips[-2] & 0xfff == 0 and ips[-2] - 4096 in ips[:-2],
         'the path before the fault: the handler, its return to the Jcc\'s '
         'target, then crash_after (%s)' % fns[-4:])
    st = [x.get('function') for x in rep['threads'][0]['stack']]
    t.ok(st[:3] == ['crash_after', 'outer', 'main'],
         'stack at the fault: crash_after <- outer <- main (%s)' % st)


def case_inject(t, btrace, progdir, work):
    prog = os.path.join(progdir, 'qp-inject')
    snap = os.path.join(work, 'inject.btrace')
    rec = L.record(btrace, snap, [prog], cwd=work)
    t.ok(rec.returncode == 128 + signal.SIGABRT, 'dies of SIGABRT, as '
         'natively (status %d)' % rec.returncode)
    if not t.ok(os.path.exists(snap), 'snapshot written'):
        t.diag(rec.stderr)
        return
    rep = L.report_json(btrace, snap)
    t.ok(rep['signal'].get('name') == 'SIGSEGV' and
         (rep.get('death') or {}).get('signal', {}).get('name') == 'SIGABRT',
         'fault SIGSEGV, death SIGABRT (%s, %s)' %
         (rep['signal'].get('name'), rep.get('death')))
    t.ok(rep['fault'].get('function') == 'crash_here',
         'the fault is crash_here\'s store, not a preemption or a handled '
         'fault (%s)' % rep['fault'].get('function'))
    st = rep['threads'][0]['stack']
    fns = [x.get('function') for x in st]
    t.ok(fns[:4] == ['crash_here', 'outer', None, 'main'],
         'stack at the fault: crash_here <- outer <- (page) <- main (%s)' %
         fns[:6])
    t.ok(not any(x.get('signal') for x in st),
         'no signal frame in the stack at the fault (%s)' %
         [x.get('function') for x in st if x.get('signal')])
    r = subprocess.run([btrace, 'decode', '--calls', snap],
                       capture_output=True, text=True, timeout=120)
    stubs = len(re.findall(r'^\s*\d+\s+preempt_stub\b', r.stdout, re.M))
    t.ok(r.returncode == 0 and stubs >= 12,
         'the 12 (or more) injected calls of preempt_stub are in the '
         'history (%d)' %
         stubs)
    # each returns into the code it interrupted (the timer's, in spin: a
    # block whose last Jcc QEMU's records hold), not into a context whose
    # callers are unknown
    lines = r.stdout.splitlines()
    after = [lines[i + 1] for i, x in enumerate(lines[:-1])
             if re.match(r'^\s*\d+\s+preempt_stub\b', x)]
    bad = [x.strip() for x in after if '[partial]' in x]
    t.ok(after and not bad, 'every injected call returns into the code it '
         'interrupted (%s)' % (bad[:3] or after[-2:]))


def case_threads(t, btrace, progdir, work):
    prog = os.path.join(progdir, 'qp-threads')
    tidf = os.path.join(work, 'tid.txt')
    snap = os.path.join(work, 'threads.btrace')
    argv = [prog, '100', '77', tidf]
    rec = L.record(btrace, snap, argv, cwd=work)
    t.ok(rec.returncode == 128 + 11, 'dies of SIGSEGV (status %d)' %
         rec.returncode)
    if not t.ok(os.path.exists(snap), 'snapshot written'):
        t.diag(rec.stderr)
        return
    tid = int(open(tidf).read().split()[0])
    rep = L.report_json(btrace, snap)
    th = rep['threads'][0]
    t.ok(th.get('crashed') and th['tid'] == tid and
         rep['fault'].get('tid') == tid,
         'the crashed thread is thread 77 (tid %d): report says %s' %
         (tid, th['tid']))
    t.ok(rep['fault'].get('function') == 'crash_in_thread' and
         rep['fault'].get('exact'),
         'fault in crash_in_thread, exact (%s)' % rep['fault'])
    t.ok(len(rep['threads']) >= 100,
         'every thread has a history (%d threads)' % len(rep['threads']))
    meta = snapshot_meta(btrace, snap)
    t.ok('qemu.threads_untraced' not in meta,
         'no thread went untraced (%s)' % meta.get('qemu.threads_untraced'))
    g = L.gdb_native(argv[:3] + [os.path.join(work, 'tid-native.txt')],
                     cwd=work)
    ok, msg = L.stack_compare(th['stack'], g['frames'], {'qp-threads.c'})
    t.ok(ok, 'stack vs gdb: %s' % msg)


def case_spin(t, btrace, progdir, work, mode):
    prog = os.path.join(progdir, 'qp-spin')
    snap = os.path.join(work, 'spin-%s.btrace' % mode)
    cmd = [btrace, 'record', '-b', 'qemu', '-q', '-o', snap, '--', prog, mode]
    p = subprocess.Popen(cmd, cwd=work, stdout=subprocess.PIPE, text=True,
                         stdin=subprocess.DEVNULL)
    line = p.stdout.readline()
    t.ok(line.strip() == 'spinning', 'the program reached its loop')
    time.sleep(1.0)
    # The emulator is btrace's child.
    kids = L.emulators(p.pid)
    if not t.ok(len(kids) == 1, 'found the emulator (%s)' % kids):
        # the program would go on spinning without btrace: stop it too
        for k in kids:
            os.kill(k, signal.SIGKILL)
        p.kill()
        p.wait()
        return
    os.kill(int(kids[0]), signal.SIGABRT)
    rc = p.wait(timeout=300)
    t.ok(rc == 128 + 6, 'dies of SIGABRT (status %d)' % rc)
    if not t.ok(os.path.exists(snap), 'snapshot written'):
        return
    rep = L.report_json(btrace, snap)
    th = rep['threads'][0]
    names = [f.get('function') for f in th['stack']]
    fn = 'spin_' + mode
    t.ok(names[:1] == [fn] and 'main' in names,
         'the stack names %s and main: %s' % (fn, names))
    r = subprocess.run([btrace, 'decode', '--insn', '--last', '200000',
                        snap], capture_output=True, text=True)
    steps = len(re.findall(r'<before_loop_step>', r.stdout))
    t.ok(steps >= 50,
         'the history before the loop is kept: %d entries of '
         'before_loop_step decoded (50 calls)' % steps)


def case_sysloop(t, btrace, progdir, work):
    """Loops of two, three and four blocks that make a system call each turn
    (qp-sysloop.c, 15 turns each): folding them would leave one call where
    the kernel ran fifteen."""
    prog = os.path.join(progdir, 'qp-sysloop')
    snap = os.path.join(work, 'sysloop.btrace')
    rec = L.record(btrace, snap, [prog], cwd=work)
    t.ok(rec.returncode == 128 + 11, 'dies of SIGSEGV (status %d)' %
         rec.returncode)
    if not t.ok(os.path.exists(snap), 'snapshot written'):
        t.diag(rec.stderr[-600:])
        return
    meta = snapshot_meta(btrace, snap)
    # otherwise nothing here could be folded and the counts prove nothing
    turns_kept = (meta.get('qemu.loop_turns') or '').strip()
    t.ok(turns_kept in ('marked', 'folded'),
         'the plugin folds loop turns in this recording (qemu.loop_turns '
         '%s)' % turns_kept)
    r = subprocess.run([btrace, 'decode', '--insn', '--last', '100000',
                        snap], capture_output=True, text=True)
    t.ok(r.returncode == 0, 'btrace decode --insn: exit %d' % r.returncode)
    for fn, nb in (('loop2', 2), ('loop2j', 3), ('loop3', 3), ('loop4', 4)):
        calls = len(re.findall(r'<%s\+0x[0-9a-f]+>\s+syscall\b' % fn,
                               r.stdout))
        turns = len(re.findall(r'<%s\+0x[0-9a-f]+>\s+dec rdx\b' % fn,
                               r.stdout))
        t.ok(calls == 15 and turns == 15,
             '%s (a %d-block loop): all 15 system calls in the history, one '
             'per turn (%d calls, %d turns)' %
             (fn, nb, calls, turns))


def case_gone(t, btrace, progdir, work, mode):
    src = os.path.join(progdir, 'qp-gonelib')
    lib = os.path.join(progdir, 'libqp-gonelib-lib.so')
    prog = os.path.join(work, 'qp-gonelib-copy')
    shutil.copy(src, prog)
    snap = os.path.join(work, 'gone-%s.btrace' % mode)
    rec = L.record(btrace, snap, [prog, mode, lib], cwd=work)
    t.ok(rec.returncode == 128 + 11, '%s: dies of SIGSEGV (status %d)' %
         (mode, rec.returncode))
    if not t.ok(os.path.exists(snap), '%s: snapshot written' % mode):
        t.diag(rec.stderr)
        return
    if mode == 'exe':
        t.ok(not os.path.exists(prog), 'the executable deleted itself')
        obj, inner, outer = src, 'exe_crash', 'main'
    else:
        obj, inner, outer = lib, 'gone_inner', 'gone_crash'
    rep = L.report_json(btrace, snap)
    th = rep['threads'][0]
    fault = int(rep['fault']['ip'], 16)
    stack = th['stack']
    ips = [int(f['ip'], 16) for f in stack]
    # The module's load address from the fault: the fault is in @inner.
    lo, hi = fn_bounds(obj, inner)
    olo, ohi = fn_bounds(obj, outer)
    base = None
    for b in range(fault - hi + 1 if fault >= hi else 0, fault - lo + 1):
        if (b & 0xfff) == 0:
            base = b
            break
    t.ok(base is not None and rep['fault'].get('exact'),
         '%s: the fault lies in %s (exact)' % (mode, inner))
    t.ok(len(ips) >= 2 and ips[0] == fault and base is not None and
         base + olo <= ips[1] < base + ohi,
         '%s: the stack decodes: #0 the fault, #1 in %s: %s' %
         (mode, outer, ['0x%x' % i for i in ips[:3]]))
    tail = th.get('tail') or []
    t.ok(tail and tail[-1].get('end_ip') and
         int(tail[-1]['end_ip'], 16) <= fault and
         base is not None and base + lo <= int(tail[-1]['ip'], 16) < base + hi,
         '%s: the tail ends in %s at the fault' % (mode, inner))


def main():
    btrace, progdir, case = sys.argv[1], sys.argv[2], sys.argv[3]
    btrace = os.path.abspath(btrace)
    progdir = os.path.abspath(progdir)
    if not L.qemu_available():
        print('1..0 # SKIP qemu-x86_64 is not available')
        return 0
    if case == 'threads' and not shutil.which('gdb'):
        print('1..0 # SKIP gdb is not installed')
        return 0
    work = tempfile.mkdtemp(prefix='btrace-e2e-qplugin.')
    t = L.Tap()
    try:
        if case == 'handled':
            case_handled(t, btrace, progdir, work)
        elif case == 'jit':
            case_jit(t, btrace, progdir, work)
        elif case == 'threads':
            case_threads(t, btrace, progdir, work)
        elif case == 'callsig':
            case_callsig(t, btrace, progdir, work)
        elif case == 'jccsig':
            case_jccsig(t, btrace, progdir, work)
        elif case == 'inject':
            case_inject(t, btrace, progdir, work)
        elif case.startswith('spin-'):
            case_spin(t, btrace, progdir, work, case[5:])
        elif case == 'sysloop':
            case_sysloop(t, btrace, progdir, work)
        elif case.startswith('gone-'):
            case_gone(t, btrace, progdir, work, case[5:])
        else:
            raise RuntimeError('unknown case %s' % case)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    L.run_main(main)
