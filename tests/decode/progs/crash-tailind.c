/* SPDX-License-Identifier: MIT */
/* Fixture program: main calls outer, which calls via_a; via_a tail-calls
 * via_b through a function pointer (an indirect jump), via_b tail-calls
 * outer directly (a jump to its entry), and the second outer calls store,
 * which stores through NULL.  The stack at the fault is
 * store <- outer (entered by a tail call) <- via_b (its frame is via_a's,
 * whose function changed by the indirect jump) <- outer <- main. */
typedef int (*fn)(int *, int);

static volatile int sink;

__attribute__((noipa)) static int store(int *p, int v)
{
	*p = v;   /* faults when p is NULL */
	return v;
}

__attribute__((noipa)) static int outer(int *p, int depth);

__attribute__((noipa)) static int via_b(int *p, int depth)
{
	sink = depth;
	return outer(p, depth + 1);   /* a direct tail call */
}

static fn volatile next = via_b;

__attribute__((noipa)) static int via_a(int *p, int depth)
{
	sink = depth;
	return next(p, depth);        /* an indirect tail call */
}

__attribute__((noipa)) static int outer(int *p, int depth)
{
	if (depth > 0)
		return store(p, depth) + 1;
	return via_a(p, depth) + 1;
}

int main(int argc, char **argv)
{
	int x = 0;

	(void)argv;
	return outer(argc > 5 ? &x : (int *)0, 0) + x;
}
