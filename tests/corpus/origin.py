#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Origin chains against gdb on the native run (TAP).

    origin.py BTRACE DIR

Builds the programs progs/origin_*.c into DIR, records each with the QEMU
backend and compares the report's origin (docs/report.md, "The origin")
with what gdb sees of the same program run natively (origin_gdb.py): the
operand's value at the fault against gdb's register; where the chain
says a store wrote the value, gdb's hardware watchpoint on the same
variable (`watch -l`) must name the same function and line as the last
write before the fault, with the same value; a global is named by its
symbol; a callee-saved register is followed past the function that only
saved and restored it; a division's divisor and an index out of range
are the operand explained.  Every chain is counted as reaching the true
source, stopping early (its last link a load or the history's start,
with nothing wrong before it), or wrong, which fails the test.  Skipped
(TAP "1..0 # SKIP") without QEMU with plugins or gdb.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, '..', 'e2e'))
import e2elib  # noqa: E402

T = e2elib.Tap()

# name, flags, gdb: watch (a variable's location; writes), at (where to
# set it), finish (a function's returns); expect: what the chain must do
CASES = [
    dict(name='global', flags=['-O1'], watch='current', expect='store',
         mem='current ('),
    dict(name='field', flags=['-O1'], watch='cfg.path', expect='store',
         mem='cfg+0x10 ('),
    dict(name='spill', flags=['-O0'], watch='p', expect='store',
         mem='(the stack of thread '),
    dict(name='div', flags=['-O0'], watch='parts', expect='store',
         mem='(the stack of thread ', role='divisor'),
    dict(name='heap', flags=['-O1'], watch='u->email', at='forget',
         expect='store', mem='[0x'),
    dict(name='saved', flags=['-O2'], finish='by_id', expect='saved'),
    dict(name='index', flags=['-O1'], expect='index'),
    dict(name='thread', flags=['-O1', '-pthread'], watch='shared',
         expect='thread', mem='shared ('),
]


def gdb_view(prog, case, d):
    out = os.path.join(d, case['name'] + '.gdb.json')
    env = dict(os.environ, ORIGIN_OUT=out)
    for k in ('watch', 'at', 'finish'):
        if case.get(k):
            env['ORIGIN_' + k.upper()] = case[k]
    subprocess.run(['gdb', '-batch', '-nx', '-x',
                    os.path.join(HERE, 'origin_gdb.py'), '--args', prog],
                   env=env, capture_output=True, text=True, timeout=300,
                   stdin=subprocess.DEVNULL)
    with open(out) as f:
        return json.load(f)


def hexv(x):
    return int(x, 16) if isinstance(x, str) else None


def check(case, o, g):
    """TAP points for one case; returns 'right', 'stopped' or 'wrong'."""
    n = case['name']
    bad = []

    def need(cond, what):
        T.ok(cond, '%s: %s' % (n, what))
        if not cond:
            bad.append(what)

    need(o is not None, 'the report has an origin')
    if not o:
        return 'wrong'
    ch = o['chain']
    T.diag('%s: %s = %s (%s)' % (n, o['operand'], o['value'], o['role']))
    for link in ch:
        T.diag('  %s %s:%s  %s | %s' % (link['kind'], link['function'],
                                       link['line'], link['instruction'],
                                       link['what']))
    need(ch != [], 'the chain has links')
    if not ch:
        return 'wrong'
    # (an address differs between QEMU's run and the native one)
    if o['operand'] in g['regs'] and o['value'] is not None and \
            g['regs'][o['operand']] < 1 << 32:
        need(hexv(o['value']) == g['regs'][o['operand']],
             'the operand %s = %s is gdb\'s (%#x)' %
             (o['operand'], o['value'], g['regs'][o['operand']]))
    if case.get('role'):
        need(o['role'] == case['role'], 'the operand is the %s (%s)' %
             (case['role'], o['role']))
    last = ch[-1]
    exp = case['expect']
    if exp in ('store', 'thread'):
        mine = [w for w in g['writes'] if w['thread'] == g.get('thread')]
        w = g['writes'][-1] if g['writes'] else None
        st = [k for k, link in enumerate(ch) if link['kind'] in
              ('store', 'constant') and link['address']]
        if exp == 'thread' and w and w not in mine:
            # another thread wrote it: the chain must not name a store of
            # this one, and must say that the writer is not known
            need(not [k for k in st if case['mem'] in ch[k]['what']],
                 'no store of the crashed thread is named as the '
                 'writer (gdb: thread %s at %s:%s)' % (w['thread'],
                                                       w['function'], w['line']))
            need(last['kind'] == 'load' and case['mem'] in last['what'] and
                 'not known' in last['what'],
                 'it stops at the load from %s... saying the writer is not '
                 'known' % case['mem'])
            # the other thread's store in its history, as gdb saw it
            at = 'stored 0x%x to it at %s (%s:%d)' % (
                w['value'], w['function'], w['file'], w['line'])
            need(at in last['what'], 'it names the other thread\'s store '
                 '"%s"' % at)
            return 'stopped' if not bad else 'wrong'
        need(w is not None, 'gdb saw the variable written')
        if not w or not st:
            need(st != [], 'a store is a link')
            return 'wrong'
        # the store to the variable: gdb's last write (other stores,
        # a spill of the loaded value, may come before it in the chain)
        hit = [k for k in st if ch[k]['function'] == w['function'] and
               ch[k]['line'] == w['line']]
        need(hit != [], 'the store is gdb\'s last write: %s:%s (chain: %s)' %
             (w['function'], w['line'],
              ['%s:%s' % (ch[k]['function'], ch[k]['line']) for k in st]))
        if not hit:
            return 'wrong'
        s = ch[hit[0]]
        if s['value'] is not None and s['kind'] == 'constant':
            need(hexv(s['value']) == w['value'], 'the value stored is '
                 'gdb\'s (%#x, chain %s)' % (w['value'], s['value']))
        rd = ch[hit[0] - 1] if hit[0] else None
        need(rd is not None and case['mem'] in rd['what'] and
             case['mem'] in s['what'],
             'the memory is named "%s..."' % case['mem'])
    elif exp == 'saved':
        need(g['returns'] and g['returns'][0] == 0,
             'gdb: by_id returned 0 to main')
        need(all(link['function'] != 'work' for link in ch),
             'no link in work(), which only saved and restored rbx')
        ret = [link for link in ch if link['kind'] == 'return']
        need(len(ret) == 1 and ret[0]['function'] == 'by_id' and
             ret[0]['value'] == '0x0', 'by_id returned 0x0 (%s)' % ret)
        need(last['kind'] == 'constant' and last['function'] == 'by_id',
             'the source is the constant in by_id')
    elif exp == 'index':
        need(o['role'] == 'index', 'the operand is the index (%s)' % o['role'])
        need(all(link['function'] == 'main' for link in ch[:2]),
             'the index is followed into main, where it was computed')
    if bad:
        return 'wrong'
    # the store gdb saw, or the constant by_id returned, is a link
    return 'right' if exp in ('store', 'saved') else 'stopped'


def main():
    btrace, d = (os.path.abspath(x) for x in sys.argv[1:3])
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    if not shutil.which('gdb') or not shutil.which('cc'):
        return e2elib.skip_all('gdb or cc is not installed')
    os.makedirs(d, exist_ok=True)
    tally = {'right': 0, 'stopped': 0, 'wrong': 0}
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            src = os.path.join(HERE, 'progs', 'origin_%s.c' % case['name'])
            prog = os.path.join(d, 'origin_' + case['name'])
            subprocess.run(['cc', '-g', '-o', prog, src] + case['flags'],
                           check=True)
            g = gdb_view(prog, case, tmp)
            snap = os.path.join(tmp, case['name'] + '.btrace')
            p = e2elib.record(btrace, snap, [prog], cwd=tmp)
            T.ok(p.returncode == 128 + g['signal'],
                 '%s: dies of signal %d as natively (%d)' %
                 (case['name'], g['signal'], p.returncode))
            o = e2elib.report_json(btrace, snap).get('origin')
            tally[check(case, o, g)] += 1
    T.diag('origin chains: %d reach the true source, %d stop early, '
           '%d wrong, of %d' % (tally['right'], tally['stopped'],
                                tally['wrong'], len(CASES)))
    T.ok(tally['wrong'] == 0, 'no chain is wrong')
    return T.done()


if __name__ == '__main__':
    e2elib.run_main(main)
