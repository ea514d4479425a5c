/* SPDX-License-Identifier: MIT */
/*
 * A call through a NULL function pointer: a table of commands whose last
 * entry has no handler; dispatch() calls it anyway and jumps to address 0.
 */
#include <stdio.h>

struct command {
	const char *name;
	int (*run)(int arg);
};

static int cmd_echo(int arg)
{
	printf("echo %d\n", arg);
	return arg;
}

static const struct command commands[] = {
	{ "echo", cmd_echo },
	{ "exit", NULL },
};

__attribute__((noinline)) int dispatch(const struct command *c, int arg)
{
	return c->run(arg) + 1;   /* e2e: call */
}

int main(int argc, char **argv)
{
	int sum = 0;

	(void)argv;
	for (int i = 0; i < 2; i++)
		sum += dispatch(&commands[i], argc + i);
	return sum;
}
