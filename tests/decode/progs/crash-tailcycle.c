/* SPDX-License-Identifier: MIT */
/* Fixture program: a cycle of tail calls (ping and pong jump to each
 * other, 100 times at -O2), then a tail call to store, which stores
 * through NULL.  The stack at the fault is store <- ping <- main: the
 * cycle leaves no frames of its own. */
static volatile int sink;

__attribute__((noipa)) static void store(int *p, int v)
{
	*p = v;   /* faults when p is NULL */
}

__attribute__((noipa)) static void pong(int *p, int n);

__attribute__((noipa)) static void ping(int *p, int n)
{
	sink = n;
	if (n <= 0) {
		store(p, n);   /* a tail call */
		return;
	}
	pong(p, n - 1);        /* a tail call */
}

__attribute__((noipa)) static void pong(int *p, int n)
{
	sink = -n;
	ping(p, n - 1);        /* a tail call */
}

int main(int argc, char **argv)
{
	int x = 0;

	(void)argv;
	ping(argc > 5 ? &x : (int *)0, 101);
	return sink + x;
}
