/* SPDX-License-Identifier: MIT */
/* CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), with the SSE4.2
 * crc32 instruction when the CPU has it. */
#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "format.h"

static uint32_t crc_table[8][256];
static int crc_mode;  /* 1: table, 2: sse4.2 */
static pthread_once_t crc_once = PTHREAD_ONCE_INIT;

#if defined(__x86_64__)
static void crc_shift_init(void);
#endif

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ 0x82f63b78u : c >> 1;
		crc_table[0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int s = 1; s < 8; s++)
			crc_table[s][i] = (crc_table[s - 1][i] >> 8) ^
					  crc_table[0][crc_table[s - 1][i] & 0xff];
#if defined(__x86_64__)
	__builtin_cpu_init();
	crc_mode = __builtin_cpu_supports("sse4.2") ? 2 : 1;
	if (crc_mode == 2)
		crc_shift_init();
#else
	crc_mode = 1;
#endif
}

static uint32_t crc_sw(uint32_t c, const uint8_t *p, size_t len)
{
	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		v ^= c;
		c = crc_table[7][v & 0xff] ^ crc_table[6][(v >> 8) & 0xff] ^
		    crc_table[5][(v >> 16) & 0xff] ^ crc_table[4][(v >> 24) & 0xff] ^
		    crc_table[3][(v >> 32) & 0xff] ^ crc_table[2][(v >> 40) & 0xff] ^
		    crc_table[1][(v >> 48) & 0xff] ^ crc_table[0][v >> 56];
		p += 8;
		len -= 8;
	}
	while (len--)
		c = (c >> 8) ^ crc_table[0][(c ^ *p++) & 0xff];
	return c;
}

#if defined(__x86_64__)
/*
 * The crc32 instruction has a latency of three cycles and a throughput of
 * one: three independent streams over the three thirds of a block keep it
 * busy.  The raw CRC register is linear over GF(2), so
 *   crc(A || B) = shift(crc(A), |B|) ^ crc0(B)
 * where shift() appends |B| zero bytes and crc0 starts from 0: the streams
 * are joined with a table of that operator for |B| = CRC_LANE bytes.
 */
#define CRC_LANE 4096u
static uint32_t crc_shift_table[4][256];

__attribute__((target("sse4.2")))
static uint32_t crc_hw1(uint32_t c, const uint8_t *p, size_t len)
{
	uint64_t c64 = c;

	while (len >= 8) {
		uint64_t v;

		memcpy(&v, p, 8);
		c64 = __builtin_ia32_crc32di(c64, v);
		p += 8;
		len -= 8;
	}
	c = (uint32_t)c64;
	while (len--)
		c = __builtin_ia32_crc32qi(c, *p++);
	return c;
}

/* The operator "append CRC_LANE zero bytes", tabulated by byte: each
 * basis bit's image computed by running the register over the zeros. */
static void crc_shift_init(void)
{
	static const uint8_t zeros[CRC_LANE];
	uint32_t img[32];

	for (int b = 0; b < 32; b++)
		img[b] = crc_hw1(1u << b, zeros, CRC_LANE);
	for (int k = 0; k < 4; k++)
		for (uint32_t v = 0; v < 256; v++) {
			uint32_t r = 0;
			for (int b = 0; b < 8; b++)
				if (v & (1u << b))
					r ^= img[8 * k + b];
			crc_shift_table[k][v] = r;
		}
}

static uint32_t crc_shift(uint32_t c)
{
	return crc_shift_table[0][c & 0xff] ^ crc_shift_table[1][(c >> 8) & 0xff] ^
	       crc_shift_table[2][(c >> 16) & 0xff] ^ crc_shift_table[3][c >> 24];
}

__attribute__((target("sse4.2")))
static uint32_t crc_hw(uint32_t c, const uint8_t *p, size_t len)
{
	while (len >= 3 * CRC_LANE) {
		uint64_t c0 = c, c1 = 0, c2 = 0;

		for (size_t i = 0; i < CRC_LANE; i += 8) {
			uint64_t v0, v1, v2;

			memcpy(&v0, p + i, 8);
			memcpy(&v1, p + CRC_LANE + i, 8);
			memcpy(&v2, p + 2 * CRC_LANE + i, 8);
			c0 = __builtin_ia32_crc32di(c0, v0);
			c1 = __builtin_ia32_crc32di(c1, v1);
			c2 = __builtin_ia32_crc32di(c2, v2);
		}
		c = crc_shift((uint32_t)c0) ^ (uint32_t)c1;
		c = crc_shift(c) ^ (uint32_t)c2;
		p += 3 * CRC_LANE;
		len -= 3 * CRC_LANE;
	}
	return crc_hw1(c, p, len);
}
#endif

uint32_t bt_crc32c(uint32_t crc, const void *data, size_t len)
{
	uint32_t c = ~crc;

	pthread_once(&crc_once, crc_init);
#if defined(__x86_64__)
	if (crc_mode == 2)
		return ~crc_hw(c, data, len);
#endif
	return ~crc_sw(c, data, len);
}
