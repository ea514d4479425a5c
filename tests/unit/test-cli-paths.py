#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Source positions are printed one way (docs/report.md "Source positions"):
text output (report, decode --insn/--blocks/--calls, the fault line) as
NAME:LINE with the file's base name, the JSON report as the full path, and
the text's name is the JSON path's last component.  TAP.

  test-cli-paths.py BTRACE SNAPSHOT...   (recorded fixtures with sources)
"""
import json
import os
import re
import subprocess
import sys

n = 0
fails = 0


def ok(cond, desc):
    global n, fails
    n += 1
    print('%s %d - %s' % ('ok' if cond else 'not ok', n, desc), flush=True)
    if not cond:
        fails += 1
    return cond


def run(*argv):
    r = subprocess.run(list(argv), capture_output=True, text=True,
                       timeout=300)
    return r.returncode, r.stdout, r.stderr


POS = re.compile(r'(?:^|\s)(\S+\.(?:c|h|cc|cpp|S|s|rs|go)):(\d+)\b')


def main():
    btrace = sys.argv[1]
    for snap in sys.argv[2:]:
        name = os.path.basename(snap)
        rc, out, err = run(btrace, 'report', '--json', snap)
        if not ok(rc == 0, '%s: report --json' % name):
            print('# ' + err.strip()[-300:])
            continue
        rep = json.loads(out)
        json_pos = set()
        for t in rep['threads']:
            for f in t['stack'] + t.get('calls', []) + t.get('tail', []):
                if f.get('file') and f.get('line'):
                    json_pos.add((f['file'], f['line']))
        fault = rep.get('fault') or {}
        ok(json_pos and any('/' in p for p, _ in json_pos),
           '%s: the JSON has source positions (%d), with their directories'
           % (name, len(json_pos)))
        texts = {}
        for what, argv in (('report', ['report']),
                           ('decode --insn', ['decode', '--insn', '--last',
                                              '400']),
                           ('decode --blocks', ['decode', '--blocks',
                                                '--last', '200']),
                           ('decode --calls', ['decode', '--calls'])):
            rc, out, err = run(btrace, *argv, snap)
            ok(rc == 0, '%s: %s' % (name, what))
            texts[what] = out
            shown = [m.group(1) for m in POS.finditer(out)]
            ok(shown and not any('/' in s for s in shown),
               '%s: %s prints NAME:LINE with base names only (%d positions)'
               % (name, what, len(shown)))
            bad = [s for s in shown if '/' in s][:3]
            if bad:
                print('# full paths in the text: %s' % ', '.join(bad))
        # Every JSON position of the first thread's stack (the one the
        # text prints in full) appears in the report's text as NAME:LINE.
        stack = [(f['file'], f['line']) for t in rep['threads'][:1]
                 for f in t['stack'] if f.get('file') and f.get('line')]
        missing = ['%s:%d' % (os.path.basename(p), ln) for p, ln in stack
                   if '%s:%d' % (os.path.basename(p), ln)
                   not in texts['report']]
        ok(stack and not missing,
           "%s: the report's stack shows each JSON file as its base name"
           % name)
        if missing:
            print('# not in the text: %s' % ', '.join(missing[:5]))
        if fault.get('file') and fault.get('line'):
            want = '%s:%d' % (os.path.basename(fault['file']), fault['line'])
            line = [ln for ln in texts['decode --insn'].splitlines()
                    if ln.startswith('=> fault at')]
            ok(line and want in line[0] and want in texts['report'],
               '%s: the fault is %s in report, decode and JSON (%s)'
               % (name, want, fault['file']))
    print('1..%d' % n)
    return 1 if fails or not n else 0


if __name__ == '__main__':
    sys.exit(main())
