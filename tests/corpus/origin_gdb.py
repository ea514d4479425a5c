# SPDX-License-Identifier: MIT
"""gdb's view of where a crashing program's bad value came from (run inside
gdb, for origin.py).

    ORIGIN_OUT=FILE [ORIGIN_WATCH=EXPR ORIGIN_AT=FUNC] [ORIGIN_FINISH=FUNC]
        gdb -batch -nx -x origin_gdb.py --args PROG ARGS...

ORIGIN_WATCH: a hardware watchpoint on EXPR's location (`watch -l`), set
when the program first reaches ORIGIN_AT (default main); every write to
it is recorded with the writing instruction's function, file and line
(the line of the instruction that ends at the stop's pc) and the new
value.  ORIGIN_FINISH: each return of FUNC with its value.  At the
program's first signal: the signal and its registers.  One JSON object to
FILE.
"""
import json
import os

import gdb  # noqa: F401 (provided by gdb)

OUT = os.environ['ORIGIN_OUT']
WATCH = os.environ.get('ORIGIN_WATCH')
AT = os.environ.get('ORIGIN_AT', 'main')
FINISH = os.environ.get('ORIGIN_FINISH')
REGS = ['rax', 'rcx', 'rdx', 'rbx', 'rsp', 'rbp', 'rsi', 'rdi',
        'r8', 'r9', 'r10', 'r11', 'r12', 'r13', 'r14', 'r15', 'pc']

res = {'writes': [], 'returns': [], 'signal': None, 'regs': {}}


def ex(cmd):
    return gdb.execute(cmd, to_string=True)


def where_before_pc():
    """The line and function of the instruction that ends at $pc."""
    pc = int(gdb.parse_and_eval('$pc'))
    sal = gdb.find_pc_line(pc - 1)
    blk = gdb.block_for_pc(pc - 1)
    fn = None
    while blk is not None:
        if blk.function is not None:
            fn = blk.function.name
        blk = blk.superblock
    return {'function': fn, 'line': sal.line,
            'file': os.path.basename(sal.symtab.filename) if sal.symtab else None}


ex('set pagination off')
ex('set confirm off')
ex('set can-use-hw-watchpoints 1')
ex('set print thread-events off')
ex('tbreak %s' % AT)
if FINISH:
    ex('break %s' % FINISH)
ex('run')
if WATCH:
    ex('watch -l %s' % WATCH)
try:
    ex('continue')
except gdb.error:
    pass
while gdb.selected_inferior().pid:
    try:
        sig = gdb.parse_and_eval('$_siginfo')
        signo = int(sig['si_signo'])
    except (gdb.error, RuntimeError):
        signo = 0
    if signo and signo != 5:
        res['signal'] = signo
        for r in REGS:
            res['regs'][r] = int(gdb.parse_and_eval('$' + r)) & (2**64 - 1)
        res['thread'] = gdb.selected_thread().num
        break
    frame = gdb.selected_frame()
    if FINISH and frame.name() == FINISH and frame.pc() == \
            int(gdb.parse_and_eval('&%s' % FINISH).cast(gdb.lookup_type('long'))):
        out = ex('finish')
        val = int(gdb.parse_and_eval('$').cast(gdb.lookup_type('long')))
        res['returns'].append(val & (2**64 - 1))
        del out
    elif WATCH:
        w = where_before_pc()
        w['value'] = int(gdb.parse_and_eval(WATCH).cast(gdb.lookup_type('long'))) \
            & (2**64 - 1)
        w['thread'] = gdb.selected_thread().num
        res['writes'].append(w)
    try:
        ex('continue')
    except gdb.error:
        break
    if not gdb.selected_inferior().pid:
        break
with open(OUT, 'w') as f:
    json.dump(res, f)
