/* SPDX-License-Identifier: MIT */
/* Fixture program: a return that skips a frame.  getpc() uses the
 * position-independent "call next; pop" idiom, so the trace sees a call
 * whose frame never returns; getpc's own ret then goes back to middle,
 * past that frame.  The crash after it must show crash <- middle <- main,
 * without a frame of the call that never returned. */
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
