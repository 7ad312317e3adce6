/* sp-lidmap.c: see sp-lidmap.h. */
#include "sp-lidmap.h"

#include "sp-client.h"

#include <stdlib.h>
#include <string.h>

static size_t
sp_lidmap_slot (uint32_t hash, size_t mask)
{
	/* Identity hashes may be sequential or address-derived: mix before masking. */
	uint64_t h = (uint64_t)hash * 0x9E3779B97F4A7C15ull;
	return (size_t)(h >> 32) & mask;
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
sp_lidmap_find (const SpLidMap *m, uint32_t hash, const void *obj)
{
	for (size_t i = sp_lidmap_slot (hash, m->mask);; i = (i + 1) & m->mask) {
		SpLidEntry *e = &m->slots [i];
		if (e->lid == 0)
			return NULL;
		/* Equal hashes are common enough (distinct objects may share one): confirm. */
		if (e->hash == hash && sp_client_lid_object (sp_lid_of (e)) == obj)
			return e;
	}
}

static SpLidEntry *
sp_lidmap_place (SpLidMap *m, uint32_t hash, uint32_t lid)
{
	size_t i = sp_lidmap_slot (hash, m->mask);
	while (m->slots [i].lid != 0)
		i = (i + 1) & m->mask;
	m->slots [i].hash = hash;
	m->slots [i].lid = lid;
	m->count++;
	return &m->slots [i];
}

/* Double the table when it is half full, keeping probe sequences short. */
static int
sp_lidmap_grow (SpLidMap *m)
{
	SpLidMap bigger;
	if (sp_lidmap_alloc (&bigger, (m->mask + 1) * 2) < 0)
		return -1;
	for (size_t i = 0; i <= m->mask; i++)
		if (m->slots [i].lid != 0)
			sp_lidmap_place (&bigger, m->slots [i].hash, m->slots [i].lid);
	free (m->slots);
	*m = bigger;
	return 0;
}

SpLidEntry *
sp_lidmap_add (SpLidMap *m, uint32_t hash, uint32_t lid)
{
	if ((m->count + 1) * 2 > m->mask + 1 && sp_lidmap_grow (m) < 0)
		return NULL;
	return sp_lidmap_place (m, hash, lid);
}
