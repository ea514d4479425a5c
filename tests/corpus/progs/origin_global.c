/* A global pointer set to NULL in one function, dereferenced in another. */
#include <stdio.h>
#include <stdlib.h>
struct win { int width, height; };
static struct win main_win = { 80, 24 };
struct win *current = &main_win;
__attribute__((noinline)) void close_window(void)
{
	current = NULL;
}
__attribute__((noinline)) int area(void)
{
	return current->width * current->height;
}
int main(int argc, char **argv)
{
	(void)argv;
	printf("area %d\n", area());
	if (argc > 0)
		close_window();
	printf("area %d\n", area());
	return 0;
}
