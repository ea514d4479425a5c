// SPDX-License-Identifier: MIT
/* A chain of tail calls at -O2: parse -> parse_body -> parse_field, each
 * the last thing its caller does (jmp, not call), and parse_field reads
 * through NULL.  gdb shows fewer frames than calls made (parse and
 * parse_body left no return address). */
#include <stdio.h>

struct field { int len; const int *data; };

__attribute__((noinline)) int parse_field(const struct field *f, int k)
{
	return f->data[k] + f->len;
}

__attribute__((noinline)) int parse_body(const struct field *f, int k)
{
	if (f->len < 0)
		return -1;
	return parse_field(f, k + 1);
}

__attribute__((noinline)) int parse(const struct field *f, int k)
{
	if (!f)
		return -2;
	return parse_body(f, k * 2);
}

int main(void)
{
	static const int d[4] = {1, 2, 3, 4};
	struct field fs[2] = {{4, d}, {2, NULL}};
	int sum = 0;

	printf("parsing\n");
	fflush(stdout);
	for (int i = 0; i < 2; i++) {
		sum += parse(&fs[i], 1);
		__asm__ volatile("" : "+r"(sum));
	}
	printf("not reached %d\n", sum);
	return 0;
}
