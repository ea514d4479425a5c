// SPDX-License-Identifier: MIT
// Fixture program: a C++ exception nobody catches, thrown from a member
// function of a class in a namespace, three calls below main: the runtime
// calls std::terminate(), which aborts.  One exception is caught first, and
// a loop before makes the trace longer than the history a report shows.
#include <stdexcept>

namespace shop {
class Cart {
public:
	__attribute__((noinline)) int checkout(int items)
	{
		if (items > 2)
			throw std::runtime_error("too many items");
		return items + level_++;
	}
	__attribute__((noinline)) int fill(int items)
	{
		return checkout(items) + 1;
	}

private:
	int level_ = 0;
};
} // namespace shop

static volatile int sink;

__attribute__((noinline)) static void tally(int i)
{
	if (i % 3)
		sink += i;
}

int main()
{
	shop::Cart cart;
	int n = 0;

	for (int i = 0; i < 20000; i++)
		tally(i);

	try {
		n += cart.fill(5);
	} catch (const std::exception &) {
		n++;
	}
	return cart.fill(3) + n;
}
