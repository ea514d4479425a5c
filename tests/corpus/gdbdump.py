# SPDX-License-Identifier: MIT
"""gdb's view of a native run, for the corpus runner (run inside gdb).

    CORPUS_GDB_OUT=FILE gdb -batch -nx -x gdbdump.py --args PROG ARGS...

Runs the program (`run`, then `continue` after each stop, passing the
signal on, as the program would see it without gdb) and writes one JSON
object to FILE: every stop (signal name, $_siginfo's si_code and address,
$pc, the backtrace with inline frames marked, and the out-of-line function
around $pc with $pc's offset in it) and how the process ended (exit code or
the signal that killed it).  After 40 stops (a JVM takes hundreds of
SIGSEGVs) gdb stops stopping and only lets the program run to its end.
"""
import json
import os
import re
import signal

import gdb  # noqa: F401 (provided by gdb)

OUT = os.environ['CORPUS_GDB_OUT']
MAX_STOPS = 40
MAX_FRAMES = 32

stops = []
last_signal = [None]


def on_stop(ev):
    last_signal[0] = getattr(ev, 'stop_signal', None)


def objfile_of(pc):
    name = gdb.solib_name(pc)
    if name:
        return name
    prog = gdb.current_progspace().filename
    return prog


def func_start(frame):
    """Start of the out-of-line function the frame's pc is in, or None."""
    try:
        blk = frame.block()
    except RuntimeError:
        blk = None
    start = None
    while blk is not None:
        if blk.function is not None:
            start = blk.start   # the outermost function block wins
        blk = blk.superblock
    return start


def msym(pc):
    """(name, offset) from `info symbol` (the ELF symbol tables)."""
    try:
        s = gdb.execute('info symbol 0x%x' % pc, to_string=True)
    except gdb.error:
        return None, None
    m = re.match(r'^(\S+)(?: \+ (\d+))? in section', s)
    if not m:
        return None, None
    return m.group(1), int(m.group(2) or 0)


def snapshot_stop():
    st = {'signal': last_signal[0], 'si_code': None, 'si_addr': None,
          'pc': None, 'frames': [], 'function': None, 'offset': None,
          'module': None}
    try:
        si = gdb.parse_and_eval('$_siginfo')
        st['si_code'] = int(si['si_code'])
        if st['signal'] is None:
            # A SIGTRAP of the program's own int3 comes as a plain stop.
            try:
                st['signal'] = signal.Signals(int(si['si_signo'])).name
                last_signal[0] = st['signal']
            except ValueError:
                pass
        try:
            st['si_addr'] = int(si['_sifields']['_sigfault']['si_addr'])
        except gdb.error:
            pass
    except gdb.error:
        pass
    try:
        f = gdb.newest_frame()
    except gdb.error:
        stops.append(st)
        return
    pc = f.pc()
    st['pc'] = pc
    st['module'] = objfile_of(pc)
    n = 0
    outer = None
    while f is not None and n < MAX_FRAMES:
        try:
            sal = f.find_sal()
            fr = {'function': f.name(),
                  'inline': f.type() == gdb.INLINE_FRAME,
                  'pc': f.pc(),
                  'file': sal.symtab.filename if sal.symtab else None,
                  'line': sal.line or None,
                  'module': objfile_of(f.pc())}
        except gdb.error:
            break
        st['frames'].append(fr)
        if outer is None and not fr['inline']:
            outer = f
        n += 1
        try:
            f = f.older()
        except gdb.error:
            break
    if outer is not None:
        st['function'] = outer.name()
        start = func_start(outer)
        if start is not None and start <= pc:
            st['offset'] = pc - start
        else:
            name, off = msym(pc)
            if name:
                st['function'], st['offset'] = name, off
    if not stops:
        st['disassembly'] = disassembly()
    stops.append(st)


def disassembly():
    """The function around $pc at the first stop: [[offset, insn]]."""
    try:
        text = gdb.execute('disassemble', to_string=True)
    except gdb.error:
        return None
    out = []
    for ln in text.splitlines():
        m = re.match(r'^(?:=>)?\s+0x[0-9a-f]+ <\+(\d+)>:\s*(.*)$', ln)
        if m:
            out.append([int(m.group(1)), m.group(2).strip()])
    return out or None


def alive():
    inf = gdb.selected_inferior()
    return inf is not None and inf.pid != 0


def main():
    for cmd in ('set pagination off', 'set confirm off', 'set width 0',
                'set startup-with-shell off', 'set print thread-events off',
                'set print inferior-events off',
                'handle SIGPIPE nostop noprint pass',
                'handle SIGURG nostop noprint pass',
                'handle SIGCHLD nostop noprint pass'):
        try:
            gdb.execute(cmd, to_string=True)
        except gdb.error:
            pass
    for sig in filter(None, os.environ.get('CORPUS_GDB_PASS', '').split(',')):
        # a signal the program handles before its crash (corpus.py's
        # gdb_pass): passed on, no stop
        gdb.execute('handle %s nostop noprint pass' % sig, to_string=True)
    gdb.events.stop.connect(on_stop)
    res = {'stops': stops, 'exit_code': None, 'exit_signal': None,
           'error': None}
    try:
        gdb.execute('run', to_string=True)
        while alive():
            if len(stops) < MAX_STOPS:
                snapshot_stop()
            elif len(stops) == MAX_STOPS:
                gdb.execute('handle all nostop noprint pass', to_string=True)
                stops.append({'signal': None, 'truncated': True})
            sig, last_signal[0] = last_signal[0], None
            # SIGTRAP is gdb's own and not passed on by `continue`: deliver
            # it, as the kernel would without a debugger.
            gdb.execute('signal SIGTRAP' if sig == 'SIGTRAP' else 'continue',
                        to_string=True)
    except gdb.error as e:
        res['error'] = str(e)
    for var, key in (('$_exitcode', 'exit_code'),
                     ('$_exitsignal', 'exit_signal')):
        try:
            v = gdb.parse_and_eval(var)
            if str(v) != 'void':
                res[key] = int(v)
        except gdb.error:
            pass
    with open(OUT, 'w') as f:
        json.dump(res, f)


main()
