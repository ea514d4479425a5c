#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Mutated snapshots through every reading command (issue #13).

Makes COUNT mutated snapshots from valid base snapshots and runs each through
`btrace info`, `report`, `report --json`, `decode --calls` and `export` (into
a private temporary directory, build-id cache included).  A case fails on:
a sanitizer report (ASan, UBSan, LSan), death by a signal, a hang (the time
limit), an exit status other than 0 and 1, exit 1 without a message naming
the snapshot (or export's output), `report --json` output that is not JSON,
or a failed export that leaves its output behind.

The mutations (docs/format.md for the layout):
  raw        bit flips, byte runs (zeros, 0xff, random, copied), truncation,
             inserted or deleted bytes, appended garbage: checksums NOT fixed
  header     a section header field (type, flags, stored/raw size, reserved)
             or a file header field set to an edge value, its CRC fixed
  payload    a field of a section (tag, length, integer or string value,
             trace bytes, code bytes, registers), or bits of the payload,
             changed inside the (decompressed) payload, then recompressed
             or stored, every size and CRC fixed: it reaches the parsers,
             the decoder, the analyser and the exporter
  structure  sections dropped, repeated, swapped, unknown ones inserted,
             the end marker moved, garbage flagged as zstd: CRCs fixed
Each case is drawn from Random(SEED, case number) alone, so a case can be
replayed by number (--start I --count 1 --keep DIR writes it).  Prints TAP
(one line per case) and a summary line of figures.

  fuzz-snapshots.py --btrace BTRACE [--count N] [--jobs J] [--start I]
                    [--seed S] [--timeout SEC] [--keep DIR]
                    [--gen GEN_FIXTURE PROG] BASE.btrace...
"""
import argparse
import concurrent.futures
import ctypes
import ctypes.util
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import threading
import time

FILE_MAGIC = b'\x89BTRC\r\n\x1a'
SEC_MAGIC = 0x43455342          # "BSEC"
HDR = 64
SHDR = 40
FHDR = 16
T_CONFIG, T_BUFFER, T_TASKS, T_MAPS, T_CODE, T_SIGNAL, T_META = 1, 2, 3, 4, 5, 6, 7
T_END = 0x7fff
LISTS = (T_TASKS, T_MAPS, T_META)

# --- CRC-32C (Castagnoli, reflected 0x82f63b78) ---
_CRC = []
for _i in range(256):
    _c = _i
    for _ in range(8):
        _c = (_c >> 1) ^ 0x82f63b78 if _c & 1 else _c >> 1
    _CRC.append(_c)


def crc32c(data, crc=0):
    crc ^= 0xffffffff
    t = _CRC
    for b in data:
        crc = t[(crc ^ b) & 0xff] ^ (crc >> 8)
    return crc ^ 0xffffffff


# --- zstd through the C library (no Python binding needed) ---
_z = ctypes.CDLL(ctypes.util.find_library('zstd') or 'libzstd.so.1')
_z.ZSTD_compressBound.restype = ctypes.c_size_t
_z.ZSTD_compressBound.argtypes = [ctypes.c_size_t]
_z.ZSTD_compress.restype = ctypes.c_size_t
_z.ZSTD_compress.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                             ctypes.c_char_p, ctypes.c_size_t, ctypes.c_int]
_z.ZSTD_decompress.restype = ctypes.c_size_t
_z.ZSTD_decompress.argtypes = [ctypes.c_void_p, ctypes.c_size_t,
                               ctypes.c_char_p, ctypes.c_size_t]
_z.ZSTD_isError.restype = ctypes.c_uint
_z.ZSTD_isError.argtypes = [ctypes.c_size_t]


def zcompress(data, level=3):
    cap = _z.ZSTD_compressBound(len(data))
    buf = ctypes.create_string_buffer(cap)
    n = _z.ZSTD_compress(buf, cap, data, len(data), level)
    if _z.ZSTD_isError(n):
        raise RuntimeError('zstd compress failed')
    return buf.raw[:n]


def zdecompress(data, raw):
    buf = ctypes.create_string_buffer(max(raw, 1))
    n = _z.ZSTD_decompress(buf, raw, data, len(data))
    if _z.ZSTD_isError(n) or n != raw:
        raise RuntimeError('zstd decompress failed')
    return buf.raw[:n]


# --- the format ---
class Section:
    def __init__(self, typ, flags, payload, raw, crc=None, reserved=0):
        self.typ, self.flags, self.payload, self.raw = typ, flags, payload, raw
        self.crc = crc              # None: compute
        self.reserved = reserved
        self._plain = None

    def plain(self):
        """The decompressed payload."""
        if self._plain is None:
            self._plain = (zdecompress(self.payload, self.raw)
                           if self.flags & 1 else self.payload)
        return self._plain

    def copy(self):
        s = Section(self.typ, self.flags, self.payload, self.raw, self.crc,
                    self.reserved)
        s._plain = self._plain
        return s

    def set_plain(self, data, rng):
        """New content; compressed like before (sometimes not)."""
        self._plain = data
        if self.flags & 1 and rng.random() < 0.9:
            self.payload = zcompress(data)
        else:
            self.flags &= ~1
            self.payload = data
        self.raw = len(data)
        self.crc = None


def parse(data):
    secs, off = [], HDR
    while off + SHDR <= len(data):
        typ, flags, crc, stored, raw, res = struct.unpack_from(
            '<IIIQQI', data, off + 4)
        sec = Section(typ, flags, data[off + SHDR:off + SHDR + stored], raw,
                      crc, res)
        secs.append(sec)
        off += SHDR + ((stored + 7) & ~7)
        if typ == T_END:
            break
    return data[:HDR], secs


def sec_header(s, stored=None, raw=None):
    stored = len(s.payload) if stored is None else stored
    raw = s.raw if raw is None else raw
    crc = crc32c(s.payload) if s.crc is None else s.crc
    h = struct.pack('<IIIIQQI', SEC_MAGIC, s.typ, s.flags, crc, stored, raw,
                    s.reserved)
    return h + struct.pack('<I', crc32c(h))


def build(header, secs):
    out = [header]
    for s in secs:
        out.append(sec_header(s))
        out.append(s.payload)
        out.append(bytes(-len(s.payload) % 8))
    return b''.join(out)


def fix_file_header(h):
    h = bytearray(h[:60])
    return bytes(h) + struct.pack('<I', crc32c(h))


def fields(p):
    """[(offset, tag, value offset, length)] of a field sequence; stops at
    the first field that does not fit."""
    out, pos = [], 0
    while pos + FHDR <= len(p):
        tag, _res, n = struct.unpack_from('<IIQ', p, pos)
        if n > len(p) - pos - FHDR:
            break
        out.append((pos, tag, pos + FHDR, n))
        pos += FHDR + ((n + 7) & ~7)
    return out


def field(tag, value):
    return (struct.pack('<IIQ', tag, 0, len(value)) + value +
            bytes(-len(value) % 8))


EDGE64 = [0, 1, 2, 7, 8, 24, 0x7f, 0x80, 0xff, 0x100, 0xfff, 0x1000, 0x7fff,
          0xffff, 0x10000, 0x7fffffff, 0x80000000, 0xffffffff, 0x100000000,
          0x7fffffffffffffff, 0x8000000000000000, 0xffffffffffffffff,
          0xfffffffffffffff8, 0xffffffffffffff00, 0x00007ffffffff000,
          0x0000800000000000, 0xffffffff80000000, 1 << 30, (1 << 32) - 8,
          16 << 30, (16 << 30) + 1, 4 << 30, (4 << 30) + 1, 64 << 20,
          (64 << 20) + 1, 1 << 20, (1 << 20) + 1, 0x400000, 0x555555554000]
STRINGS = [b'', b'"', b'\\', b'\x00abc', b'\x01\x02\x1f\x7f', b'\xff\xfe\xc3',
           b'\xc3\xa9t\xc3\xa9', b'a' * 4096, b'%s%n%x', b'../../etc/passwd',
           b'/', b'[vdso]', b'//anon', b'[heap]', b'\xe2\x80\xa8', b'\n\r\t',
           b'/proc/self/mem', b'</script>', b'\xf0\x9f\x92\xa5', b'..']


def edge(rng, old=None):
    r = rng.random()
    if old is not None and r < 0.3:
        return (old + rng.choice([-1, 1, -8, 8, 24, -24, 4096, -4096,
                                  1 << 32])) & 0xffffffffffffffff
    if r < 0.85:
        return rng.choice(EDGE64)
    return rng.getrandbits(rng.choice([8, 16, 32, 48, 64]))


def flip_bits(rng, b, lo=0, hi=None, k=None):
    hi = len(b) if hi is None else hi
    if hi <= lo:
        return
    for _ in range(k or rng.randint(1, 8)):
        pos = rng.randrange(lo, hi)
        b[pos] ^= 1 << rng.randrange(8)


def byte_run(rng, b, lo=0, hi=None):
    hi = len(b) if hi is None else hi
    if hi <= lo:
        return
    pos = rng.randrange(lo, hi)
    n = min(rng.choice([1, 2, 4, 8, 16, 64, 256, 4096]), len(b) - pos)
    kind = rng.randrange(4)
    if kind == 0:
        b[pos:pos + n] = bytes(n)
    elif kind == 1:
        b[pos:pos + n] = b'\xff' * n
    elif kind == 2:
        b[pos:pos + n] = rng.randbytes(n)
    else:
        src = rng.randrange(lo, hi)
        chunk = bytes(b[src:src + n])
        b[pos:pos + len(chunk)] = chunk


# --- mutators: each returns (bytes, description) ---
def m_raw(rng, data, secs):
    b = bytearray(data)
    k = rng.randrange(7)
    if k == 0:
        # mostly the headers: the first 4 KiB and the section headers
        if rng.random() < 0.5:
            flip_bits(rng, b, 0, min(len(b), 4096))
        else:
            flip_bits(rng, b)
        return bytes(b), 'raw: bit flips'
    if k == 1:
        byte_run(rng, b)
        return bytes(b), 'raw: byte run'
    if k == 2:
        offs = section_offsets(secs)
        if rng.random() < 0.5:
            cut = rng.choice(offs) + rng.choice([-1, 0, 1, 8, 39, 40, 41])
        else:
            cut = rng.randrange(len(b))
        cut = max(0, min(cut, len(b)))
        return bytes(b[:cut]), 'raw: truncated at %d' % cut
    if k == 3:
        pos = rng.randrange(len(b))
        n = rng.choice([1, 3, 8, 40])
        b[pos:pos] = rng.randbytes(n)
        return bytes(b), 'raw: %d bytes inserted at %d' % (n, pos)
    if k == 4:
        pos = rng.randrange(len(b))
        n = rng.choice([1, 3, 8, 40])
        del b[pos:pos + n]
        return bytes(b), 'raw: %d bytes deleted at %d' % (n, pos)
    if k == 5:
        tail = rng.choice([rng.randbytes(rng.randrange(1, 200)),
                           bytes(data[HDR:HDR + 200]), data])
        return bytes(b) + tail, 'raw: %d bytes appended' % len(tail)
    flip_bits(rng, b, k=rng.randint(16, 256))
    return bytes(b), 'raw: many bit flips'


def section_offsets(secs):
    out, off = [], HDR
    for s in secs:
        out.append(off)
        off += SHDR + ((len(s.payload) + 7) & ~7)
    out.append(off)
    return out


def m_header(rng, header, secs):
    if rng.random() < 0.25:
        h = bytearray(header)
        what = rng.choice(['major', 'minor', 'word', 'ptr', 'hsize', 'flags',
                           'time', 'reserved', 'endian'])
        if what == 'major':
            struct.pack_into('<H', h, 8, rng.choice([0, 2, 0xffff]))
        elif what == 'minor':
            struct.pack_into('<H', h, 10, rng.choice([1, 0xffff]))
        elif what == 'word':
            h[16] = rng.choice([0, 4, 16, 255])
        elif what == 'ptr':
            h[17] = rng.choice([0, 4, 16, 255])
        elif what == 'hsize':
            struct.pack_into('<H', h, 18, rng.choice([0, 40, 65, 0xffff]))
        elif what == 'flags':
            struct.pack_into('<I', h, 20, edge(rng) & 0xffffffff)
        elif what == 'time':
            struct.pack_into('<Q', h, 24, edge(rng))
        elif what == 'reserved':
            h[32 + rng.randrange(28)] = rng.randrange(1, 256)
        else:
            struct.pack_into('<I', h, 12, 0x04030201)
        return build(fix_file_header(h), secs), 'header: file ' + what
    i = rng.randrange(len(secs))
    s = secs[i].copy()
    secs = list(secs)
    secs[i] = s
    what = rng.choice(['type', 'flags', 'stored', 'raw', 'reserved',
                       'raw', 'stored'])
    stored = raw = None
    if what == 'type':
        s.typ = rng.choice([0, T_CONFIG, T_BUFFER, T_TASKS, T_MAPS, T_CODE,
                            T_SIGNAL, T_META, T_END, 8, 0x7ffe, 0xffffffff])
    elif what == 'flags':
        s.flags = rng.choice([s.flags ^ 1, 2, 0xffffffff, 0x80000000])
    elif what == 'reserved':
        s.reserved = rng.randrange(1, 1 << 32)
    elif what == 'stored':
        stored = edge(rng, len(s.payload))
    else:
        raw = edge(rng, s.raw)
    out = [header]
    for j, t in enumerate(secs):
        out.append(sec_header(t, stored if j == i else None,
                              raw if j == i else None))
        out.append(t.payload)
        out.append(bytes(-len(t.payload) % 8))
    return b''.join(out), 'header: section %d (type %d) %s' % (i, secs[i].typ,
                                                               what)


def mutate_fields(rng, p, typ, depth=0):
    """One structured change to a field sequence; returns new bytes."""
    fs = fields(p)
    if not fs:
        b = bytearray(p)
        flip_bits(rng, b)
        return bytes(b), 'bits'
    off, tag, voff, n = rng.choice(fs)
    # a record of a list section: go inside
    if typ in LISTS and tag == 1 and depth == 0 and rng.random() < 0.8:
        inner, d = mutate_fields(rng, p[voff:voff + n], -1, 1)
        return (p[:off] + field(tag, inner) + p[voff + ((n + 7) & ~7):],
                'record: ' + d)
    b = bytearray(p)
    k = rng.randrange(10)
    end = voff + ((n + 7) & ~7)
    if k <= 2 and n in (1, 2, 4, 8):
        old = int.from_bytes(p[voff:voff + n], 'little')
        v = edge(rng, old) & ((1 << (8 * n)) - 1)
        b[voff:voff + n] = v.to_bytes(n, 'little')
        return bytes(b), 'tag %d value %#x' % (tag, v)
    if k == 3:
        # the value as another length (still a valid field sequence)
        v = edge(rng)
        ln = rng.choice([1, 2, 4, 8, 3, 0, 16])
        val = (v & ((1 << (8 * min(ln, 8))) - 1)).to_bytes(min(ln, 8),
                                                           'little')
        val += bytes(ln - len(val))
        return (p[:off] + field(tag, val) + p[end:],
                'tag %d as %d bytes' % (tag, ln))
    if k == 4:
        # the length field itself (breaks the sequence)
        nl = edge(rng, n)
        struct.pack_into('<Q', b, off + 8, nl)
        return bytes(b), 'tag %d length %#x' % (tag, nl)
    if k == 5:
        nt = rng.choice([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 0xffffffff,
                         tag + 1])
        struct.pack_into('<I', b, off, nt)
        return bytes(b), 'tag %d -> %d' % (tag, nt)
    if k == 6:
        # a string (or bytes) value replaced
        s = rng.choice(STRINGS)
        if rng.random() < 0.3:
            s = rng.randbytes(rng.choice([1, 20, 64, 65, 300]))
        return (p[:off] + field(tag, s) + p[end:],
                'tag %d = %d-byte string' % (tag, len(s)))
    if k == 7:
        if rng.random() < 0.5:
            return p[:off] + p[end:], 'tag %d removed' % tag
        return p[:end] + p[off:end] + p[end:], 'tag %d repeated' % tag
    if k == 8 and n > 0:
        # bytes of the value: trace, code, registers, strings
        if rng.random() < 0.6:
            flip_bits(rng, b, voff, voff + n)
        else:
            byte_run(rng, b, voff, voff + n)
        return bytes(b), 'tag %d value bytes (%d)' % (tag, n)
    if k == 9 and n > 8:
        cut = rng.randrange(n)
        return (p[:off] + field(tag, p[voff:voff + cut]) + p[end:],
                'tag %d value cut to %d of %d' % (tag, cut, n))
    flip_bits(rng, b, off, min(len(b), end))
    return bytes(b), 'tag %d bits' % tag


SEC_WEIGHT = {T_CONFIG: 2, T_BUFFER: 5, T_TASKS: 2, T_MAPS: 3, T_CODE: 2,
              T_SIGNAL: 3, T_META: 2, T_END: 1}


def pick_section(rng, secs):
    w = [SEC_WEIGHT.get(s.typ, 1) for s in secs]
    return rng.choices(range(len(secs)), weights=w)[0]


def m_payload(rng, header, secs):
    secs = list(secs)
    descs = []
    for _ in range(1 if rng.random() < 0.8 else rng.randint(2, 4)):
        i = pick_section(rng, secs)
        s = secs[i].copy()
        secs[i] = s
        p = s.plain()
        if s.typ == T_CODE and len(p) > 256 * 1024 and rng.random() < 0.7:
            # a big code blob: change its bytes, not its fields (cheaper)
            b = bytearray(p)
            fs = [f for f in fields(p) if f[1] == 7]
            if fs:
                _, _, voff, n = fs[0]
                flip_bits(rng, b, voff, voff + n, rng.randint(1, 64))
            np, d = bytes(b), 'code bytes'
        elif rng.random() < 0.85:
            np, d = mutate_fields(rng, p, s.typ)
        else:
            b = bytearray(p)
            flip_bits(rng, b)
            np, d = bytes(b), 'payload bits'
        s.set_plain(np, rng)
        descs.append('section %d (type %d): %s' % (i, s.typ, d))
    return build(header, secs), 'payload: ' + '; '.join(descs)


def m_structure(rng, header, secs):
    secs = list(secs)
    k = rng.randrange(8)
    body = [s for s in secs if s.typ != T_END]
    end = [s for s in secs if s.typ == T_END]
    if k == 0 and body:
        i = rng.randrange(len(body))
        d = 'section of type %d dropped' % body[i].typ
        del body[i]
        if rng.random() < 0.5 and end:
            e = end[0].copy()
            e.set_plain(field(2, struct.pack('<Q', len(body))), rng)
            end = [e]
            d += ', end count fixed'
        secs = body + end
    elif k == 1 and body:
        i = rng.randrange(len(body))
        body.insert(rng.randrange(len(body) + 1), body[i])
        d = 'section of type %d repeated' % body[i].typ
        secs = body + end
    elif k == 2 and len(body) > 1:
        rng.shuffle(body)
        d = 'sections shuffled'
        secs = body + end
    elif k == 3:
        u = Section(rng.choice([0, 8, 100, 0x7ffe]), 0,
                    rng.randbytes(rng.randrange(0, 64)), 0)
        u.raw = len(u.payload)
        secs.insert(rng.randrange(len(secs) + 1), u)
        d = 'unknown section %d inserted' % u.typ
    elif k == 4 and end:
        secs = list(secs)
        secs.remove(end[0])
        secs.insert(rng.randrange(len(secs) + 1), end[0])
        d = 'end marker moved'
    elif k == 5:
        i = rng.randrange(len(secs))
        s = secs[i].copy()
        junk = rng.randbytes(rng.randrange(1, 512))
        if rng.random() < 0.5:
            # a valid frame of something else, or a truncated frame
            junk = zcompress(rng.randbytes(rng.randrange(1, 4096)))
            if rng.random() < 0.5:
                junk = junk[:rng.randrange(1, len(junk))]
        s.flags |= 1
        s.payload = junk
        s.raw = edge(rng, s.raw)
        s.crc = None
        secs[i] = s
        d = 'section %d (type %d): garbage zstd payload' % (i, s.typ)
    elif k == 6:
        # a decompression bomb: a small frame of zeros, declared as such
        i = rng.randrange(len(secs))
        s = secs[i].copy()
        n = rng.choice([1 << 20, (1 << 20) + 1, 8 << 20, 64 << 20])
        s.flags |= 1
        s.payload = zcompress(bytes(n), 1)
        s.raw = n
        s.crc = None
        secs[i] = s
        d = 'section %d (type %d): %d zero bytes compressed' % (i, s.typ, n)
    else:
        # an empty payload of a real type
        i = rng.randrange(len(secs))
        s = secs[i].copy()
        s.flags = 0
        s.payload = b''
        s.raw = 0
        s.crc = None
        secs[i] = s
        d = 'section %d (type %d): empty' % (i, s.typ)
    return build(header, secs), 'structure: ' + d


class Base:
    def __init__(self, path):
        self.path = path
        self.data = open(path, 'rb').read()
        self.header, self.secs = parse(self.data)
        if not self.secs or self.secs[-1].typ != T_END:
            sys.exit('%s: not a complete snapshot (no end marker)' % path)


def make_case(rng, bases, weights=None):
    base = rng.choices(bases, weights)[0] if weights else rng.choice(bases)
    r = rng.random()
    if r < 0.25:
        data, d = m_raw(rng, base.data, base.secs)
    elif r < 0.40:
        data, d = m_header(rng, base.header, base.secs)
    elif r < 0.85:
        data, d = m_payload(rng, base.header, base.secs)
    else:
        data, d = m_structure(rng, base.header, base.secs)
    return data, '%s: %s' % (os.path.basename(base.path), d)


# --- running ---
SAN = ('ERROR: AddressSanitizer', 'ERROR: LeakSanitizer', 'runtime error:',
       'UndefinedBehaviorSanitizer', 'Sanitizer:', 'SUMMARY: ')


def run(argv, timeout, cwd):
    try:
        p = subprocess.run(argv, stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           timeout=timeout, cwd=cwd)
        return p.returncode, p.stdout, p.stderr
    except subprocess.TimeoutExpired as e:
        return None, e.stdout or b'', e.stderr or b''


CMDS = [('info', ['info']), ('report', ['report']),
        ('report --json', ['report', '--json']),
        ('decode --calls', ['decode', '--calls']),
        ('export', None)]


def judge(args, label, rc, so, se, name, out):
    """The problems of one command's outcome."""
    problems = []
    err = se.decode('utf-8', 'replace')
    if any(s in err for s in SAN):
        problems.append('%s: sanitizer report:\n%s' % (label, err[-3000:]))
    elif rc is None:
        problems.append('%s: hung (killed after %g s)' % (label,
                                                          args.timeout))
    elif rc < 0:
        problems.append('%s: killed by signal %d\n%s' % (label, -rc,
                                                        err[-1500:]))
    elif rc not in (0, 1):
        problems.append('%s: exit %d\n%s' % (label, rc, err[-1500:]))
    elif rc == 1 and name not in err and 'out.data' not in err:
        problems.append('%s: exit 1 without a message naming the '
                        'snapshot:\n%s' % (label, err[-1500:]))
    if label == 'report --json' and rc in (0, 1) and so.strip():
        try:
            json.loads(so)
        except ValueError as e:
            problems.append('report --json: not JSON (%s)' % e)
    if label == 'export' and rc == 1 and os.path.exists(out):
        problems.append('export: failed but left %s behind' % out)
    return problems


def case_dir(work, idx, data):
    d = os.path.join(work, 'c%d' % idx)
    os.mkdir(d, 0o700)
    snap = os.path.join(d, 'snap-%d.btrace' % idx)
    with open(snap, 'wb') as f:
        f.write(data)
    return d, snap


def check_case(args, idx, data, work):
    """Run the commands on one snapshot, one btrace process each; returns
    (problems, statuses)."""
    d, snap = case_dir(work, idx, data)
    out = os.path.join(d, 'out.data')
    problems, statuses = [], []
    name = os.path.basename(snap)
    for label, cmd in CMDS:
        if cmd is None:
            cmd = ['export', '--perf-data', out, '-f', '-q']
        rc, so, se = run([args.btrace] + cmd + [snap], args.timeout, d)
        statuses.append(rc)
        problems += judge(args, label, rc, so, se, name, out)
    shutil.rmtree(d, ignore_errors=True)
    return problems, statuses


def batch_outcome(args, d, snap):
    """(problems, statuses) of a snapshot bt-cli-batch finished, or None
    when it did not finish it."""
    try:
        with open(os.path.join(d, 'status')) as f:
            lines = f.read().split('\n')
    except OSError:
        return None
    if 'done' not in lines:
        return None
    rcs = {}
    for line in lines:
        w = line.split()
        if len(w) == 2:
            rcs[int(w[0])] = int(w[1])
    out = os.path.join(d, 'out.data')
    name = os.path.basename(snap)
    problems, statuses = [], []

    def slurp(f):
        try:
            with open(os.path.join(d, f), 'rb') as fh:
                return fh.read()
        except OSError:
            return b''
    for k, (label, _) in enumerate(CMDS):
        rc = rcs.get(k)
        statuses.append(rc)
        if rc is None:
            problems.append('%s: no exit status from bt-cli-batch' % label)
            continue
        problems += judge(args, label, rc, slurp('%d.out' % k),
                          slurp('%d.err' % k), name, out)
    leak = slurp('leak.err').decode('utf-8', 'replace')
    if any(s in leak for s in SAN):
        problems.append('leak check: sanitizer report:\n%s' % leak[-3000:])
    return problems, statuses


def check_batch(args, cases, work):
    """Run the commands on several snapshots in one bt-cli-batch process;
    [(problems, statuses)] in the order of @cases [(idx, data)].  What it
    did not finish (a signal, a sanitizer error, a hang) and any case it
    found a problem in are run again one btrace process per command: that
    verdict is the one kept (a difference is printed)."""
    dirs = [case_dir(work, idx, data) for idx, data in cases]
    rc, _, se = run([args.batch_exe, '%d' % max(1, int(args.timeout))] +
                    [snap for _, snap in dirs],
                    args.timeout * 5 * len(cases) + 60, work)
    results = []
    for (idx, data), (d, snap) in zip(cases, dirs):
        got = batch_outcome(args, d, snap)
        shutil.rmtree(d, ignore_errors=True)
        if got is not None and not got[0]:
            results.append(got)
            continue
        again = check_case(args, idx, data, work)
        if got is not None and not again[0]:
            again[0].append('bt-cli-batch found problems the btrace '
                            'processes do not (a harness artefact?):\n' +
                            '\n'.join(got[0]))
        results.append(again)
    with args.lock:
        args.batch_stats['processes'] += 1
        if rc != 0:
            args.batch_stats['died'] += 1
    return results


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--btrace', required=True)
    ap.add_argument('--count', type=int, default=300)
    ap.add_argument('--start', type=int, default=0)
    ap.add_argument('--seed', type=int, default=13)
    ap.add_argument('--jobs', type=int, default=1)
    ap.add_argument('--timeout', type=float, default=300.0,
                    help='per command, a hang guard (default 300 s)')
    ap.add_argument('--keep', help='write failing snapshots here')
    ap.add_argument('--gen', nargs=2, metavar=('GEN_FIXTURE', 'PROG'),
                    help='also make a PT and a BTS base with bt-gen-fixture')
    ap.add_argument('--batch', type=int, default=1,
                    help='snapshots per bt-cli-batch process (default 1: '
                    'one btrace process per command)')
    ap.add_argument('--batch-exe', help='bt-cli-batch (with --batch)')
    ap.add_argument('--weights', help='comma-separated weights of the '
                    'bases, in order (default: equal)')
    ap.add_argument('bases', nargs='*')
    args = ap.parse_args()
    args.btrace = os.path.abspath(args.btrace)
    if args.batch_exe:
        args.batch_exe = os.path.abspath(args.batch_exe)

    os.environ.setdefault('ASAN_OPTIONS', 'detect_leaks=1:abort_on_error=0')
    os.environ.setdefault('UBSAN_OPTIONS',
                          'print_stacktrace=1:halt_on_error=1')
    work = tempfile.mkdtemp(prefix='bt-fuzz-snap-')
    try:
        paths = list(args.bases)
        if args.gen:
            gen, prog = args.gen
            # the PT base with its stack and an access log: the
            # report's value recovery reads both
            for flag, name, n in ((['-A', '-K', '65536'], 'gen-pt', '300'),
                                  (['-b'], 'gen-bts', '100')):
                p = os.path.join(work, name + '.btrace')
                r = subprocess.run([gen] + flag + ['-o', p, '--', prog, n],
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT)
                if r.returncode:
                    print('Bail out! bt-gen-fixture failed:\n' +
                          r.stdout.decode(errors='replace'))
                    return 1
                paths.append(p)
        if not paths:
            print('Bail out! no base snapshots')
            return 1
        bases = [Base(p) for p in paths]
        weights = None
        if args.weights:
            weights = [float(w) for w in args.weights.split(',')]
            if len(weights) != len(bases) or sum(weights) <= 0:
                print('Bail out! --weights: %d bases, %d weights' %
                      (len(bases), len(weights)))
                return 1
        if args.batch > 1 and not args.batch_exe:
            print('Bail out! --batch needs --batch-exe')
            return 1
        args.lock = threading.Lock()
        args.batch_stats = {'processes': 0, 'died': 0}
        print('# %d base snapshots: %s' % (len(bases), ', '.join(
            os.path.basename(b.path) for b in bases)))
        print('1..%d' % args.count)
        sys.stdout.flush()
        lock = threading.Lock()
        tally = {'fail': 0, 'rc': {}, 'done': 0}
        t0 = time.time()

        def report(idx, data, desc, problems, statuses):
            with lock:
                tally['done'] += 1
                for label, rc in zip(('info', 'report', 'json', 'decode',
                                      'export'), statuses):
                    key = '%s=%s' % (label, 'hang' if rc is None else rc)
                    tally['rc'][key] = tally['rc'].get(key, 0) + 1
                n = tally['done']
                if problems:
                    tally['fail'] += 1
                    print('not ok %d - case %d (%s)' % (n, idx, desc))
                    for p in problems:
                        for line in p.splitlines()[:60]:
                            print('#   ' + line)
                    if args.keep:
                        os.makedirs(args.keep, exist_ok=True)
                        with open(os.path.join(args.keep, 'case-%d.btrace'
                                               % idx), 'wb') as f:
                            f.write(data)
                else:
                    print('ok %d - case %d (%s)' % (n, idx, desc))
                sys.stdout.flush()

        def make(idx):
            rng = random.Random(args.seed * 1000003 + idx)
            return make_case(rng, bases, weights)

        def one(idx):
            data, desc = make(idx)
            problems, statuses = check_case(args, idx, data, work)
            report(idx, data, desc, problems, statuses)

        def batch(idxs):
            made = [make(i) for i in idxs]
            res = check_batch(args, [(i, m[0]) for i, m in zip(idxs, made)],
                              work)
            for i, (data, desc), (problems, statuses) in zip(idxs, made,
                                                            res):
                report(i, data, desc, problems, statuses)

        first, end = args.start, args.start + args.count
        with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
            if args.batch > 1:
                list(ex.map(batch, [range(i, min(i + args.batch, end))
                                    for i in range(first, end,
                                                   args.batch)]))
            else:
                list(ex.map(one, range(first, end)))
        dt = time.time() - t0
        print('# %d snapshots, %d commands, %d failed, %.0f s (%.2f '
              'snapshots/s)' % (tally['done'], 5 * tally['done'],
                                tally['fail'], dt, tally['done'] / dt))
        if args.batch > 1:
            print('# %d bt-cli-batch processes (%d snapshots each), %d '
                  'ended early (their unfinished snapshots ran as btrace '
                  'processes)' % (args.batch_stats['processes'], args.batch,
                                  args.batch_stats['died']))
        print('# exit statuses: ' + ' '.join(
            '%s:%d' % kv for kv in sorted(tally['rc'].items())))
        return 1 if tally['fail'] else 0
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == '__main__':
    sys.exit(main())
