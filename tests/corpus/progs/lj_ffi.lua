-- SPDX-License-Identifier: MIT
-- LuaJIT FFI: a hot loop (compiled to machine code by the JIT) reads
-- through a pointer that becomes NULL on iteration 200 (arg[1] "interp":
-- with the JIT off, the interpreter faults).
local ffi = require('ffi')
if arg[1] == 'interp' then jit.off() end
local buf = ffi.new('int[4]', {1, 2, 3, 4})
local good = ffi.cast('int *', buf)
local sum = 0
print('looping')
io.stdout:flush()
for i = 1, 300 do
  local p = (i < 200) and good or ffi.cast('int *', 0)
  sum = sum + p[i % 4]
end
print(sum)
