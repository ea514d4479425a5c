// SPDX-License-Identifier: MIT
// An exception nobody catches: std::terminate, then abort().
#include <cstdio>
#include <stdexcept>
#include <vector>

namespace shop {
struct Cart {
	std::vector<int> prices;
	__attribute__((noinline)) int checkout(int budget) const
	{
		int total = 0;
		for (int p : prices)
			total += p;
		if (total > budget)
			throw std::runtime_error("over budget");
		return total;
	}
};
} // namespace shop

int main()
{
	shop::Cart c{{5, 10, 20}};
	std::printf("%d\n", c.checkout(100));
	std::fflush(stdout);
	std::printf("%d\n", c.checkout(10));
	return 0;
}
