// SPDX-License-Identifier: MIT
// -O3 C++: a lambda through std::function, a template, an out-of-range
// index read through a vector's data pointer that is NULL.
#include <cstdio>
#include <functional>
#include <vector>

template <typename T>
__attribute__((noinline)) T pick(const std::vector<T> &v, std::size_t i)
{
	return v.data()[i];
}

int main(int argc, char **)
{
	std::vector<long> full{1, 2, 3};
	std::vector<long> empty;
	std::function<long(const std::vector<long> &)> first =
		[&](const std::vector<long> &v) { return pick(v, argc - 1); };
	std::printf("%ld\n", first(full));
	std::fflush(stdout);
	std::printf("%ld\n", first(empty));
	return 0;
}
