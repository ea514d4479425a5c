/* A field of a global struct set to NULL, then used as a string. */
#include <stdio.h>
#include <string.h>
struct config { int verbose; long retries; const char *path; const char *mode; };
struct config cfg = { 1, 3, "/etc/x.conf", "r" };
__attribute__((noinline)) void reset(int keep)
{
	if (!keep)
		cfg.path = NULL;
}
__attribute__((noinline)) size_t path_len(void)
{
	return strlen(cfg.path);
}
int main(int argc, char **argv)
{
	(void)argv;
	printf("len %zu\n", path_len());
	reset(argc > 1);
	printf("len %zu\n", path_len());
	return 0;
}
