// SPDX-License-Identifier: MIT
/* The other unit of the LTO program: score() reads through its argument. */
int score(const int *weights, int i)
{
	return weights[i] * (i + 1);
}
