/* SPDX-License-Identifier: MIT */
/* Test program: unbounded recursion until the stack's guard is hit. */
static int down(int n)
{
	volatile char frame[512];

	frame[0] = (char)n;
	return down(n + 1) + frame[0];   /* e2e: fault */
}

int main(void)
{
	return down(0);
}
