#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Inline frames in the stack against gdb's backtrace (TAP).

    e2e-inline.py BTRACE PROGDIR SRCDIR [--gen BT_GEN_FIXTURE]

Real programs built -O2 (always_inline and plain `static inline` helpers, a
3-deep inline chain in a function called from code inlined into main),
-O3 -flto across two files (inlined across units), and two crashes inside
glibc (abort(): __pthread_kill_implementation; qsort(): glibc's own inline
frames), are recorded with `btrace record -b qemu` and run natively under
gdb.  gdb's frames come from its Python API (frame type: normal, inline,
tail call; name; file; line).  From the top down to main:

- every gdb frame is a btrace stack entry, in gdb's order, with the same
  function (modulo glibc's __GI_ aliases and IFUNC variants, e2elib.norm),
  the same file (basename) and line, and `"inlined": true` exactly where
  gdb's frame is an inline frame; a gdb tail-call frame (synthesized from
  DWARF call sites) right below a btrace frame flagged tail_call is
  btrace's tail caller there: its inline frames at the jump and its own
  frame, one of which has gdb's name (and line; gdb names the frame by
  the innermost inline function at the jump and shows no others);
- btrace has no frame gdb does not have;
- the text report shows the same frames in the same order, the inline ones
  marked "[inlined]";
- the fault names the function gdb stops in: when gdb's frame #0 is an
  inline frame, the report's fault.inline_function is its function, and
  the text's fault line starts with it ("score (inlined) in ...").

With --gen (suite decode, no QEMU) the snapshots are written by
tests/decode/bt-gen-fixture instead: the same programs single-stepped
natively from main to their death, encoded as Intel PT; the stacks then
start at main (the history starts there) and are compared the same way.

The clang cases (built by the test when clang is installed, skipped
otherwise) have no .debug_aranges, where libdw finds no unit by itself.

The glibc cases need glibc's debug info (libc6-dbg): they are skipped when
/usr/lib/debug/.build-id has no file for the build ID of the libc the
programs load.  The whole test is skipped without gdb (with its Python) or
qemu-x86_64.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import e2elib as L  # noqa: E402

# program, sources with the markers, what the case is about, needs glibc's
# debug info, a frame the case must show inlined (sanity of the program:
# the compiler did inline it, so the check is not vacuous)
CASES = [
    dict(prog='e2e-inline-chain', src='inline-chain.c',
         what='-O2: 3-deep always_inline chain, caller inlined into main',
         inlined=['inl_top', 'dispatch']),
    dict(prog='e2e-inline-helper', src='inline-helper.c',
         what='-O2: static inline helper', inlined=['helper']),
    dict(prog='e2e-inline-lto', src='inline-lto-score.c',
         what='-O3 -flto: inlined across units',
         inlined=['score', 'process']),
    # clang writes no .debug_aranges: units are found by their ranges
    dict(prog='clang-inline-chain', src='inline-chain.c',
         clang=['-O2', 'inline-chain.c'],
         what='clang -O2 (no .debug_aranges): 3-deep chain',
         inlined=['inl_leaf', 'inl_top', 'dispatch']),
    dict(prog='clang-inline-lto', src='inline-lto-score.c',
         clang=['-O3', '-flto', '-fuse-ld=lld', 'inline-lto-main.c',
                'inline-lto-score.c'],
         what='clang -O3 -flto (lld): inlined across units',
         inlined=['score', 'process']),
    dict(prog='e2e-crash-abort', src=None, libc=True,
         what='abort() in glibc (libc6-dbg)', inlined=[]),
    dict(prog='e2e-inline-qsort', src='inline-qsort.c', libc=True,
         what='qsort() in glibc: glibc\'s inline frames (libc6-dbg)',
         inlined=['msort_with_tmp']),
]

GDB_PY = r'''
python
f = gdb.newest_frame()
while f is not None:
    sal = f.find_sal()
    kind = {gdb.INLINE_FRAME: 'inline', gdb.TAILCALL_FRAME: 'tailcall'}.get(
        f.type(), 'normal')
    print('BTFRAME|%s|%s|%s|%s' % (kind, f.name() or '',
          sal.symtab.filename if sal.symtab else '', sal.line or 0))
    f = f.older()
end
'''


def gdb_frames(argv, work):
    """gdb's frames of the native crash: [(kind, name, file, line)]."""
    script = os.path.join(work, 'frames.gdb')
    with open(script, 'w') as f:
        f.write(GDB_PY)
    r = subprocess.run(['gdb', '-nx', '-batch', '-ex', 'run', '-x', script,
                        '--args'] + argv, capture_output=True, text=True,
                       stdin=subprocess.DEVNULL, timeout=300)
    frames = []
    for ln in r.stdout.splitlines():
        if ln.startswith('BTFRAME|'):
            kind, name, fil, line = ln.split('|')[1:5]
            frames.append(dict(kind=kind, function=name or None,
                               file=L.base(fil) or None,
                               line=int(line) or None))
    return frames, r.stdout + r.stderr


def libc_debug_info(prog):
    """Path of the separate debug file of the libc @prog loads, or None."""
    r = subprocess.run(['ldd', prog], capture_output=True, text=True)
    m = re.search(r'libc\.so\.6 => (\S+)', r.stdout)
    if not m:
        return None
    r = subprocess.run(['readelf', '-n', m.group(1)], capture_output=True,
                       text=True)
    m = re.search(r'Build ID: ([0-9a-f]{2})([0-9a-f]+)', r.stdout)
    if not m:
        return None
    p = '/usr/lib/debug/.build-id/%s/%s.debug' % (m.group(1), m.group(2))
    return p if os.path.exists(p) else None


def upto_main(frames):
    for i, f in enumerate(frames):
        if f.get('function') == 'main':
            return frames[:i + 1]
    return frames


def compare(bt, gdb):
    """Frame by frame; returns (ok, lines describing each pair)."""
    b, g = upto_main(bt), upto_main(gdb)
    out, ok, i = [], True, 0
    for gf in g:
        if gf['kind'] == 'tailcall' and i > 0 and b[i - 1].get('tail_call'):
            # btrace shows the tail caller right below the callee it
            # jumped to: its inline frames at the jump, then its own;
            # gdb one frame, named by the innermost of them
            k = i
            while k < len(b) and b[k].get('inlined'):
                k += 1
            group = b[i:k + 1]
            same = [bf for bf in group
                    if L.norm(bf.get('function')) == L.norm(gf['function'])]
            good = bool(same) and (gf['line'] is None or
                                   same[0].get('line') == gf['line'])
            ok = ok and good
            out.append('  %s btrace tail caller %s | gdb %s %s:%s [tailcall]'
                       % ('==' if good else '!=',
                          ' < '.join('%s %s:%s%s' % (
                              bf.get('function'), L.base(bf.get('file')),
                              bf.get('line'),
                              ' [inlined]' if bf.get('inlined') else '')
                              for bf in group),
                          gf['function'], gf['file'], gf['line']))
            i += len(group)
            continue
        if i >= len(b):
            out.append('  missing: gdb %s %s:%s' % (gf['function'],
                                                   gf['file'], gf['line']))
            ok = False
            continue
        bf = b[i]
        i += 1
        same_name = L.norm(bf.get('function')) == L.norm(gf['function'])
        same_file = gf['file'] is None or L.base(bf.get('file')) == gf['file']
        same_line = gf['line'] is None or bf.get('line') == gf['line']
        same_inl = bool(bf.get('inlined')) == (gf['kind'] == 'inline')
        good = same_name and same_file and same_line and same_inl
        ok = ok and good
        out.append('  %s btrace %s %s:%s%s | gdb %s %s:%s%s' % (
            '==' if good else '!=', bf.get('function'), L.base(bf.get('file')),
            bf.get('line'), ' [inlined]' if bf.get('inlined') else '',
            gf['function'], gf['file'], gf['line'],
            ' [inline]' if gf['kind'] == 'inline' else
            ' [tailcall]' if gf['kind'] == 'tailcall' else ''))
    for bf in b[i:]:
        out.append('  extra: btrace %s %s:%s' % (bf.get('function'),
                                                L.base(bf.get('file')),
                                                bf.get('line')))
        ok = False
    if not g or g[-1].get('function') != 'main' or \
            not b or b[-1].get('function') != 'main':
        out.append('  the stacks do not both reach main')
        ok = False
    return ok, out


_TEXT_FRAME = re.compile(r'^  #\d+\s+0x[0-9a-f]+ (\S+)\s+(\S*)(.*)$')


def text_frames(btrace, snap):
    """(name without +offset, file:line, inlined) of the text report."""
    r = subprocess.run([btrace, 'report', snap], capture_output=True,
                       text=True)
    frames, on = [], False
    for ln in r.stdout.splitlines():
        if ln.startswith('stack at the fault'):
            on = True
            continue
        if on and not ln.strip():
            break
        m = _TEXT_FRAME.match(ln) if on else None
        if m:
            frames.append((m.group(1).split('+0x')[0], m.group(2),
                           '[inlined]' in m.group(3)))
    return frames


def clang_build(c, srcdir, work):
    """Build a clang case into @work; None, or why it is skipped."""
    if not shutil.which('clang'):
        return 'clang is not installed'
    if '-fuse-ld=lld' in c['clang'] and not shutil.which('ld.lld'):
        return 'ld.lld is not installed'
    args = [a if a.startswith('-') else os.path.join(srcdir, a)
            for a in c['clang']]
    r = subprocess.run(['clang', '-g', '-w', '-o',
                        os.path.join(work, c['prog'])] + args,
                       capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError('clang %s: %s' % (' '.join(args), r.stderr[-300:]))
    return None


def skip(t, desc, why):
    t.n += 1
    print('ok %d - %s # SKIP %s' % (t.n, desc, why), flush=True)


def main():
    gen = None
    if len(sys.argv) == 6 and sys.argv[4] == '--gen':
        gen = os.path.abspath(sys.argv[5])
    elif len(sys.argv) != 4:
        sys.stderr.write('usage: e2e-inline.py BTRACE PROGDIR SRCDIR '
                         '[--gen BT_GEN_FIXTURE]\n')
        return 2
    btrace, progdir, srcdir = [os.path.abspath(a) for a in sys.argv[1:4]]
    if not shutil.which('gdb'):
        print('1..0 # SKIP gdb is not installed')
        return 0
    if not gen and not L.qemu_available():
        print('1..0 # SKIP qemu-x86_64 is not installed')
        return 0
    r = subprocess.run(['gdb', '-nx', '-batch', '-ex', 'python print(1)'],
                       capture_output=True, text=True)
    if r.stdout.strip() != '1':
        print('1..0 # SKIP this gdb has no Python')
        return 0
    t = L.Tap()
    work = tempfile.mkdtemp(prefix='btrace-e2e-inline.')
    try:
        for c in CASES:
            prog = os.path.join(progdir, c['prog'])
            name = c['prog']
            if c.get('clang'):
                why = clang_build(c, srcdir, work)
                if why:
                    skip(t, '%s: %s' % (name, c['what']), why)
                    continue
                prog = os.path.join(work, c['prog'])
            if c.get('libc') and not libc_debug_info(prog):
                skip(t, '%s: %s' % (name, c['what']),
                     'no debug info for the libc in /usr/lib/debug/.build-id '
                     '(install libc6-dbg)')
                continue
            snap = os.path.join(work, name + '.btrace')
            if gen:
                rec = subprocess.run([gen, '-o', snap, '--', prog],
                                     capture_output=True, text=True,
                                     stdin=subprocess.DEVNULL, timeout=600)
            else:
                rec = L.record(btrace, snap, [prog])
            if not os.path.exists(snap):
                t.ok(False, '%s: snapshot written (%s)' % (
                    name, rec.stderr.strip().replace('\n', ' | ')))
                continue
            rep = L.report_json(btrace, snap)
            stack = rep['threads'][0]['stack'] if rep.get('threads') else []
            gdb, gtext = gdb_frames([prog], work)
            if not t.ok(len(gdb) >= 2, '%s: gdb gives a backtrace (%d '
                        'frames)' % (name, len(gdb))):
                t.diag(gtext[-2000:])
                continue
            ok, lines = compare(stack, gdb)
            t.ok(ok, '%s: stack equals gdb\'s, inline frames included (%s)'
                 % (name, c['what']))
            t.diag('\n'.join(lines))
            # the program really has the inline frames the case is about
            inl = [L.norm(f['function']) for f in gdb if f['kind'] == 'inline']
            binl = [f.get('function') for f in upto_main(stack)
                    if f.get('inlined')]
            t.ok(all(x in inl and x in binl for x in c['inlined']),
                 '%s: inline frames %s in gdb (%s) and btrace (%s)' % (
                     name, c['inlined'] or 'none expected', inl, binl))
            if c['src']:
                mline = L.marker_line(os.path.join(srcdir, c['src']))
                fault = rep.get('fault') or {}
                t.ok(fault.get('line') == mline and
                     L.base(fault.get('file')) == c['src'],
                     '%s: the fault line is the marked line %s:%s (%s:%s)' % (
                         name, c['src'], mline, L.base(fault.get('file')),
                         fault.get('line')))
            # the fault names gdb's innermost frame: the inlined function
            # gdb stops in (JSON inline_function; text: first on the
            # fault line), none when gdb's frame #0 is not inline
            fault = rep.get('fault') or {}
            g0 = gdb[0]['function'] if gdb[0]['kind'] == 'inline' else None
            fin = fault.get('inline_function')
            fl = next((x for x in subprocess.run(
                [btrace, 'report', snap], capture_output=True,
                text=True).stdout.splitlines() if x.startswith('fault ')), '')
            t.ok((L.norm(fin) if fin else None) == (L.norm(g0) if g0 else None)
                 and (not g0 or fl.split()[1:3] == [fin, '(inlined)']),
                 '%s: the fault is in gdb\'s frame #0 %s (inline_function '
                 '%s; %s)' % (name, g0, fin, fl.strip()))
            # the text report: same frames, same order, same marks
            tf = text_frames(btrace, snap)[:len(upto_main(stack))]
            want = [(f.get('function'), '%s:%s' % (L.base(f.get('file')),
                                                   f.get('line')),
                     bool(f.get('inlined'))) for f in upto_main(stack)]
            same = len(tf) == len(want) and all(
                (a[0] == b[0] or (len(a[0]) > 8 and a[0].endswith('~') and
                                  b[0].startswith(a[0][:-1]))) and
                (a[1] == b[1] or not b[2] and b[1].endswith(':None')) and
                a[2] == b[2] for a, b in zip(tf, want))
            if not t.ok(same, '%s: text report: the same frames, inline ones '
                        'marked [inlined]' % name):
                t.diag('text: %s' % tf)
                t.diag('json: %s' % want)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return t.done()


if __name__ == '__main__':
    L.run_main(main)
