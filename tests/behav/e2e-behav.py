#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""What QEMU cannot do as the kernel does is said, #! scripts launch as the
kernel runs them, and a death on int3 decodes (TAP).

    e2e-behav.py BTRACE PROGDIR

Each program is run natively first, to show the native behaviour the
emulated run must either match or name:
  trap-int3      dies on int3: SIGTRAP, a stack check <- walk <- main
  fpe-unmask     feenableexcept + 1/0: natively SIGFPE; under QEMU a
                 warning and limit.fpe-traps (SSE: ldmxcsr, x87: fldcw)
  seccomp-kill   a filter that kills at getppid: natively SIGSYS; under
                 QEMU limit.seccomp (prctl and seccomp(2))
  vdso-fault     clock_gettime(bad pointer): natively SIGSEGV; under QEMU
                 limit.vdso
  sig-align      handlers that need the ABI's stack alignment (movaps,
                 snprintf of a double): natively and under btrace the
                 same output, exit 0 (QEMU alone: SIGSEGV); a handler
                 that ran before it was installed: limit.sigalign and a
                 fault that is not exact; a handler that returns to a
                 load that faults again: the load, exact, as gdb shows it
                 natively; pthread_cancel (glibc's
                 SIGCANCEL handler and unwinder) as natively
  qemu-diff      clone3, io_uring_setup, ptrace(PTRACE_TRACEME): natively
                 they work; under QEMU ENOSYS and limit.enosys (not for
                 glibc's clone3 with its fallback); /proc/self/comm as
                 natively; real-time signals: deaths by SIGRTMIN and 62
                 give the native status, handlers get the native signal,
                 one sent to btrace reaches the program as itself; 63 and
                 64: limit.rt-signals
  asan-overflow  built with -fsanitize=address: refused, exit 1, at once;
                 exec'd by a traced shell it runs natively, untraced
a SIGKILL (said, with whether the OOM killer sent it), and scripts: one #! level with an argument, two levels, a missing
interpreter (exit 1 naming it), six levels (the kernel's ELOOP).
"""
import errno
import glob
import os
import re
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                '..', 'e2e'))
import e2elib  # noqa: E402

T = e2elib.Tap()


def ok(cond, desc):
    """A TAP line: messages quoted in @desc are kept on one line."""
    return T.ok(cond, desc.replace('\n', ' | '))



def run(argv, **kw):
    return subprocess.run(argv, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=300, **kw)


def record(btrace, snap, argv, on=None, cwd=None):
    cmd = [btrace, 'record', '-b', 'qemu', '-q', '-o', snap]
    if on:
        cmd += ['--on', on]
    return run(cmd + ['--'] + argv, cwd=cwd)


def info(btrace, snap):
    return run([btrace, 'info', snap]).stdout


def test_int3(btrace, progs, d):
    prog = os.path.join(progs, 'trap-int3')
    nat = run([prog])
    ok(nat.returncode == -5, 'int3 natively: SIGTRAP (%d)' % nat.returncode)
    snap = os.path.join(d, 'int3.btrace')
    p = record(btrace, snap, [prog])
    ok(p.returncode == 128 + 5, 'int3: status 133 (%d)' % p.returncode)
    try:
        r = e2elib.report_json(btrace, snap)
    except (RuntimeError, ValueError) as e:
        ok(False, 'int3: report: %s' % e)
        return
    ok(r['signal']['name'] == 'SIGTRAP', 'int3: SIGTRAP')
    f = r.get('fault') or {}
    # int3 is a trap: the signal's ip is after it (gdb's frame 0 too).
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'progs',
                       'trap-int3.c')
    line = e2elib.marker_line(src, '/* behav: trap */') + 1
    ok(f.get('function') == 'check' and f.get('line') == line,
       'int3: fault in check at line %d, after the int3 (%s:%s)' %
       (line, f.get('function'), f.get('line')))
    crashed = [t for t in r['threads'] if t['crashed']]
    names = [x['function'] for x in crashed[0]['stack']] if crashed else []
    ok(names[:3] == ['check', 'walk', 'main'],
       'int3: stack check, walk, main (%s)' % names[:4])
    g = e2elib.gdb_native([prog])
    if g['frames']:
        ok(g['frames'][0].get('line') == line,
           'int3: gdb natively stops at line %d too (%s)' %
           (line, g['frames'][0].get('line')))
        same, msg = e2elib.stack_compare(crashed[0]['stack'] if crashed
                                         else [], g['frames'],
                                         {'trap-int3', 'trap-int3.c'})
        ok(same, 'int3: stack as gdb shows it natively: %s' % msg)


def test_limit(btrace, d, name, argv, native_sig, key, want_text):
    nat = run(argv)
    ok(nat.returncode == -native_sig,
       '%s natively: %s (%d)' %
       (name, 'killed by signal %d' % native_sig if native_sig else
        'exit 0', nat.returncode))
    snap = os.path.join(d, name + '.btrace')
    p = record(btrace, snap, argv, on='exit')
    # btrace's messages wrap at 80 columns: continuation lines start
    # with two spaces; each message is one line here
    msgs = re.sub(r'\n  (?=\S)', ' ', p.stderr).splitlines()
    warned = [ln for ln in msgs
              if 'warning' in ln and '(limit.%s)' % key in ln]
    ok(len(warned) == 1 and want_text in warned[0],
       '%s: one warning at record time naming limit.%s (%s)' %
       (name, key, p.stderr.strip()[-300:]))
    # the process's own snapshot, or its forked child's (NAME-PID.btrace)
    snaps = [snap] + glob.glob(os.path.join(d, glob.escape(name) +
                                            '-*.btrace'))
    text = ''.join(info(btrace, x) for x in snaps if os.path.exists(x))
    ok(('limit.%s' % key) in text,
       '%s: the snapshot has metadata limit.%s' % (name, key))
    return p


def test_sigalign(btrace, progs, d):
    prog = os.path.join(progs, 'sig-align')
    for mode in ('', 'altstack', 'skip', 'plain'):
        argv = [prog] + ([mode] if mode else [])
        name = 'sig-align %s' % (mode or 'siginfo')
        nat = run(argv)
        ok(nat.returncode == 0 and nat.stdout.count('entry rsp % 16 = 8') >=
           4, '%s natively: exit 0, handlers aligned (%d)' %
           (name, nat.returncode))
        if not mode:
            q = run(['qemu-x86_64', prog])
            ok(q.returncode == -11,
               '%s: QEMU 7.2 alone dies of SIGSEGV in the handler (%d)' %
               (name, q.returncode))
        p = record(btrace, os.path.join(d, 'sigalign.btrace'), argv)
        ok(p.returncode == 0 and p.stdout == nat.stdout,
           '%s: under btrace the native output and status (%d: %r)' %
           (name, p.returncode, p.stdout[-200:]))
        ok('limit.' not in p.stderr,
           '%s: no limit said (%s)' % (name, p.stderr.strip()[-200:]))
    # The handler returns to the load, which faults again: the fault is
    # the load (gdb's, natively), exact.
    argv = [prog, 'again']
    snap = os.path.join(d, 'sigalign-again.btrace')
    nat = run(argv)
    p = record(btrace, snap, argv)
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'progs',
                       'sig-align.c')
    line = e2elib.marker_line(src, '/* behav: again */')
    try:
        f = e2elib.report_json(btrace, snap).get('fault') or {}
    except (RuntimeError, ValueError) as e:
        f = {'function': 'report failed: %s' % e}
    ok(nat.returncode == -11 and p.returncode == 139 and
       p.stdout == nat.stdout,
       'sig-align again: SIGSEGV and the handler\'s output as natively '
       '(%d, native %d)' % (p.returncode, nat.returncode))
    ok(f.get('function') == 'load' and f.get('line') == line and
       f.get('exact') is True,
       'sig-align again: the fault is load at line %d, exact (%s:%s, %s)'
       % (line, f.get('function'), f.get('line'), f.get('exact')))
    g = e2elib.gdb_native(argv)
    if g['frames']:
        ok(g['frames'][0].get('line') == line,
           'sig-align again: gdb natively stops at line %d too (%s)' %
           (line, g['frames'][0].get('line')))
    # glibc's SIGCANCEL handler and unwinder
    argv = [prog, 'cancel']
    nat = run(argv)
    q = run(['qemu-x86_64'] + argv)
    p = record(btrace, os.path.join(d, 'sigalign.btrace'), argv)
    ok(nat.returncode == 0 and 'cleanup spin' in nat.stdout and
       q.returncode == -11 and p.returncode == 0 and
       p.stdout == nat.stdout and 'limit.' not in p.stderr,
       'sig-align cancel: as natively under btrace, nothing said (%d %r; '
       'native %d %r; QEMU alone %d)' % (p.returncode, p.stdout,
                                          nat.returncode, nat.stdout,
                                          q.returncode))
    # Its code ran before it was a handler: not corrected, said, and the
    # fault it causes is not called exact.
    argv = [prog, 'late']
    nat = run(argv)
    snap = os.path.join(d, 'sig-align-late.btrace')
    p = record(btrace, snap, argv)
    msgs = re.sub(r'\n  (?=\S)', ' ', p.stderr).splitlines()
    warned = [ln for ln in msgs
              if 'warning' in ln and '(limit.sigalign)' in ln]
    ok(len(warned) == 1 and 'could not correct it' in warned[0],
       'sig-align late: one warning naming limit.sigalign (%s)' %
       p.stderr.strip()[-300:])
    ok(nat.returncode == 0 and p.returncode == 139,
       'sig-align late: 0 natively, SIGSEGV here (%d, %d)' %
       (nat.returncode, p.returncode))
    snap = os.path.join(d, 'sig-align-late.btrace')
    try:
        r = e2elib.report_json(btrace, snap)
        f = r.get('fault') or {}
        lim = [x['name'] for x in r.get('limits', [])]
    except (RuntimeError, ValueError) as e:
        f, lim = {'exact': 'report failed: %s' % e}, []
    ok(f.get('exact') is False and 'sigalign' in lim,
       'sig-align late: the fault is not exact and the report says '
       'limit sigalign (%s, %s)' % (f.get('exact'), lim))


def test_qemu_diff(btrace, progs, d):
    prog = os.path.join(progs, 'qemu-diff')
    for mode, call in (('clone3', 'clone3'), ('io_uring', 'io_uring_setup'),
                       ('traceme', 'ptrace')):
        p = test_limit(btrace, d, 'diff-' + mode, [prog, mode], 0, 'enosys',
                       call)
        ok(p.returncode == 2 and 'Function not implemented' in p.stdout,
           'diff-%s: under QEMU the call got ENOSYS (%d: %r)' %
           (mode, p.returncode, p.stdout))
    try:
        r = e2elib.report_json(btrace, os.path.join(d, 'diff-clone3.btrace'))
        lim = [x for x in r.get('limits', []) if x['name'] == 'enosys']
    except (RuntimeError, ValueError) as e:
        lim = [{'text': 'report failed: %s' % e}]
    ok(len(lim) == 1 and 'clone3' in lim[0]['text'],
       'diff-clone3: report --json names limit enosys (%s)' % lim)
    # The same output and status as natively, and nothing to say.
    for argv in (['threads'], ['comm'], ['rt', '36'], ['rt', '62']):
        nat = run([prog] + argv)
        p = record(btrace, os.path.join(d, 'diff.btrace'), [prog] + argv)
        ok(nat.returncode == 0 and p.returncode == 0 and
           p.stdout == nat.stdout and 'limit.' not in p.stderr,
           'diff %s: as natively, nothing said (%d %r, native %d %r; %s)' %
           (' '.join(argv), p.returncode, p.stdout, nat.returncode,
            nat.stdout, p.stderr.strip()[-200:]))
    # comm after an execve() (the emulator re-executed)
    cmd = ['/bin/sh', '-c', 'exec %s comm' % prog]
    nat = run(cmd)
    p = record(btrace, os.path.join(d, 'diff.btrace'), cmd)
    ok(p.stdout == nat.stdout == 'comm: qemu-diff\n',
       'diff comm after exec: %r (native %r)' % (p.stdout, nat.stdout))
    # A death by a real-time signal: the native status.
    for sig in (34, 62):
        nat = run([prog, 'die', str(sig)])
        p = record(btrace, os.path.join(d, 'diff.btrace'),
                   [prog, 'die', str(sig)])
        ok(nat.returncode == -sig and p.returncode == 128 + sig,
           'diff die %d: status %d as natively (%d)' %
           (sig, 128 + sig, p.returncode))
    for sig in (63, 64):
        p = test_limit(btrace, d, 'diff-rt%d' % sig, [prog, 'rt', str(sig)],
                       0, 'rt-signals', 'real-time signal %d' % sig)
        ok(p.returncode == 2 and 'Invalid argument' in p.stdout,
           'diff rt %d: QEMU refused it (%d: %r)' %
           (sig, p.returncode, p.stdout))
    # Sent to btrace: the program gets the signal itself (40), or btrace
    # says it could not (63).
    for sig, want in ((40, 'handler got 40\n'), (63, None)):
        ready = os.path.join(d, 'ready-%d' % sig)
        nat = subprocess.Popen([prog, 'wait', ready, str(sig)],
                               stdout=subprocess.PIPE, text=True)
        wait_file(ready)
        nat.send_signal(sig)
        nout, _ = nat.communicate(timeout=60)
        os.unlink(ready)
        p = subprocess.Popen([btrace, 'record', '-b', 'qemu', '-q', '-o',
                              os.path.join(d, 'diff.btrace'), '--', prog,
                              'wait', ready, str(sig)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             stdin=subprocess.DEVNULL, text=True)
        wait_file(ready)
        p.send_signal(sig)
        out, err = p.communicate(timeout=120)
        if want:
            ok(nout == want and out == want and p.returncode == 0,
               'signal %d sent to btrace reaches the program as itself '
               '(%r, native %r)' % (sig, out, nout))
        else:
            said = ' '.join(err.split())
            ok(nout == 'handler got 63\n' and p.returncode == 3 and
               'real-time signal 63 sent to btrace did not reach the '
               'program (limit.rt-signals)' in said,
               'signal 63 sent to btrace: said that it cannot reach the '
               'program (%d: %s)' % (p.returncode, said[-300:]))


def wait_file(path):
    for _ in range(600):
        if os.path.exists(path) and os.path.getsize(path):
            return
        time.sleep(0.1)


def main():
    btrace, progs = [os.path.abspath(x) for x in sys.argv[1:3]]
    if not e2elib.qemu_available():
        print('1..0 # SKIP qemu-x86_64 is not installed')
        return 0
    with tempfile.TemporaryDirectory() as d:
        test_int3(btrace, progs, d)

        fpe = os.path.join(progs, 'fpe-unmask')
        p = test_limit(btrace, d, 'fpe-sse', [fpe], 8, 'fpe-traps',
                       'ldmxcsr')
        ok(p.returncode == 0 and 'sse inf' in p.stdout,
           'fpe-sse: under QEMU the division went on (status %d)' %
           p.returncode)
        test_limit(btrace, d, 'fpe-x87', [fpe, 'x87'], 8, 'fpe-traps',
                   'fldcw')

        sec = os.path.join(progs, 'seccomp-kill')
        test_limit(btrace, d, 'seccomp', [sec], 31, 'seccomp', 'seccomp')
        test_limit(btrace, d, 'seccomp-prctl', [sec, 'prctl'], 31,
                   'seccomp', 'PR_SET_SECCOMP')

        test_limit(btrace, d, 'vdso', [os.path.join(progs, 'vdso-fault')],
                   11, 'vdso', 'clock_gettime')

        # A program without any of these gets no warning.
        p = record(btrace, os.path.join(d, 'plain.btrace'),
                   [os.path.join(progs, 'trap-int3')])
        ok('warning' not in p.stderr,
           'trap-int3: no limit warning (%s)' % p.stderr.strip()[-200:])

        asan = os.path.join(progs, 'asan-overflow')
        if os.path.exists(asan):
            t0 = time.monotonic()
            p = record(btrace, os.path.join(d, 'asan.btrace'), [asan])
            dt = time.monotonic() - t0
            ok(p.returncode == 1, 'asan: refused with exit 1 (%d)' %
               p.returncode)
            ok('AddressSanitizer' in p.stderr and 'hint:' in p.stderr and
               'hardware backend' in p.stderr,
               'asan: the message names the sanitizer and the fix (%s)' %
               p.stderr.strip()[-300:])
            ok(dt < 30, 'asan: refused before running (%.1f s)' % dt)
            # exec'd by a traced shell: it runs natively (untraced), as
            # fast as natively, and the snapshot says so.
            nat = run([asan])
            snap = os.path.join(d, 'asan-exec.btrace')
            t0 = time.monotonic()
            p = record(btrace, snap, ['/bin/sh', '-c', 'exec %s' % asan],
                       on='exit')
            dt = time.monotonic() - t0
            ok(p.returncode == nat.returncode and nat.returncode != 0 and
               'heap-buffer-overflow' in p.stderr,
               'asan exec\'d: ASan\'s report and status %d as natively '
               '(%d)' % (nat.returncode, p.returncode))
            ok(dt < 60, 'asan exec\'d: finished (%.1f s)' % dt)
            text = info(btrace, snap) if os.path.exists(snap) else ''
            ok('qemu.exec' in text and 'asan-overflow' in text,
               'asan exec\'d: the snapshot names the native exec')
        else:
            ok(True, 'asan: no -fsanitize=address toolchain # SKIP')

        # A SIGKILL is named, with whether the OOM killer sent it (the
        # kernel's oom_kill count did not move here).
        p = record(btrace, os.path.join(d, 'kill.btrace'),
                   ['/bin/sh', '-c', 'kill -KILL $$'])
        said = ' '.join(p.stderr.split())   # (messages wrap at 80)
        ok(p.returncode == 128 + 9 and 'killed by SIGKILL' in said and
           ('not the OOM killer' in said or
            'whether by the OOM killer is unknown' in said),
           'SIGKILL: status 137 and said, OOM killer or not (%d: %s)' %
           (p.returncode, p.stderr.strip()[-200:]))

        test_sigalign(btrace, progs, d)
        test_qemu_diff(btrace, progs, d)
        test_scripts(btrace, progs, d)
    return T.done()


def test_scripts(btrace, progs, d):
    prog = os.path.join(progs, 'trap-int3')
    tool = os.path.join(d, 'tool.sh')
    with open(tool, 'w') as f:
        f.write('#!/bin/sh -e\necho "$0 $*"\nexec %s "$@"\n' % prog)
    nest = os.path.join(d, 'nest')
    with open(nest, 'w') as f:
        f.write('#!%s  two words \n' % tool)
    bad = os.path.join(d, 'bad.sh')
    with open(bad, 'w') as f:
        f.write('#!%s/no-such-interpreter\necho hi\n' % d)
    for x in (tool, nest, bad):
        os.chmod(x, 0o755)
    for name, argv in (('script', ['./tool.sh', 'a', 'b c']),
                       ('nested', ['./nest', 'q'])):
        nat = run(argv, cwd=d)
        snap = os.path.join(d, name + '.btrace')
        p = record(btrace, snap, argv, cwd=d)
        ok(p.returncode == 128 + 5 and nat.returncode == -5,
           '%s: status 133 as natively (%d, native %d)' %
           (name, p.returncode, nat.returncode))
        ok(p.stdout == nat.stdout and p.stdout,
           '%s: the script saw the arguments the kernel gives (%r vs '
           'native %r)' % (name, p.stdout, nat.stdout))
        try:
            r = e2elib.report_json(btrace, snap)
            crashed = [t for t in r['threads'] if t['crashed']]
            names = [x['function'] for x in crashed[0]['stack']]
        except (RuntimeError, ValueError, IndexError, KeyError) as e:
            names = ['report failed: %s' % e]
        ok(names[:3] == ['check', 'walk', 'main'],
           '%s: the exec\'d program\'s stack (%s)' % (name, names[:4]))
    p = record(btrace, os.path.join(d, 'bad.btrace'), ['./bad.sh'], cwd=d)
    ok(p.returncode == 1 and 'no-such-interpreter' in p.stderr and
       'bad.sh' in p.stderr and 'does not exist' in p.stderr,
       'missing interpreter: exit 1 naming the script and the interpreter '
       '(%d: %s)' % (p.returncode, p.stderr.strip()[-200:]))
    # Six levels of #!: the kernel says ELOOP, and so does btrace.
    prev = tool
    for i in range(5):
        s = os.path.join(d, 'deep%d' % i)
        with open(s, 'w') as f:
            f.write('#!%s\n' % prev)
        os.chmod(s, 0o755)
        prev = s
    try:
        subprocess.run([prev], capture_output=True, timeout=60)
        native = 0
    except OSError as e:
        native = e.errno
    p = record(btrace, os.path.join(d, 'deep.btrace'), [prev], cwd=d)
    ok(native == errno.ELOOP and p.returncode == 1 and
       'levels of #!' in p.stderr,
       'six #! levels: ELOOP natively (%s) and refused by btrace (%d: %s)' %
       (native, p.returncode, p.stderr.strip()[-200:]))
    # Five levels run, as natively.
    five = os.path.join(d, 'deep3')
    nat = run([five])
    p = record(btrace, os.path.join(d, 'five.btrace'), [five], cwd=d)
    ok(nat.returncode == -5 and p.returncode == 133,
       'five #! levels run (%d, native %d)' % (p.returncode,
                                               nat.returncode))


if __name__ == '__main__':
    sys.exit(main())
