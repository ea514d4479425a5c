// SPDX-License-Identifier: MIT
/* A plain `static inline` helper inlined into its caller by -O2 (no
 * attribute), the fault inside it.  gdb's bt: helper <- caller <- main */
#include <stddef.h>

struct node { struct node *next; int value; };

volatile int sink;

static inline int helper(const struct node *n)
{
	return n->next->value;  /* e2e: fault */
}

__attribute__((noinline)) int caller(const struct node *n)
{
	int v = helper(n);  /* e2e: call helper */
	sink = v;
	return v;
}

int main(int argc, char **argv)
{
	struct node last = { NULL, argc };
	(void)argv;
	return caller(&last) + caller(last.next);  /* e2e: call caller */
}
