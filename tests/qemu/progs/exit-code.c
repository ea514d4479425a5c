// SPDX-License-Identifier: MIT
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void on_term(int sig)
{
	static const char msg[] = "got SIGTERM\n";

	if (write(1, msg, sizeof(msg) - 1) < 0)
		_exit(1);
	_exit(42);
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "wait")) {
		signal(SIGTERM, on_term);
		printf("ready\n");
		fflush(stdout);
		pause();
		return 1;
	}
	return argc > 1 ? atoi(argv[1]) : 0;
}
