# SPDX-License-Identifier: MIT
# A Python callback called from C: libc's qsort() calls a ctypes
# CFUNCTYPE comparator, which reads through an int pointer to address 16
# for one of the elements (ctypes dereferences it in C, in the callback).
import ctypes

libc = ctypes.CDLL(None)
IntP = ctypes.POINTER(ctypes.c_int)
CMP = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.POINTER(IntP),
                       ctypes.POINTER(IntP))


def compare(a, b):
    return a[0][0] - b[0][0]


vals = [ctypes.c_int(v) for v in (5, 3, 8)]
arr = (IntP * 4)(*[ctypes.pointer(v) for v in vals], ctypes.cast(16, IntP))
print('sorting', flush=True)
libc.qsort(arr, 4, ctypes.sizeof(IntP), CMP(compare))
print('not reached')
