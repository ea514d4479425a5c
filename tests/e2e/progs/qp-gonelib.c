// SPDX-License-Identifier: MIT
/*
 * Code whose file is gone when the process dies.  argv[1]:
 *   exe     this executable deletes itself, then crashes
 *   lib     dlopen a copy of argv[2] (a library with gone_crash()), delete
 *           the copy, call it: it crashes
 *   memfd   load argv[2] into a memfd, dlopen it through /proc/self/fd,
 *           call it: it crashes
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

int *volatile null_ptr;

__attribute__((noinline)) static void exe_crash(int v)
{
	*null_ptr = v; /* e2e: fault */
}

static int copy(const char *from, int to)
{
	char buf[65536];
	ssize_t n;
	int fd = open(from, O_RDONLY);

	if (fd < 0)
		return -1;
	while ((n = read(fd, buf, sizeof(buf))) > 0)
		if (write(to, buf, (size_t)n) != n)
			return -1;
	close(fd);
	return 0;
}

int main(int argc, char **argv)
{
	void (*fn)(int);
	void *h;
	char path[64];
	int fd;

	if (argc > 1 && !strcmp(argv[1], "exe")) {
		if (unlink("/proc/self/exe") && readlink("/proc/self/exe", path,
							 sizeof(path) - 1) < 0)
			return 2;
		/* unlink() of the link itself fails: delete the target */
		{
			char target[4096];
			ssize_t n = readlink("/proc/self/exe", target,
					     sizeof(target) - 1);

			if (n > 0) {
				target[n] = 0;
				unlink(target);
			}
		}
		exe_crash(1);
		return 0;
	}
	if (argc < 3)
		return 2;
	if (!strcmp(argv[1], "lib")) {
		snprintf(path, sizeof(path), "/tmp/qp-gonelib-XXXXXX");
		fd = mkstemp(path);
		if (fd < 0 || copy(argv[2], fd))
			return 2;
		close(fd);
		h = dlopen(path, RTLD_NOW);
		unlink(path);
	} else {
		fd = memfd_create("qp-gonelib", 0);
		if (fd < 0 || copy(argv[2], fd))
			return 2;
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
		h = dlopen(path, RTLD_NOW);
	}
	if (!h) {
		fprintf(stderr, "dlopen: %s\n", dlerror());
		return 2;
	}
	fn = (void (*)(int))dlsym(h, "gone_crash");
	if (!fn)
		return 2;
	fn(3);
	return 0;
}
