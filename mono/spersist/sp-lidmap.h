/*
 * sp-lidmap.h: the MID->LID map of paper section 4, made safe for a moving GC.
 *
 * Maps an object to the logical id (LID, 1..N) it has in the snapshot being
 * written, and records whether its record has been written yet.  As in the paper
 * the "serialized" state is the LID's most significant bit.
 *
 * The paper keys the map by memory address (MID).  SGen moves objects at any GC,
 * so here an entry is keyed by the object's identity hash, which the runtime keeps
 * stable across moves (it is what RuntimeHelpers.GetHashCode returns), and an
 * entry's identity is confirmed through the client's LID table, which the GC
 * updates when objects move (sp_client_lid_object).  Nothing in this map goes
 * stale when the GC moves objects, and the GC needs no callback into it.
 *
 * Reading the LID table costs a cache miss per lookup, so each entry also caches
 * the object's address (MID), valid in the GC epoch the map records
 * (sp_client_gc_epoch, which changes whenever objects may have moved).  While
 * the epoch is unchanged a cached address is the object's address and is
 * compared directly; the first lookup in a new epoch reads every cached address
 * again from the LID table (once per collection, as the collection itself costs
 * a pass over the live objects).
 *
 * Open addressing with linear probing; entries are never removed within a
 * cycle.  An entry is 16 bytes so that the table of a snapshot of tens of
 * thousands of objects stays in a core's L2 cache: a graph scattered in memory
 * is looked up in random order, and each lookup that leaves the cache costs
 * more than the rest of the object's serialization.
 */
#ifndef SP_LIDMAP_H
#define SP_LIDMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_LID_SERIALIZED 0x80000000u
#define SP_LID_MAX        0x7fffffffu

typedef struct SpLidEntry {
	uint32_t hash;          /* the object's identity hash */
	uint32_t lid;           /* LID | SP_LID_SERIALIZED once written; 0: an empty slot */
	uintptr_t mid;          /* the object's address in the map's epoch */
} SpLidEntry;

typedef struct SpLidMap {
	SpLidEntry *slots;
	size_t mask;            /* capacity - 1; capacity is a power of two */
	size_t count;
	uint32_t epoch;         /* GC epoch in which the cached addresses were read */
	size_t miss_slot;       /* where the last failed find stopped: an add of that hash goes there */
	uint32_t miss_hash;
	bool miss_valid;
} SpLidMap;

int sp_lidmap_init (SpLidMap *m, size_t expected);
void sp_lidmap_free (SpLidMap *m);
/*
 * Forget every entry.  The table is zeroed (a sequential write, cheaper than
 * the random accesses that filled it), and shrunk first when it is far larger
 * than the last snapshot needed, so a snapshot costs what it adds, not the
 * size of the largest snapshot ever taken.
 */
void sp_lidmap_clear (SpLidMap *m);

/*
 * The entry of obj (whose identity hash is `hash`), or NULL.  `epoch` is
 * sp_client_gc_epoch () read after the caller obtained obj.
 */
SpLidEntry *sp_lidmap_find (SpLidMap *m, uint32_t hash, const void *obj, uint32_t epoch);
/* Add an entry for obj, not in the map; NULL only when memory runs out. */
SpLidEntry *sp_lidmap_add (SpLidMap *m, uint32_t hash, uint32_t lid, const void *obj, uint32_t epoch);

static inline uint32_t sp_lid_of (const SpLidEntry *e) { return e->lid & SP_LID_MAX; }
/*
 * The serialized state is what a write barrier asks ("is this object's pre-store
 * state already in the snapshot?").  The stop-the-world serializer does not
 * need it: its queue hands out each object once.
 */
static inline bool sp_lid_is_serialized (const SpLidEntry *e) { return (e->lid & SP_LID_SERIALIZED) != 0; }
static inline void sp_lid_set_serialized (SpLidEntry *e) { e->lid |= SP_LID_SERIALIZED; }

#endif
