#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""btrace decode --calls and --insn decode the trace once (TAP).

    decode-passes.py BTRACE SHIM FIXTURES_DIR

SHIM (count-passes.c), preloaded, counts the calls of
btrace_decode_thread(), the second decode of a thread that a listing
needs when it is not printed from what the first pass (btrace_decode())
kept.  On the recorded fixtures (the multi-thread one among them), --calls
(also --all-threads and --last) and --insn are listed from the first pass:
no second decode; --blocks still decodes each thread again, which shows
the shim counts.  The listings are those of runs without the shim.
"""
import os
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import e2elib  # noqa: E402  (its TAP writer)

T = e2elib.Tap()


def run(btrace, shim, args, passes):
    env = dict(os.environ)
    if shim:
        env['LD_PRELOAD'] = shim + (' ' + env['LD_PRELOAD']
                                    if env.get('LD_PRELOAD') else '')
        env['BT_PASSES'] = passes
        # a sanitized build: the shim may come before the ASan runtime
        env['ASAN_OPTIONS'] = (env.get('ASAN_OPTIONS', '') +
                               ':verify_asan_link_order=0').lstrip(':')
    if os.path.exists(passes):
        os.unlink(passes)
    r = subprocess.run([btrace, 'decode'] + args, capture_output=True,
                       env=env, timeout=600)
    n = 0
    if os.path.exists(passes):
        with open(passes) as f:
            n = len(f.read().splitlines())
    return r, n


def main():
    btrace, shim, fx = sys.argv[1:4]
    snaps = [os.path.join(fx, d, f) for d in sorted(os.listdir(fx))
             if os.path.isdir(os.path.join(fx, d))
             for f in sorted(os.listdir(os.path.join(fx, d)))
             if f.endswith('.btrace')]
    T.ok(len(snaps) >= 5, 'recorded fixtures: %d snapshots' % len(snaps))
    with tempfile.TemporaryDirectory() as work:
        passes = os.path.join(work, 'passes')
        for s in snaps:
            name = os.path.basename(s)
            for args, once in ((['--calls'], True),
                               (['--calls', '--all-threads'], True),
                               (['--calls', '--last', '7'], True),
                               (['--insn'], True),
                               (['--insn', '--last', '50'], True),
                               (['--blocks'], False)):
                r, n = run(btrace, shim, args + [s], passes)
                plain, _ = run(btrace, None, args + [s], passes)
                what = '%s %s' % (name, ' '.join(args))
                if not T.ok(r.returncode == 0 and
                            r.stdout == plain.stdout and
                            r.stderr == plain.stderr and
                            len(r.stdout) > 100,
                            '%s: exit 0, the listing as without the shim'
                            % what):
                    T.diag(r.stderr.decode(errors='replace')[-2000:])
                if once:
                    T.ok(n == 0, '%s: decoded once (%d second decodes of '
                         'a thread)' % (what, n))
                else:
                    T.ok(n >= 1, '%s: each thread decoded again (%d): the '
                         'shim counts' % (what, n))
    return T.done()


if __name__ == '__main__':
    sys.exit(main())
