#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The fault, what ran after it, and what the report does not know (TAP).

    report-fault.py BTRACE BT_GEN_FIXTURE LOOP FIRST NODEFER SIGLJ KILL CTX
                    HANDLER LJREC SKIPRET PANIC RETSKIP JMPCTX COLD

Each case writes a synthetic snapshot of a real program single-stepped to
its death (bt-gen-fixture: the truth is the ptrace path) and checks
`btrace report` and `btrace report --json` against that truth:

- a fault known only to its block (the QEMU backend without registers:
  -Q -R): exact false, the instruction unknown (null), the block that
  holds the true faulting instruction named; with registers: exact;
- the faulting instruction first of its block: the JSON tail ends at it;
- handlers that do not simply re-raise (SA_NODEFER: dies in the handler;
  siglongjmp away on a sigaltstack, then abort()): the fault is the first
  one, the stack at it holds no handler frame, the handler's path is in
  after_fault and not in the tail, the death names its own signal;
- a handled fault recorded as QEMU records it without registers: exact
  false, the block holds the first fault;
- SIGSEGV sent with kill(): kind "sent", where the thread was, the sender;
- a coroutine switched by swapcontext: the stack has no frame of main's;
- contexts switched by an indirect jump into the middle of a function (a
  goroutine resumed by a scheduler): the stack has no frame of the
  context that was left;
- a C++ catch handler in the function's cold part (f.cold), reached by
  a jump from f: the cold part is f going on, not a frame of its own;
- longjmp landing in the innermost frame of a recursive function: the
  outer frames of the recursion stay;
- the call-next idiom (call next; pop) is not a frame;
- returns that skip frames (a call over inline data that never returns,
  hand-made unwinding that drops two return addresses and lands in a
  recursion): the stack is the one the program builds (and gdb shows);
- nothing decoded but registers: the function is still a frame;
- limit.* metadata and qemu.threads_untraced as limits.
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


def gen(genexe, out, prog, *opts):
    r = subprocess.run([genexe] + list(opts) + ['-o', out, '--', prog],
                       capture_output=True, text=True, timeout=600)
    if r.returncode:
        raise RuntimeError('bt-gen-fixture %s: %s' % (prog, r.stderr))
    m = re.search(r'fault at 0x([0-9a-f]+)(?:, first fault at 0x([0-9a-f]+))?',
                  r.stdout)
    return int(m.group(1), 16), (int(m.group(2), 16) if m.group(2) else 0)


def report(btrace, snap, *opts):
    t = subprocess.run([btrace, 'report'] + list(opts) + [snap],
                       capture_output=True, text=True, timeout=300)
    j = subprocess.run([btrace, 'report', '--json'] + list(opts) + [snap],
                       capture_output=True, text=True, timeout=300)
    if t.returncode or j.returncode:
        raise RuntimeError('btrace report %s: %s%s' % (snap, t.stderr,
                                                       j.stderr))
    return t.stdout, json.loads(j.stdout)


def fns(frames):
    return [f.get('function') for f in frames]


def hexv(v):
    return int(v, 16) if v else None


def main():
    btrace, genexe = sys.argv[1:3]
    loop, first, nodefer, siglj, kill, ctx, handler, ljrec, skipret, \
        panic, retskip, jmpctx, cold = sys.argv[3:16]
    work = tempfile.mkdtemp(prefix='btrace-fault.')
    try:
        # -- a fault known only to its block ------------------------------
        snap = os.path.join(work, 'mid.btrace')
        truth, _ = gen(genexe, snap, loop, '-r', '-Q', '-R')
        text, r = report(btrace, snap)
        f = r['fault']
        b = f.get('block') or {}
        ok(f['exact'] is False and f['ip'] is None and
           f['instruction'] is None and f['offset'] is None,
           'no registers, QEMU blocks: exact false, no instruction claimed '
           '(%s)' % f['how'])
        ok(b and hexv(b['ip']) < truth <= hexv(b['end_ip']) and
           b['function'] == 'boom' and f['function'] == 'boom',
           'the block boom+%s..%s+%s holds the true fault 0x%x (mid-block)'
           % (b.get('offset'), b.get('end_function'), b.get('end_offset'),
              truth))
        tail = r['threads'][0]['tail']
        ok(tail and tail[-1].get('fault') is True and
           hexv(tail[-1]['ip']) <= truth <= hexv(tail[-1]['end_ip']),
           'the tail ends at the block holding the fault')
        ok(re.search(r'^fault +in the block boom \.\. boom\+0x[0-9a-f]+',
                     text, re.M) is not None and
           'not exact' in text and
           re.search(r'^limits +fault-not-exact', text, re.M) is not None,
           'text: the block named, not exact, a limits line')
        ok(any(x['name'] == 'fault-not-exact' for x in r['limits']),
           'JSON limits: fault-not-exact')
        snap = os.path.join(work, 'mid-regs.btrace')
        truth, _ = gen(genexe, snap, loop, '-r', '-Q')
        text, r = report(btrace, snap)
        f = r['fault']
        ok(f['exact'] is True and hexv(f['ip']) == truth and
           f['block'] is None and r['limits'] == [],
           'with registers: exact at 0x%x (%s), no limits' % (truth, f['how']))

        # -- the faulting instruction first of its block ------------------
        snap = os.path.join(work, 'first.btrace')
        truth, _ = gen(genexe, snap, first, '-r')
        text, r = report(btrace, snap)
        tail = r['threads'][0]['tail']
        ok(r['fault']['exact'] and hexv(r['fault']['ip']) == truth and
           r['fault']['function'] == 'load' and r['fault']['offset'] == 0,
           'fault at the entry of load, exact')
        ok(len(tail) >= 2 and tail[-1].get('fault') is True and
           hexv(tail[-1]['ip']) == truth == hexv(tail[-1]['end_ip']) and
           tail[-1]['function'] == 'load' and
           tail[-2].get('fault') is False and
           hexv(tail[-2]['end_ip']) != truth,
           'JSON tail ends at the fault (load), after the block before it')

        # -- SA_NODEFER: dies in the handler ------------------------------
        for name, prog, death in (('nodefer', nodefer, 'SIGSEGV'),
                                  ('siglongjmp+abort', siglj, 'SIGABRT')):
            snap = os.path.join(work, name.replace('+', '-') + '.btrace')
            _, first_fault = gen(genexe, snap, prog, '-r')
            text, r = report(btrace, snap)
            th = r['threads'][0]
            f = r['fault']
            ok(first_fault and f['exact'] and
               hexv(f['ip']) == first_fault and f['function'] == 'poke',
               '%s: the fault is the first one, in poke (%s)'
               % (name, f['how']))
            ok(fns(th['stack']) == ['poke', 'outer', 'main'] and
               not any(s['signal'] for s in th['stack']),
               '%s: stack at the fault poke <- outer <- main: %s'
               % (name, fns(th['stack'])))
            after = th.get('after_fault') or {}
            acalls = fns(after.get('calls', []))
            ok('handler' in acalls and after.get('blocks', 0) > 0 and
               any(c.get('signal') for c in after.get('calls', [])),
               '%s: the handler is in after_fault (%d blocks)'
               % (name, after.get('blocks', 0)))
            ok('handler' not in fns(th['tail']) and
               'handler' not in fns(th['calls']) and
               th['tail'][-1].get('fault') is True and
               th['tail'][-1]['function'] == 'poke',
               '%s: tail and calls end at the fault, no handler in them'
               % name)
            d = r['death'] or {}
            ok(d.get('after_fault') is True and
               (d.get('signal') or {}).get('name') == death and
               d.get('function') not in (None, 'poke'),
               '%s: death %s in %s, after the fault'
               % (name, (d.get('signal') or {}).get('name'),
                  d.get('function')))
            ok(re.search(r'^death +%s' % death, text, re.M) is not None and
               '\nafter the fault (a signal handler ran' in text and
               re.search(r'^  => died in ', text, re.M) is not None,
               '%s: text: death line, after-the-fault section' % name)
            before = text.split('last blocks before the fault')[1]
            before = before.split('\n\n')[0]
            ok(' handler ' not in before and '=> fault:' in before,
               '%s: text: no handler block before the fault' % name)
        if siglj:
            ok('give_up' in acalls or 'abort' in acalls,
               'siglongjmp+abort: after_fault reaches give_up/abort: %s'
               % acalls[-6:])

        # -- a handled fault as QEMU records it, without registers --------
        snap = os.path.join(work, 'handler-qemu.btrace')
        _, first_fault = gen(genexe, snap, handler, '-r', '-Q', '-R', '-F')
        text, r = report(btrace, snap)
        f = r['fault']
        b = f.get('block') or {}
        ok(first_fault and f['exact'] is False and b and
           hexv(b['ip']) <= first_fault <= hexv(b['end_ip']) and
           fns(r['threads'][0]['stack'])[:3] == ['poke', 'outer', 'main'],
           'handler, QEMU blocks, no registers: exact false, the block '
           'holds the first fault, stack %s (%s)'
           % (fns(r['threads'][0]['stack']), f['how']))

        # -- a signal sent with kill() ------------------------------------
        snap = os.path.join(work, 'kill.btrace')
        gen(genexe, snap, kill, '-r')
        text, r = report(btrace, snap)
        f = r['fault']
        st = fns(r['threads'][0]['stack'])
        d = (r['death'] or {}).get('signal') or {}
        ok(f['kind'] == 'sent' and d.get('code') == 0 and
           d.get('code_name') == 'SI_USER' and
           d.get('sender_pid') == r['process']['pid'],
           'kill(): kind sent, SI_USER, sender pid %s' % d.get('sender_pid'))
        ok(st[-3:] == ['send', 'work', 'main'] and
           not any(x.get('fault') for x in r['threads'][0]['tail']),
           'kill(): where the thread was: %s, no fault entry in the tail'
           % st)
        ok('sent: the signal was sent, nothing faulted' in text,
           'kill(): text says the signal was sent')

        # -- a coroutine switched by hand (swapcontext's ret), contexts --
        # -- switched by an indirect jump (jmp * into the resumed code) ----
        for prog, how in ((ctx, 'swapcontext'),
                          (jmpctx, 'jmp * into a resumed context')):
            snap = os.path.join(work, os.path.basename(prog) + '.btrace')
            truth, _ = gen(genexe, snap, prog, '-r')
            text, r = report(btrace, snap)
            st = r['threads'][0]['stack']
            ok(fns(st) == ['boom', 'co_body'] and st[-1]['partial'] and
               hexv(r['fault']['ip']) == truth,
               '%s: boom <- co_body, callers unknown: %s' % (how, fns(st)))

        # -- a catch handler in a function's cold part ----------------------
        snap = os.path.join(work, 'cold.btrace')
        truth, _ = gen(genexe, snap, cold, '-r')
        text, r = report(btrace, snap)
        st = fns(r['threads'][0]['stack'])
        ok(len(st) == 3 and st[0].startswith('boom') and
           st[1].startswith('handle') and st[2] == 'main' and
           hexv(r['fault']['ip']) == truth,
           'catch handler in handle.cold: boom <- handle <- main, '
           'no frame for the cold part: %s' % st)

        # -- longjmp into the innermost frame of a recursion --------------
        snap = os.path.join(work, 'ljrec.btrace')
        truth, _ = gen(genexe, snap, ljrec, '-r')
        text, r = report(btrace, snap)
        st = fns(r['threads'][0]['stack'])
        ok(st == ['crash', 'rec', 'rec', 'rec', 'rec', 'main'],
           'longjmp into a recursion: crash <- rec x4 <- main: %s' % st)

        # -- the call-next idiom (call next; pop) is not a frame -----------
        snap = os.path.join(work, 'skipret.btrace')
        truth, _ = gen(genexe, snap, skipret, '-r')
        text, r = report(btrace, snap)
        st = fns(r['threads'][0]['stack'])
        ok(st[:3] == ['crash', 'middle', 'main'] and
           hexv(r['fault']['ip']) == truth,
           'call next; pop then ret: crash <- middle <- '
           'main: %s' % st)

        # -- a handler path of thousands of calls after the fault ---------
        # (a runtime's panic report), the whole history in one PSB period:
        # the path before the fault is still shown, not only the handler's.
        snap = os.path.join(work, 'panic.btrace')
        _, first_fault = gen(genexe, snap, panic, '-r', '-Q', '-R', '-F',
                             '-p', '100000000', '-M',
                             'qemu.final_signal=SIGSEGV')
        text, r = report(btrace, snap)
        t0 = r['threads'][0]
        calls = [c.get('function') for c in t0['calls']]
        ok(t0['tail'] and t0['tail'][-1].get('fault') and
           t0['tail'][-1].get('function') == 'deref' and
           len(t0['tail']) > 8 and 'work' in calls,
           'long handler path: the calls and blocks before the fault are '
           'shown (%d calls, %d tail entries, last calls %s)'
           % (len(calls), len(t0['tail']), calls[-3:]))
        ok(len((t0.get('after_fault') or {}).get('calls', [])) > 0,
           'long handler path: its calls are listed after the fault')

        # -- returns that skip frames --------------------------------------
        # middle(0)'s data_pc returns past the frame of its call over data;
        # bail returns past hop2 and hop(0) into hop(1) (hop(1) and hop(0)
        # return to the same address: the innermost is the one); middle(0)
        # returns to middle(1), which crashes: crash <- middle <- middle <-
        # main, each caller at the line of its call (by construction; gdb's
        # bt agrees).
        src = open(os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                'progs', 'crash-retskip.c')).read()
        lines = src.split('\n')

        def line_of(text):
            return [i + 1 for i, x in enumerate(lines) if text in x]
        want = [('crash', line_of('*p = sink;')),
                ('middle', line_of('crash((volatile int *)0);')),
                ('middle', line_of('middle(n - 1);')),
                ('main', line_of('middle(2);'))]
        want = [(fn, ln[0] if len(ln) == 1 else None) for fn, ln in want]
        for opts in (['-r'], []):
            snap = os.path.join(work, 'retskip%s.btrace' % ''.join(opts))
            truth, _ = gen(genexe, snap, retskip, *opts)
            text, r = report(btrace, snap)
            st = r['threads'][0]['stack']
            got = [(f.get('function'), f.get('line')) for f in st]
            ok(got == want and
               [f.get('partial') for f in st] == [False, False, False,
                                                  True] and
               hexv(r['fault']['ip']) == truth,
               'returns skipping 1 and 2 frames%s: crash <- middle <- '
               'middle <- main (entered before the history), each at its '
               'call: %s'
               % (' (return compression)' if opts else '', got))

        # -- nothing decoded, registers -----------------------------------
        snap = os.path.join(work, 'empty.btrace')
        truth, _ = gen(genexe, snap, loop, '-r', '-E')
        text, r = report(btrace, snap)
        st = r['threads'][0]['stack']
        ok(r['threads'][0]['history']['instructions'] == 0 and
           fns(st) == ['boom'] and hexv(st[0]['ip']) == truth and
           st[0]['partial'],
           'empty trace with registers: the frame boom is reported: %s'
           % fns(st))

        # -- limits -------------------------------------------------------
        snap = os.path.join(work, 'limits.btrace')
        gen(genexe, snap, loop, '-r', '-M',
            'limit.fpe-traps=floating-point exceptions do not trap here',
            '-M', 'qemu.threads_untraced=2 71,72')
        text, r = report(btrace, snap)
        names = [x['name'] for x in r['limits']]
        ok(names == ['fpe-traps', 'threads-untraced'] and
           r['limits'][0]['text'] ==
           'floating-point exceptions do not trap here' and
           '71,72' in r['limits'][1]['text'],
           'JSON limits: %s' % r['limits'])
        ok(re.search(r'^limits +fpe-traps: floating-point exceptions do '
                     r'not trap here$', text, re.M) is not None and
           re.search(r'^limits +threads-untraced: 2 threads .*71,72', text,
                     re.M) is not None,
           'text: a limits line for each')
    finally:
        subprocess.run(['rm', '-rf', work])
    return T.done()


if __name__ == '__main__':
    try:
        sys.exit(main())
    except (RuntimeError, subprocess.TimeoutExpired) as e:
        print('not ok - %s' % e)
        print('1..1')
        sys.exit(1)
