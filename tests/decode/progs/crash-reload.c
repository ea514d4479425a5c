// SPDX-License-Identifier: MIT
/*
 * A bad pointer that goes through the stack while the register it was
 * stored from is used for something else (tests/decode/origin-reload.py):
 *
 *   xor  eax, eax           the source: the constant 0
 *   mov  rsi, rax           copied into rsi
 *   mov  [rsp - 8], rsi     stored to the stack (the red zone)
 *   mov  esi, 0x1234        rsi reused: not what was stored
 *   mov  rdi, [rsp - 8]     loaded back
 *   mov  dword [rdi], 1     the fault: a store to address 0
 *
 * The origin of rdi is the load, the store of rsi, rsi copied from rax,
 * the constant 0 of the xor; never the 0x1234 that rsi held when rdi was
 * loaded.  In assembly, so that the instructions are exactly these.
 */
__attribute__((noinline)) void reload(void)
{
	__asm__ volatile("xor %%eax, %%eax\n\t"
			 "mov %%rax, %%rsi\n\t"
			 "mov %%rsi, -8(%%rsp)\n\t"
			 "mov $0x1234, %%esi\n\t"
			 "mov -8(%%rsp), %%rdi\n\t"
			 "movl $1, (%%rdi)"
			 :
			 :
			 : "rax", "rsi", "rdi", "memory");
}

int main(void)
{
	reload();
	return 0;
}
