// SPDX-License-Identifier: MIT
/* The faulting load is well inside its block (arithmetic before it), and
 * the core the emulator writes is made impossible in one of four ways
 * (argv[1]): "rlimit" a hard RLIMIT_CORE of 0, "rmcwd" a deleted working
 * directory, "proc" a working directory nobody can write (/proc), "exit"
 * the main thread gone through pthread_exit before a worker faults. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

__attribute__((noinline)) int consume(const int *p, int a, int b)
{
	volatile int x = a;

	x = x * 7 + b;
	x ^= a << 3;
	x += b * 5;
	return x + *p;
}

static void *worker(void *arg)
{
	(void)arg;
	usleep(100000);
	printf("%d\n", consume(NULL, 3, 4));
	return NULL;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "rlimit";

	if (!strcmp(how, "rlimit")) {
		struct rlimit rl = {0, 0};
		if (setrlimit(RLIMIT_CORE, &rl))
			return 3;
	} else if (!strcmp(how, "rmcwd")) {
		char dir[] = "/tmp/corpus-rmcwd.XXXXXX";
		if (!mkdtemp(dir) || chdir(dir) || rmdir(dir))
			return 3;
	} else if (!strcmp(how, "proc")) {
		if (chdir("/proc"))
			return 3;
	} else if (!strcmp(how, "exit")) {
		pthread_t t;
		if (pthread_create(&t, NULL, worker, NULL))
			return 3;
		puts("main thread leaves");
		fflush(stdout);
		pthread_exit(NULL);
	}
	puts(how);
	fflush(stdout);
	printf("%d\n", consume(NULL, 3, 4));
	return 0;
}
