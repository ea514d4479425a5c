// SPDX-License-Identifier: MIT
// node sends itself SIGSEGV: not handled by node, it dies of it.
'use strict';
console.log('sending SIGSEGV to myself');
process.kill(process.pid, 'SIGSEGV');
setTimeout(() => console.log('not reached'), 5000);
