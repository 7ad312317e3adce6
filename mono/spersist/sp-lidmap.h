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
 * the object's address (MID), tagged with the GC epoch it was read in
 * (sp_client_gc_epoch, which changes whenever objects may have moved).  While
 * the tag is the current epoch the cached address is the object's address and
 * is compared directly; otherwise the address is read again from the LID table
 * first.  So a collection costs each entry one refresh when it is next looked
 * at, never a pass over the whole map in one go (which would put a pause
 * proportional to the snapshot into whichever increment came first after a
 * collection).  The tag is the epoch's low 16 bits; the map refreshes every
 * entry once every SP_LIDMAP_EPOCH_WINDOW epochs, so that a tag left behind
 * for 65,536 epochs is never mistaken for a current one.
 *
 * Open addressing with linear probing; entries are never removed within a
 * cycle.  The table doubles when half full, incrementally (as Redis's dict
 * rehashes): the full table stays beside the new one, and every add moves a
 * few of its slots over (a moved slot becomes a tombstone, so probe sequences
 * through it still work), so that no single add pays for copying the map: an
 * increment's pause must not depend on the snapshot's size.  Lookups search
 * the new table, then the old one while it is being emptied.  An entry is 16 bytes so that the table of a snapshot of tens of
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
	uint64_t mid;           /* the object's address (low SP_LIDMAP_MID_BITS) and the epoch it was read in (the rest) */
} SpLidEntry;

#define SP_LIDMAP_MID_BITS 48
#define SP_LIDMAP_EPOCH_WINDOW 32768u

#define SP_LIDMAP_RETIRED_MAX 16

/* A mapped table no longer used, what is left of it. */
typedef struct SpLidRetired {
	void *at;
	size_t bytes;
} SpLidRetired;

typedef struct SpLidMap {
	SpLidEntry *slots;
	size_t mask;            /* capacity - 1; capacity is a power of two */
	size_t count;           /* entries in slots (the old table's not counted) */
	SpLidEntry *old;        /* the table before the last doubling, while its entries move over; else NULL */
	size_t old_mask;
	size_t old_next;        /* old slots below this one have moved */
	uint32_t epoch;         /* GC epoch in which every entry was last refreshed (or the map emptied) */
	size_t miss_slot;       /* where the last failed find stopped: an add of that hash goes there */
	uint32_t miss_hash;
	bool miss_valid;
	/* Tables no longer used (drained after a doubling, or shrunk away), given back a slice at a time. */
	SpLidRetired retired [SP_LIDMAP_RETIRED_MAX];
	unsigned nretired;
	/* The table the next doubling takes, mapped ahead and written a page an add (sp_lidmap_ahead). */
	SpLidEntry *next;
	size_t next_capacity;
	size_t next_written;    /* bytes of it whose pages are written */
	size_t last_count;      /* entries when last cleared: the last cycle's state, which the table was sized for */
} SpLidMap;

int sp_lidmap_init (SpLidMap *m, size_t expected);
void sp_lidmap_free (SpLidMap *m);
/*
 * Forget obj's entry (`hash`, `epoch` as for sp_lidmap_find): a find no longer
 * matches it and an add gives obj a new one.  The slot stays taken, as a
 * moved one (probe sequences go on through it), until the map is cleared.
 * False when obj had no entry.
 */
bool sp_lidmap_forget (SpLidMap *m, uint32_t hash, const void *obj, uint32_t epoch);
/*
 * Forget every entry.  The table is zeroed (a sequential write, cheaper than
 * the random accesses that filled it), and shrunk first when it is far larger
 * than the last snapshot needed, so a snapshot costs what it adds, not the
 * size of the largest snapshot ever taken.
 */
void sp_lidmap_clear (SpLidMap *m);
/*
 * sp_lidmap_clear in parts, for a caller that bounds its pauses: begin
 * forgets the entries (the map is empty from then on for count and adds)
 * and returns how many slots are still to be zeroed, which the caller does
 * with sp_lidmap_clear_slots in ranges, all of them before the next add or
 * find.
 */
size_t sp_lidmap_clear_begin (SpLidMap *m);
void sp_lidmap_clear_slots (SpLidMap *m, size_t from, size_t n);
/*
 * Large tables are mapped, not allocated (their pages come zeroed when first
 * touched, so a doubling costs no clearing at once), and when one is no
 * longer used (the old table once drained, the table a clear shrank away)
 * its pages go back a slice at a time: giving back the pages of a table of
 * tens of MB at once costs milliseconds.  Up to max_bytes a call: true when
 * more are left.  sp_lidmap_free gives back everything.
 */
bool sp_lidmap_release_step (SpLidMap *m, size_t max_bytes);

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
