// SPDX-License-Identifier: MIT
/* C++ calls that go through indirection (argv[1]):
 *   lambda  a std::function holding a lambda whose captured pointer was
 *           reset: the fault is in the lambda, below std::function's
 *           invoker and operator();
 *   vcall   a virtual call through an object already deleted: its vtable
 *           pointer is now glibc's (safe-linked) tcache link, and loading
 *           the method's address through it faults. */
#include <cstdio>
#include <cstring>
#include <functional>
#include <vector>

struct Sink {
	virtual ~Sink() {}
	virtual void put(int v) = 0;
};

struct Counter : Sink {
	long total = 0;
	void put(int v) override { total += v; }
};

__attribute__((noinline)) static void notify(Sink *s, int v)
{
	s->put(v);
}

struct Table { std::vector<int> rows; };

__attribute__((noinline)) static int apply_all(const std::function<int(int)> &f,
					    int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += f(i);
	return s;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "lambda";

	if (!std::strcmp(how, "vcall")) {
		Sink *s = new Counter;
		notify(s, 1);
		delete s;
		std::printf("notifying\n");
		std::fflush(stdout);
		notify(s, 2);
		return 0;
	}
	Table t{{1, 2, 3}};
	Table *tp = &t;
	std::function<int(int)> f = [&tp](int i) { return tp->rows.at(i); };
	std::printf("first %d\n", apply_all(f, 3));
	tp = nullptr;
	std::fflush(stdout);
	std::printf("not reached %d\n", apply_all(f, 3));
	return 0;
}
