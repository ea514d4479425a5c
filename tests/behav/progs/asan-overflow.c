// SPDX-License-Identifier: MIT
/* A heap overflow that AddressSanitizer reports (natively in 0.2 s). */
#include <stdio.h>
#include <stdlib.h>

int main(void)
{
	int *volatile p = malloc(4 * sizeof(int));

	p[4] = 1;
	printf("%d\n", p[4]);
	free(p);
	return 0;
}
