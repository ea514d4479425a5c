# SPDX-License-Identifier: MIT
# ctypes reads address 16 (argv[1] "faulthandler": Python's faulthandler
# dumps the traceback first, then re-raises).
import ctypes
import sys

if len(sys.argv) > 1 and sys.argv[1] == 'faulthandler':
    import faulthandler
    faulthandler.enable()


def load(addr):
    return ctypes.string_at(addr, 8)


print('loading', flush=True)
load(16)
