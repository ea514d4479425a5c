#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A C++ program dies of an exception nobody catches (TAP).

    report-cxx.py BTRACE BT_GEN_FIXTURE PROG

PROG (tests/decode/progs/crash-cxx.cpp) throws from shop::Cart::checkout(),
called by shop::Cart::fill() from main; the runtime calls std::terminate(),
which aborts.  bt-gen-fixture single-steps it to its death and writes the
snapshot.  Checked: the default report (tail-only decode) recovers the
stack from the fault through the C++ runtime back to main, the caller of
the throw included; every name is demangled in JSON, text and the call
listing; BTRACE_NO_DEMANGLE=1 shows the names as in the symbol table.
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


def names(report):
    """Every function name of a JSON report."""
    out = []
    if report.get('fault'):
        out.append(report['fault'].get('function'))
    for t in report['threads']:
        for key in ('stack', 'calls', 'tail'):
            out += [e.get('function') for e in t.get(key, [])]
    return [x for x in out if x]


def main():
    btrace, gen, prog = sys.argv[1:4]
    with tempfile.TemporaryDirectory() as d:
        snap = os.path.join(d, 'cxx.btrace')
        subprocess.run([gen, '-o', snap, '--', prog], check=True,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        env = dict(os.environ)
        env.pop('BTRACE_NO_DEMANGLE', None)
        r = json.loads(subprocess.run([btrace, 'report', '--json', snap],
                                      check=True, capture_output=True,
                                      text=True, env=env).stdout)
        stack = [f.get('function') for f in r['threads'][0]['stack']]
        print('# stack: %s' % stack)
        want = ['std::terminate()', '__cxa_throw',
                'shop::Cart::checkout(int)', 'shop::Cart::fill(int)', 'main']
        for w in want:
            ok(w in stack, 'default report: %s in the stack' % w)
        idx = [stack.index(w) for w in want if w in stack]
        ok(idx == sorted(idx) and len(idx) == len(want),
           'default report: terminate, throw, checkout, fill, main, innermost first')
        ok(r['threads'][0]['history'].get('tail_only') is True,
           'default report: still a tail-only decode')
        mangled = [x for x in names(r) if x.startswith('_Z')]
        ok(not mangled, 'no mangled name in the JSON report %s' % mangled[:3])

        text = subprocess.run([btrace, 'report', snap], check=True,
                              capture_output=True, text=True, env=env).stdout
        ok('shop::Cart::fill(int)+0x' in text, 'text report: demangled frame')
        ok(' _Z' not in text, 'text report: no mangled name')
        calls = subprocess.run([btrace, 'decode', '--calls', snap], check=True,
                               capture_output=True, text=True, env=env).stdout
        ok('shop::Cart::checkout(int)' in calls and ' _Z' not in calls,
           'decode --calls: demangled, no mangled name')

        env['BTRACE_NO_DEMANGLE'] = '1'
        raw = json.loads(subprocess.run([btrace, 'report', '--json', snap],
                                        check=True, capture_output=True,
                                        text=True, env=env).stdout)
        rstack = [f.get('function') for f in raw['threads'][0]['stack']]
        ok('_ZN4shop4Cart8checkoutEi' in rstack and '_ZSt9terminatev' in rstack,
           'BTRACE_NO_DEMANGLE=1: symbol table names %s' % rstack[:12])
    return T.done()


if __name__ == '__main__':
    sys.exit(main())
