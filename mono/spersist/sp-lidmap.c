/* sp-lidmap.c: see sp-lidmap.h. */
#include "sp-lidmap.h"

#include "sp-client.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

/* Tables of this size and more are mapped (sp_lidmap_release_step). */
#define SP_LIDMAP_MAP_BYTES (256u << 10)

static SpLidEntry *
sp_lidmap_table_new (size_t capacity)
{
	size_t bytes = capacity * sizeof (SpLidEntry);
	if (bytes < SP_LIDMAP_MAP_BYTES)
		return calloc (capacity, sizeof (SpLidEntry));
	void *p = mmap (NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	return p == MAP_FAILED ? NULL : p;
}

/* A table no longer used: small ones are freed now, mapped ones queued to be given back in slices. */
static void
sp_lidmap_table_retire (SpLidMap *m, SpLidEntry *table, size_t capacity)
{
	size_t bytes = capacity * sizeof (SpLidEntry);
	if (!table)
		return;
	if (bytes < SP_LIDMAP_MAP_BYTES)
		free (table);
	else if (m->nretired < SP_LIDMAP_RETIRED_MAX)
		m->retired [m->nretired++] = (SpLidRetired){ table, bytes };
	else
		munmap (table, bytes);
}

bool
sp_lidmap_release_step (SpLidMap *m, size_t max_bytes)
{
	while (m->nretired && max_bytes) {
		SpLidRetired *r = &m->retired [m->nretired - 1];
		/* Whole pages from the end of the table (mappings start page-aligned and are page multiples). */
		size_t n = r->bytes < max_bytes ? r->bytes : max_bytes & ~(size_t)4095;
		if (!n)
			break;
		munmap ((uint8_t *)r->at + r->bytes - n, n);
		r->bytes -= n;
		max_bytes -= n;
		if (!r->bytes)
			m->nretired--;
	}
	return m->nretired > 0;
}

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
	SpLidEntry *slots = sp_lidmap_table_new (capacity);
	if (!slots)
		return -1;
	*m = (SpLidMap){ .slots = slots, .mask = capacity - 1, .epoch = sp_client_gc_epoch () };
	return 0;
}

/*
 * An address and its epoch in one word.  An address that does not fit in
 * SP_LIDMAP_MID_BITS (not on today's x86-64 or arm64 user space) is not
 * cached: it gets a tag no epoch has (the current one plus half the tag
 * range), so it is read from the LID table at every lookup.
 */
#define SP_LIDMAP_MID_MASK ((UINT64_C (1) << SP_LIDMAP_MID_BITS) - 1)

/* An old-table slot whose entry has moved to the new table (probe sequences go on through it). */
#define SP_LIDMAP_MOVED UINT64_MAX

static inline uint64_t
sp_lidmap_pack (const void *obj, uint32_t epoch)
{
	uint64_t mid = (uint64_t)(uintptr_t)obj;
	if (mid > SP_LIDMAP_MID_MASK)
		return (uint64_t)(uint16_t)(epoch + 0x8000u) << SP_LIDMAP_MID_BITS;
	return mid | (uint64_t)(uint16_t)epoch << SP_LIDMAP_MID_BITS;
}

static inline bool
sp_lidmap_current (const SpLidEntry *e, uint32_t epoch)
{
	return (uint16_t)(e->mid >> SP_LIDMAP_MID_BITS) == (uint16_t)epoch;
}

static inline bool
sp_lidmap_used (const SpLidEntry *e)
{
	return e->lid != 0;
}

/* Room for `n` entries at most half full. */
static size_t
sp_lidmap_capacity_for (size_t n)
{
	size_t capacity = 64;
	while (capacity < n * 2)
		capacity *= 2;
	return capacity;
}

int
sp_lidmap_init (SpLidMap *m, size_t expected)
{
	return sp_lidmap_alloc (m, sp_lidmap_capacity_for (expected));
}

void
sp_lidmap_free (SpLidMap *m)
{
	sp_lidmap_table_retire (m, m->slots, m->mask + 1);
	sp_lidmap_table_retire (m, m->old, m->old_mask + 1);
	sp_lidmap_table_retire (m, m->next, m->next_capacity);
	m->next = NULL;
	while (sp_lidmap_release_step (m, SIZE_MAX))
		;
	m->slots = m->old = NULL;
	m->mask = m->count = 0;
}

size_t
sp_lidmap_clear_begin (SpLidMap *m)
{
	sp_lidmap_table_retire (m, m->old, m->old_mask + 1);
	m->old = NULL;
	sp_lidmap_table_retire (m, m->next, m->next_capacity);
	m->next = NULL;
	size_t want = sp_lidmap_capacity_for (m->count < 1024 ? 1024 : m->count);
	SpLidEntry *smaller = m->mask + 1 > 4 * want ? sp_lidmap_table_new (want) : NULL;
	size_t dirty = m->mask + 1;
	if (smaller) {
		sp_lidmap_table_retire (m, m->slots, m->mask + 1);
		m->slots = smaller;
		m->mask = want - 1;
		dirty = 0;
	}
	m->last_count = m->count;
	m->count = 0;
	m->miss_valid = false;
	m->epoch = sp_client_gc_epoch ();
	return dirty;
}

void
sp_lidmap_clear_slots (SpLidMap *m, size_t from, size_t n)
{
	memset (m->slots + from, 0, n * sizeof *m->slots);
}

void
sp_lidmap_clear (SpLidMap *m)
{
	sp_lidmap_clear_slots (m, 0, sp_lidmap_clear_begin (m));
}

/*
 * Once every SP_LIDMAP_EPOCH_WINDOW epochs (32,768 collections), read every
 * cached address again, so that no tag is older than the 16 bits can tell.
 */
static void
sp_lidmap_refresh_table (SpLidEntry *slots, size_t mask, uint32_t epoch)
{
	for (size_t i = 0; slots && i <= mask; i++) {
		SpLidEntry *e = &slots [i];
		if (sp_lidmap_used (e) && e->mid != SP_LIDMAP_MOVED)
			e->mid = sp_lidmap_pack (sp_client_lid_object (sp_lid_of (e)), epoch);
	}
}

static void
sp_lidmap_refresh_all (SpLidMap *m, uint32_t epoch)
{
	if (epoch - m->epoch < SP_LIDMAP_EPOCH_WINDOW)
		return;
	sp_lidmap_refresh_table (m->slots, m->mask, epoch);
	sp_lidmap_refresh_table (m->old, m->old_mask, epoch);
	m->epoch = epoch;
}

/* Search one table for obj; NULL at the first empty slot (*empty: its index). */
static SpLidEntry *
sp_lidmap_probe (SpLidEntry *slots, size_t mask, uint32_t hash, const void *obj, uint32_t epoch, size_t *empty)
{
	for (size_t i = sp_lidmap_slot (hash, mask);; i = (i + 1) & mask) {
		SpLidEntry *e = &slots [i];
		if (!sp_lidmap_used (e)) {
			*empty = i;
			return NULL;
		}
		if (e->hash != hash || e->mid == SP_LIDMAP_MOVED)
			continue;
		/* Distinct objects may share a hash: confirm by address, read again if it may have moved. */
		if (!sp_lidmap_current (e, epoch)) {
			const void *now = sp_client_lid_object (sp_lid_of (e));
			e->mid = sp_lidmap_pack (now, epoch);
			if (now == obj)
				return e;
		} else if ((e->mid & SP_LIDMAP_MID_MASK) == (uint64_t)(uintptr_t)obj) {
			return e;
		}
	}
}

SpLidEntry *
sp_lidmap_find (SpLidMap *m, uint32_t hash, const void *obj, uint32_t epoch)
{
	sp_lidmap_refresh_all (m, epoch);
	size_t empty, ignored;
	SpLidEntry *e = sp_lidmap_probe (m->slots, m->mask, hash, obj, epoch, &empty);
	if (!e && m->old)
		e = sp_lidmap_probe (m->old, m->old_mask, hash, obj, epoch, &ignored);
	if (!e) {
		/* A miss is mostly followed by the add of the same object: remember the free slot. */
		m->miss_slot = empty;
		m->miss_hash = hash;
		m->miss_valid = true;
	}
	return e;
}

bool
sp_lidmap_forget (SpLidMap *m, uint32_t hash, const void *obj, uint32_t epoch)
{
	SpLidEntry *e = sp_lidmap_find (m, hash, obj, epoch);
	if (!e)
		return false;
	e->mid = SP_LIDMAP_MOVED;
	return true;
}

static SpLidEntry *
sp_lidmap_place (SpLidMap *m, const SpLidEntry *entry)
{
	size_t i;
	if (m->miss_valid && m->miss_hash == entry->hash) {
		i = m->miss_slot;
	} else {
		i = sp_lidmap_slot (entry->hash, m->mask);
		while (sp_lidmap_used (&m->slots [i]))
			i = (i + 1) & m->mask;
	}
	m->miss_valid = false;
	m->slots [i] = *entry;
	m->count++;
	return &m->slots [i];
}

/* Slots of the old table moved per add: the old one is empty before the new one is half full. */
#define SP_LIDMAP_MOVES_PER_ADD 4

static void
sp_lidmap_move_some (SpLidMap *m)
{
	for (int k = 0; k < SP_LIDMAP_MOVES_PER_ADD && m->old_next <= m->old_mask; k++, m->old_next++) {
		SpLidEntry *e = &m->old [m->old_next];
		if (sp_lidmap_used (e) && e->mid != SP_LIDMAP_MOVED) {
			sp_lidmap_place (m, e);
			e->mid = SP_LIDMAP_MOVED;
		}
	}
	if (m->old_next > m->old_mask) {
		sp_lidmap_table_retire (m, m->old, m->old_mask + 1);
		m->old = NULL;
	}
}

/*
 * The next doubling's table, made ready by the adds before it.  A mapped
 * table's page first read (a probe) maps the kernel's shared zero page, and
 * the first write then replaces it, which flushes that mapping from the TLB
 * of every CPU running the process: with 1,000,000 objects, about 58,000
 * interrupts to the program's CPU and cycles twice as long on two CPUs.  A
 * page first written gets its own page at once.  So from a quarter full on,
 * each add writes one page of the next table (it has (capacity * 2 * 16) /
 * 4096 pages, and a quarter of the capacity in adds comes before it is
 * needed), and the doubling finds it written.  Only while the map holds
 * more than the last cycle's state: the table was sized for that state
 * (sp_lidmap_clear_begin), so a state no larger does not double it, and
 * preparing a table for every cycle of a steady state wasted its pages'
 * faults and their unmapping each cycle, on whichever thread added, the
 * program's own in a barrier (session 12: a 1 kHz loop updating 1,000 of
 * 100,000 objects through barriers went from 0-1 to 27-76 deadline misses
 * in 5,000 periods; 0 since).
 */
static void
sp_lidmap_ahead (SpLidMap *m)
{
	size_t capacity = (m->mask + 1) * 2, bytes = capacity * sizeof (SpLidEntry);
	if (bytes < SP_LIDMAP_MAP_BYTES || m->count * 4 < m->mask + 1 || m->count <= m->last_count)
		return;
	if (m->next && m->next_capacity != capacity) {
		sp_lidmap_table_retire (m, m->next, m->next_capacity);
		m->next = NULL;
	}
	if (!m->next) {
		if (!(m->next = sp_lidmap_table_new (capacity)))
			return;
		m->next_capacity = capacity;
		m->next_written = 0;
	}
	if (m->next_written < bytes) {
		((volatile uint8_t *)m->next) [m->next_written] = 0;
		m->next_written += 4096;
	}
}

/* Double the table when it is half full, keeping probe sequences short; the entries move over later. */
static int
sp_lidmap_grow (SpLidMap *m)
{
	while (m->old)
		sp_lidmap_move_some (m);          /* (not reached: the previous doubling is over by now) */
	size_t capacity = (m->mask + 1) * 2;
	SpLidEntry *bigger = m->next && m->next_capacity == capacity ? m->next : sp_lidmap_table_new (capacity);
	if (bigger == m->next)
		m->next = NULL;
	if (!bigger)
		return -1;
	m->old = m->slots;
	m->old_mask = m->mask;
	m->old_next = 0;
	m->slots = bigger;
	m->mask = m->mask * 2 + 1;
	m->count = 0;
	m->miss_valid = false;
	return 0;
}

SpLidEntry *
sp_lidmap_add (SpLidMap *m, uint32_t hash, uint32_t lid, const void *obj, uint32_t epoch)
{
	if ((m->count + 1) * 2 > m->mask + 1 && sp_lidmap_grow (m) < 0)
		return NULL;
	SpLidEntry entry = { .hash = hash, .lid = lid, .mid = sp_lidmap_pack (obj, epoch) };
	SpLidEntry *placed = sp_lidmap_place (m, &entry);   /* first: it may use the slot of the find that missed */
	size_t at = (size_t)(placed - m->slots);
	if (m->old)
		sp_lidmap_move_some (m);                    /* moves never displace an entry: `at` stays valid */
	sp_lidmap_ahead (m);
	return &m->slots [at];
}
