/* sp-storelog.c: see sp-storelog.h. */
#include "sp-storelog.h"

#include <stdlib.h>
#include <string.h>

struct SpStoreSlot {
	uintptr_t page;
	uint32_t head;            /* newest range of the page (1-based), valid when gen matches */
	uint32_t gen;
};

int
sp_storelog_init (SpStoreLog *log, uint32_t capacity)
{
	memset (log, 0, sizeof *log);
	uint32_t nslots = 16;
	while (nslots < 2 * capacity)
		nslots *= 2;
	log->ranges = calloc (capacity, sizeof *log->ranges);
	log->next = calloc (capacity + 1, sizeof *log->next);
	log->long_ids = calloc (capacity, sizeof *log->long_ids);
	log->slots = calloc (nslots, sizeof *log->slots);
	if (!log->ranges || !log->next || !log->long_ids || !log->slots) {
		sp_storelog_destroy (log);
		return -1;
	}
	log->capacity = capacity;
	log->slot_mask = nslots - 1;
	log->gen = 1;
	return 0;
}

void
sp_storelog_destroy (SpStoreLog *log)
{
	free (log->ranges);
	free (log->next);
	free (log->long_ids);
	free (log->slots);
	memset (log, 0, sizeof *log);
}

void
sp_storelog_clear (SpStoreLog *log)
{
	/* Zeroed, so the conservative root pins nothing any more. */
	memset (log->ranges, 0, log->count * sizeof *log->ranges);
	log->count = log->nlong = 0;
	log->overflowed = false;
	if (++log->gen == 0) {    /* every stale slot could look current again */
		memset (log->slots, 0, ((size_t)log->slot_mask + 1) * sizeof *log->slots);
		log->gen = 1;
	}
}

static inline uintptr_t
sp_storelog_page (uintptr_t addr)
{
	return addr / SP_STORELOG_PAGE;
}

/* The slot of `page`: its own, or the free one where it would go. */
static SpStoreSlot *
sp_storelog_slot (const SpStoreLog *log, uintptr_t page)
{
	uint32_t i = (uint32_t)((page * 0x9E3779B97F4A7C15ull) >> 32) & log->slot_mask;
	for (;; i = (i + 1) & log->slot_mask) {
		SpStoreSlot *s = &log->slots [i];
		if (s->gen != log->gen || s->page == page)
			return s;
	}
}

static inline uint32_t
sp_storelog_page_head (const SpStoreLog *log, uintptr_t page)
{
	const SpStoreSlot *s = sp_storelog_slot (log, page);
	return s->gen == log->gen ? s->head : 0;
}

static inline bool
sp_storelog_is_long (const SpStoreRange *r)
{
	return r->hi == SP_STORELOG_REST || r->hi - r->lo > SP_STORELOG_PAGE;
}

/* Keep id in the long list (false: the list is full, and the log overflowed). */
static bool
sp_storelog_keep_long (SpStoreLog *log, uint32_t id)
{
	if (log->nlong == SP_STORELOG_LONG_MAX || log->nlong == log->capacity) {
		log->overflowed = true;
		return false;
	}
	log->long_ids [log->nlong++] = id;
	return true;
}

/* Unlink id, the newest range of its page, which grew past a page, into the long list. */
static void
sp_storelog_make_long (SpStoreLog *log, uint32_t id)
{
	SpStoreSlot *s = sp_storelog_slot (log, sp_storelog_page (log->ranges [id - 1].lo));
	s->head = log->next [id];
	sp_storelog_keep_long (log, id);
}

/*
 * Extend range id with a store of [lo, hi) if it starts within the range or
 * at most SP_STORELOG_GAP bytes after it (so within the same object).
 */
static bool
sp_storelog_merge (SpStoreLog *log, uint32_t id, uintptr_t lo, uintptr_t hi)
{
	SpStoreRange *r = &log->ranges [id - 1];
	if (r->hi == SP_STORELOG_REST || hi == SP_STORELOG_REST)
		return r->lo == lo && r->hi == hi;
	if (lo < r->lo || lo > r->hi + SP_STORELOG_GAP)
		return false;
	if (hi > r->hi)
		r->hi = hi;
	return true;
}

/* Merge into the newest range of lo's page or of the page before, or the newest long range. */
static bool
sp_storelog_try_merge (SpStoreLog *log, uintptr_t lo, uintptr_t hi)
{
	uintptr_t page = sp_storelog_page (lo);
	for (int back = 0; back < 2 && back <= (int)(page > 0); back++) {
		uint32_t id = sp_storelog_page_head (log, page - (uintptr_t)back);
		if (id && sp_storelog_merge (log, id, lo, hi)) {
			if (sp_storelog_is_long (&log->ranges [id - 1]))
				sp_storelog_make_long (log, id);
			return true;
		}
	}
	return log->nlong && sp_storelog_merge (log, log->long_ids [log->nlong - 1], lo, hi);
}

bool
sp_storelog_add (SpStoreLog *log, uintptr_t lo, uintptr_t len)
{
	if (log->overflowed)
		return false;
	uintptr_t hi = len == SP_STORELOG_REST || len > UINTPTR_MAX - lo ? SP_STORELOG_REST : lo + (len ? len : 1);
	if (sp_storelog_try_merge (log, lo, hi))
		return !log->overflowed;
	if (log->count == log->capacity) {
		log->overflowed = true;
		return false;
	}
	uint32_t id = ++log->count;
	log->ranges [id - 1] = (SpStoreRange) { lo, hi };
	if (sp_storelog_is_long (&log->ranges [id - 1]))
		return sp_storelog_keep_long (log, id);
	SpStoreSlot *s = sp_storelog_slot (log, sp_storelog_page (lo));
	log->next [id] = s->gen == log->gen ? s->head : 0;
	*s = (SpStoreSlot) { .page = sp_storelog_page (lo), .head = id, .gen = log->gen };
	return true;
}

static inline bool
sp_storelog_range_touches (const SpStoreRange *r, uintptr_t obj_lo, uintptr_t obj_hi, uintptr_t from, uintptr_t to)
{
	if (r->hi == SP_STORELOG_REST)
		return r->lo >= obj_lo && r->lo < obj_hi && r->lo < to;
	return r->lo < to && r->hi > from;
}

bool
sp_storelog_touches (const SpStoreLog *log, uintptr_t obj_lo, uintptr_t obj_hi, uintptr_t from, uintptr_t to)
{
	if (sp_storelog_empty (log) || from >= to)
		return false;
	if (log->overflowed)
		return true;
	for (uint32_t i = 0; i < log->nlong; i++)
		if (sp_storelog_range_touches (&log->ranges [log->long_ids [i] - 1], obj_lo, obj_hi, from, to))
			return true;
	/* A short range starts at most one page before the bytes it reaches. */
	uintptr_t first = sp_storelog_page (from), last = sp_storelog_page (to - 1);
	for (uintptr_t p = first ? first - 1 : 0; p <= last; p++)
		for (uint32_t id = sp_storelog_page_head (log, p); id; id = log->next [id])
			if (sp_storelog_range_touches (&log->ranges [id - 1], obj_lo, obj_hi, from, to))
				return true;
	return false;
}
