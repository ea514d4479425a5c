// SPDX-License-Identifier: MIT
/* The other unit of inline-lto-main.c. */
volatile int scale = 3;

static int score(const int *v, int i)
{
	return v[i] * scale;  /* e2e: fault */
}

int process(const int *v, int n)
{
	int s = 0;
	for (int i = 0; i < n; i++)
		s += score(v, i) + i;  /* e2e: call score */
	return s;
}
