#!/usr/bin/env python3
# The report model from C (test-report-model.c) says what `btrace report
# --json` says: signal, cause, exec, fault, origin, death, limits and the crashed
# thread's stack of each recorded fixture, and of synthetic snapshots with
# the metadata behind the limits, the exec note and the death.
#   report-model.py BTRACE TEST-REPORT-MODEL GEN-FIXTURE PROG FIXTURES-DIR
import glob
import json
import os
import subprocess
import sys
import tempfile

btrace, model, gen, prog, fixtures = sys.argv[1:6]
n = 0
failed = 0


def ok(cond, what, diag=''):
    global n, failed
    n += 1
    print('%s %d - %s' % ('ok' if cond else 'not ok', n, what))
    if not cond:
        failed += 1
        for line in diag.splitlines()[-30:]:
            print('# ' + line)


def s(v):
    if v is None:
        return 'null'
    if v is True or v is False:
        return 'true' if v else 'false'
    return str(v)


KINDS = {'constant': 1, 'load': 2, 'syscall': 3, 'history_start': 4,
         'other': 5, 'copy': 6, 'compute': 7, 'return': 8, 'store': 9,
         'folded_loop': 10}


def expected(rep):
    sig, cause, fault, death = (rep['signal'], rep['cause'], rep['fault'],
                                rep['death'])
    crashed = [t for t in rep['threads'] if t['crashed']]
    t = crashed[0] if crashed else (rep['threads'][0] if rep['threads'] else None)
    kv = {
        'signal.number': s(sig and sig['number']),
        'signal.name': s(sig and sig['name']),
        'signal.code_name': s(sig and sig['code_name']),
        'cause.kind': s(cause and cause['kind']),
        'cause.text': s(cause and cause['text']),
        'native_exec': s(rep['native_exec']),
        'fault.tid': s(fault and fault['tid']),
        'fault.kind': s(fault and fault['kind']),
        'fault.ip': s(fault and fault['ip']),
        'fault.function': s(fault and fault['function']),
        'fault.exact': s(fault and fault['exact']),
        'fault.how': s(fault and fault['how']),
        'death.after_fault': s(death and death['after_fault']),
        'death.exit_code': s(death and death['exit_code']),
        'limits': ','.join(l['name'] for l in rep['limits']),
        'stack': ','.join(s(f['function']) for f in t['stack']) if t else '',
        'nthreads': s(len(rep['threads'])),
        'timeline_order': s(rep['timeline_order']),
        # the last event (the fault) and the count of each thread's
        'timeline.last': (lambda e: '%s:%s:%s' % (e['tid'], e['kind'],
                                                  s(e['function'])))(
            rep['timeline'][-1]) if rep['timeline'] else 'null',
        'origin.operand': s(rep['origin'] and rep['origin']['operand']),
        'origin.value': s(rep['origin'] and rep['origin']['value']),
        'origin.chain': ','.join('%s/%d/%s' % (l['ip'], KINDS[l['kind']],
                                               s(l['value']))
                                 for l in rep['origin']['chain'])
                        if rep['origin'] else 'null',
    }
    return ['%s=%s' % i for i in kv.items()]


def check(snap, what):
    r = subprocess.run([btrace, 'report', '--json', '--all-threads', snap],
                       capture_output=True, text=True)
    if r.returncode != 0:
        ok(False, what + ': btrace report --json', r.stderr)
        return
    rep = json.loads(r.stdout)
    m = subprocess.run([model, snap] + expected(rep), capture_output=True,
                       text=True)
    bad = [l for l in m.stdout.splitlines() if l.startswith('not ok')]
    ok(m.returncode == 0 and not bad and rep['fault'] is not None,
       what + ': the model says what the JSON report says (%d keys)'
       % (len(m.stdout.splitlines()) - 1), m.stdout + m.stderr)


snaps = sorted(glob.glob(os.path.join(fixtures, '*', '*.btrace')))
ok(len(snaps) >= 5, 'recorded fixtures found (%d)' % len(snaps))
for snap in snaps:
    check(snap, os.path.basename(snap))

with tempfile.TemporaryDirectory() as tmp:
    for name, args in [
            ('limits and exec', ['-M', 'limit.ring=the ring wrapped',
                                 '-M', 'qemu.exec=/bin/true',
                                 '-M', 'qemu.threads_untraced=2 7,8']),
            ('final signal', ['-F', '-M', 'qemu.final_signal=SIGABRT']),
            ('final signal SIGPOLL', ['-F', '-M',
                                      'qemu.final_signal=SIGPOLL']),
            ('exit after the fault', ['-F', '-M', 'qemu.final_signal=exit 3']),
            ('no registers', ['-R'])]:
        out = os.path.join(tmp, 'x.btrace')
        g = subprocess.run([gen] + args + ['-o', out, '--', prog],
                           capture_output=True, text=True)
        if g.returncode != 0:
            ok(False, name + ': bt-gen-fixture', g.stderr)
            continue
        check(out, name)
        if name == 'final signal SIGPOLL':
            # recorded in the C library's name (qemu-record writes
            # sigabbrev_np's), the number is still known
            r = subprocess.run([btrace, 'report', '--json', out],
                               capture_output=True, text=True)
            d = (json.loads(r.stdout).get('death') or {}).get('signal') or {}
            ok(d.get('number') == 29,
               'a final signal recorded as SIGPOLL is number 29 (%s)' % d)
print('1..%d' % n)
sys.exit(1 if failed else 0)
