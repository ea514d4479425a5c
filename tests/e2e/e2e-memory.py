#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The process's memory in the snapshot: btrace record --memory (TAP).

    e2e-memory.py BTRACE MEMREAD PROG

Records PROG (progs/crash-memory.c: a 256-byte pattern in a global and in
a heap block, their addresses on standard error, then a store through
NULL) with the QEMU backend:
- by default (8M) and with --memory 16M the snapshot holds, as
  process-wide ranges (tid 0), the global's and the heap block's bytes,
  equal to the patterns the program stored (MEMREAD reads them back
  through the public reader), besides the crashed thread's stack;
- with --memory 0 it holds the stack alone (one range, the thread's);
- with --memory 20K the other memory is at most 20 KiB (btrace info's
  memory_data_bytes; the whole at most 20 KiB + the stack), yet holds the
  global: the writable mappings come first (the program's .data/.bss is
  the lowest), before the program's lower read-only ones;
- the snapshot is mode 0600;
- a bad --memory (above 128M, not a size) is a usage error (exit 2).
Skipped (TAP "1..0 # SKIP") when this machine's qemu-x86_64 is missing or
has no plugin support.
"""
import json
import os
import re
import stat
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

T = e2elib.Tap()
ok = T.ok

GLOBAL = bytes((0xa5 ^ i) & 0xff for i in range(256)).hex()
HEAP = bytes((0x3c ^ (7 * i)) & 0xff for i in range(256)).hex()


def record(btrace, snap, prog, memory):
    cmd = [btrace, 'record', '-b', 'qemu', '-q', '-o', snap]
    if memory is not None:
        cmd += ['--memory', memory]
    return subprocess.run(cmd + ['--', prog], capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)


def info(btrace, snap):
    r = subprocess.run([btrace, 'info', '--json', snap], capture_output=True,
                       text=True)
    return json.loads(r.stdout) if r.returncode == 0 else {}


def read(memread, snap, addr, n=256):
    r = subprocess.run([memread, snap, hex(addr), str(n)],
                       capture_output=True, text=True)
    parts = r.stdout.split()
    if r.returncode != 0 or len(parts) != 2:
        return None, r.stdout.strip() + r.stderr.strip()
    return int(parts[0]), parts[1]


def addresses(stderr):
    g = re.search(r'^global (0x[0-9a-f]+)$', stderr, re.M)
    h = re.search(r'^heap (0x[0-9a-f]+)$', stderr, re.M)
    return (int(g.group(1), 16) if g else None,
            int(h.group(1), 16) if h else None)


def main():
    btrace, memread, prog = sys.argv[1:4]
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    with tempfile.TemporaryDirectory() as d:
        for memory in (None, '16M'):
            name = memory or 'default'
            snap = os.path.join(d, 'mem-%s.btrace' % name)
            p = record(btrace, snap, prog, memory)
            ok(p.returncode == 128 + 11,
               '%s: the program dies of SIGSEGV (%d: %s)' %
               (name, p.returncode, p.stderr.strip()[-200:]))
            g, h = addresses(p.stderr)
            ok(g is not None and h is not None,
               '%s: it said its addresses (global %s, heap %s)' %
               (name, g and hex(g), h and hex(h)))
            inf = info(btrace, snap)
            mem = inf.get('memory') or []
            T.diag('%s: %d ranges, stack %s bytes, other %s bytes (%s stored)' %
                   (name, len(mem), inf.get('memory_stack_bytes'),
                    inf.get('memory_data_bytes'),
                    inf.get('memory_data_stored_bytes')))
            if g is None or h is None:
                continue
            tid, got = read(memread, snap, g)
            ok(tid == 0 and got == GLOBAL,
               '%s: a process-wide range holds the global, its pattern '
               '(tid %s, %s...)' % (name, tid, (got or '')[:32]))
            tid, got = read(memread, snap, h)
            ok(tid == 0 and got == HEAP,
               '%s: a process-wide range holds the heap block, its pattern '
               '(tid %s, %s...)' % (name, tid, (got or '')[:32]))
            stack = [m for m in mem if m['tid'] != 0]
            ok(len(stack) == 1 and stack[0]['tid'] == (inf.get('signal') or {}).get('tid', stack[0]['tid']),
               '%s: and the crashed thread\'s stack (%s)' % (name, stack))
            limit = (16 << 20) if memory else (8 << 20)
            ok(0 < inf.get('memory_data_bytes', 0) <= limit,
               '%s: the other memory is within the budget (%s <= %d)' %
               (name, inf.get('memory_data_bytes'), limit))
            mode = stat.S_IMODE(os.stat(snap).st_mode)
            ok(mode == 0o600, '%s: the snapshot is mode 0600 (%o)' % (name, mode))

        snap = os.path.join(d, 'mem-0.btrace')
        p = record(btrace, snap, prog, '0')
        ok(p.returncode == 128 + 11, '--memory 0: SIGSEGV (%d)' % p.returncode)
        inf = info(btrace, snap)
        mem = inf.get('memory') or []
        ok(len(mem) == 1 and mem[0]['tid'] > 0 and
           inf.get('memory_data_bytes') == 0 and
           inf.get('memory_bytes') == inf.get('memory_stack_bytes') > 0,
           '--memory 0: the stack alone (%s)' % mem)
        g, _ = addresses(p.stderr)
        if g is not None:
            tid, got = read(memread, snap, g)
            ok(tid is None, '--memory 0: the global is not stored (%s)' % got)

        snap = os.path.join(d, 'mem-20k.btrace')
        p = record(btrace, snap, prog, '20K')
        ok(p.returncode == 128 + 11, '--memory 20K: SIGSEGV (%d)' % p.returncode)
        inf = info(btrace, snap)
        data = inf.get('memory_data_bytes', -1)
        stackb = inf.get('memory_stack_bytes', -1)
        ok(0 < data <= 20 << 10 and
           inf.get('memory_bytes', 1 << 40) <= (20 << 10) + stackb,
           '--memory 20K: at most 20 KiB besides the stack (%d + stack %d)' %
           (data, stackb))
        g, _ = addresses(p.stderr)
        if g is not None:
            tid, got = read(memread, snap, g)
            ok(tid == 0 and got == GLOBAL,
               '--memory 20K: the global first (writable before read-only): '
               'tid %s, %s...' % (tid, (got or '')[:32]))

        for bad in ('129M', 'lots', '-1'):
            r = subprocess.run([btrace, 'record', '-b', 'qemu', '--memory', bad,
                                '--', prog], capture_output=True, text=True,
                               stdin=subprocess.DEVNULL, timeout=60)
            ok(r.returncode == 2 and "invalid --memory '%s'" % bad in r.stderr,
               '--memory %s: a usage error (%d: %s)' %
               (bad, r.returncode, r.stderr.strip()[:120]))
    return T.done()


if __name__ == '__main__':
    e2elib.run_main(main)
