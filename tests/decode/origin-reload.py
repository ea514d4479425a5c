#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The origin chain through a value stored to the stack and loaded back
while the register it was stored from holds something else (TAP).

    origin-reload.py BTRACE BT_GEN_FIXTURE CRASH_RELOAD

crash-reload (tests/decode/progs/crash-reload.c) zeroes rax, copies it to
rsi, stores rsi to the stack, puts 0x1234 in rsi, loads rdi back from the
stack and stores through rdi.  The snapshot is bt-gen-fixture's (the
program single-stepped to its death: the path is the true one).  The
report's origin of rdi must be, in order: the load (copy, 0x0 from the
stack slot), the store of rsi (0x0, to the same slot), rsi copied from rax,
the constant 0 of the xor; the chain goes on from the store, where rsi
held what was stored, never from the load, where rsi held 0x1234.
"""
import json
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import e2elib  # noqa: E402  (its TAP writer)

T = e2elib.Tap()
ok = T.ok

WANT = [('copy', 'mov rdi, qword ptr [rsp - 8]', 'rdi'),
        ('store', 'mov qword ptr [rsp - 8], rsi', 'rsi'),
        ('copy', 'mov rsi, rax', 'rsi'),
        ('constant', 'xor eax, eax', 'rax')]


def main():
    btrace, gen, prog = [os.path.abspath(a) for a in sys.argv[1:4]]
    with tempfile.TemporaryDirectory() as d:
        snap = os.path.join(d, 'reload.btrace')
        r = subprocess.run([gen, '-r', '-o', snap, '--', prog],
                           capture_output=True, text=True, timeout=600)
        if not ok(r.returncode == 0, 'bt-gen-fixture recorded crash-reload'):
            T.diag(r.stderr)
            return T.done()
        rep = e2elib.report_json(btrace, snap)
    o = rep.get('origin') or {}
    chain = o.get('chain') or []
    ok(o.get('operand') == 'rdi' and o.get('role') == 'base' and
       o.get('value') == '0x0',
       'the origin is about the base register rdi = 0x0 (%s %s %s)' %
       (o.get('operand'), o.get('role'), o.get('value')))
    got = [(l.get('kind'), l.get('instruction'), l.get('register'))
           for l in chain]
    ok(got == WANT, 'the chain: load, store, copy, constant (%s)' % got)
    ok(all(l.get('value') == '0x0' for l in chain),
       'every link holds 0x0, none the 0x1234 rsi held at the load (%s)' %
       [l.get('value') for l in chain])
    if len(chain) >= 2:
        ok(chain[0].get('address') is not None and
           chain[0].get('address') == chain[1].get('address'),
           'the load and the store are at the same stack slot (%s, %s)' %
           (chain[0].get('address'), chain[1].get('address')))
    else:
        ok(False, 'the load and the store are at the same stack slot')
    return T.done()


if __name__ == '__main__':
    e2elib.run_main(main)
