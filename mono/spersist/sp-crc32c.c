/* sp-crc32c.c: see sp-crc32c.h. */
#include "sp-crc32c.h"

#include <stdbool.h>
#include <string.h>

#define SP_CRC32C_POLY_REFLECTED 0x82F63B78u

static uint32_t sp_crc_table [8][256];
static bool sp_crc_table_ready;

static void
sp_crc_build_table (void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;
		for (int k = 0; k < 8; k++)
			c = (c & 1) ? (c >> 1) ^ SP_CRC32C_POLY_REFLECTED : c >> 1;
		sp_crc_table [0][i] = c;
	}
	for (uint32_t i = 0; i < 256; i++)
		for (int t = 1; t < 8; t++)
			sp_crc_table [t][i] = (sp_crc_table [t - 1][i] >> 8) ^ sp_crc_table [0][sp_crc_table [t - 1][i] & 0xff];
	/* Tables are idempotent, so a benign race between two first callers is harmless. */
	__atomic_store_n (&sp_crc_table_ready, true, __ATOMIC_RELEASE);
}

uint32_t
sp_crc32c_sw (uint32_t crc, const void *data, size_t n)
{
	if (!__atomic_load_n (&sp_crc_table_ready, __ATOMIC_ACQUIRE))
		sp_crc_build_table ();
	const uint8_t *p = data;
	crc = ~crc;
	while (n >= 8) {
		uint32_t lo = crc ^ ((uint32_t)p [0] | (uint32_t)p [1] << 8 | (uint32_t)p [2] << 16 | (uint32_t)p [3] << 24);
		crc = sp_crc_table [7][lo & 0xff] ^ sp_crc_table [6][(lo >> 8) & 0xff] ^
		      sp_crc_table [5][(lo >> 16) & 0xff] ^ sp_crc_table [4][lo >> 24] ^
		      sp_crc_table [3][p [4]] ^ sp_crc_table [2][p [5]] ^
		      sp_crc_table [1][p [6]] ^ sp_crc_table [0][p [7]];
		p += 8;
		n -= 8;
	}
	while (n--)
		crc = (crc >> 8) ^ sp_crc_table [0][(crc ^ *p++) & 0xff];
	return ~crc;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("sse4.2")))
static uint32_t
sp_crc32c_hw (uint32_t crc, const void *data, size_t n)
{
	const uint8_t *p = data;
	uint64_t c = ~crc;
	while (n >= 8) {
		uint64_t word;
		memcpy (&word, p, 8);
		c = __builtin_ia32_crc32di (c, word);
		p += 8;
		n -= 8;
	}
	uint32_t c32 = (uint32_t)c;
	while (n--)
		c32 = __builtin_ia32_crc32qi (c32, *p++);
	return ~c32;
}

uint32_t
sp_crc32c (uint32_t crc, const void *data, size_t n)
{
	static int have_hw = -1;
	if (have_hw < 0)
		have_hw = __builtin_cpu_supports ("sse4.2") ? 1 : 0;
	return have_hw ? sp_crc32c_hw (crc, data, n) : sp_crc32c_sw (crc, data, n);
}
#else
uint32_t
sp_crc32c (uint32_t crc, const void *data, size_t n)
{
	return sp_crc32c_sw (crc, data, n);
}
#endif
