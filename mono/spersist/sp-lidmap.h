/*
 * sp-lidmap.h: the MID->LID map of paper section 4.
 *
 * Maps an object's memory address (MID) to the logical id (LID, 1..N) it has in
 * the snapshot being written, and records whether the object's record has been
 * written yet.  As in the paper the "serialized" state lives in the LID's most
 * significant bit, so an entry is two words.  Open addressing with linear probing;
 * keys are never removed within a cycle, and the map is cleared between cycles.
 *
 * Addresses are only stable while objects cannot move: the caller guarantees
 * that (the stop-the-world cycle holds the GC lock; see sp-mono.c).
 */
#ifndef SP_LIDMAP_H
#define SP_LIDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_LID_SERIALIZED 0x80000000u
#define SP_LID_MAX        0x7fffffffu

typedef struct SpLidEntry {
	uintptr_t mid;          /* 0 = empty slot */
	uint32_t lid;           /* LID | SP_LID_SERIALIZED once its record is written */
} SpLidEntry;

typedef struct SpLidMap {
	SpLidEntry *slots;
	size_t mask;            /* capacity - 1; capacity is a power of two */
	size_t count;
} SpLidMap;

int sp_lidmap_init (SpLidMap *m, size_t expected);
void sp_lidmap_free (SpLidMap *m);
void sp_lidmap_clear (SpLidMap *m);

/* The entry for mid, or NULL. */
SpLidEntry *sp_lidmap_find (const SpLidMap *m, uintptr_t mid);
/*
 * The entry for mid, inserting it with `lid` when absent (*inserted tells which).
 * NULL only when memory runs out.
 */
SpLidEntry *sp_lidmap_insert (SpLidMap *m, uintptr_t mid, uint32_t lid, bool *inserted);

static inline uint32_t sp_lid_of (const SpLidEntry *e) { return e->lid & SP_LID_MAX; }
static inline bool sp_lid_is_serialized (const SpLidEntry *e) { return (e->lid & SP_LID_SERIALIZED) != 0; }
static inline void sp_lid_set_serialized (SpLidEntry *e) { e->lid |= SP_LID_SERIALIZED; }

#endif
