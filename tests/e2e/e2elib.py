# SPDX-License-Identifier: MIT
"""Helpers of the end-to-end tests: TAP output, recording, gdb, stacks."""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

SIGNO = {'SIGILL': 4, 'SIGTRAP': 5, 'SIGABRT': 6, 'SIGBUS': 7, 'SIGFPE': 8,
         'SIGSEGV': 11, 'SIGSYS': 31}


class Tap:
    """TAP writer: plan at the end, TODO directives for known bugs."""

    def __init__(self):
        self.n = 0
        self.failed = 0

    def ok(self, cond, desc, todo=None):
        self.n += 1
        # one line: a description that spans lines (a command's output
        # quoted in it) breaks the TAP stream
        line = '%s %d - %s' % ('ok' if cond else 'not ok', self.n,
                               ' '.join(desc.split()).replace('#', '\\#'))
        if todo:
            line += ' # TODO ' + todo
        elif not cond:
            self.failed += 1
        print(line, flush=True)
        return cond

    def diag(self, text):
        for ln in str(text).splitlines():
            print('# ' + ln)

    def done(self):
        print('1..%d' % self.n)
        return 1 if self.failed or self.n == 0 else 0


def base(path):
    return os.path.basename(path or '')


def qemu_available():
    q = os.environ.get('BTRACE_QEMU') or shutil.which('qemu-x86_64')
    return bool(q)


def qemu_skip_reason():
    """Why the QEMU backend cannot run on this machine, or None.

    Decided from the machine (the emulator's file and its own -h), never
    from btrace's discovery or its messages: a regression there must fail
    the tests, not skip them."""
    q = os.environ.get('BTRACE_QEMU') or shutil.which('qemu-x86_64')
    if not q:
        return 'qemu-x86_64 is not installed (package qemu-user)'
    try:
        h = subprocess.run([q, '-h'], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60)
    except OSError as e:
        return '%s cannot run: %s' % (q, e)
    if '-plugin' not in h.stdout + h.stderr:
        return '%s has no TCG plugin support (-plugin)' % q
    return None


def skip_all(reason):
    """Skip a whole TAP test: the plan "1..0 # SKIP" and exit status 0
    (meson 1.0 counts exit 77 under protocol tap as an error)."""
    print('1..0 # SKIP ' + reason, flush=True)
    return 0


def emulators(pid):
    """The children of btrace (@pid) that run QEMU (its janitor is a
    child too)."""
    try:
        with open('/proc/%d/task/%d/children' % (pid, pid)) as f:
            kids = [int(x) for x in f.read().split()]
    except OSError:
        return []
    out = []
    for k in kids:
        try:
            with open('/proc/%d/cmdline' % k, 'rb') as f:
                argv0 = f.read().split(b'\0')[0]
        except OSError:
            continue
        if b'qemu' in os.path.basename(argv0):
            out.append(k)
    return out


def lines(path):
    """The lines of a text file, [] when it cannot be read."""
    try:
        with open(path) as f:
            return f.read().splitlines()
    except OSError:
        return []


def wait_for(pred, limit):
    """Poll @pred until it is true or @limit s passed; its last value."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.02)
    return pred()


def children(pid):
    """The children of every thread of @pid."""
    out = []
    try:
        for t in os.listdir('/proc/%d/task' % pid):
            with open('/proc/%d/task/%s/children' % (pid, t)) as f:
                out += [int(x) for x in f.read().split()]
    except OSError:
        pass
    return out


def comm(pid):
    """/proc/PID/comm, None when the process is gone."""
    try:
        with open('/proc/%d/comm' % pid) as f:
            return f.read().strip()
    except OSError:
        return None


def reap(pid, limit):
    """Wait up to @limit s for @pid (a child, or one we are the subreaper
    of); its wait status or None."""
    end = time.monotonic() + limit
    while time.monotonic() < end:
        try:
            w, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return None
        if w == pid:
            return st
        time.sleep(0.05)
    return None


def run_main(main):
    """Exit with main()'s status; a btrace command that failed (main
    raised RuntimeError) is one failed TAP test that says which."""
    try:
        sys.exit(main())
    except RuntimeError as e:
        print('not ok - %s' % e)
        print('1..1')
        sys.exit(1)


def build_root(path):
    """The meson build directory that holds @path (the nearest directory
    above it with meson-private/), or None."""
    d = os.path.dirname(os.path.realpath(path))
    while d != '/':
        if os.path.isdir(os.path.join(d, 'meson-private')):
            return d
        d = os.path.dirname(d)
    return None


def _build_libs(path, root):
    """The shared libraries @path loads from the build tree @root."""
    r = subprocess.run(['ldd', path], capture_output=True, text=True)
    libs = []
    for m in re.finditer(r'=> (/\S+)', r.stdout):
        lib = os.path.realpath(m.group(1))
        if lib.startswith(root + '/'):
            libs.append(m.group(1))
    return libs


class ForOthers:
    """Copies of this build's programs that another user (nobody) can run.

    The build tree may sit where only its owner can enter (a clone in a
    0700 home or in a `mktemp -d` directory): another user cannot exec
    anything there.  The programs named (and the build tree's libraries
    they load, the QEMU plugin and preload library next to btrace) are
    copied into a fresh private directory (mkdtemp, then mode 0711: others
    may enter but not list it), files 0755, each created anew (O_EXCL,
    O_NOFOLLOW), at the same place relative to the build directory so
    $ORIGIN run paths still find the libraries.  The directory is removed
    on close().

        with ForOthers(btrace, prog) as o:
            run(nobody_argv([o.path(btrace), ...]), env=o.env())
    """

    def __init__(self, *paths):
        self.dir = tempfile.mkdtemp(prefix='btrace-others-')
        self.copies = {}
        self.plugin = None
        try:
            os.chmod(self.dir, 0o711)
            for p in paths:
                self._add(p)
        except BaseException:
            self.close()
            raise

    def _copy(self, src, rel):
        dst = os.path.join(self.dir, rel)
        parent = os.path.dirname(dst)
        os.makedirs(parent, mode=0o711, exist_ok=True)
        fd = os.open(dst, os.O_WRONLY | os.O_CREAT | os.O_EXCL |
                     os.O_NOFOLLOW | os.O_CLOEXEC, 0o755)
        with open(src, 'rb') as f, os.fdopen(fd, 'wb') as out:
            shutil.copyfileobj(f, out)
        os.chmod(dst, 0o755)    # whatever the umask
        return dst

    def _add(self, path):
        path = os.path.abspath(path)
        root = build_root(path)
        if root is None or not os.path.realpath(path).startswith(root + '/'):
            # not built here (a script of the source tree, a system file)
            rel = os.path.join('other', '%d-%s' % (len(self.copies),
                                                   os.path.basename(path)))
            self.copies[path] = self._copy(path, rel)
            return
        todo = [path]
        if os.path.basename(path) == 'btrace':
            qdir = os.path.join(root, 'src', 'qemu')
            for n in ('libbtrace-qemu.so', 'libbtrace-qemu-preload.so'):
                if os.path.exists(os.path.join(qdir, n)):
                    todo.append(os.path.join(qdir, n))
        for p in todo:
            for q in [p] + _build_libs(p, root):
                real = os.path.realpath(q)
                rel = os.path.relpath(os.path.join(
                    os.path.realpath(os.path.dirname(q)),
                    os.path.basename(q)), root)
                if q in self.copies or rel.startswith('..'):
                    continue
                self.copies[q] = self._copy(real, rel)
                if os.path.basename(q) == 'libbtrace-qemu.so':
                    self.plugin = self.copies[q]

    def path(self, original):
        """The copy of @original (as it was given)."""
        return self.copies[os.path.abspath(original)]

    def env(self, base=None):
        """@base (default os.environ) with the copied plugin named."""
        e = dict(os.environ if base is None else base)
        if self.plugin:
            e['BTRACE_QEMU_PLUGIN'] = self.plugin
        return e

    def close(self):
        shutil.rmtree(self.dir, ignore_errors=True)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def record(btrace, snap, argv, cwd=None, size=None, env=None):
    """btrace record -b qemu; None when QEMU is not installed."""
    if not qemu_available():
        return None
    cmd = [btrace, 'record', '-b', 'qemu', '-q', '-o', snap]
    if size:
        cmd += ['--size', size]
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run(cmd + ['--'] + argv, cwd=cwd, env=e,
                          capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=600)


def report_json(btrace, snap, *extra):
    """The report as a dict; raises RuntimeError naming how it failed."""
    cmd = [btrace, 'report', '--json'] + list(extra) + [snap]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError('%s: exit %d: %s' % (' '.join(cmd), r.returncode,
                           r.stderr.strip()[-300:]))
    return json.loads(r.stdout)


_FRAME = re.compile(r'^#(\d+)\s+(?:(0x[0-9a-f]+) in )?(\S+) \((.*)\)'
                    r'(?: at (\S+):(\d+))?(?: from (\S+))?\s*$')


def gdb_native(argv, cwd=None):
    """Run argv natively under gdb: signal, si_code, backtrace, pid, LWP."""
    cmd = ['gdb', '-nx', '-batch', '-ex', 'run', '-ex', 'bt',
           '-ex', 'p $_siginfo.si_code', '-ex', 'info inferiors',
           '-ex', 'thread', '--args'] + argv
    r = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    out = r.stdout + r.stderr
    g = {'signal': None, 'si_code': None, 'frames': [], 'pid': None,
         'lwp': None, 'text': out}
    m = re.search(r'received signal (SIG[A-Z0-9]+)', out)
    g['signal'] = m and m.group(1)
    m = re.search(r'^\$1 = (-?\d+)', out, re.M)
    g['si_code'] = m and int(m.group(1))
    m = re.search(r'^\*\s+\d+\s+process (\d+)', out, re.M)
    g['pid'] = m and int(m.group(1))
    m = re.search(r'Current thread is .*?(?:LWP|process) (\d+)', out)
    g['lwp'] = m and int(m.group(1))
    for ln in out.splitlines():
        m = _FRAME.match(ln)
        if m:
            g['frames'].append({'function': None if m.group(3) == '??'
                                else m.group(3),
                                'file': m.group(5),
                                'line': int(m.group(6)) if m.group(6)
                                else None,
                                'module': m.group(7)})
    return g


def marker_line(src, marker='/* e2e: fault */'):
    with open(src) as f:
        for i, ln in enumerate(f, 1):
            if marker in ln:
                return i
    raise RuntimeError('%s: no line with "%s"' % (src, marker))


# glibc's internal names gdb takes from DWARF, and the exported names btrace
# takes from the symbol table, for the same code.
ALIASES = {'__libc_start_main_impl': '__libc_start_main'}
# Same place, different code because the emulated machine differs: QEMU 7.2
# answers clone3 with ENOSYS, and glibc falls back to clone.
EMULATOR_EQUIV = {'clone3': '__clone'}
_IFUNC = re.compile(r'^(__[a-z]+?)_(?:avx|evex|sse|ssse|erms|unaligned|rtm)'
                    r'\w*$')


def norm(name):
    """Function name modulo symbol versions, __GI_ aliases, IFUNC variant."""
    if not name:
        return None
    name = name.split('@')[0]
    if name.startswith('__GI_'):
        name = name[5:]
    name = ALIASES.get(name, name)
    name = EMULATOR_EQUIV.get(name, name)
    m = _IFUNC.match(name)
    return m.group(1) + '_*' if m else name


def _upto_main(frames):
    for i, f in enumerate(frames):
        if f.get('function') == 'main':
            return frames[:i + 1], True
    return frames, False


def _tail_caller(b, i):
    """b[i] is one of a tail caller's frames (its inline frames at the
    jump, then its own), not the first, right below the callee's frame
    flagged tail_call."""
    s = i
    while s > 0 and b[s - 1].get('inlined'):
        s -= 1
    return 0 < s < i and bool(b[s - 1].get('tail_call'))


def stack_compare(bt, gdb, own):
    """Compare btrace's stack (JSON frames) with gdb's backtrace.

    Frames are compared from the top down to main (both must reach it when
    gdb's does), else over the shorter list.  Names compare with norm().
    Where both leave a frame unnamed, the modules must be equal.  gdb
    synthesizes a frame for a function that tail-called (DWARF call-site
    info), named by the innermost function inlined at the jump; btrace
    shows the tail caller (its inline frames at the jump, then its own
    frame) below the callee, flagged tail_call: the tail caller's own frame
    is skipped there, and a gdb frame btrace does not have only right
    below a btrace frame flagged tail_call (a chain longer than the
    decoder keeps).  Lines are
    compared for frames of the program's own files (@own: basenames).
    Returns (ok, message)."""
    b, bmain = _upto_main(bt)
    g, gmain = _upto_main(gdb)
    i = j = 0
    notes, pairs = [], []
    ok = True
    while i < len(b) and j < len(g):
        bf, gf = b[i], g[j]
        bn, gn = norm(bf.get('function')), norm(gf.get('function'))
        if bn and gn:
            same = bn == gn
        elif gf.get('module') and bf.get('module'):
            same = base(gf['module']).split('.so')[0] == \
                base(bf['module']).split('.so')[0]
            bn, gn = bn or '??(%s)' % base(bf['module']), \
                gn or '??(%s)' % base(gf['module'])
        else:
            same = True   # one side cannot tell: not compared
            notes.append('frame %d not resolved by both' % i)
        if not same and i > 0 and b[i - 1].get('tail_call'):
            notes.append('gdb tail-call frame %s skipped' % gn)
            j += 1
            continue
        if not same and _tail_caller(b, i):
            # btrace's tail caller with inline frames at its jump: gdb's
            # tail-call frame is named by the innermost and stands for
            # them all
            notes.append('btrace tail caller frame %s skipped (gdb shows '
                         'the tail caller by its innermost inline frame)'
                         % bn)
            i += 1
            continue
        if same and base(bf.get('module')) in own and gf.get('line') and \
                bf.get('line') and gf['line'] != bf['line']:
            same = False
            notes.append('line %s vs gdb %s' % (bf['line'], gf['line']))
        pairs.append('%s%s%s' % (bn, '=' if same else '!=', gn))
        ok = ok and same
        i += 1
        j += 1
    if gmain and (j < len(g) or not bmain or i < len(b)):
        ok = False
        notes.append('btrace %d frames to main%s, gdb %d' %
                     (len(b), '' if bmain else ' (no main)', len(g)))
    if len(pairs) < min(2, len(g)):
        ok = False
        notes.append('too few frames compared')
    return ok, ' '.join(pairs) + (' [' + '; '.join(notes) + ']'
                                  if notes else '')


def writing_into(pid, d):
    """The paths process @pid has open in directory @d (a file being
    written with no name yet reads "D/#INODE (deleted)")."""
    out = []
    try:
        for fd in os.listdir('/proc/%d/fd' % pid):
            try:
                t = os.readlink('/proc/%d/fd/%s' % (pid, fd))
            except OSError:
                continue
            if t.startswith(d + '/'):
                out.append(t)
    except OSError:
        pass
    return out
