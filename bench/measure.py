#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# measure.py [-n RUNS] [-o OUT] -- CMD...: run CMD RUNS times (stdout to OUT,
# default /dev/null) and print "wall_s cpu_s maxrss_kib" of the fastest run
# (wall clock; cpu = user + sys of the child; max RSS from getrusage).
import os
import resource
import subprocess
import sys
import time

USAGE = 'usage: measure.py [-n RUNS] [-o OUT] -- CMD...'


def usage(why):
    print('measure.py: %s\n%s' % (why, USAGE), file=sys.stderr)
    sys.exit(2)


runs, out = 3, os.devnull
args = sys.argv[1:]
while args and args[0] != '--':
    if args[0] not in ('-n', '-o') or len(args) < 2:
        usage('unknown option or missing value: %s' % args[0])
    if args[0] == '-n':
        try:
            runs = int(args[1])
        except ValueError:
            usage('-n: not a number: %s' % args[1])
    else:
        out = args[1]
    args = args[2:]
cmd = args[1:]
if not cmd or runs < 1:
    usage('no command to run (or -n below 1)')
best = None
for _ in range(runs):
    with open(out, 'wb') as f:
        t0 = time.perf_counter()
        p = subprocess.Popen(cmd, stdout=f, stderr=subprocess.DEVNULL)
        _, status, ru = os.wait4(p.pid, 0)
        wall = time.perf_counter() - t0
    if status != 0:
        sys.exit('measure.py: %s: exit status %d' % (' '.join(cmd), status))
    r = (wall, ru.ru_utime + ru.ru_stime, ru.ru_maxrss)
    if best is None or r[0] < best[0]:
        best = r
print('%.3f %.3f %d' % best)
