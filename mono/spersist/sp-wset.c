/* sp-wset.c: see sp-wset.h. */
#include "sp-wset.h"

#include <stdlib.h>

#define SP_WSET_ADDR_BITS 48
#define SP_WSET_ADDR_MASK ((UINT64_C (1) << SP_WSET_ADDR_BITS) - 1)

int
sp_wset_init (SpWrittenSet *ws, unsigned capacity_log2)
{
	size_t capacity = (size_t)1 << capacity_log2;
	*ws = (SpWrittenSet){ .mask = capacity - 1 };
	ws->slots = calloc (capacity, sizeof *ws->slots);
	if (!ws->slots)
		return -1;
	/* calloc may hand out untouched zero pages: fault them in now, not in a barrier. */
	for (size_t i = 0; i < capacity; i += 4096 / sizeof *ws->slots)
		__atomic_store_n (&ws->slots [i], 0, __ATOMIC_RELAXED);
	return 0;
}

void
sp_wset_free (SpWrittenSet *ws)
{
	free (ws->slots);
	ws->slots = NULL;
}

void
sp_wset_open (SpWrittenSet *ws, uint32_t epoch)
{
	__atomic_store_n (&ws->stamp_base, ws->next_stamp, __ATOMIC_RELAXED);
	__atomic_store_n (&ws->epoch_base, epoch, __ATOMIC_RELAXED);
	__atomic_store_n (&ws->open, true, __ATOMIC_RELEASE);
}

static void
sp_wset_clear (SpWrittenSet *ws)
{
	/* Lookups may run meanwhile: each slot goes to empty in one store (they then answer "absent"). */
	for (size_t i = 0; i <= ws->mask; i++)
		__atomic_store_n (&ws->slots [i], 0, __ATOMIC_RELAXED);
	ws->clear_stamp = ws->next_stamp;
}

void
sp_wset_close (SpWrittenSet *ws, uint32_t epoch)
{
	if (!__atomic_load_n (&ws->open, __ATOMIC_RELAXED))
		return;
	__atomic_store_n (&ws->open, false, __ATOMIC_RELEASE);
	uint32_t used = epoch - ws->epoch_base;
	if (used > SP_WSET_MAX_EPOCHS)
		used = SP_WSET_MAX_EPOCHS;
	ws->next_stamp = ws->stamp_base + used + 1;
	/* The next cycle may use stamps up to next_stamp + SP_WSET_MAX_EPOCHS: they must not wrap onto the oldest entry's. */
	if (ws->next_stamp - ws->clear_stamp > 65535u - (SP_WSET_MAX_EPOCHS + 1))
		sp_wset_clear (ws);
}

/* The entry addr would have in the running cycle at GC epoch `epoch`; false when the set cannot hold it. */
static bool
sp_wset_key (const SpWrittenSet *ws, const void *addr, uint32_t epoch, uint64_t *key)
{
	uint64_t a = (uint64_t)(uintptr_t)addr;
	if (!__atomic_load_n (&ws->open, __ATOMIC_ACQUIRE) || a == 0 || a > SP_WSET_ADDR_MASK)
		return false;
	uint32_t delta = epoch - __atomic_load_n (&ws->epoch_base, __ATOMIC_RELAXED);
	if (delta > SP_WSET_MAX_EPOCHS)
		return false;
	uint16_t stamp = (uint16_t)(__atomic_load_n (&ws->stamp_base, __ATOMIC_RELAXED) + delta);
	*key = a | (uint64_t)stamp << SP_WSET_ADDR_BITS;
	return true;
}

/* Does slot value v hold an entry of key's stamp (not empty, not stale)? */
static inline bool
sp_wset_same_stamp (uint64_t v, uint64_t key)
{
	return v != 0 && (v >> SP_WSET_ADDR_BITS) == (key >> SP_WSET_ADDR_BITS);
}

/*
 * An entry's home slot.  As in the LID map (sp-lidmap.c): the address's 4 KiB
 * page, scrambled, chooses a window of 512 slots, its offset in the page the
 * slot, so objects allocated together (and mostly stored into together, a
 * loop over a collection) share cache lines of the table instead of taking a
 * miss each.
 */
static size_t
sp_wset_home (const SpWrittenSet *ws, uint64_t key)
{
	uint64_t a = key & SP_WSET_ADDR_MASK;
	uint64_t window = ((a >> 12) * 0x9E3779B97F4A7C15ull) >> 32;
	return (size_t)((window << 9) | ((a >> 3) & 511)) & ws->mask;
}

void
sp_wset_add (SpWrittenSet *ws, const void *addr, uint32_t epoch)
{
	uint64_t key;
	if (!sp_wset_key (ws, addr, epoch, &key))
		return;
	size_t home = sp_wset_home (ws, key);
	for (size_t i = 0; i < SP_WSET_PROBES; i++) {
		size_t slot = (home + i) & ws->mask;
		uint64_t v = __atomic_load_n (&ws->slots [slot], __ATOMIC_RELAXED);
		if (v == key)
			return;
		/* Empty or stale: the key is not further on (sp-wset.h, the probe invariant), and this slot is free. */
		if (!sp_wset_same_stamp (v, key)) {
			__atomic_store_n (&ws->slots [slot], key, __ATOMIC_RELEASE);
			return;
		}
	}
	/* SP_WSET_PROBES entries of this stamp in a row: dropped (the object takes the locked path). */
}

bool
sp_wset_has (const SpWrittenSet *ws, const void *addr, uint32_t epoch)
{
	uint64_t key;
	if (!sp_wset_key (ws, addr, epoch, &key))
		return false;
	size_t home = sp_wset_home (ws, key);
	for (size_t i = 0; i < SP_WSET_PROBES; i++) {
		uint64_t v = __atomic_load_n (&ws->slots [(home + i) & ws->mask], __ATOMIC_ACQUIRE);
		if (v == key)
			return true;
		if (!sp_wset_same_stamp (v, key))
			return false;
	}
	return false;
}
