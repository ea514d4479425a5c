// SPDX-License-Identifier: MIT
// Fixture program: an exception caught in code the compiler split off
// (handle(int) [clone .cold] holds the handler: the unwinder lands in
// handle, which jumps to the cold part), where the handler crashes.  The
// cold part is handle going on, not a call of its own: the stack is
// boom <- handle <- main, as gdb shows it.
#include <stdexcept>

static volatile int sink;

__attribute__((noinline)) void boom(int *p)
{
	*p = sink;   // faults
}

__attribute__((noinline)) void thrower(int x)
{
	if (x)
		throw std::runtime_error("x");
}

__attribute__((noinline)) int handle(int x)
{
	try {
		thrower(x);
	} catch (const std::exception &) {
		boom(nullptr);
	}
	return 0;
}

int main(int argc, char **)
{
	int r = handle(argc);
	sink = r;
	return r + 1;
}
