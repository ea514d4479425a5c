#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Register values recovered against the truth on the crash corpus
(tests/corpus: crashing programs of our own, not written for values.c):
every C and C++ program of the corpus that dies of its own
fault in one thread, built as the corpus builds it, single-stepped to its
fault under ptrace by test-decode-values (tests/decode/gen.c), the share
of values recovered and the wrong ones, as a Markdown table
(docs/performance.md, "Values and the origin").

    bench/values-corpus.py [--test] BUILD_DIR [-- TEST_DECODE_VALUES_OPTIONS...]

Programs left out, and why: threads (the generator follows one), signals
from outside or handled signals (no fault of the program's own), handlers
that run after the fault and int3 (the generator's truth ends at the first
signal), a stripped program (the generator starts keeping the truth at
main), a stack overflow and an alternate signal stack (the truth ends
before the path starts), JIT code, Rust and the runtimes with their own
fault handlers (Go, Java, Node, Python, Perl, LuaJIT: millions of single
steps before the fault, past the generator's limit), more than one
argument.  With --test (the test decode-values-corpus): exit status 1 on
any wrong value or a program that fails.
"""
import os
import subprocess
import sys
import tempfile

top = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(top, 'tests', 'corpus'))
import corpus  # noqa: E402


def wanted(case):
    flags = case.get('flags', [])
    if case['lang'] not in ('c', 'cxx'):
        return False
    if case.get('kind', 'crash') != 'crash' or case.get('kill'):
        return False
    if '-pthread' in flags or case.get('env') or case.get('copy'):
        return False
    if any(x in case['name'] for x in ('jit', 'threads', 'asan', 'exact',
                                       'dlopen', 'seccomp', 'handler',
                                       'stripped', 'int3', 'stack-overflow',
                                       'alrm', 'sigval')):
        return False
    args = case.get('args', [])
    return len(args) <= 1 and not any('@' in a for a in args)


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    args = sys.argv[1:]
    test = '--test' in args
    if test:
        args.remove('--test')
    build = os.path.abspath(args[0])
    extra = args[2:] if len(args) > 1 and args[1] == '--' else []
    tdv = os.path.join(build, 'tests', 'decode', 'test-decode-values')
    with tempfile.TemporaryDirectory(prefix='btrace-values-') as d:
        specs = []
        for case in corpus.CASES:
            if not wanted(case):
                continue
            try:
                argv, _ = corpus.build(case, d)
            except Exception as e:  # a missing compiler: say so, go on
                print('# %s: not built: %s' % (case['name'], e),
                      file=sys.stderr)
                continue
            # the name in the table is the case's
            named = os.path.join(d, case['name'])
            if argv[0] != named:
                os.symlink(argv[0], named)
            args = case.get('args', [])
            specs.append(named + ('=' + args[0] if args else ''))
        # TAP for the test, a table for docs/performance.md
        r = subprocess.run([tdv] + ([] if test else ['--table']) + extra +
                           specs, cwd=d)
        return r.returncode


if __name__ == '__main__':
    sys.exit(main())
