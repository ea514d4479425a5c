// SPDX-License-Identifier: MIT
/* A double free glibc detects: free() of a chunk already in the tcache
 * ("free(): double free detected in tcache 2"), abort() from
 * malloc_printerr. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct conn { char *buf; int fd; };

__attribute__((noinline)) static void conn_close(struct conn *c)
{
	free(c->buf);
	/* forgot: c->buf = NULL; */
}

int main(void)
{
	struct conn c = {malloc(64), 3};

	strcpy(c.buf, "hello");
	printf("closing %s\n", c.buf);
	fflush(stdout);
	conn_close(&c);
	conn_close(&c);
	printf("not reached\n");
	return 0;
}
