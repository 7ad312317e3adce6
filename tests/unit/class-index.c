/* class-index.c: see class-index.h. */
#include "class-index.h"

#include <string.h>

#include "sp-buf.h"
#include "sp-crc32c.h"
#include "sp-format.h"

void
class_index_seal (uint8_t *data, size_t size)
{
	sp_put_le (data + size - 4, sp_crc32c (0, data, size - 4), 4);
}

bool
class_index_strip (uint8_t *data, size_t *size)
{
	size_t n = *size, end = n - SP_FORMAT_TRAILER_SIZE;
	uint16_t flags = (uint16_t)sp_get_le (data + 14, 2);
	if (n < SP_FORMAT_HEADER_SIZE + SP_FORMAT_TRAILER_SIZE + 7 || !(flags & SP_OPT_CLASS_INDEX))
		return false;
	uint32_t record = (uint32_t)sp_get_le (data + end - 4, 4);
	if (record > end - SP_FORMAT_HEADER_SIZE || data [end - record] != SP_REC_CLASS_INDEX)
		return false;
	memmove (data + end - record, data + end, SP_FORMAT_TRAILER_SIZE);
	*size = n - record;
	sp_put_le (data + 14, flags & ~SP_OPT_CLASS_INDEX, 2);
	class_index_seal (data, *size);
	return true;
}
