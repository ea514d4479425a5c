// SPDX-License-Identifier: MIT
/* Crashes while the process exits (argv[1]): "atexit", a handler
 * registered with atexit() reads through a pointer freed... set to NULL by
 * main; "static", the destructor of a static object does (run by exit()
 * from __run_exit_handlers). */
#include <cstdio>
#include <cstdlib>
#include <cstring>

static int *g_counter;

struct Registry {
	int *slots = nullptr;
	const char *name = "registry";
	__attribute__((noinline)) ~Registry()
	{
		std::printf("closing %s\n", name);
		std::fflush(stdout);
		slots[3] = 0;
		__asm__ volatile("" ::: "memory");
	}
};

static Registry *registry()
{
	static Registry r;
	return &r;
}

extern "C" __attribute__((noinline)) void flush_counter(void)
{
	std::printf("flushing\n");
	std::fflush(stdout);
	*g_counter += 1;
	__asm__ volatile("" ::: "memory");
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "atexit";
	int local = 0;

	if (!std::strcmp(how, "static")) {
		std::printf("registry %s\n", registry()->name);
	} else {
		g_counter = &local;
		std::atexit(flush_counter);
		g_counter = nullptr;
	}
	std::printf("exiting\n");
	std::exit(0);
}
