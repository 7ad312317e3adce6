/* class-index.c: see class-index.h. */
#include "class-index.h"

#include <stdlib.h>
#include <string.h>

#include "sp-buf.h"
#include "sp-crc32c.h"
#include "sp-format.h"
#include "sp-snapshot.h"

void
class_index_seal (uint8_t *data, size_t size)
{
	sp_put_le (data + size - 4, sp_crc32c (0, data, size - 4), 4);
}

bool
class_index_strip (uint8_t *data, size_t *size)
{
	SpSnapHeader h;
	SpSnapTrailer t;
	SpError err = { 0 };
	if (sp_snapshot_check (data, *size, &h, &t, &err) < 0 || !(h.optional_flags & SP_OPT_CLASS_INDEX))
		return false;
	/* The reader's own way to the index: found and checked as a restore finds it. */
	uint64_t *offsets = malloc (((size_t)t.nclasses + 1) * sizeof *offsets);
	size_t index_at;
	int rc = offsets ? sp_format_read_class_index (data, *size, &h, &t, offsets, &index_at, &err) : -1;
	free (offsets);
	if (rc < 0)
		return false;
	memmove (data + index_at, data + *size - SP_FORMAT_TRAILER_SIZE, SP_FORMAT_TRAILER_SIZE);
	*size = index_at + SP_FORMAT_TRAILER_SIZE;
	sp_put_le (data + 14, h.optional_flags & ~SP_OPT_CLASS_INDEX, 2);
	class_index_seal (data, *size);
	return true;
}
