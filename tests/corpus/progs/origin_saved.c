/* -O2: a NULL kept in rbx across calls to a function that saves rbx. */
#include <stdio.h>
#include <stdlib.h>
struct rec { long id; long hits; };
static struct rec recs[4] = { { 1, 0 }, { 2, 0 }, { 3, 0 }, { 4, 0 } };
__attribute__((noipa)) struct rec *by_id(long id)
{
	for (int i = 0; i < 4; i++)
		if (recs[i].id == id)
			return &recs[i];
	return NULL;
}
__attribute__((noipa)) long work(long n)
{
	long s = 0;
	for (long i = 1; i <= n; i++)
		s += by_id(i % 5) ? i : -i;
	return s;
}
int main(int argc, char **argv)
{
	struct rec *r;
	long s;
	(void)argv;
	printf("start\n");
	r = by_id(argc + 8);
	s = work(3);
	r->hits += s;
	return (int)r->hits;
}
