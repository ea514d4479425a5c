/* SPDX-License-Identifier: MIT */
/* Fixture program: getpc() uses the position-independent "call next; pop"
 * idiom, a call that never returns; getpc's own ret then goes back to
 * middle.  The stack rebuild must not take it as a frame: the crash after
 * it shows crash <- middle <- main, nothing grafted or lost. */
static volatile int sink;

__attribute__((noinline)) static unsigned long getpc(void)
{
	unsigned long pc;

	__asm__ volatile("call 1f\n1:\tpop %0" : "=r"(pc));
	return pc;
}

__attribute__((noinline)) static void crash(volatile int *p)
{
	*p = sink;   /* faults */
}

__attribute__((noinline)) static void middle(void)
{
	sink += (int)getpc();
	crash((volatile int *)0);
	sink++;
}

int main(void)
{
	middle();
	return 0;
}
