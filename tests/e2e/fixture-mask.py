#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mask a `btrace report` (text or --json) of a recorded fixture so the
golden is stable across machines, masking only what varies there.

    fixture-mask.py text|json OWN_MODULE REPORT_JSON < REPORT > MASKED

- The snapshot is committed: its addresses, pids and tids are the same on
  every replay and are kept (a re-recording rewrites the goldens, see
  tools/record-fixtures.sh).  The fixture's directory becomes @FIXTURE@.
- Code outside OWN_MODULE (the fixture's own binary, a basename): its
  symbols come from the files of the machine that decodes (libc is not
  committed; the snapshot embeds its code, not its symbols), so the
  offset, file and line of such code, which depend on the library's
  build, are masked (@LIB@, 0); JSON keeps the function's name (the code
  that ran there), per entry, by its "module".  Text: in the stack, calls
  and blocks, a line
  whose symbol is not a function of OWN_MODULE (the names REPORT_JSON, the
  same report unmasked, gives to the binary's code) is cut at its symbol
  and ends in @LIB@.
"""
import json
import os
import re
import sys

# The fixture's directory as recorded (wherever the tree was when the
# fixture was recorded) or as found now (wherever the tree is now).
FIXPATH = re.compile(r'/[^\s"]*/fixtures/recorded/[^/\s"]+')


def unfix(s, fixdir):
    if fixdir:
        s = s.replace(fixdir, '@FIXTURE@')
    return FIXPATH.sub('@FIXTURE@', s)


def other_names(rep, own):
    own_names, other = set(), set()
    for t in rep.get('threads', []):
        after = (t.get('after_fault') or {}).get('calls', [])
        for e in t.get('stack', []) + t.get('calls', []) + t.get('tail', []) \
                + after:
            fn = e.get('function')
            mod = os.path.basename(e.get('module') or '')
            if not mod:
                continue
            if mod == own:
                if fn:
                    own_names.add(fn)
            else:
                other.add(fn or mod + '+0x')
                other.add(mod + '+0x')
    f = rep.get('fault') or {}
    if f.get('module') and os.path.basename(f['module']) != own and \
            f.get('function'):
        other.add(f['function'])
    return own_names, other - own_names


SYMTOK = re.compile(r'(?<![\w.])([A-Za-z_.][\w.@-]*(?:\+0x[0-9a-f~]*)?~?)')
# Lines of these sections name one symbol each (after an address/count).
SECTIONS = ('stack at the fault', 'last calls', 'last blocks',
            'after the fault')
LEAD = re.compile(r'^(\s*(?:#\d+\s+)?(?:0x[0-9a-f]+\s+)?(?:\d+\s+)?)(\S.*)$')


def mask_text(text, own, rep, fixdir):
    """Sections of symbol lines: keep a line whose symbol is a function of
    the fixture's binary (or BINARY+0x...), cut any other at its symbol."""
    own_names, _ = other_names(rep, own)
    fault = rep.get('fault') or {}
    fault_other = fault.get('module') and \
        os.path.basename(fault['module']) != own
    out = []
    section = None
    for ln in text.splitlines():
        ln = unfix(ln, fixdir)
        if ln and not ln[0].isspace():
            section = next((x for x in SECTIONS if ln.startswith(x)), None)
        m = LEAD.match(ln)
        if ln.startswith('fault ') and fault_other:
            ln = 'fault     @LIB@'
        elif ln.lstrip().startswith('=> fault in') and fault_other:
            ln = ln[:ln.index('=> fault in') + 11] + ' @LIB@'
        elif ln.lstrip().startswith('=> died in'):
            d = rep.get('death') or {}
            if os.path.basename(d.get('module') or '') != own:
                ln = ln[:ln.index('=> died in') + 10] + ' @LIB@'
        elif section and m and ln[:1].isspace() and \
                not m.group(2).startswith(('(', '=>', '[', '...')):
            tok = SYMTOK.match(m.group(2))
            base = tok.group(1).rstrip('~').split('+0x')[0] if tok else ''
            if base not in own_names and base != own:
                ln = m.group(1) + '@LIB@'
        out.append(ln)
    return '\n'.join(out) + '\n'


def mask_entry(e, own):
    mod = e.get('module')
    if mod:
        e['module'] = os.path.basename(mod)
        if os.path.basename(mod) != own:
            # the function is the code's (the snapshot embeds it; the name
            # is the symbol the code is at) and is kept; where in the
            # library's build it lies is not
            for k in ('file',):
                if e.get(k) is not None:
                    e[k] = '@LIB@'
            for k in ('line', 'offset'):
                if e.get(k) is not None:
                    e[k] = 0


def mask_json(rep, own, fixdir):
    if rep.get('process', {}).get('command'):
        rep['process']['command'] = os.path.basename(rep['process']['command'])
    if rep.get('signal'):
        mask_entry(rep['signal'], own)
    if rep.get('fault'):
        mask_entry(rep['fault'], own)
    rep['image_notes'] = [unfix(n, fixdir)
                          for n in rep.get('image_notes', [])]
    for t in rep.get('threads', []):
        after = (t.get('after_fault') or {}).get('calls', [])
        for e in t.get('stack', []) + t.get('calls', []) + t.get('tail', []) \
                + after:
            mask_entry(e, own)
    if rep.get('death'):
        mask_entry(rep['death'], own)
    if (rep.get('fault') or {}).get('block'):
        mask_entry(rep['fault']['block'], own)
    return json.dumps(rep, indent=2, sort_keys=False) + '\n'


def main():
    mode, own, repjson = sys.argv[1:4]
    fixdir = os.environ.get('FIXTURE_DIR', '')
    text = sys.stdin.read()
    if mode == 'json':
        sys.stdout.write(mask_json(json.loads(text), own, fixdir))
    else:
        with open(repjson) as f:
            rep = json.load(f)
        sys.stdout.write(mask_text(text, own, rep, fixdir))


if __name__ == '__main__':
    main()
