/* sp-lidmap.c: see sp-lidmap.h. */
#include "sp-lidmap.h"

#include <stdlib.h>
#include <string.h>

static size_t
sp_lidmap_hash (uintptr_t mid, size_t mask)
{
	/* Objects are 8-aligned: drop the zero bits, then mix (Fibonacci hashing). */
	uint64_t h = (uint64_t)(mid >> 3) * 0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 20) & mask;
}

static int
sp_lidmap_alloc (SpLidMap *m, size_t capacity)
{
	m->slots = calloc (capacity, sizeof *m->slots);
	if (!m->slots)
		return -1;
	m->mask = capacity - 1;
	m->count = 0;
	return 0;
}

int
sp_lidmap_init (SpLidMap *m, size_t expected)
{
	size_t capacity = 64;
	while (capacity < expected * 2)
		capacity *= 2;
	return sp_lidmap_alloc (m, capacity);
}

void
sp_lidmap_free (SpLidMap *m)
{
	free (m->slots);
	m->slots = NULL;
	m->mask = m->count = 0;
}

void
sp_lidmap_clear (SpLidMap *m)
{
	memset (m->slots, 0, (m->mask + 1) * sizeof *m->slots);
	m->count = 0;
}

SpLidEntry *
sp_lidmap_find (const SpLidMap *m, uintptr_t mid)
{
	for (size_t i = sp_lidmap_hash (mid, m->mask);; i = (i + 1) & m->mask) {
		SpLidEntry *e = &m->slots [i];
		if (e->mid == mid)
			return e;
		if (e->mid == 0)
			return NULL;
	}
}

/* Double the table when it is half full, keeping probe sequences short. */
static int
sp_lidmap_grow (SpLidMap *m)
{
	SpLidMap bigger;
	if (sp_lidmap_alloc (&bigger, (m->mask + 1) * 2) < 0)
		return -1;
	for (size_t i = 0; i <= m->mask; i++) {
		SpLidEntry *e = &m->slots [i];
		if (e->mid == 0)
			continue;
		size_t j = sp_lidmap_hash (e->mid, bigger.mask);
		while (bigger.slots [j].mid != 0)
			j = (j + 1) & bigger.mask;
		bigger.slots [j] = *e;
	}
	bigger.count = m->count;
	free (m->slots);
	*m = bigger;
	return 0;
}

SpLidEntry *
sp_lidmap_insert (SpLidMap *m, uintptr_t mid, uint32_t lid, bool *inserted)
{
	if ((m->count + 1) * 2 > m->mask + 1 && sp_lidmap_grow (m) < 0)
		return NULL;
	size_t i = sp_lidmap_hash (mid, m->mask);
	for (;; i = (i + 1) & m->mask) {
		SpLidEntry *e = &m->slots [i];
		if (e->mid == mid) {
			*inserted = false;
			return e;
		}
		if (e->mid == 0)
			break;
	}
	m->slots [i].mid = mid;
	m->slots [i].lid = lid;
	m->count++;
	*inserted = true;
	return &m->slots [i];
}
