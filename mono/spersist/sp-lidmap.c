/* sp-lidmap.c: see sp-lidmap.h. */
#include "sp-lidmap.h"

#include "sp-client.h"

#include <stdlib.h>
#include <string.h>

/*
 * Where an object's entry starts.  Identity hashes are address-like (see
 * sp_client_identity_hash): the low 9 bits select the slot within a window of
 * 512, the rest is scrambled to choose the window.  Objects that lay in one
 * 4 KiB page when hashed (allocated together, and mostly traversed together)
 * share a window of the table, so a traversal takes a cache miss per page of
 * objects rather than per object, while pages still spread evenly.
 */
static size_t
sp_lidmap_slot (uint32_t hash, size_t mask)
{
	uint64_t window = ((uint64_t)(hash >> 9) * 0x9E3779B97F4A7C15ull) >> 32;
	return (size_t)((window << 9) | (hash & 511)) & mask;
}

static int
sp_lidmap_alloc (SpLidMap *m, size_t capacity)
{
	m->slots = calloc (capacity, sizeof *m->slots);
	if (!m->slots)
		return -1;
	m->mask = capacity - 1;
	m->count = 0;
	m->generation = 1;
	return 0;
}

static inline bool
sp_lidmap_used (const SpLidMap *m, const SpLidEntry *e)
{
	return e->generation == m->generation;
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
	m->count = 0;
	if (++m->generation == 0) {
		/* Wrapped after 2^32 clears: only now do stale generations need erasing. */
		memset (m->slots, 0, (m->mask + 1) * sizeof *m->slots);
		m->generation = 1;
	}
}

SpLidEntry *
sp_lidmap_find (SpLidMap *m, uint32_t hash, const void *obj, uint32_t epoch)
{
	for (size_t i = sp_lidmap_slot (hash, m->mask);; i = (i + 1) & m->mask) {
		SpLidEntry *e = &m->slots [i];
		if (!sp_lidmap_used (m, e))
			return NULL;
		/* Distinct objects may share a hash: confirm by address. */
		if (e->hash != hash)
			continue;
		if (e->epoch != epoch) {
			/* Objects may have moved since `mid` was read: read it again. */
			e->mid = (uintptr_t)sp_client_lid_object (sp_lid_of (e));
			e->epoch = epoch;
		}
		if (e->mid == (uintptr_t)obj)
			return e;
	}
}

static SpLidEntry *
sp_lidmap_place (SpLidMap *m, const SpLidEntry *entry)
{
	size_t i = sp_lidmap_slot (entry->hash, m->mask);
	while (sp_lidmap_used (m, &m->slots [i]))
		i = (i + 1) & m->mask;
	m->slots [i] = *entry;
	m->slots [i].generation = m->generation;
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
		if (sp_lidmap_used (m, &m->slots [i]))
			sp_lidmap_place (&bigger, &m->slots [i]);
	free (m->slots);
	*m = bigger;
	return 0;
}

SpLidEntry *
sp_lidmap_add (SpLidMap *m, uint32_t hash, uint32_t lid, const void *obj, uint32_t epoch)
{
	if ((m->count + 1) * 2 > m->mask + 1 && sp_lidmap_grow (m) < 0)
		return NULL;
	SpLidEntry entry = { .hash = hash, .lid = lid, .epoch = epoch, .mid = (uintptr_t)obj };
	return sp_lidmap_place (m, &entry);
}
