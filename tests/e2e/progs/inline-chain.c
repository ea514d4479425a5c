// SPDX-License-Identifier: MIT
/* Inline frames at -O2: a 3-deep chain of inlined helpers in an out-of-line
 * function, itself called from code inlined into main.  gdb's bt:
 *   inl_leaf <- inl_mid <- inl_top <- work <- dispatch <- main */
#include <stdlib.h>

volatile int *volatile target;
volatile int sink;

static inline __attribute__((always_inline)) void inl_leaf(int v)
{
	*target = v;  /* e2e: fault */
	sink = v;
}

static inline __attribute__((always_inline)) void inl_mid(int v)
{
	sink = v + 1;
	inl_leaf(v * 3);  /* e2e: call leaf */
	sink = v + 2;
}

static inline __attribute__((always_inline)) void inl_top(int v)
{
	sink = v - 1;
	inl_mid(v + 5);  /* e2e: call mid */
	sink = v - 2;
}

__attribute__((noinline)) void work(int v)
{
	sink = v;
	inl_top(v * 7);  /* e2e: call top */
	sink = v + 9;
}

static inline void dispatch(int v)
{
	sink = v;
	work(v + 1);  /* e2e: call work */
	sink = v + 4;
}

int main(int argc, char **argv)
{
	(void)argv;
	sink = argc;
	dispatch(argc);  /* e2e: call dispatch */
	return sink == 12345;
}
