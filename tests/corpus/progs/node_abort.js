// SPDX-License-Identifier: MIT
// process.abort() from a nested JavaScript call.
'use strict';
function settle(ledger) {
  if (ledger.length > 2) process.abort();
  return ledger.length;
}
console.log('settling', settle([1, 2]));
settle([1, 2, 3]);
