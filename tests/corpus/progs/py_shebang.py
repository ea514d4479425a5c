#!/usr/bin/python3
# SPDX-License-Identifier: MIT
# Launched directly (the kernel reads the #! line); ctypes reads address 16.
import ctypes

print('script running', flush=True)
ctypes.string_at(16, 4)
