#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The corpus: crashing programs of our own, btrace's reports vs gdb (TAP).

    corpus.py BTRACE BUILDDIR [--full] [--jobs N] [--only GLOB,...] [--list]

    # re-run the whole corpus after a build (one command):
    BTRACE_CORPUS=full meson test -C build --suite corpus --verbose
    # or directly, on a subset:
    tests/corpus/corpus.py build/src/cli/btrace build/tests/corpus \
        --full --only 'c-handler-*,c-null-O2'

Every program (CASES below; sources in progs/) is built into BUILDDIR
(compiled languages; nothing is written to the source tree) and run three
times in a fresh directory:

1. natively, as is: exit status, stdout, stderr;
2. natively under gdb (`gdb -batch -nx -x gdbdump.py`: run, then continue
   after every stop, recording $_siginfo, $pc and the backtrace with inline
   frames at each stop, and how the process ended);
3. under `btrace record --snapshot --backend auto -o SNAP`, then
   `btrace report --json SNAP` (and `btrace decode --insn --last` for the
   tail check).

The checks, one TAP test point per (program, check); a program declares
the checks that do not apply to it (`na`):

  signal    the report's signal is the one of the fault that started it
            (gdb's first stop; e2e-crash's rule; for a program whose
            earlier faults were handled and gone on from, `fatal=True`,
            gdb's last stop: the fault that killed it), and when the native
            process then died of another signal (a handler that aborts),
            the report names that one too;
  si_code   the report's si_code is $_siginfo.si_code at gdb's first stop;
  fault_fn  the report's fault function is the function gdb stops in at the
            first signal (the fault that started it; a handler may die of
            another signal later);
  exact     a fault the report calls exact is the instruction gdb stops at
            (same function and offset; code without a function: same
            address).  A fault not claimed exact passes: it is honest;
  frames    gdb's named frames at that stop (inline frames included), from
            the top down to main, appear in btrace's stack of the crashed
            thread in the same order;
  tail      the JSON tail of the crashed thread ends at the fault: its last
            entry is a block that holds the fault, or whose straight-line
            (not branching) last instruction is followed by it;
  exit      btrace's exit status is the native one (128+N for signal N);
  stdout    btrace's stdout is the native one (hex numbers and pids masked);
  stderr    btrace's stderr, less btrace's own "btrace record:" lines, is
            the native one (masked the same way);
  nosnap    (programs that handle their signals and exit normally) no
            snapshot is written.

A check fails when btrace's answer differs.  The only exception: a
(program, check) listed in the "Known limits" section of docs/report.md as
`PROGRAM:CHECK` (fnmatch patterns allowed, e.g. `java-*:frames`), with its
root cause, is reported as TAP TODO.

By default only the quick set runs (every class, the cheapest program of
each); `--full` or BTRACE_CORPUS=full runs them all.  A program whose
toolchain or interpreter is missing on this machine is skipped with the
reason.  A summary per check (pass/total) is printed as TAP comments and
written to BUILDDIR/corpus-summary.txt (and .json, with every result).
With BT_CORPUS_KEEP=DIR each program's snapshot is kept as DIR/NAME.btrace
(its binaries stay in BUILDDIR), to compare two builds' reports on them.
"""
import concurrent.futures
import fnmatch
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(HERE, 'progs')
TOP = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(TOP, 'tests', 'e2e'))
import e2elib as L  # noqa: E402

CHECKS = ['signal', 'si_code', 'fault_fn', 'exact', 'frames', 'tail',
          'exit', 'stdout', 'stderr', 'nosnap']
CRASH_CHECKS = CHECKS[:-1]
HANDLED_CHECKS = ['exit', 'stdout', 'stderr', 'nosnap']

# Limits of one run: these catch hangs, not slowness (the emulator runs a
# JVM 20x slower than natively on a busy machine).
RUN_TIMEOUT = 900
# The emulator's memory: QEMU 7.2 grows without bound on some programs
# (an ASan build's shadow); the run is ended past this resident size.
MAX_RSS = 3 << 30


def C(name, srcs, flags=(), **kw):
    return dict(name=name, lang='c', srcs=list(srcs), flags=list(flags),
                **kw)


OPT = ['-g', '-fno-omit-frame-pointer']
JIT_NA = {'fault_fn': 'JIT code has no function',
          'frames': 'gdb cannot unwind JIT code without CFI'}
# Kills from outside land anywhere in a loop: the instruction differs from
# run to run, natively too.
SPIN_NA = {'exact': 'the instruction a signal from outside lands on '
                    'differs from run to run'}
# Runtimes' own fault handlers print the state of the runtime (addresses,
# thread ids, timings, a different path or pid each run).
RUNTIME_ERR_NA = {'stderr': 'the runtime prints addresses and timings'}

# The signals sigvals.c sends itself and handles (its crash is a SIGSEGV
# after them): gdb passes them on without stopping.
SIGVAL_PASS = ('SIGUSR1', 'SIGUSR2', 'SIGALRM')

CASES = [
    # --- classes that work: NULL deref at every -O level and build kind --
    *[C('c-null-O%s' % o, ['null.c'], ['-O%s' % o] + OPT,
        quick=(o == '2'), cls='null-deref, -O levels')
      for o in ('0', '1', '2', '3', 's', 'g')],
    C('c-null-clang-O2', ['null.c'], ['-O2'] + OPT, cc='clang',
      cls='null-deref, clang'),
    C('c-null-static', ['null.c'], ['-O1', '-static'] + OPT, quick=True,
      cls='static'),
    C('c-null-static-pie', ['null.c'], ['-O1', '-static-pie'] + OPT,
      quick=True, cls='static-pie'),
    C('c-null-stripped', ['null.c'], ['-O2'], strip=True, quick=True,
      cls='stripped'),
    C('c-abort', ['abort.c'], ['-O1'] + OPT, quick=True,
      cls='abort, inline frames in libc'),
    C('c-fnptr', ['fnptr.c'], ['-O1'] + OPT, quick=True, cls='fnptr'),
    C('c-ud2', ['ud2.c'], ['-O2'] + OPT, quick=True, cls='ud2'),
    C('c-div0', ['div0.c'], ['-O1'] + OPT, quick=True, cls='div by zero'),
    C('c-threads', ['threads.c'], ['-O1', '-pthread'] + OPT, args=['4'],
      quick=True, cls='threads'),
    C('c-dlopen', ['dlopen.c'], ['-O1'] + OPT, lib='crashlib.c',
      args=['@lib', 'keep'], quick=True, cls='dlopen'),
    # --- 1. exactness inside a block, with no guest core ----------------
    C('c-exact-rlimit', ['midblock.c'], ['-O1', '-pthread'] + OPT,
      args=['rlimit'], quick=True, cls='exact: RLIMIT_CORE 0'),
    C('c-exact-rmcwd', ['midblock.c'], ['-O1', '-pthread'] + OPT,
      args=['rmcwd'], cls='exact: deleted cwd'),
    C('c-exact-proc', ['midblock.c'], ['-O1', '-pthread'] + OPT,
      args=['proc'], cls='exact: unwritable cwd'),
    C('c-exact-exit', ['midblock.c'], ['-O1', '-pthread'] + OPT,
      args=['exit'], quick=True, cls='exact: main thread exited'),
    # --- 2. handlers that do not simply re-raise -------------------------
    # (chatty: the handler prints and _exit(2)s: an exit, not a death by
    # signal, so no crash snapshot; reraise's values: recorded also with
    # every loop turn kept, bench/values-qemu.py's runs(); altstack:
    # descend()'s recursion meets the guard page at its store to pad[] or
    # at its call's push, depending on where the stack starts: the
    # environment's size, the clone's path, the emulator's stack layout)
    *[C('c-handler-%s' % m, ['handlers.c'], ['-O1'] + OPT, args=[m],
        quick=True, cls='handler: %s' % m, values_kept=(m == 'reraise'),
        **({'kind': 'handled'} if m == 'chatty' else {}),
        **({'na': {'exact': 'which of descend()\'s instructions meets the '
                            'guard page depends on where the stack '
                            'starts, natively too'}}
           if m == 'altstack' else {}))
      for m in ('nodefer', 'reraise', 'abort', 'altstack', 'longjmp',
                'chatty')],
    # --- 2b. signals delivered at a system call's return, then a crash
    # (their register values against QEMU's log: bench/values-qemu.py) --
    # (their floors: tests/decode/values-floors.txt)
    *[C('c-sigval-%s' % m, ['sigvals.c'], ['-O1'] + OPT, args=[m],
        gdb_pass=SIGVAL_PASS,
        cls='signal at a system call\'s return: %s' % m)
      for m in ('raise-crash', 'raise-ret', 'kill-loop', 'tgkill',
                'restart', 'eintr', 'nested', 'altstack')],
    # the origin of the handler's rax: the kernel's delivery, not the call
    C('c-sigval-rax-handler', ['sigvals.c'], ['-O1'] + OPT,
      args=['rax-handler'], gdb_pass=SIGVAL_PASS,
      origin_says='rax set by the kernel for a signal handler entered at '
                  'this call\'s return: 0x0',
      cls='signal at a system call\'s return: rax-handler'),
    # --- 3. handled signals are not crashes ------------------------------
    *[C('c-handled-%s' % m, ['handled.c'], ['-O1'] + OPT, args=[m],
        kind='handled', quick=(m == 'all'), cls='handled signals')
      for m in ('segv', 'ill', 'trap', 'fpe', 'all')],
    # --- 3b. faults handled before a real one, a fault in a handler ------
    # (the report names the last, fatal fault: gdb's last stop)
    C('c-probe-exit', ['probe.c'], ['-O1'] + OPT, args=['exit'],
      kind='handled', quick=True, cls='handled, then exit(1)'),
    *[C('c-probe-%s' % m, ['probe.c'], ['-O1'] + OPT, args=[m], fatal=True,
        quick=True, cls='handled, then a real fault: %s' % m)
      for m in ('segv', 'fpe', 'skip')],
    C('c-probe-alrm', ['probe.c'], ['-O1'] + OPT, args=['alrm'],
      fatal=True, quick=True, cls='fault in a SIGALRM handler'),
    # --- 4. many threads -------------------------------------------------
    C('c-threads-80', ['threads.c'], ['-O1', '-pthread'] + OPT,
      args=['80'], quick=True, cls='>64 threads'),
    C('c-threads-130', ['threads.c'], ['-O1', '-pthread'] + OPT,
      args=['130'], cls='>64 threads'),
    # --- 5. code as it ran -----------------------------------------------
    C('c-dlopen-deleted', ['dlopen.c'], ['-O1'] + OPT, lib='crashlib.c',
      args=['@lib', 'delete'], copy=True, quick=True,
      cls='deleted library'),
    C('c-dlopen-replaced', ['dlopen.c'], ['-O1'] + OPT, lib='crashlib.c',
      args=['@lib', 'replace'], copy=True, cls='replaced library'),
    C('c-exe-deleted', ['dlopen.c'], ['-O1'] + OPT, lib='crashlib.c',
      args=['@lib', 'self'], copy=True, quick=True,
      cls='deleted executable'),
    C('c-jit-memfd', ['jit.c'], ['-O1'] + OPT, args=['memfd'], na=JIT_NA,
      quick=True, cls='memfd code'),
    C('c-jit-anon', ['jit.c'], ['-O1'] + OPT, args=['anon'], na=JIT_NA,
      cls='JIT code'),
    C('c-jit-rewrite', ['jit.c'], ['-O1'] + OPT, args=['rewrite'],
      na=JIT_NA, quick=True, cls='JIT rewritten in place'),
    C('c-vdso', ['vdso.c'], ['-O1'] + OPT, quick=True, cls='vDSO'),
    # --- 6. signals from outside -----------------------------------------
    C('c-kill-sleep', ['waitkill.c'], ['-O1'] + OPT, args=['sleep'],
      kill='SIGSEGV', quick=True, cls='kill -SEGV while sleeping'),
    C('c-kill-spin', ['waitkill.c'], ['-O1'] + OPT, args=['spin'],
      kill='SIGSEGV', na=dict(SPIN_NA, fault_fn='the signal lands in busy '
                              'or in step, natively too'),
      cls='kill -SEGV while spinning'),
    # --- 13. a tight loop killed with SIGABRT ----------------------------
    C('c-tight-loop', ['waitkill.c'], ['-O1'] + OPT, args=['tight'],
      kill='SIGABRT', na=SPIN_NA, quick=True, cls='tight loop, kill -ABRT'),
    # --- 7, 15. inline frames, LTO ---------------------------------------
    C('c-inline', ['inline.c'], ['-O2'] + OPT, quick=True,
      cls='inline frames'),
    C('c-lto', ['lto_main.c', 'lto_score.c'], ['-O3', '-flto'] + OPT,
      quick=True, cls='-O3 -flto'),
    # --- 9. emulator vs native -------------------------------------------
    C('c-fpe-traps', ['fpe.c'], ['-O1'] + OPT, libs=['-lm'], quick=True,
      cls='feenableexcept SIGFPE'),
    C('c-seccomp', ['seccomp.c'], ['-O1'] + OPT, quick=True,
      cls='seccomp SIGSYS'),
    C('c-asan', ['asan.c'], ['-O1', '-fsanitize=address'] + OPT,
      env={'ASAN_OPTIONS': 'abort_on_error=1:detect_leaks=0'},
      na=RUNTIME_ERR_NA, quick=True, cls='ASan build',
      # Natively 0.2 s and 30 MiB: two minutes or 1.5 GiB is a runaway.
      timeout=120, max_rss=3 << 29),
    # --- 11. stack overflow, 12. int3, 14. swapcontext -------------------
    C('c-stack-overflow', ['stack.c'], ['-O0'] + OPT, quick=True,
      cls='stack overflow'),
    C('c-int3', ['int3.c'], ['-O1'] + OPT, quick=True, cls='int3'),
    C('c-swapcontext', ['coro.c'], ['-O1'] + OPT, quick=True,
      cls='swapcontext'),
    # --- 16. programs a new user brings (gdbcmp): callbacks from libc,
    # exit-time code, thread pools, reloaded libraries, GOT calls, tail
    # calls, asynchronous handlers, glibc's own aborts --------------------
    C('c-qsort-cb', ['qsort_cb.c'], ['-O2'] + OPT, quick=True,
      cls='crash in a qsort comparator (libc calls back)'),
    C('c-pool-condvar', ['pool.c'], ['-O2', '-pthread'] + OPT, quick=True,
      cls='thread pool, main waits on a condvar'),
    C('c-dlopen-reload', ['reload.c'], ['-O1'] + OPT, lib='crashlib.c',
      args=['@lib'], quick=True,
      cls='dlopen, dlclose, dlopen at another address'),
    C('c-noplt', ['noplt_main.c'], ['-O2', '-fno-plt'] + OPT,
      lib='noplt_lib.c', libflags=['-O2', '-fno-plt'] + OPT, link=True,
      quick=True, cls='-fno-plt library, GOT calls into libc'),
    C('c-tailcall-O2', ['tailcall.c'], ['-O2'] + OPT, quick=True,
      cls='tail-call chain at -O2'),
    C('c-sigalrm-onstack', ['sigalrm.c'], ['-O1'] + OPT, quick=True,
      cls='SIGALRM handler on a sigaltstack faults'),
    C('c-assert-O3', ['assert_O3.c'], ['-O3'] + OPT, quick=True,
      cls='assert() in -O3 code (inlined, vectorized)'),
    C('c-alloca-overflow', ['alloca.c'], ['-O1'] + OPT, quick=True,
      cls='stack overflow through alloca'),
    C('c-double-free', ['double_free.c'], ['-O1'] + OPT, quick=True,
      cls='double free: abort from malloc_printerr'),
    dict(name='cxx-exit-atexit', lang='cxx', srcs=['exit_crash.cc'],
         flags=['-O1'] + OPT, args=['atexit'], quick=True,
         cls='C++ crash in an atexit handler during exit()'),
    dict(name='cxx-exit-static', lang='cxx', srcs=['exit_crash.cc'],
         flags=['-O1'] + OPT, args=['static'],
         cls='C++ crash in a static destructor during exit()'),
    dict(name='cxx-function-lambda', lang='cxx', srcs=['cxx_fn.cc'],
         flags=['-O2'] + OPT, args=['lambda'], quick=True,
         cls='C++ std::function holding a lambda'),
    dict(name='cxx-vcall-deleted', lang='cxx', srcs=['cxx_fn.cc'],
         flags=['-O2'] + OPT, args=['vcall'], quick=True,
         cls='C++ virtual call on a deleted object'),
    dict(name='py-ctypes-callback', lang='python', srcs=['py_ctypes_cb.py'],
         cls='python ctypes callback from qsort'),
    # --- C++ --------------------------------------------------------------
    dict(name='cxx-uncaught', lang='cxx', srcs=['cxx_throw.cc'],
         flags=['-O1'] + OPT, quick=True, cls='C++ uncaught exception'),
    dict(name='cxx-virtual-null', lang='cxx', srcs=['cxx_virtual.cc'],
         flags=['-O1'] + OPT, cls='C++ virtual call on NULL'),
    dict(name='cxx-lambda-O3', lang='cxx', srcs=['cxx_lambda.cc'],
         flags=['-O3'] + OPT, cls='C++ -O3 template/lambda'),
    # --- Rust --------------------------------------------------------------
    dict(name='rust-null', lang='rust', srcs=['rust_null.rs'],
         flags=['-C', 'opt-level=1'], quick=True, cls='Rust'),
    dict(name='rust-panic-abort', lang='rust', srcs=['rust_panic.rs'],
         flags=['-C', 'opt-level=1', '-C', 'panic=abort'],
         cls='Rust panic=abort'),
    dict(name='rust-stack-overflow', lang='rust', srcs=['rust_overflow.rs'],
         flags=['-C', 'opt-level=0'],
         cls='Rust overflow handler (print, abort)'),
    # --- Go ----------------------------------------------------------------
    # A panic exits 2: the runtime handled the SIGSEGV and went on (to
    # print and exit), so no process died of a signal and no crash
    # snapshot is written, as with the hardware backends
    # (docs/qemu-backend.md; `--on exit` or GOTRACEBACK=crash give one).
    dict(name='go-nil-exit2', lang='go', srcs=['go_nil.go'],
         na=RUNTIME_ERR_NA, quick=True, kind='handled',
         cls='Go panic: SIGSEGV, handler, exit 2'),
    dict(name='go-nil-crash', lang='go', srcs=['go_nil.go'],
         env={'GOTRACEBACK': 'crash'}, na=RUNTIME_ERR_NA, quick=True,
         cls='Go GOTRACEBACK=crash'),
    dict(name='go-unsafe-crash', lang='go', srcs=['go_unsafe.go'],
         env={'GOTRACEBACK': 'crash'}, na=RUNTIME_ERR_NA,
         cls='Go unexpected fault address'),
    # --- Python ------------------------------------------------------------
    dict(name='py-ctypes', lang='python', srcs=['py_ctypes.py'],
         quick=True, cls='python ctypes'),
    dict(name='py-faulthandler', lang='python', srcs=['py_ctypes.py'],
         args=['faulthandler'], na=RUNTIME_ERR_NA,
         cls='python faulthandler (dump, re-raise)'),
    dict(name='py-abort', lang='python', srcs=['py_abort.py'],
         cls='python os.abort'),
    dict(name='py-handled', lang='python', srcs=['py_handled.py'],
         kind='handled', cls='python handled signals'),
    dict(name='py-shebang', lang='script', srcs=['py_shebang.py'],
         interp='python3', quick=True, cls='#! script launched directly'),
    # --- Perl ----------------------------------------------------------------
    dict(name='pl-segv', lang='perl', srcs=['pl_segv.pl'], quick=True,
         cls='perl'),
    dict(name='pl-kill', lang='perl', srcs=['pl_kill.pl'],
         cls='perl kill self'),
    dict(name='pl-handled', lang='perl', srcs=['pl_handled.pl'],
         kind='handled', quick=True, cls='perl handled signals'),
    # --- Node ----------------------------------------------------------------
    dict(name='node-abort', lang='node', srcs=['node_abort.js'],
         na=RUNTIME_ERR_NA, cls='node process.abort'),
    dict(name='node-kill', lang='node', srcs=['node_kill.js'],
         cls='node kill self'),
    dict(name='node-ok', lang='node', srcs=['node_ok.js'], kind='handled',
         cls='node exits 0'),
    # --- Java ----------------------------------------------------------------
    dict(name='java-unsafe', lang='java', srcs=['Unsafe.java'],
         na=dict(RUNTIME_ERR_NA, stdout='hs_err path and pid', **JIT_NA),
         cls='java Unsafe (hs_err, abort)'),
    dict(name='java-npe-handled', lang='java', srcs=['Npe.java'],
         kind='handled', cls='java implicit null checks (handled SIGSEGV)'),
    # --- LuaJIT ----------------------------------------------------------------
    dict(name='luajit-ffi-jit', lang='luajit', srcs=['lj_ffi.lua'],
         na=JIT_NA, quick=True, cls='LuaJIT trace (JIT code)'),
    dict(name='luajit-ffi-interp', lang='luajit', srcs=['lj_ffi.lua'],
         args=['interp'], cls='LuaJIT interpreter'),
    # --- shell -------------------------------------------------------------
    dict(name='sh-kill-self', lang='script', srcs=['sh_kill.sh'],
         interp='bash', quick=True, cls='bash script kills itself'),
    dict(name='sh-exec-crash', lang='script', srcs=['sh_exec.sh'],
         interp='sh', args=['@bin:c-null-O1'], quick=True,
         cls='#! script execs a crashing program'),
]

TOOLS = {'c': 'gcc', 'cxx': 'g++', 'rust': 'rustc', 'go': 'go',
         'python': 'python3', 'perl': 'perl', 'node': 'node',
         'java': 'java', 'luajit': 'luajit'}


# ---------------------------------------------------------------- building

class Skip(Exception):
    pass


_build_lock = threading.Lock()


def stale(out, srcs, cmd=None):
    """out is missing, older than a source, or was built by another
    command (recorded next to it in out.cmd)."""
    if not os.path.exists(out):
        return True
    if cmd is not None:
        try:
            with open(out + '.cmd') as f:
                if f.read() != repr(cmd):
                    return True
        except OSError:
            return True
    t = os.path.getmtime(out)
    return any(os.path.getmtime(s) > t for s in srcs)


def built(out, cmd):
    with open(out + '.cmd', 'w') as f:
        f.write(repr(cmd))


def sh(cmd, **kw):
    r = subprocess.run(cmd, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT, **kw)
    if r.returncode != 0:
        raise RuntimeError('%s: exit %d: %s' % (' '.join(cmd), r.returncode,
                                               r.stderr.strip()[-600:]))
    return r


def need(tool):
    # Debian's own first (a developer's PATH may start with other builds).
    p = shutil.which(tool, path='/usr/bin:/bin') or shutil.which(tool)
    if not p:
        raise Skip('%s is not installed' % tool)
    return p


def build(case, bindir):
    """argv (list) of the program, built into bindir when compiled, and the
    argv gdb runs (a #! script runs through its interpreter there)."""
    lang = case['lang']
    srcs = [os.path.join(SRC, s) for s in case['srcs']]
    name = case['name']
    out = os.path.join(bindir, name)
    with _build_lock:
        if lang in ('c', 'cxx'):
            cc = need(case.get('cc') or TOOLS[lang])
            if case.get('lib'):
                lib = os.path.join(bindir, 'lib%s.so' % name)
                lsrc = os.path.join(SRC, case['lib'])
                lcmd = [cc, '-shared', '-fPIC'] + \
                    case.get('libflags', ['-O1', '-g']) + ['-o', lib, lsrc]
                if stale(lib, [lsrc], lcmd):
                    sh(lcmd)
                    built(lib, lcmd)
            # link: the program is linked against the library (found
            # through its RUNPATH) rather than dlopen()ing it.
            linked = ['-L' + bindir, '-l' + name,
                      '-Wl,-rpath,' + bindir] if case.get('link') else []
            cmd = [cc] + case['flags'] + ['-o', out] + srcs + linked + \
                case.get('libs', []) + \
                (['-pthread'] if '-pthread' in case['flags'] else [])
            if stale(out, srcs, cmd + ['strip'] * bool(case.get('strip'))):
                sh(cmd)
                if case.get('strip'):
                    sh(['strip', '-s', out])
                built(out, cmd + ['strip'] * bool(case.get('strip')))
            return [out], [out]
        if lang == 'rust':
            rustc = need('rustc')
            cmd = [rustc, '-g', '--edition', '2021'] + case['flags'] + \
                ['-o', out, srcs[0]]
            if stale(out, srcs, cmd):
                sh(cmd)
                built(out, cmd)
            return [out], [out]
        if lang == 'go':
            go = need('go')
            cmd = [go, 'build', '-o', out, srcs[0]]
            if stale(out, srcs, cmd):
                env = dict(os.environ, GOCACHE=os.path.join(bindir, 'go-cache'),
                           GOPATH=os.path.join(bindir, 'go-path'),
                           GO111MODULE='off', GOFLAGS='')
                sh(cmd, env=env)
                built(out, cmd)
            return [out], [out]
        if lang == 'java':
            java = need('java')
            javac = need('javac')
            jdir = os.path.join(bindir, 'java')
            cls = os.path.splitext(case['srcs'][0])[0]
            if stale(os.path.join(jdir, cls + '.class'), srcs):
                sh([javac, '-nowarn', '-d', jdir, srcs[0]])
            argv = [java, '-Xmx64m', '-XX:-CreateCoredumpOnCrash',
                    '-XX:+UseSerialGC', '-XX:TieredStopAtLevel=1',
                    '-cp', jdir, cls]
            return argv, argv
        if lang == 'script':
            need(case['interp'])
            dst = os.path.join(bindir, case['srcs'][0])
            if stale(dst, srcs):
                shutil.copyfile(srcs[0], dst)
                os.chmod(dst, 0o755)
            with open(dst) as f:
                first = f.readline()
            interp = first[2:].split()
            return [dst], interp + [dst]
        interp = need(TOOLS[lang])
        argv = [interp, srcs[0]]
        return argv, argv


# ----------------------------------------------------------------- running

def rss_of_group(pgid):
    total = 0
    for d in os.listdir('/proc'):
        if not d.isdigit():
            continue
        try:
            with open('/proc/%s/stat' % d) as f:
                st = f.read()
            fields = st[st.rindex(')') + 2:].split()
            if int(fields[2]) != pgid:
                continue
            total += int(fields[21]) * os.sysconf('SC_PAGE_SIZE')
        except (OSError, ValueError, IndexError):
            continue
    return total


class Run:
    def __init__(self, rc, out, err, note=None):
        self.rc, self.out, self.err, self.note = rc, out, err, note


def run(argv, cwd, env, kill=None, guard_rss=None, timeout=RUN_TIMEOUT):
    """Run argv in its own process group; kill: send that signal to the
    pid the program prints ("pid N") once it printed it.  The run is ended
    (and says so) past the timeout or past guard_rss bytes resident."""
    p = subprocess.Popen(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    outbuf, errbuf = [], []
    pid_seen = threading.Event()
    target = []

    def reader(stream, buf, look):
        for line in iter(stream.readline, b''):
            buf.append(line)
            if look and not pid_seen.is_set():
                m = re.match(rb'^pid (\d+)$', line.strip())
                if m:
                    target.append(int(m.group(1)))
                    pid_seen.set()
        stream.close()

    ts = [threading.Thread(target=reader, args=(p.stdout, outbuf, True)),
          threading.Thread(target=reader, args=(p.stderr, errbuf, False))]
    for t in ts:
        t.start()
    note = None
    t0 = time.monotonic()
    killed = False
    while p.poll() is None:
        if time.monotonic() - t0 > timeout:
            note = 'ended by the corpus runner after %ds' % timeout
            break
        if guard_rss and rss_of_group(p.pid) > guard_rss:
            note = ('ended by the corpus runner: the process group grew '
                    'past %d MiB resident' % (guard_rss >> 20))
            break
        if kill and not killed and pid_seen.is_set():
            # Let it settle into its loop or sleep first.
            time.sleep(1.0)
            try:
                os.kill(target[0], getattr(signal, kill))
            except ProcessLookupError:
                pass
            killed = True
        time.sleep(0.05)
    if note:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
    p.wait()
    for t in ts:
        t.join()
    out = b''.join(outbuf).decode('utf-8', 'replace')
    err = b''.join(errbuf).decode('utf-8', 'replace')
    rc = p.returncode
    if rc < 0:
        rc = 128 - rc
    if kill and not killed:
        note = (note or '') + ' (never printed its pid: not killed)'
    return Run(rc, out, err, note)


def gdb_run(argv, cwd, env, kill=None, passed=()):
    fd, out = tempfile.mkstemp(prefix='gdb.', suffix='.json', dir=cwd)
    os.close(fd)
    e = dict(env, CORPUS_GDB_OUT=out)
    if passed:
        # signals the program handles and goes on: not stops
        e['CORPUS_GDB_PASS'] = ','.join(passed)
    r = run(['gdb', '-batch', '-nx', '-x', os.path.join(HERE, 'gdbdump.py'),
             '--args'] + argv, cwd, e, kill=kill)
    try:
        with open(out) as f:
            g = json.load(f)
    except (OSError, ValueError):
        g = {'stops': [], 'exit_code': None, 'exit_signal': None,
             'error': 'gdb wrote nothing: %s' % r.err.strip()[-300:]}
    os.unlink(out)
    return g


# ---------------------------------------------------------------- checking

def strip_cxx(name):
    """A C++/Rust function name without parameters, templates, return type
    and Rust's hash, so gdb's frame names and demangled symbols compare."""
    if not name:
        return name
    name = re.sub(r'\s*\[clone [^\]]*\]', '', name)
    prev = None
    while prev != name:
        prev = name
        name = re.sub(r'\([^()]*\)', '', name)
    prev = None
    while prev != name:
        prev = name
        name = re.sub(r'<[^<>]*>', '', name)
    name = re.sub(r'::h[0-9a-f]{16}$', '', name.strip())
    name = re.sub(r'\s+const$', '', name)
    return name.split()[-1] if name.split() else name


def same_fn(a, b):
    """Equal names, or one the other qualified (an inline frame's DWARF
    name is `operator()` where gdb shows `std::function<...>::operator()`).
    """
    ra, rb = L.norm(strip_cxx(a)), L.norm(strip_cxx(b))
    a, b = fname(a), fname(b)
    if not a or not b:
        return a == b
    # qualified: compared before fname() strips leading underscores
    # (`std::__invoke_impl` and `__invoke_impl`)
    return a == b or a.endswith('::' + b) or b.endswith('::' + a) or \
        ra.endswith('::' + rb) or rb.endswith('::' + ra)


def variant(name):
    """The name before IFUNC normalization (`__strlen_avx2`)."""
    n = strip_cxx(name)
    return n.lstrip('_').replace('memcpy_', 'memmove_') if n else n


def fname(name):
    """Names compared modulo glibc's aliases of one function (`__x`,
    `__GI___x`, `x`: e2elib.norm, then the leading underscores)."""
    n = L.norm(strip_cxx(name))
    if n:
        n = n.lstrip('_')
        # glibc's memcpy variants are aliases of the memmove ones.
        n = re.sub(r'^memcpy_\*$', 'memmove_*', n)
    return n


SIGNAMES = {getattr(signal, n): n for n in dir(signal)
            if n.startswith('SIG') and not n.startswith('SIG_')
            and n not in ('SIGIOT', 'SIGCLD', 'SIGPOLL')}


def mask(text):
    text = re.sub(r'0x[0-9a-fA-F]+', '0xX', text)
    text = re.sub(r'\bpid \d+', 'pid N', text)
    text = re.sub(r"(thread '[^']*') \(\d+\)", r'\1 (N)', text)
    return text


def btrace_lines(err):
    """The program's stderr: without btrace's own messages, which begin
    with "btrace:" or "btrace record:" and wrap at 80 columns onto lines
    indented by two spaces (bt_msg)."""
    out, ours = [], False
    for ln in err.splitlines():
        ours = bool(re.match(r'^btrace( record)?:', ln) or
                    (ours and re.match(r'^  \S', ln)))
        if not ours:
            out.append(ln)
    return '\n'.join(out)


def crashed_thread(rep):
    for t in rep.get('threads') or []:
        if t.get('crashed'):
            return t
    return None


def first_fault(g):
    for s in g.get('stops', []):
        if s.get('signal'):
            return s
    return None


def fault_stop(g, case):
    """gdb's stop at the fault the report must name: the first (the fault
    that started it), or for a case with fatal=True (faults handled and
    gone on from before the one that killed it) the last, the fatal one."""
    if not case.get('fatal'):
        return first_fault(g)
    stops = [s for s in g.get('stops', []) if s.get('signal')]
    return stops[-1] if stops else None


# Last instructions after which the next one run is not the next in memory
# (a system call or an int3 comes back to the next one).
BRANCH = re.compile(r'^(j\w*|call\w*|ret\w*|loop\w*|iret\w*|ud2|hlt)$')


def last_insn(btrace, snap, tid, addr):
    try:
        r = subprocess.run([btrace, 'decode', snap, '--insn', '--last', '50',
                            '--thread', str(tid)], capture_output=True,
                           text=True, timeout=300)
    except subprocess.TimeoutExpired:
        return None
    want = '0x%x' % addr
    found = None
    for ln in r.stdout.splitlines():
        m = re.match(r'^  (0x[0-9a-f]+)\s+(?:<[^>]*>\s+)?(.*)$', ln)
        if m and m.group(1) == want:
            found = m.group(2).strip()
    return found


def check_case(case, nat, g, rec, rep, snaps, btrace, snap):
    """{check: (ok, message)} for the checks that apply."""
    res = {}
    kind = case.get('kind', 'crash')
    applies = HANDLED_CHECKS if kind == 'handled' else CRASH_CHECKS
    na = case.get('na', {})
    res['exit'] = (rec.rc == nat.rc,
                   'btrace exit %d, native %d%s' % (
                       rec.rc, nat.rc,
                       ' (%s)' % rec.note if rec.note else ''))
    res['stdout'] = (mask(rec.out) == mask(nat.out),
                     'stdout %r vs native %r' % (rec.out[-200:],
                                                 nat.out[-200:]))
    berr = btrace_lines(rec.err)
    res['stderr'] = (mask(berr).strip() == mask(nat.err).strip(),
                     'stderr %r vs native %r' % (berr[-300:],
                                                 nat.err[-300:]))
    if kind == 'handled':
        res['nosnap'] = (not snaps, 'snapshots written: %s' %
                         (', '.join(snaps) or 'none'))
    else:
        dsig = nat.rc - 128 if nat.rc > 128 else None
        dname = SIGNAMES.get(dsig)
        ff = fault_stop(g, case)
        fsig = ff.get('signal') if ff else None
        sig = (rep or {}).get('signal') or {}
        why = '' if rep else ' (no report: %s)' % (
            rec.note or btrace_lines_last(rec.err))
        # The signal of the fault that started it (gdb's first stop), as
        # e2e-crash has it; when the process then died of another one, the
        # report must name that one too (anywhere outside the threads).
        both = True
        if rep and dname and fsig and dname != fsig:
            top = json.dumps({k: v for k, v in rep.items()
                              if k != 'threads'})
            both = '"%s"' % dname in top
        res['signal'] = (fsig is not None and sig.get('name') == fsig and
                         both,
                         'report %s, gdb first stop %s, native death %s%s%s'
                         % (sig.get('name'), fsig, dname,
                            '' if both else ' (the death signal is not in '
                            'the report)', why))
        gcode = ff.get('si_code') if ff else None
        res['si_code'] = (ff is not None and sig.get('code') == gcode,
                          'report si_code %s, gdb %s (%s)' % (
                              sig.get('code'), gcode, fsig))
        fault = (rep or {}).get('fault') or {}
        gfn = ff.get('function') if ff else None
        res['fault_fn'] = (ff is not None and rep is not None and
                           same_fn(fault.get('function'), gfn),
                           'report %s, gdb %s (%s)' % (
                               fault.get('function'), gfn,
                               ff.get('signal') if ff else 'no stop'))
        if not fault:
            res['exact'] = (False, 'no fault in the report%s' % why)
        elif not fault.get('exact'):
            res['exact'] = (True, 'not claimed exact (%s+%s, %s)' % (
                fault.get('function'), fault.get('offset'),
                fault.get('how')))
        elif ff is None:
            res['exact'] = (False, 'gdb did not stop')
        else:
            # gdb's pc after an int3 is the next instruction (the trap
            # is reported after it): the int3 itself is exact too.
            back = (0, 1) if ff.get('signal') == 'SIGTRAP' else (0,)
            if (fault.get('function') or gfn) and \
                    same_fn(fault.get('function'), gfn) and \
                    variant(fault.get('function')) != variant(gfn):
                # Another IFUNC variant (the emulated CPU has other
                # features): the offsets are not comparable.
                same = True
            elif not fault.get('function') and gfn and ff.get('pc') and \
                    fault.get('ip') and fault.get('module') and \
                    ff.get('module'):
                # btrace has no name for it (the file's symbols are gone):
                # the same module and the same offset in the page.
                fip = int(fault.get('ip'), 16)
                same = any(L.base(fault.get('module')) ==
                           L.base(ff.get('module')) and
                           (fip & 0xfff) == ((ff.get('pc') - b) & 0xfff)
                           for b in back)
            elif fault.get('function') or gfn:
                same = (same_fn(fault.get('function'), gfn) and
                        ff.get('offset') is not None and
                        fault.get('offset') in
                        [ff['offset'] - b for b in back])
            else:
                # No function either side: the same address (code at a
                # fixed address), or the same module and the same offset
                # in the page (load addresses differ under the emulator).
                fip = int(fault.get('ip'), 16)
                same = any(fip == ff.get('pc') - b or
                           (L.base(fault.get('module')) ==
                            L.base(ff.get('module')) and
                            (fip & 0xfff) == ((ff.get('pc') - b) & 0xfff))
                           for b in back)
            res['exact'] = (same, 'exact %s+%s (ip %s), gdb %s+%s (pc 0x%x)'
                            % (fault.get('function'), fault.get('offset'),
                               fault.get('ip'), gfn, ff.get('offset'),
                               ff.get('pc') or 0))
        thr = crashed_thread(rep or {})
        # gdb shows a signal frame as a frame of the trampoline
        # (`<signal handler called>`, __restore_rt); btrace marks the
        # handler's frame above it (`signal`): the same frame here.
        bstack = []
        for f in (thr or {}).get('stack', []):
            bstack.append(f.get('function'))
            if f.get('signal'):
                bstack.append('__restore_rt')
        gframes = []
        for f in (ff or {}).get('frames', []):
            if f.get('function'):
                gframes.append(f['function'] + (' [inline]' if f.get('inline')
                                                else ''))
            if f.get('function') == 'main' or len(gframes) >= 8:
                break
        want = [x.replace(' [inline]', '') for x in gframes]
        i = 0
        for w in bstack:
            if i < len(want) and same_fn(w, want[i]):
                i += 1
        res['frames'] = (bool(want) and i == len(want),
                         'gdb %s; btrace %s' % (' < '.join(gframes) or '-',
                                                ' < '.join(map(str, bstack))
                                                or '-'))
        if not res['frames'][0]:
            # what a failure needs to be understood from a CI log alone:
            # the frames' flags and the last calls that built them
            fl = ['%s%s%s' % (f.get('function'),
                              ' [partial]' if f.get('partial') else '',
                              ' [tail]' if f.get('tail_call') else '')
                  for f in (thr or {}).get('stack', [])]
            calls = ['%s%s%s%s' % ('  ' * (c.get('depth') or 0),
                                   c.get('function') or c.get('ip'),
                                   ' [partial]' if c.get('partial') else '',
                                   ' [tail]' if c.get('tail_call') else '')
                     for c in ((thr or {}).get('calls') or [])[-16:]]
            res['frames'] = (False, res['frames'][1] +
                             '\nstack: %s\nlast calls:\n%s'
                             % (' < '.join(fl), '\n'.join(calls)))
        tail = (thr or {}).get('tail') or []
        dis = (ff or {}).get('disassembly')
        if not fault or not tail:
            res['tail'] = (False, 'no %s' % ('fault' if not fault else
                                             'tail'))
        elif tail[-1].get('ip') is None:
            res['tail'] = (False, 'the tail ends with a gap: %s' %
                           tail[-1].get('gap'))
        elif fault.get('ip') is None:
            # The fault known only to its block (not exact): the tail must
            # end at that block, and the block must hold gdb's faulting
            # instruction (function and offsets: load addresses differ).
            blk = fault.get('block') or {}
            goff = (ff or {}).get('offset')
            # Another IFUNC variant than gdb's (the emulated CPU has other
            # features): the offsets are not comparable, the function is.
            other = variant(blk.get('function')) != variant(gfn)
            ok = (tail[-1].get('fault') is True and blk and
                  tail[-1].get('ip') == blk.get('ip') and
                  same_fn(blk.get('function'), gfn) and
                  same_fn(blk.get('end_function'), gfn) and
                  (other or (goff is not None and
                             blk.get('offset') is not None and
                             blk.get('end_offset') is not None and
                             blk['offset'] <= goff <= blk['end_offset'])))
            res['tail'] = (ok, 'the tail ends at the fault\'s block %s+%s..%s'
                           ' (gdb %s+%s)' % (blk.get('function'),
                                             blk.get('offset'),
                                             blk.get('end_offset'), gfn, goff))
        else:
            fip = int(fault['ip'], 16)
            ip, end = int(tail[-1]['ip'], 16), int(tail[-1]['end_ip'], 16)
            if ip <= fip <= end:
                ok, msg = True, 'the last block holds the fault'
            elif end < fip <= end + 15 and dis and fault.get('offset') \
                    is not None and \
                    variant(tail[-1].get('function')) == \
                    variant(fault.get('function')) == variant(gfn):
                # gdb's disassembly of the function: the instruction at
                # end_ip must be the one right before the fault, and fall
                # through to it.
                eoff = end - (fip - fault['offset'])
                offs = [o for o, _ in dis]
                k = offs.index(eoff) if eoff in offs else None
                ins = dis[k][1] if k is not None else None
                mn = ins.split()[0] if ins else ''
                ok = (k is not None and k + 1 < len(dis) and
                      dis[k + 1][0] == fault['offset'] and
                      not BRANCH.match(mn))
                msg = 'the last block ends with %r (gdb) before the fault' \
                    % ins
            elif end < fip <= end + 15:
                ins = last_insn(btrace, snap, thr['tid'], end)
                mn = ins.split()[0] if ins else None
                ok = ins is not None and not BRANCH.match(mn or '')
                msg = 'the last block ends with %r before the fault' % ins
            else:
                ok, msg = False, 'the last block is elsewhere'
            res['tail'] = (ok, '%s: last 0x%x-0x%x (%s), fault 0x%x' % (
                msg, ip, end, tail[-1].get('function'), fip))
    return {k: v for k, v in res.items() if k in applies and k not in na}


def report_json(btrace, snap):
    """`btrace report --json` as a dict (a limit of RUN_TIMEOUT catches a
    hang); raises RuntimeError naming how it failed."""
    cmd = [btrace, 'report', '--json', snap]
    r = subprocess.run(cmd, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=RUN_TIMEOUT)
    if r.returncode != 0:
        raise RuntimeError('%s: exit %d: %s' % (' '.join(cmd), r.returncode,
                                               r.stderr.strip()[-300:]))
    return json.loads(r.stdout)


def btrace_lines_last(err):
    lines = [ln for ln in err.splitlines() if ln.startswith('btrace')]
    return lines[-1] if lines else 'no snapshot'


def run_case(case, btrace, bindir, workroot):
    """(results, notes): results {check: (ok, msg)}, or raises Skip."""
    argv, gargv = build(case, bindir)
    work = tempfile.mkdtemp(prefix=case['name'] + '.', dir=workroot)
    try:
        env = dict(os.environ)
        env.update(case.get('env', {}))
        env.pop('CORPUS_GDB_OUT', None)
        libpath = os.path.join(bindir, 'lib%s.so' % case['name'])

        def prepare(sub):
            d = os.path.join(work, sub)
            os.mkdir(d)
            a = list(argv)
            ga = list(gargv)
            if case.get('copy'):
                exe = os.path.join(d, os.path.basename(argv[0]))
                shutil.copy2(argv[0], exe)
                a[0] = ga[0] = exe
            args = []
            for x in case.get('args', []):
                if x == '@lib':
                    if case.get('copy'):
                        x = os.path.join(d, os.path.basename(libpath))
                        shutil.copy2(libpath, x)
                    else:
                        x = libpath
                elif x.startswith('@bin:'):
                    other = [c for c in CASES if c['name'] == x[5:]][0]
                    x = build(other, bindir)[0][0]
                args.append(x)
            return d, a + args, ga + args

        d, a, _ = prepare('native')
        nat = run(a, d, env, kill=case.get('kill'))
        d, _, ga = prepare('gdb')
        g = gdb_run(ga, d, env, kill=case.get('kill'),
                    passed=case.get('gdb_pass', ()))
        d, a, _ = prepare('btrace')
        snap = os.path.join(d, 'snap.btrace')
        rec = run([btrace, 'record', '--snapshot', '--backend', 'auto',
                   '-o', snap, '--'] + a, d, env, kill=case.get('kill'),
                  guard_rss=case.get('max_rss', MAX_RSS),
                  timeout=case.get('timeout', RUN_TIMEOUT))
        snaps = sorted(f for f in os.listdir(d) if f.endswith('.btrace'))
        keep = os.environ.get('BT_CORPUS_KEEP')
        if keep and os.path.exists(snap):
            # kept for comparing two builds' reports on the same snapshots
            os.makedirs(keep, exist_ok=True)
            shutil.copy2(snap, os.path.join(keep, case['name'] + '.btrace'))
        rep = None
        if os.path.exists(snap):
            try:
                rep = report_json(btrace, snap)
            except (RuntimeError, ValueError,
                    subprocess.TimeoutExpired) as e:
                rep = None
                rec.note = (rec.note or '') + ' report failed: %s' % e
        res = check_case(case, nat, g, rec, rep, snaps, btrace, snap)
        notes = []
        if g.get('error'):
            notes.append('gdb: %s' % g['error'])
        if rec.note:
            notes.append('btrace run: %s' % rec.note)
        return res, notes
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ------------------------------------------------------------ known limits

def known_limits():
    """{pattern: text} from the "Known limits" section of docs/report.md:
    each `PROGRAM:CHECK` in backquotes there names a failure whose root
    cause the section gives."""
    path = os.path.join(TOP, 'docs', 'report.md')
    try:
        with open(path) as f:
            text = f.read()
    except OSError:
        return {}
    section, level = [], None
    for ln in text.splitlines():
        h = re.match(r'^(#+)\s+(.*)$', ln)
        if h and level is not None and len(h.group(1)) <= level:
            break
        if level is not None:
            section.append(ln)
        elif h and h.group(2).strip().lower().startswith('known limits'):
            level = len(h.group(1))
    out = {}
    for para in re.split(r'\n(?=[-*] )', '\n'.join(section)):
        for pat in re.findall(r'`([\w.*?\[\]-]+:[\w*?]+)`', para):
            out[pat] = ' '.join(para.split())[:160]
    return out


def todo_for(lim, prog, check):
    for pat, text in lim.items():
        p, c = pat.split(':', 1)
        if fnmatch.fnmatch(prog, p) and fnmatch.fnmatch(check, c):
            return 'known limit (docs/report.md): ' + text
    return None


# -------------------------------------------------------------------- main

def main():
    args = sys.argv[1:]
    if len(args) < 2:
        sys.stderr.write(__doc__)
        return 2
    btrace, bindir = os.path.abspath(args[0]), os.path.abspath(args[1])
    full = os.environ.get('BTRACE_CORPUS', '') == 'full'
    jobs = int(os.environ.get('BTRACE_CORPUS_JOBS', '2'))
    only = None
    i = 2
    while i < len(args):
        a = args[i]
        if a == '--full':
            full = True
        elif a == '--jobs' and i + 1 < len(args):
            jobs = int(args[i + 1])
            i += 1
        elif a == '--only' and i + 1 < len(args):
            only = args[i + 1].split(',')
            i += 1
        elif a == '--list':
            for c in CASES:
                print('%-22s %-6s %-5s %s' % (c['name'], c['lang'],
                                              'quick' if c.get('quick')
                                              else 'full', c['cls']))
            return 0
        else:
            sys.stderr.write('corpus.py: unknown argument %r\n' % a)
            return 2
        i += 1
    if not os.access(btrace, os.X_OK):
        sys.stderr.write('corpus.py: %s: not an executable\n' % btrace)
        return 2
    if not shutil.which('gdb'):
        print('1..0 # SKIP gdb is not installed (the oracle)')
        return 0
    cases = [c for c in CASES if full or c.get('quick')]
    if only:
        cases = [c for c in CASES
                 if any(fnmatch.fnmatch(c['name'], p) for p in only)]
    os.makedirs(bindir, exist_ok=True)
    # Corpus programs dump no core files of their own.
    resource.setrlimit(resource.RLIMIT_CORE, (0, resource.getrlimit(
        resource.RLIMIT_CORE)[1]))
    lim = known_limits()
    workroot = tempfile.mkdtemp(prefix='btrace-corpus.')
    t = L.Tap()
    print('# corpus: %d programs (%s set), %d jobs' %
          (len(cases), 'full' if full else 'quick', jobs), flush=True)
    summary = {c: [0, 0] for c in CHECKS}
    results = []
    t0 = time.monotonic()

    def one(case):
        s = time.monotonic()
        try:
            res, notes = run_case(case, btrace, bindir, workroot)
            return case, res, notes, None, time.monotonic() - s
        except Skip as e:
            return case, None, [], str(e), 0
        except Exception as e:  # noqa: BLE001 (a broken case fails)
            return case, None, ['%s: %s' % (type(e).__name__, e)], None, 0

    try:
        with concurrent.futures.ThreadPoolExecutor(max(1, jobs)) as ex:
            for case, res, notes, skip, dt in ex.map(one, cases):
                kind = case.get('kind', 'crash')
                applies = [c for c in (HANDLED_CHECKS if kind == 'handled'
                                       else CRASH_CHECKS)
                           if c not in case.get('na', {})]
                t.diag('%s (%s, %.1fs)' % (case['name'], case['cls'], dt))
                for n in notes:
                    t.diag('  ' + n)
                rec = {'program': case['name'], 'class': case['cls'],
                       'checks': {}}
                for chk in applies:
                    desc = '%s: %s' % (case['name'], chk)
                    if skip:
                        t.n += 1
                        print('ok %d - %s # SKIP %s' % (t.n, desc, skip))
                        rec['checks'][chk] = {'result': 'skip',
                                              'why': skip}
                        continue
                    if res is None:
                        ok, msg = False, 'the program could not be run: ' + \
                            '; '.join(notes)
                    else:
                        ok, msg = res[chk]
                    todo = None if ok else todo_for(lim, case['name'], chk)
                    msg, _, detail = msg.partition('\n')
                    t.ok(ok, '%s: %s' % (desc, msg), todo=todo)
                    if detail:
                        t.diag(detail)
                    summary[chk][1] += 1
                    summary[chk][0] += 1 if ok else 0
                    rec['checks'][chk] = {'result': 'pass' if ok else
                                          ('todo' if todo else 'fail'),
                                          'why': msg}
                sys.stdout.flush()
                results.append(rec)
    finally:
        shutil.rmtree(workroot, ignore_errors=True)
    lines = ['corpus summary (%s set, %d programs, %.0fs): pass/total per '
             'check' % ('full' if full else 'quick', len(cases),
                        time.monotonic() - t0)]
    tp = tt = 0
    for chk in CHECKS:
        p, n = summary[chk]
        tp, tt = tp + p, tt + n
        lines.append('  %-9s %3d/%-3d' % (chk, p, n))
    lines.append('  %-9s %3d/%-3d' % ('all', tp, tt))
    failing = ['%s:%s' % (r['program'], c) for r in results
               for c, v in r['checks'].items() if v['result'] == 'fail']
    lines.append('failing: %s' % (' '.join(failing) or 'none'))
    for ln in lines:
        t.diag(ln)
    with open(os.path.join(bindir, 'corpus-summary.txt'), 'w') as f:
        f.write('\n'.join(lines) + '\n')
    with open(os.path.join(bindir, 'corpus-summary.json'), 'w') as f:
        json.dump({'summary': summary, 'results': results}, f, indent=1)
    return t.done()


if __name__ == '__main__':
    sys.exit(main())
