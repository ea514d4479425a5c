#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mask what varies between runs in a report of a golden fixture, and only
that (tests/decode/golden.sh):

    golden-mask.py PROG REPORT_JSON BUILD_DIR TMP_DIR SRC_DIR < OUTPUT > MASKED

- Addresses inside PROG's mapping become PROG's own offsets, "@PROG+0x11c6":
  its load address is the only part of them that may vary (bt-gen-fixture
  runs it without ASLR, but the base is the kernel's choice).  The base is
  the fault's address minus its place in the ELF file (the fault's symbol
  from `nm` plus the report's offset).  Any other address is kept as it is.
- pids and tids become PID, BUILD_DIR @BUILD@, TMP_DIR @TMP@.
- The source tree SRC_DIR becomes @SRC@, whether a path names it as it is
  or relative to the working directory (the build directory, where the
  compiler ran: the debug information's source paths are relative to it,
  "../tests/..." for a build directory in the source tree, "../clone/tests/..."
  for one beside it).  What follows, the file's place in the source tree, is
  kept.
"""
import json
import os
import re
import struct
import subprocess
import sys


def load_span(path):
    """End of the highest PT_LOAD segment (ELF64 little-endian)."""
    with open(path, 'rb') as f:
        data = f.read()
    if data[:4] != b'\x7fELF' or data[4] != 2 or data[5] != 1:
        sys.exit('golden-mask: %s: not an ELF64 little-endian file' % path)
    phoff, = struct.unpack_from('<Q', data, 0x20)
    phentsize, phnum = struct.unpack_from('<HH', data, 0x36)
    end = 0
    for i in range(phnum):
        o = phoff + i * phentsize
        ptype, = struct.unpack_from('<I', data, o)
        if ptype == 1:   # PT_LOAD
            vaddr, = struct.unpack_from('<Q', data, o + 0x10)
            memsz, = struct.unpack_from('<Q', data, o + 0x28)
            end = max(end, vaddr + memsz)
    return end


def symbol(path, name):
    out = subprocess.run(['nm', '--defined-only', path], capture_output=True,
                         text=True, check=True).stdout
    for ln in out.splitlines():
        f = ln.split()
        if len(f) == 3 and f[2] == name:
            return int(f[0], 16)
    sys.exit('golden-mask: %s: no symbol %s' % (path, name))


def main():
    prog, repjson, build, tmp, src = sys.argv[1:6]
    src = os.path.realpath(src)
    # the longest first: the absolute path, then the relative one (".."
    # alone would also match inside the absolute path otherwise)
    srcs = [re.compile(r'(?<![\w./@-])' + re.escape(p) + '/')
            for p in (src, os.path.relpath(src, os.getcwd()))]
    with open(repjson) as f:
        fault = json.load(f)['fault']
    if not fault.get('function') or fault.get('offset') is None:
        sys.exit('golden-mask: the fault has no function+offset: %s' % fault)
    base = int(fault['ip'], 16) - (symbol(prog, fault['function']) +
                                   fault['offset'])
    span = load_span(prog)

    def addr(m):
        v = int(m.group(0), 16)
        if base <= v < base + span:
            return '@PROG+0x%x' % (v - base)
        return m.group(0)

    for ln in sys.stdin:
        ln = ln.replace(build, '@BUILD@').replace(tmp, '@TMP@')
        for p in srcs:
            ln = p.sub('@SRC@/', ln)
        ln = re.sub(r'\b0x[0-9a-f]+\b', addr, ln)
        ln = re.sub(r'\b(process|thread)(\s+)[0-9]+', r'\1\2PID', ln)
        ln = re.sub(r'"(pid|tid)": [0-9]+', r'"\1": PID', ln)
        sys.stdout.write(ln)


if __name__ == '__main__':
    main()
