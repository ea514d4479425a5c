#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Interleaved timing of commands (bench/qemu-overhead.sh, bench/qemu-accesses.sh).

    interleave.py ROUNDS RUNS NAME CMD0 CMD1 ...

After one warm-up run of each command, every round runs each command RUNS
times, the order rotated from round to round, so a load that drifts on a
shared machine hits every command alike.  A run's CPU time is user+sys of
the whole process tree (wait4 of the child).  Prints, per command, the
median wall and CPU time, each as a ratio to CMD0's median, and the median
(and range) of the CPU ratio taken within each round.  An empty CMD is
left out; a command that fails stops it.
"""
import os
import shlex
import statistics
import subprocess
import sys
import time


def run(c):
    t0 = time.perf_counter()
    p = subprocess.Popen(shlex.split(c), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    _, st, ru = os.wait4(p.pid, 0)
    if st:
        sys.exit('%s: exit status %#x' % (c, st))
    return time.perf_counter() - t0, ru.ru_utime + ru.ru_stime


def main():
    rounds, runs, name = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    cmds = [c for c in sys.argv[4:] if c]
    for c in cmds:
        run(c)
    wall = {c: [] for c in cmds}
    cpu = {c: [] for c in cmds}
    rcpu = [{c: [] for c in cmds} for _ in range(rounds)]
    for r in range(rounds):
        k = r % len(cmds)
        for c in cmds[k:] + cmds[:k]:
            for _ in range(runs):
                w, u = run(c)
                wall[c].append(w)
                cpu[c].append(u)
                rcpu[r][c].append(u)
    base = cmds[0]
    bw, bc = statistics.median(wall[base]), statistics.median(cpu[base])
    print('\n%s:' % name)
    for c in cmds:
        w, u = statistics.median(wall[c]), statistics.median(cpu[c])
        rr = [statistics.median(x[c]) / statistics.median(x[base])
              for x in rcpu]
        short = c if len(c) < 70 else c[:67] + '...'
        print('  wall %7.3f s  x%5.2f   cpu %7.3f s  x%5.2f  per-round cpu '
              'x%5.2f (%.2f-%.2f)   %s' % (w, w / bw, u, u / bc,
                                          statistics.median(rr), min(rr),
                                          max(rr), short), flush=True)


if __name__ == '__main__':
    main()
