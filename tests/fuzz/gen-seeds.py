#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Write the seed corpora of the sysfs and sideband fuzz targets:
#   tests/fuzz/gen-seeds.py   (from the repository root)
# corpus/sysfs: the sysfs trees of tests/data/sysfs in fuzz-sysfs.c's
# format (NUL-separated file contents in fz_files order, 0x7f = absent,
# then a config term list).  corpus/sideband: perf data rings holding the
# records the engine parses (MMAP2, COMM, FORK, EXIT, LOST, AUX).
import os
import struct
import sys

here = os.path.dirname(os.path.abspath(__file__))
root = os.path.normpath(os.path.join(here, '..', '..'))
PMU = 'bus/event_source/devices/intel_pt/'
FILES = ([PMU + 'type'] +
         [PMU + 'format/' + f for f in ('pt', 'tsc', 'mtc', 'mtc_period',
          'psb_period', 'cyc', 'cyc_thresh', 'branch', 'noretcomp', 'ptw',
          'pwr_evt')] +
         [PMU + 'caps/' + c for c in ('psb_cyc', 'mtc', 'mtc_periods',
          'psb_periods', 'cycle_thresholds', 'ptwrite',
          'power_event_trace')] +
         [PMU + 'max_nonturbo_ratio', PMU + 'tsc_art_ratio',
          PMU + 'nr_addr_filters', 'devices/system/cpu/online',
          'devices/system/cpu/vulnerabilities/meltdown'])
TERMS = {'skylake': b'tsc,mtc,mtc_period=3,pt,branch',
         'icelake': b'pt,branch,cyc,cyc_thresh=1,psb_period=2',
         'broadwell': b'pt,noretcomp',
         'broken-caps': b'config=0x2001',
         'broken-format': b'tsc,mtc_period=99'}


def sysfs():
    out = os.path.join(here, 'corpus', 'sysfs')
    os.makedirs(out, exist_ok=True)
    for tree, terms in TERMS.items():
        chunks = []
        for f in FILES:
            p = os.path.join(root, 'tests', 'data', 'sysfs', tree, f)
            chunks.append(open(p, 'rb').read() if os.path.isfile(p)
                          else b'\x7f')
        open(os.path.join(out, tree), 'wb').write(b'\0'.join(chunks + [terms]))


def rec(rtype, misc, body, pid=42, tid=42, time=1000):
    body += struct.pack('<IIQ', pid, tid, time)   # sample_id: TID, TIME
    while (len(body) + 8) % 8:
        body += b'\0'
    return struct.pack('<IHH', rtype, misc, len(body) + 8) + body


def mmap2(addr, length, path, build_id=None, pid=42):
    misc = 0x2
    if build_id:
        misc |= 1 << 14
        mid = struct.pack('<B3x20s', len(build_id), build_id)
    else:
        mid = struct.pack('<IIQQ', 8, 1, 1234, 0)
    name = path + b'\0'
    name += b'\0' * (-len(name) % 8)
    body = struct.pack('<IIQQQ', pid, pid, addr, length, 0) + mid + \
        struct.pack('<II', 5, 2) + name
    return rec(10, misc, body, pid, pid)


def sideband():
    out = os.path.join(here, 'corpus', 'sideband')
    os.makedirs(out, exist_ok=True)
    recs = [
        mmap2(0x400000, 0x1000, b'/nonexistent/a.out', bytes(range(20))),
        mmap2(0x7f0000000000, 0x20000, b'//anon'),
        mmap2(0x400800, 0x100, b'/nonexistent/b.so', b'\x01\x02\x03\x04'),
        rec(3, 0x2000, struct.pack('<II', 42, 43) + b'worker\0\0'),  # COMM exec
        rec(7, 0, struct.pack('<IIIIQ', 42, 42, 43, 42, 900)),      # FORK
        rec(4, 0, struct.pack('<IIIIQ', 42, 42, 43, 43, 1100)),     # EXIT
        rec(2, 0, struct.pack('<QQ', 7, 3)),                        # LOST
        rec(11, 0, struct.pack('<QQQ', 0, 4096, 1)),                 # AUX
        rec(12, 0, struct.pack('<II', 42, 42)),                     # ITRACE_START
    ]
    ring = b''.join(recs)
    # header: tail (2 bytes LE), bytes cut from the end, flags/pid byte
    open(os.path.join(out, 'records'), 'wb').write(
        struct.pack('<HBB', 0, 0, 42 << 1) + ring)
    # the same records, the ring wrapped: tail in the middle
    half = len(recs[0]) + len(recs[1])
    wrapped = ring[half:] + ring[:half]
    size = 1
    while size < len(wrapped):
        size <<= 1
    wrapped += b'\0' * (size - len(wrapped))
    open(os.path.join(out, 'wrapped'), 'wb').write(
        struct.pack('<HBB', size - len(ring) + half, 0, (42 << 1) | 1) +
        wrapped)
    # an ELF header with a PT_NOTE holding a GNU build ID
    note = struct.pack('<III', 4, 20, 3) + b'GNU\0' + bytes(range(20, 40))
    ehdr = b'\x7fELF\x02\x01\x01' + b'\0' * 9 + struct.pack(
        '<HHIQQQIHHHHHH', 3, 62, 1, 0, 64, 0, 0, 64, 56, 1, 64, 0, 0)
    phdr = struct.pack('<IIQQQQQQ', 4, 4, 120, 0, 0, len(note), len(note), 4)
    open(os.path.join(out, 'elf-note'), 'wb').write(ehdr + phdr + note)


sysfs()
sideband()
