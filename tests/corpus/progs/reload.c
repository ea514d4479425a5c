// SPDX-License-Identifier: MIT
/* dlopen(argv[1]), call it, dlclose it, take the address range it had
 * with an anonymous mapping, dlopen it again (now at another address) and
 * call lib_parse(NULL) in the second mapping of the same file. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <sys/mman.h>

typedef int (*parse_fn)(const int *);

int main(int argc, char **argv)
{
	static const int rec[3] = {1, 2, 3};
	struct link_map *lm;
	unsigned long old;
	void *h;
	parse_fn parse;

	if (argc < 2)
		return 2;
	h = dlopen(argv[1], RTLD_NOW);
	if (!h || dlinfo(h, RTLD_DI_LINKMAP, &lm))
		return 3;
	parse = (parse_fn)dlsym(h, "lib_parse");
	printf("first load: %d\n", parse(rec));
	old = lm->l_addr;
	if (dlclose(h))
		return 3;
	/* the old place is taken: the second load goes elsewhere */
	(void)mmap((void *)old, 1 << 20, PROT_NONE,
		     MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE, -1, 0);
	h = dlopen(argv[1], RTLD_NOW);
	if (!h)
		return 3;
	parse = (parse_fn)dlsym(h, "lib_parse");
	printf("second load\n");
	fflush(stdout);
	return parse(NULL);
}
