/* An index out of range of a global array. */
#include <stdio.h>
#include <stdlib.h>
int table[16] = { 1, 2, 3, 4 };
__attribute__((noinline)) int lookup(long i)
{
	return table[i];
}
int main(int argc, char **argv)
{
	long i;
	(void)argv;
	printf("%d\n", lookup(3));
	i = (long)argc << 31;
	return lookup(i);
}
