// SPDX-License-Identifier: MIT
/* An -fsanitize=address build reading past a heap block; run with
 * ASAN_OPTIONS=abort_on_error=1 so the report ends in abort(). */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) int sum(const int *v, int n)
{
	int s = 0;

	for (int i = 0; i <= n; i++)
		s += v[i];
	return s;
}

int main(void)
{
	int *v = malloc(4 * sizeof(int));

	for (int i = 0; i < 4; i++)
		v[i] = i;
	printf("%d\n", sum(v, 4));
	free(v);
	return 0;
}
