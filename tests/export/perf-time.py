#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""perf reads the time of an exported QEMU recording as btrace does.

A QEMU recording of time-order (tests/qemu/progs/time-order.c: five
threads in a known order) is exported with `btrace export --perf-data`;
`perf script --itrace=b -F tid,time,ip --ns` (perf 6.1) must decode it in
time order, with every branch's time on the recording's clock, and agree
with btrace's (qemu-timedump) for the same instructions: perf gives a
branch the time of the last TSC packet before it, btrace the block's time
interpolated between packets, so the two must lie in the same interval
between consecutive timing packets (the resolution, docs/qemu-backend.md
"Time"), or the next one: perf's decoder does not update a sample's time
in the middle of a TNT packet, and libipt reads a packet up to one block
early, so a block near a packet can land on its other side; a block btrace
only bounds from below (BTRACE_TIME_AFTER) must not be later than that.

usage: perf-time.py BTRACE QEMU-TIMEDUMP PROGDIR
"""
import bisect
import os
import shutil
import subprocess
import sys
import tempfile
import time

AFTER = 4
n = 0
failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    what = " ".join(what.split())   # one TAP line
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n, what))
    if not cond:
        failed += 1
    return cond


def main():
    btrace, tool, progdir = sys.argv[1:4]
    if not shutil.which("perf") or subprocess.run(
            ["perf", "version"], capture_output=True).returncode:
        print("1..0 # SKIP perf is not installed")
        return
    print("1..6")
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ)
        env.pop("BTRACE_QEMU_TIME", None)
        snap = os.path.join(d, "s.btrace")
        data = os.path.join(d, "perf.data")
        t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        p = subprocess.run([btrace, "record", "-q", "-b", "qemu", "-o", snap,
                            "--", os.path.join(progdir, "time-order")],
                           env=env, capture_output=True, text=True,
                           timeout=120)
        t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
        if not ok(os.path.exists(snap), "recorded (exit %d %s)"
                  % (p.returncode, p.stderr.strip()[-200:])):
            return
        p = subprocess.run([btrace, "export", snap, "--perf-data", data],
                           capture_output=True, text=True, timeout=120)
        if not ok(p.returncode == 0, "exported: %s" % p.stderr.strip()[-300:]):
            return
        p = subprocess.run(["perf", "script", "--symfs", data + ".symfs",
                            "-i", data, "--itrace=b", "--ns",
                            "-F", "tid,time,ip"], capture_output=True,
                           text=True, timeout=300)
        perf = {}
        for line in p.stdout.splitlines():
            f = line.split()
            if len(f) < 3 or not f[1].endswith(":"):
                continue
            s, ns = f[1][:-1].split(".")
            perf.setdefault(int(f[0]), []).append(
                (int(f[2], 16), int(s) * 10**9 + int(ns)))
        nsamp = sum(len(v) for v in perf.values())
        if not ok(p.returncode == 0 and nsamp > 1000 and len(perf) == 5,
                  "perf script decodes 5 threads with time: %d branches "
                  "(exit %d %s)" % (nsamp, p.returncode,
                                    p.stderr.strip()[-300:])):
            return
        times = [t for v in perf.values() for _, t in v]
        ok(t0 <= min(times) and max(times) <= t1,
           "perf's times lie within the run on CLOCK_MONOTONIC (%d..%d, "
           "perf %d..%d)" % (t0, t1, min(times), max(times)))
        q = subprocess.run([tool, snap], capture_output=True, text=True,
                           timeout=120)
        blocks = {}
        for line in q.stdout.splitlines():
            f = line.split()
            if f[0] == "B":
                blocks.setdefault(int(f[1]), []).append(
                    (int(f[7], 16), int(f[5]), int(f[6], 16)))
        # Walk each thread's branches and blocks in order: a branch at ip
        # is the end of the next block ending there.
        match, bad, miss, worst, diffs, next_one = 0, [], 0, 0, [], 0
        for tid, samples in perf.items():
            bl = blocks.get(tid, [])
            steps = sorted({t for _, t in samples})
            k = 0
            for ip, t in samples:
                if not ip:
                    continue   # a trace start
                j = k
                while j < len(bl) and bl[j][0] != ip:
                    j += 1
                if j == len(bl):
                    miss += 1
                    continue
                k = j + 1
                tb, fl = bl[j][1], bl[j][2]
                i = bisect.bisect_left(steps, t)
                lo = steps[i - 1] if i > 0 else t
                hi = steps[i + 1] if i + 1 < len(steps) else t
                hi2 = steps[i + 2] if i + 2 < len(steps) else hi
                if (fl & AFTER and tb <= hi2) or lo <= tb <= hi2:
                    match += 1
                    if tb > hi:
                        next_one += 1
                    worst = max(worst, abs(tb - t))
                    diffs.append(abs(tb - t))
                else:
                    bad.append((tid, hex(ip), t, tb, fl, lo, hi))
        ok(match > 1000 and miss * 100 <= match,
           "btrace has a block for perf's branches: %d of %d (%d not "
           "found)" % (match + len(bad), match + len(bad) + miss, miss))
        diffs.sort()
        ok(not bad, "perf's and btrace's times agree within one interval "
           "between timing packets (%d of them in the next one): %d agree "
           "(difference: median %d ns, 99%% %d ns, largest %d ns, across a "
           "blocking system call), %d do not %s"
           % (next_one, match, diffs[len(diffs) // 2] if diffs else 0,
              diffs[len(diffs) * 99 // 100] if diffs else 0, worst,
              len(bad), bad[:3]))


main()
sys.exit(1 if failed else 0)
