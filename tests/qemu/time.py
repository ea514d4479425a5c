#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Time in a QEMU recording (docs/qemu-backend.md, "Time").

time-order's threads act in a known order through pipes: step_0 .. step_3
run one after the other in four threads, then main_last in the main
thread, which crashes.  The decoded times (qemu-timedump) must order those
calls, lie within the recording's run on the same clock, be non-decreasing
per thread and carry BTRACE_TIME_* flags; with BTRACE_QEMU_TIME=0 the trace
has no time at all.

usage: time.py BTRACE QEMU-TIMEDUMP PROGDIR
"""
import os
import subprocess
import sys
import tempfile
import time

PACKET, INTERP, AFTER = 1, 2, 4
ORDER = ["step_0", "step_1", "step_2", "step_3", "main_last"]

n = 0
failed = 0


def ok(cond, what):
    global n, failed
    n += 1
    print(("ok %d - %s" if cond else "not ok %d - %s") % (n, what))
    if not cond:
        failed += 1
    return cond


def record(btrace, prog, out, env):
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    p = subprocess.run([btrace, "record", "-q", "-b", "qemu", "-o", out,
                        "--", prog], env=env, capture_output=True, text=True,
                       timeout=120)
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    return p, t0, t1


def dump(tool, snap):
    p = subprocess.run([tool, snap], capture_output=True, text=True,
                       timeout=120)
    if p.returncode:
        sys.stderr.write(p.stderr)
        return None
    clock, blocks, calls = None, {}, {}
    for line in p.stdout.splitlines():
        f = line.split()
        if line.startswith("clock="):
            clock = line[6:]
        elif f[0] == "B":
            blocks.setdefault(int(f[1]), []).append(
                (int(f[5]), int(f[6], 16)))
        elif f[0] == "C":
            calls.setdefault(int(f[1]), []).append(
                (f[7], int(f[4]), int(f[5]), int(f[6], 16)))
    return clock, blocks, calls


def main():
    btrace, tool, progdir = sys.argv[1:4]
    prog = os.path.join(progdir, "time-order")
    print("1..12")
    with tempfile.TemporaryDirectory() as d:
        env = dict(os.environ)
        env.pop("BTRACE_QEMU_TIME", None)
        snap = os.path.join(d, "t.btrace")
        p, t0, t1 = record(btrace, prog, snap, env)
        ok(p.returncode == 128 + 11 and os.path.exists(snap),
           "time-order crashes with SIGSEGV and leaves a snapshot "
           "(exit %d: %s)" % (p.returncode, p.stderr.strip()[-200:]))
        r = dump(tool, snap)
        if not ok(r is not None, "the snapshot decodes"):
            return
        clock, blocks, calls = r
        ok(clock == "CLOCK_MONOTONIC", "the clock is CLOCK_MONOTONIC (%s)"
           % clock)
        times = [t for bl in blocks.values() for t, _ in bl if t]
        ok(times and t0 <= min(times) and max(times) <= t1,
           "every block time lies within the run (%d..%d, blocks %s..%s)"
           % (t0, t1, min(times) if times else None,
              max(times) if times else None))
        bad = []
        for tid, bl in blocks.items():
            last = 0
            for t, fl in bl:
                if t and t < last:
                    bad.append((tid, t, last))
                last = max(last, t)
        ok(not bad, "block times never go back in a thread %s" % bad[:3])
        unflagged = sum(1 for bl in blocks.values() for t, fl in bl
                        if (t != 0) != (fl != 0))
        ok(unflagged == 0, "a block has a time exactly when it has flags "
           "(%d do not)" % unflagged)
        flags = {}
        for bl in blocks.values():
            for _, fl in bl:
                flags[fl] = flags.get(fl, 0) + 1
        ok(flags.get(PACKET, 0) > 0 and flags.get(INTERP, 0) >
           flags.get(PACKET, 0), "packets and, more of them, interpolated "
           "blocks: %s" % flags)
        # A function's entries (each return from spin() starts one): from
        # the first one's start to the last one's end.
        found = {}
        for tid, cl in calls.items():
            for name, t, e, fl in cl:
                if name not in ORDER:
                    continue
                if name not in found:
                    found[name] = (tid, t, e, fl)
                else:
                    found[name] = (found[name][0], found[name][1], e,
                                   found[name][3])
        ok(all(f in found and found[f][1] and found[f][2]
               for f in ORDER), "each ordered call has a start and an end "
           "time: %s" % found)
        if len(found) == len(ORDER):
            tids = {found[f][0] for f in ORDER}
            seq = [found[f] for f in ORDER]
            ok(len(tids) == len(ORDER) and all(
                seq[i][1] <= seq[i][2] <= seq[i + 1][1]
                for i in range(len(seq) - 1)),
               "the calls of five threads are in the order they ran: %s"
               % [(f, found[f][1], found[f][2]) for f in ORDER])
        else:
            ok(False, "the calls of five threads are in the order they ran")
        # No time: the plugin takes no samples.
        env["BTRACE_QEMU_TIME"] = "0"
        snap0 = os.path.join(d, "t0.btrace")
        p, _, _ = record(btrace, prog, snap0, env)
        ok(p.returncode == 128 + 11, "BTRACE_QEMU_TIME=0 records too")
        r = dump(tool, snap0)
        ok(r is not None and r[0] == "none" and not any(
            t or fl for bl in r[1].values() for t, fl in bl),
           "BTRACE_QEMU_TIME=0: no clock and every time 0")
        info = subprocess.run([btrace, "info", snap], capture_output=True,
                              text=True).stdout
        info0 = subprocess.run([btrace, "info", snap0], capture_output=True,
                               text=True).stdout
        ok("\ntime:       CLOCK_MONOTONIC; a TSC packet" in info and
           "\ntime:       none" in info0,
           "btrace info says the clock and where the packets are, or none")


main()
sys.exit(1 if failed else 0)
