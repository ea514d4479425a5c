/* A field of a heap block set to NULL by one function, used by another. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct user { int id; char *name; char *email; };

__attribute__((noinline)) void forget(struct user *u, int id)
{
	if (u->id == id)
		u->email = NULL;
}

__attribute__((noinline)) size_t contact_len(const struct user *u)
{
	return strlen(u->email);
}

int main(int argc, char **argv)
{
	struct user *u = malloc(sizeof(*u));

	(void)argv;
	u->id = 7;
	u->name = "ann";
	u->email = "ann@example.org";
	forget(u, argc + 6);
	printf("%zu\n", contact_len(u));
	free(u);
	return 0;
}
