/* sp-kids.c: see sp-kids.h. */
#include "sp-kids.h"

#include <stdlib.h>
#include <string.h>


void
sp_kids_init (SpKids *k)
{
	memset (k, 0, sizeof *k);
}

static void
sp_kids_free_chunks (uint32_t **chunks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free (chunks [i]);
	free (chunks);
}

void
sp_kids_free (SpKids *k)
{
	sp_kids_free_chunks (k->at, k->nat);
	sp_kids_free_chunks (k->log, k->nlog);
	sp_kids_init (k);
}

/* Chunks 0..want-1 of a table allocated (zeroed when `zero`); false when out of memory. */
static bool
sp_kids_chunks (uint32_t ***chunks, size_t *n, size_t want, size_t chunk_entries, bool zero)
{
	if (want <= *n)
		return true;
	uint32_t **grown = realloc (*chunks, want * sizeof *grown);
	if (!grown)
		return false;
	*chunks = grown;
	for (; *n < want; (*n)++) {
		grown [*n] = zero ? calloc (chunk_entries, sizeof (uint32_t)) : malloc (chunk_entries * sizeof (uint32_t));
		if (!grown [*n])
			return false;
	}
	return true;
}

uint32_t *
sp_kids_reserve_new_chunk (SpKids *k, uint64_t i, uint32_t n)
{
	if (!sp_kids_chunks (&k->log, &k->nlog, (size_t)((i + n - 1) >> SP_KIDS_LOG_BITS) + 1, SP_KIDS_LOG_CHUNK, false))
		return NULL;
	k->reserved = i;
	return &k->log [i >> SP_KIDS_LOG_BITS][i & (SP_KIDS_LOG_CHUNK - 1)];
}

bool
sp_kids_grow_at (SpKids *k, uint32_t lid)
{
	return sp_kids_chunks (&k->at, &k->nat, (size_t)(lid >> SP_KIDS_AT_BITS) + 1, SP_KIDS_AT_CHUNK, true);
}

size_t
sp_kids_reset_begin (SpKids *k)
{
	size_t used = k->max_lid ? (size_t)(k->max_lid >> SP_KIDS_AT_BITS) + 1 : 0;
	k->len = 0;
	k->max_lid = 0;
	return used < k->nat ? used : k->nat;
}

void
sp_kids_reset_chunk (SpKids *k, size_t c)
{
	memset (k->at [c], 0, SP_KIDS_AT_CHUNK * sizeof (uint32_t));
}

void
sp_kids_reset (SpKids *k)
{
	size_t chunks = sp_kids_reset_begin (k);
	for (size_t c = 0; c < chunks; c++)
		sp_kids_reset_chunk (k, c);
}
