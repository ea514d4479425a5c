#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The crashed thread's memory accesses in a QEMU snapshot (TAP).

    e2e-accesses.py BTRACE ACCREAD PROG CRASHDEMO

Records PROG (progs/crash-accesses.c: stores 0..63 into a global array in
a short loop, then stores 8 bytes into a global and into a local on its
stack and loads through NULL; it prints the global's, the array's and the
storing function's addresses first) with the QEMU backend, and reads the
snapshot with the public reader (ACCREAD, e2e-accread.c):
- by default the snapshot holds an access log of the crashed thread, and
  among its last records the 8-byte store to the global's address and the
  one to the stack near the signal's rsp, made by instructions inside
  store_then_crash (its address plus the ELF symbol's size); the faulting
  load is not in it (it did not happen);
- the log follows the recorded path: the array loop, folded to its first
  and last turn in the branch history, keeps the stores of those turns
  (arr[0], arr[63]), with a fold mark at the loop's address between them;
  with BTRACE_QEMU_LOOPS=0 (every turn kept) all 64 stores are there, in
  order, and no mark;
- with --accesses 0 there is no accesses section; with --accesses 1K the
  log holds at most 1024 records (the program made more: not complete),
  the global's store among them;
- of a run of pushes and pops (pushrun, a prologue's and an epilogue's)
  and the ret after it, the first push's stack slot alone is logged;
- btrace info shows the log (text and JSON) and btrace report works;
- a bad --accesses (above 4M, not a number) is a usage error (exit 2).
- recorded under QEMU's `-d cpu,nochain`, the values recovered agree with
  QEMU's registers at every block start they cover, across the fold
  steps, and the origin of the NULL goes back across bump()'s folded
  loop, which stored over what bump() had read, to that load of 7 and
  main's store of the constant 7 it read; the
  recovery covers the last 4,096 instructions (slash()'s folded loop,
  whose closing block makes no access, does not cut it); with the
  argument "twice", where the loop block of a fold runs twice before the
  next access, the values agree likewise and the path starts at the
  second run (which run the turns ran before is not known);
Then the README demo (CRASHDEMO) recorded with and without the log:
`btrace decode --insn --values` shows at least as many known register
values with it; and recorded with every loop turn kept
(BTRACE_QEMU_LOOPS=0, under QEMU's own CPU log `-d cpu,nochain`), the
values recovered with the log agree with QEMU's registers at every block
start they cover, and the value recovery finds no conflict; recorded with
loop turns folded (under -d cpu too) they agree likewise, also before
the folds, and the recovery goes across the folds the marks tell
(`~ loop turns folded out` steps in the listing).
Skipped (TAP "1..0 # SKIP") when this machine's qemu-x86_64 is missing or
has no plugin support.
"""
import json
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib  # noqa: E402

T = e2elib.Tap()
ok = T.ok


def record(btrace, snap, argv, extra=(), env=None):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([btrace, 'record', '-b', 'qemu', '-q', '-o', snap] +
                          list(extra) + ['--'] + argv, capture_output=True,
                          text=True, stdin=subprocess.DEVNULL, env=e,
                          timeout=600)


def accread(tool, snap, *extra):
    """{'signal': (tid, rsp, fault_ip), 'logs': {tid: (flags, [records])},
    'values': (ninsn, known, conflicts, last, last_known)}: the last
    (at most 1,000) instructions and the values known before them"""
    r = subprocess.run([tool, snap] + list(extra), capture_output=True,
                       text=True)
    out = {'signal': None, 'logs': {}, 'values': None, 'rc': r.returncode,
           'err': r.stderr.strip()}
    cur = None
    for line in r.stdout.splitlines():
        f = line.split()
        if f[0] == 'signal':
            out['signal'] = (int(f[1]), int(f[2], 16), int(f[3], 16))
        elif f[0] == 'log':
            cur = []
            out['logs'][int(f[1])] = (int(f[2]), cur)
        elif f[0] == 'values':
            out['values'] = tuple(int(x) for x in f[1:6])
        elif len(f) == 4 and cur is not None:
            cur.append((int(f[0], 16), int(f[1], 16), int(f[2]), f[3]))
        else:
            out['rc'] = out['rc'] or -1
            out['err'] += ' (a line it does not print: %r)' % line[:80]
    return out


def addresses(stderr):
    got = {}
    for k in ('global', 'arr', 'func'):
        m = re.search(r'^%s (0x[0-9a-f]+)$' % k, stderr, re.M)
        got[k] = int(m.group(1), 16) if m else None
    return got


def symbol(prog, name):
    """(address in the ELF file, size) of symbol NAME, or None"""
    r = subprocess.run(['nm', '-S', '--defined-only', prog],
                       capture_output=True, text=True)
    for line in r.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[3] == name:
            return int(f[0], 16), int(f[1], 16)
    return None


def symbol_size(prog, name):
    sym = symbol(prog, name)
    return sym and sym[1]


def info(btrace, snap, *extra):
    return subprocess.run([btrace, 'info'] + list(extra) + [snap],
                          capture_output=True, text=True)


def known_values(btrace, snap):
    """Known and unknown register values of btrace decode --insn --values,
    and the listing's lines."""
    r = subprocess.run([btrace, 'decode', '--insn', '--values', snap],
                       capture_output=True, text=True)
    return (r.returncode, len(re.findall(r'=0x', r.stdout)),
            len(re.findall(r'=\?', r.stdout)), r.stdout.splitlines())


REGS = ['rax', 'rbx', 'rcx', 'rdx', 'rsi', 'rdi', 'rbp', 'rsp', 'r8', 'r9',
        'r10', 'r11', 'r12', 'r13', 'r14', 'r15']
QREG = re.compile(r'RAX=(\w+) RBX=(\w+) RCX=(\w+) RDX=(\w+)\nRSI=(\w+) '
                  r'RDI=(\w+) RBP=(\w+) RSP=(\w+)\nR8 =(\w+) R9 =(\w+) '
                  r'R10=(\w+) R11=(\w+)\nR12=(\w+) R13=(\w+) R14=(\w+) '
                  r'R15=(\w+)\nRIP=(\w+)')
TOK = re.compile(r'(\w+)=(0x[0-9a-f]+|\?)')
FOLD = re.compile(r'\s+~ loop turns folded out of the history here, before '
                  r'(0x[0-9a-f]+)')


def faults(listing):
    """The addresses of a values listing's "=> fault at" lines."""
    return [int(m.group(1), 16) for m in
            (re.match(r'=> fault at (0x[0-9a-f]+)', ln) for ln in listing)
            if m]


def sigframe_unaligned(r):
    """QEMU's registers @r are those of a signal handler's entry as QEMU
    7.2 builds it, before the plugin moves the frame 8 bytes down
    (bt_sigalign_fix() in src/qemu/plugin-limits.c makes the same test):
    rdi a signal number, rdx = rsp + 8 (the ucontext), rsi = rdx + 304
    (the siginfo), rsp a multiple of 16."""
    return (1 <= r['rdi'] <= 64 and r['rdx'] == r['rsp'] + 8 and
            r['rsi'] == r['rdx'] + 304 and r['rsp'] % 16 == 0)


def against_qemu_log(qlog, listing, realigned=False, after=None):
    """The values listing against QEMU's -d cpu log: from the end, each
    instruction that starts the block QEMU ran next (backwards) is
    compared, the registers it reads with the block's registers and those
    the instruction before it writes likewise; across the steps that stand
    for loop turns folded out, QEMU's blocks of those turns are passed
    over.  @realigned: the plugin realigned every handler's entry (the
    snapshot has no limit.sigalign).  QEMU logs a block's registers before
    the plugin's callback at a handler's first block changes them, so
    where they have the shape of an unaligned entry (sigframe_unaligned())
    the program ran with rsp, rsi and rdx 8 lower, and those are compared.
    @after: (fault, handler) when a handler ran after the fault: the log
    goes on with the handler's blocks, the listing stops at the fault; it
    is compared from the last block at the fault that QEMU left for the
    handler.  (checked, wrong, first wrong lines, checked before a fold,
    values compared as the plugin realigned them)."""
    with open(qlog) as f:
        blocks = [(int(m.group(17), 16),
                   dict(zip(REGS, (int(x, 16) for x in m.groups()[:16]))))
                  for m in QREG.finditer(f.read())]
    if after:
        k = [i for i in range(len(blocks) - 1)
             if (blocks[i][0], blocks[i + 1][0]) == after]
        del blocks[k[-1] + 1 if k else 0:]
    moved = set()
    if realigned:
        for k, (ip, r) in enumerate(blocks):
            if sigframe_unaligned(r):
                for x in ('rsp', 'rsi', 'rdx'):
                    r[x] -= 8
                moved.add(k)
    entries = 0
    lines = [ln for ln in listing if re.match(r'0x[0-9a-f]+ ', ln) or
             FOLD.match(ln)]
    b = len(blocks) - 1
    last = None     # the block start matched last
    # a block that starts at the faulting instruction is not in the
    # listing's lines (it is the "=> fault at" line)
    fault = faults(listing)
    if fault and b >= 0 and blocks[b][0] == fault[-1]:
        b -= 1
    checked = wrong = past = 0
    folds = 0
    bad = []
    for n in range(len(lines) - 1, -1, -1):
        if b < 0:
            break
        m = FOLD.match(lines[n])
        if m:
            # turns the plugin folded out: QEMU ran them (the log has
            # their blocks) right before the loop block matched last.
            # A turn is at most 4 blocks from the loop block back to
            # it: the run of the loop block's starts each at most 4
            # blocks before the next, the earliest of them is the first
            # turn's, and the block before it the path's before the fold
            loop = int(m.group(1), 16)
            if last != loop:
                break   # not in step: compare no further
            q = k = b + 1
            while k > 0 and q - (k - 1) <= 4:
                k -= 1
                if blocks[k][0] == loop:
                    q = k
            b = q - 1
            folds += 1
            continue
        if int(lines[n].split()[0], 16) != blocks[b][0]:
            continue
        last = blocks[b][0]
        if re.search(r'\srep(n?e)?\s', lines[n].split(';', 1)[0]):
            # QEMU runs a rep string instruction's iterations after the
            # first as blocks of their own (the first may run in the
            # block before it): the log has no registers from before the
            # instruction to compare; its blocks are passed over
            while b > 0 and blocks[b - 1][0] == blocks[b][0]:
                b -= 1
            b -= 1
            continue
        toks = TOK.findall(lines[n].split(';', 1)[1].split('->')[0])
        if n and not FOLD.match(lines[n - 1]):
            prev = lines[n - 1].split(';', 1)[1].split('->')
            if len(prev) == 2:
                toks += TOK.findall(prev[1])
        for r, v in toks:
            if v == '?' or r not in blocks[b][1]:
                continue
            checked += 1
            entries += b in moved and r in ('rsp', 'rsi', 'rdx')
            past += folds > 0
            if int(v, 16) != blocks[b][1][r]:
                wrong += 1
                bad.append('%s | true %s=%#x' % (lines[n][:100], r,
                                                 blocks[b][1][r]))
        b -= 1
    return checked, wrong, bad[:5], past, entries


def check_program(btrace, tool, prog, d):
    snap = os.path.join(d, 'acc.btrace')
    p = record(btrace, snap, [prog])
    ok(p.returncode == 128 + 11, 'the program dies of SIGSEGV (%d: %s)' %
       (p.returncode, p.stderr.strip()[-200:]))
    a = addresses(p.stderr)
    size = symbol_size(prog, 'store_then_crash')
    ok(None not in a.values() and size,
       'it said its addresses (%s), store_then_crash is %s bytes' % (
           {k: v and hex(v) for k, v in a.items()}, size))
    got = accread(tool, snap)
    sig = got['signal']
    ok(sig is not None and sig[0] in got['logs'],
       'the snapshot has an access log of the crashed thread (%s; logs of %s)'
       % (sig and sig[0], sorted(got['logs'])))
    if sig is None or sig[0] not in got['logs'] or None in a.values() or \
            not size:
        return None
    tid, rsp, fault_ip = sig
    flags, log = got['logs'][tid]
    T.diag('%d records, flags %d; the last: %s' % (
        len(log), flags, ['%#x %#x %d %s' % r for r in log[-4:]]))
    inside = range(a['func'], a['func'] + size)
    last = log[-6:]
    ok(any(r[1] == a['global'] and r[2] == 8 and r[3] == 'W' and
           r[0] in inside for r in last),
       'its last records hold the 8-byte store to the global at %#x, by an '
       'instruction of store_then_crash [%#x, %#x)' % (
           a['global'], inside.start, inside.stop))
    ok(any(r[3] == 'W' and r[2] == 8 and r[0] in inside and
           rsp - 256 <= r[1] < rsp + 256 and r[1] != a['global']
           for r in last),
       'and the 8-byte store to the local on the stack (rsp %#x)' % rsp)
    ok(not any(r[0] == fault_ip for r in log[-3:]),
       'the faulting load at %#x is not logged (it did not happen)' % fault_ip)
    arr = [k for k, r in enumerate(log) if a['arr'] <= r[1] < a['arr'] + 256
           and r[3] == 'W']
    ok([log[k][1] for k in arr] == [a['arr'], a['arr'] + 63 * 4],
       'the folded loop keeps the stores of the turns the history keeps: '
       'arr[0] and arr[63] (%s)' % [hex(log[k][1]) for k in arr])
    marks = [k for k, r in enumerate(log) if r[3] == 'F']
    between = [k for k in marks if len(arr) == 2 and arr[0] < k < arr[1]]
    ok(len(between) == 1 and
       0 <= log[arr[1]][0] - log[between[0]][0] < 256 and
       all(log[k][1] == 0 and log[k][2] == 0 for k in marks),
       'one fold mark stands between the two turns kept, at the start of '
       'the loop\'s block (at most 256 bytes before the store at %s: marks '
       '%s)' % (len(arr) == 2 and hex(log[arr[1]][0]),
                [(k, hex(log[k][0])) for k in between]))
    ok(flags == 1, 'the log holds every access since the thread started '
       '(complete: flags %d)' % flags)
    st, pr = symbol(prog, 'store_then_crash'), symbol(prog, 'pushrun')
    run = pr and range(a['func'] - st[0] + pr[0],
                       a['func'] - st[0] + pr[0] + pr[1])
    inrun = [r for r in log if run and r[0] in run]
    ok(run and len(inrun) == 1 and inrun[0][0] == run.start and
       inrun[0][2] == 8 and inrun[0][3] == 'W',
       'of pushrun\'s run of four pushes, four pops and a ret, the first '
       'push\'s 8-byte store alone is logged (%s)' % [
           '%#x %#x %d %s' % r for r in inrun])

    # every turn kept: every store
    snap_all = os.path.join(d, 'acc-all.btrace')
    p = record(btrace, snap_all, [prog], env={'BTRACE_QEMU_LOOPS': '0'})
    got = accread(tool, snap_all)
    a2 = addresses(p.stderr)
    logs = list(got['logs'].values())
    arr = [r for r in (logs[0][1] if logs else [])
           if a2['arr'] and a2['arr'] <= r[1] < a2['arr'] + 256 and
           r[3] == 'W']
    ok(p.returncode == 128 + 11 and a2['arr'] is not None and
       [r[1] for r in arr] == [a2['arr'] + 4 * i for i in range(64)] and
       all(r[2] == 4 for r in arr) and
       not any(r[3] == 'F' for r in (logs[0][1] if logs else [])),
       'with every turn kept (BTRACE_QEMU_LOOPS=0) all 64 stores, in order, '
       'and no fold mark (%d stores)' % len(arr))

    # btrace info and report
    nacc = len(log) - len(marks)
    r = info(btrace, snap)
    ok(r.returncode == 0 and re.search(r'^accesses: 1 log', r.stdout, re.M)
       and ('thread %d: %d accesses' % (tid, nacc)) in r.stdout and
       (', %d loop fold' % len(marks)) in r.stdout,
       'btrace info shows the log (%s)' % re.findall(
           r'^(?:accesses.*|  thread \d+: .*accesses.*)$', r.stdout, re.M))
    r = info(btrace, snap, '--json')
    j = json.loads(r.stdout) if r.returncode == 0 else {}
    ok(j.get('accesses') == [{'tid': tid, 'count': nacc,
                              'writes': sum(x[3] == 'W' for x in log),
                              'folds': len(marks), 'complete': True}],
       'and in JSON (%s)' % j.get('accesses'))
    ok('qemu.accesses' in j.get('metadata', {}),
       'metadata qemu.accesses says what it holds (%s)' %
       j.get('metadata', {}).get('qemu.accesses'))
    try:
        rep = e2elib.report_json(btrace, snap)
        ok('store_then_crash' in json.dumps(rep),
           'btrace report works and names store_then_crash')
    except RuntimeError as e:
        ok(False, 'btrace report works (%s)' % e)

    # twice(): its loop block runs twice between the fold mark and the
    # next access; the turns ran before one of those runs, which one is
    # not known: the path is cut at the last
    listing, v, _ = under_cpu_log(btrace, tool, prog, d, 'twice', {},
                                  'the program running twice()', ['twice'])
    first = next((ln for ln in listing if re.match(r'0x[0-9a-f]+ ', ln)), '')
    ok(v is not None and v[2] == 0 and re.match(r'0x[0-9a-f]+\s+twice\+',
                                                first),
       'its path starts at the last run of twice()\'s loop block (%s; '
       'values() %s)' % (first[:60], v))

    # what bump() read before the turns of its loop that stored over it:
    # the step for those turns ends what is known of memory
    listing, v, past = under_cpu_log(btrace, tool, prog, d, 'prog', {},
                                     'the program with loop turns folded')
    folds = [ln for ln in listing if FOLD.match(ln)]
    ok(v is not None and v[2] == 0 and folds,
       'no conflict across its fold steps (%d; values() %s)' % (len(folds), v))
    # slash()'s loop: its closing block makes no access, the block after
    # it (where the last turn leaves) loads first
    ok(v is not None and v[0] == 4096 and
       any(re.match(r'0x[0-9a-f]+\s+slash\+', ln) for ln in listing),
       'the recovery covers the last 4,096 instructions, slash()\'s folded '
       'loop and what ran before it too (values() %s)' % (v,))
    try:
        rep = e2elib.report_json(btrace, os.path.join(d, 'demo-prog.btrace'))
        org = rep.get('origin') or {}
        chain = org.get('chain') or []
        # (bump's load reads what main stored there, a[5] = 7: the
        # source is that store of the constant 7, reached across the
        # folded loop that stored over a[] after the load)
        ok(org.get('value') == '0x0' and chain and
           chain[-1].get('function') == 'main' and
           chain[-1].get('value') == '0x7' and
           chain[-1].get('kind') == 'constant' and
           any(ln.get('kind') == 'return' and ln.get('value') == '0x7'
               for ln in chain) and
           any(ln.get('function') == 'bump' and ln.get('value') == '0x7' and
               ln.get('kind') != 'return' for ln in chain),
           'the origin of the NULL goes back across the folded loop to '
           'bump\'s load of 7 and main\'s store of it (%s)' % [
               (ln.get('function'), ln.get('kind'), ln.get('value'))
               for ln in chain])
    except RuntimeError as e:
        ok(False, 'btrace report works (%s)' % e)

    # --accesses 0 and 1K
    snap0 = os.path.join(d, 'acc-0.btrace')
    p = record(btrace, snap0, [prog], ['--accesses', '0'])
    got = accread(tool, snap0)
    j0 = info(btrace, snap0, '--json')
    j0 = json.loads(j0.stdout) if j0.returncode == 0 else {}
    ok(p.returncode == 128 + 11 and got['rc'] == 0 and not got['logs'] and
       j0.get('accesses') == [] and
       'qemu.accesses' not in j0.get('metadata', {}),
       '--accesses 0: no accesses section (%s)' % sorted(got['logs']))
    snap1 = os.path.join(d, 'acc-1k.btrace')
    p = record(btrace, snap1, [prog], ['--accesses', '1K'])
    got = accread(tool, snap1)
    a1 = addresses(p.stderr)
    logs = list(got['logs'].values())
    ok(p.returncode == 128 + 11 and len(logs) == 1 and
       len(logs[0][1]) == 1024 and logs[0][0] == 0 and
       any(r[1] == a1['global'] and r[3] == 'W' for r in logs[0][1][-6:]),
       '--accesses 1K: the last 1024 records, not complete, the global\'s '
       'store among them (%s)' % [(f, len(x)) for f, x in logs])
    for bad in ('5M', 'lots', '-1'):
        r = subprocess.run([btrace, 'record', '-b', 'qemu', '--accesses', bad,
                            '--', prog], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60)
        ok(r.returncode == 2 and "invalid --accesses '%s'" % bad in r.stderr,
           '--accesses %s: a usage error (%d)' % (bad, r.returncode))
    return True


def check_demo(btrace, tool, demo, d):
    runs = {}
    for name, extra in (('log', []), ('nolog', ['--accesses', '0'])):
        snap = os.path.join(d, 'demo-%s.btrace' % name)
        p = record(btrace, snap, [demo], extra)
        rc, known, unknown, _ = known_values(btrace, snap)
        runs[name] = (p.returncode, rc, known, unknown,
                      accread(tool, snap, 'values')['values'])
        T.diag('demo %s: %d known, %d not known; values() %s' % (
            name, known, unknown, runs[name][4]))
    ok(all(r[0] == 128 + 11 and r[1] == 0 for r in runs.values()),
       'the demo recorded and decoded with and without the log (%s)' %
       [(r[0], r[1]) for r in runs.values()])
    ok(runs['log'][2] >= runs['nolog'][2] > 0,
       'decode --values knows at least as many values with the log: %d '
       'against %d' % (runs['log'][2], runs['nolog'][2]))
    # loop turns folded out of the history: the recovery starts after the
    # last fold the log marks, or without the log after the last block
    # the plugin may fold at (two derivations that disagree would mean it
    # related turns that did not run back to back)
    ok(all(r[4] is not None and r[4][2] == 0 for r in runs.values()),
       'with loop turns folded, the value recovery finds no conflict, with '
       'or without the log (%s)' % [r[4] for r in runs.values()])

    # Loop turns folded and marked in the log: right from the end back
    # across the folds (each a step of the path).
    listing, v, past = under_cpu_log(btrace, tool, demo, d, 'folded', {},
                                     'with loop turns folded and marked')
    folds = [n for n, ln in enumerate(listing) if FOLD.match(ln)]
    before = folds and sum('=0x' in ln for ln in listing[:folds[0]])
    ok(v is not None and v[2] == 0 and len(folds) >= 2 and before,
       'the recovery goes across the folds the log marks (%d fold steps, '
       '%s values known before the first; values() %s)' % (
           len(folds), before, v))
    ok(past > 0, 'and values before a fold agree with QEMU\'s log too (%d '
       'checked)' % past)

    # Every turn kept.
    listing, v, _ = under_cpu_log(btrace, tool, demo, d, 'all',
                               {'BTRACE_QEMU_LOOPS': '0'},
                               'with every turn kept')
    ok(v is not None and v[2] == 0,
       'and the value recovery finds no conflict (%s)' % (v,))


def under_cpu_log(btrace, tool, demo, d, name, env, how, args=()):
    """Program @demo (@args) recorded (@env) under QEMU's own log of the
    registers at each block it runs (every block, folded turns too), its
    values checked against that log: (the values listing, values(), the
    values checked before a fold)."""
    snap = os.path.join(d, 'demo-%s.btrace' % name)
    qlog = os.path.join(d, 'qemu-cpu-%s.log' % name)
    env = dict(env, BTRACE_QEMU_ARGS='-d cpu,nochain -D %s' % qlog)
    p = record(btrace, snap, [demo] + list(args), env=env)
    rc, _, _, listing = known_values(btrace, snap)
    v = accread(tool, snap, 'values')['values']
    ok(p.returncode == 128 + 11 and rc == 0 and os.path.exists(qlog),
       'recorded %s, under -d cpu (%d, %d)' % (how, p.returncode, rc))
    past = 0
    if os.path.exists(qlog):
        checked, wrong, bad, past, _ = against_qemu_log(qlog, listing)
        for b in bad:
            T.diag('wrong: %s' % b)
        ok(checked > 0 and wrong == 0,
           '%s, the values recovered are QEMU\'s registers at every block '
           'start they cover: %d checked, %d wrong' % (how, checked, wrong))
    return listing, v, past


def main():
    btrace, tool, prog, demo = sys.argv[1:5]
    why = e2elib.qemu_skip_reason()
    if why:
        return e2elib.skip_all(why)
    with tempfile.TemporaryDirectory() as d:
        check_program(btrace, tool, prog, d)
        check_demo(btrace, tool, demo, d)
    return T.done()


if __name__ == '__main__':
    e2elib.run_main(main)
