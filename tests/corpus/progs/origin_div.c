/* -O0: division by a zero held in a local variable. */
#include <unistd.h>
int scale(int v)
{
	int k = 3;
	return v * k;
}
int main(int argc, char **argv)
{
	int parts = argc - 1;
	int total;
	(void)argv;
	write(1, "start\n", 6);
	total = scale(100);
	return total / parts;
}
