// SPDX-License-Identifier: MIT
// A busy node program that exits 0 (V8 and libuv take their own signals).
'use strict';
let s = 0;
for (let i = 0; i < 200000; i++) s = (s + i * 7) % 1000003;
console.log('sum', s);
