/* sp-crc32c.c: see sp-crc32c.h. */
#include "sp-crc32c.h"

#include <limits.h>

#include <isa-l/crc.h>

uint32_t
sp_crc32c (uint32_t crc, const void *data, size_t n)
{
	/*
	 * ISA-L's crc32_iscsi takes and returns the register uninverted (start:
	 * ~0) and an int length; CRC-32C as usually stated (and here) inverts
	 * on the way in and out.
	 */
	const unsigned char *p = data;
	uint32_t reg = ~crc;
	while (n > 0) {
		int chunk = n > (size_t)INT_MAX ? INT_MAX : (int)n;
		reg = crc32_iscsi ((unsigned char *)p, chunk, reg);
		p += chunk;
		n -= (size_t)chunk;
	}
	return ~reg;
}
