# SPDX-License-Identifier: MIT
# os.abort() after a message on stderr.
import os
import sys

sys.stderr.write('giving up\n')
sys.stderr.flush()
os.abort()
