/* SPDX-License-Identifier: MIT */
/* Fixture program: returns that skip frames, then a crash in a recursion.
 *
 * main -> middle(2) -> middle(1) -> middle(0), which makes two returns
 * that go to a frame further down than the one that was called last:
 * - data_pc: "call over data" (call 1f; .ascii ...; 1: pop): a call whose
 *   target is not the next instruction (so a call, not the call-next
 *   idiom) and never returns; data_pc's own ret goes back to middle, two
 *   frames down;
 * - hop(2) -> hop(1) -> hop(0) -> hop2 -> bail: bail drops the return
 *   addresses of hop2 and hop(0) (add $16,%rsp, hand-made unwinding) and
 *   its ret goes to where hop(0) returns, into hop(1), three frames down.
 *   hop(1) and hop(0) both return to the same address: the return lands
 *   in the innermost of them, and hop(1) then returns there too.
 * middle(0) then returns to middle(1), which crashes.  By construction
 * the stack at the fault is crash <- middle <- middle <- main. */
static volatile int sink;

unsigned long data_pc(void);
void hop(long n);

/* Hand-written: they keep every register but %rax (data_pc's result) and
 * %rdi (hop's argument). */
__asm__(".text\n"
	".p2align 4\n"
	".type data_pc, @function\n"
	"data_pc:\n"
	"\tcall 1f\n"
	"\t.ascii \"btrace\\0\"\n"
	"1:\tpop %rax\n"
	"\tret\n"
	".size data_pc, .-data_pc\n"
	".p2align 4\n"
	".type hop, @function\n"
	"hop:\n"
	"\ttest %rdi, %rdi\n"
	"\tjz 1f\n"
	"\tdec %rdi\n"
	"\tcall hop\n"
	"\tret\n"
	"1:\tcall hop2\n"
	"\tret\n"
	".size hop, .-hop\n"
	".p2align 4\n"
	".type hop2, @function\n"
	"hop2:\n"
	"\tcall bail\n"
	"\tret\n"
	".size hop2, .-hop2\n"
	".p2align 4\n"
	".type bail, @function\n"
	"bail:\n"
	"\tadd $16, %rsp\n"
	"\tret\n"
	".size bail, .-bail\n");

__attribute__((noinline)) static void crash(volatile int *p)
{
	*p = sink;   /* faults */
}

__attribute__((noinline)) static void middle(int n)
{
	if (n > 0) {
		middle(n - 1);
		if (n == 1)
			crash((volatile int *)0);
		sink++;
		return;
	}
	sink += (int)data_pc();
	hop(2);
	sink++;
}

int main(void)
{
	middle(2);
	return 0;
}
