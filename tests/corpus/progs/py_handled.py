# SPDX-License-Identifier: MIT
# SIGFPE and SIGSEGV sent to itself and handled: not a crash, exit 0.
import os
import signal

seen = []
signal.signal(signal.SIGFPE, lambda s, f: seen.append('FPE'))
signal.signal(signal.SIGSEGV, lambda s, f: seen.append('SEGV'))
os.kill(os.getpid(), signal.SIGFPE)
os.kill(os.getpid(), signal.SIGSEGV)
print('handled', ' '.join(seen))
