/* -O0: a NULL pointer kept in a local, registers reused before it is read. */
#include <stdio.h>
struct node { int val; struct node *next; };
int count(int n)
{
	int x = 5;
	return n * x;
}
int main(int argc, char **argv)
{
	struct node *p = NULL;
	int a = count(argc);
	int b = a + 7;
	(void)argv;
	if (b > 100)
		p = (struct node *)argv;
	return p->val + b;
}
