// SPDX-License-Identifier: MIT
/* dlopen(argv[1]) and call lib_parse(NULL) in it.  argv[2]: "keep",
 * "delete" (the library file is unlinked after dlopen), "replace" (another
 * file is renamed over it), "self" (this executable is unlinked). */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	const char *how = argc > 2 ? argv[2] : "keep";
	void *h;
	int (*parse)(const int *);

	if (argc < 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		return 3;
	}
	parse = (int (*)(const int *))dlsym(h, "lib_parse");
	if (!parse)
		return 3;
	if (!strcmp(how, "delete") && unlink(argv[1]))
		return 4;
	if (!strcmp(how, "replace")) {
		char tmp[4096];
		FILE *f;
		snprintf(tmp, sizeof(tmp), "%s.new", argv[1]);
		f = fopen(tmp, "w");
		if (!f || fputs("not the library any more\n", f) < 0 ||
		    fclose(f) || rename(tmp, argv[1]))
			return 4;
	}
	if (!strcmp(how, "self") && unlink(argv[0]))
		return 4;
	printf("parsing with %s library\n", how);
	fflush(stdout);
	return parse(NULL);
}
