// SPDX-License-Identifier: MIT
// A virtual call through a NULL object pointer.
#include <cstdio>

struct Shape {
	virtual ~Shape() = default;
	virtual int area() const = 0;
};
struct Square : Shape {
	int side;
	explicit Square(int s) : side(s) {}
	int area() const override { return side * side; }
};

__attribute__((noinline)) int total_area(Shape *const *shapes, int n)
{
	int t = 0;
	for (int i = 0; i < n; i++)
		t += shapes[i]->area();
	return t;
}

int main()
{
	Square a(2), b(3);
	Shape *shapes[3] = {&a, &b, nullptr};
	std::printf("%d\n", total_area(shapes, 2));
	std::fflush(stdout);
	std::printf("%d\n", total_area(shapes, 3));
	return 0;
}
