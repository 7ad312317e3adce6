/*
 * sp-wset.h: the written set, which lets a store barrier learn without a lock
 * that its object needs nothing more in the running cycle.
 *
 * The barrier's slow path must make sure an object's pre-store state is in
 * the snapshot before the store lands.  The answer lives in the serializer
 * (LID map and states), which belongs to whoever holds the cycle's lock, and
 * the SP task holds that lock for a whole increment.  Without this set, a
 * mutator's first store into each object (on each thread) waits for the
 * increment to end, although most stores hit objects that need nothing: their
 * record is written already, or they cannot be in the snapshot.  The lock
 * holders add every such object here; a barrier that finds its object here
 * returns at once, without the lock.
 *
 * Keys are object addresses.  An entry is one word, the address (low 48 bits)
 * and a 16-bit stamp that names the cycle and the GC epoch it was added in:
 * the GC moves objects, and another object may take an old address, so an
 * entry counts only while its stamp is the current one.  Entries are never
 * removed; an entry whose stamp is not current is free for reuse.
 *
 * Invariants:
 *   - every entry with the current stamp names an object that needs nothing
 *     more in this cycle (its record is complete, or it is not in the
 *     snapshot); a false "absent" only costs the caller the locked path;
 *   - adds happen one at a time (the caller holds the cycle's lock); lookups
 *     run on any thread, concurrently with adds: a slot goes from empty or
 *     stale to an entry in one atomic store (release: whatever the adder read
 *     of the object for its record is read before a reader can see the
 *     entry and store);
 *   - an entry sits within SP_WSET_PROBES slots of its home, and the slots
 *     between hold entries of its own stamp: an add takes the first slot
 *     from home that is empty or stale, and an entry is never removed nor
 *     overwritten while its stamp is current (slots empty only when the
 *     table is cleared).  So a lookup or an add stops at the first slot that
 *     is empty or of another stamp, or after SP_WSET_PROBES: the key is not
 *     further on.  (Looking past stale slots, as the first version did, cost
 *     each add two cache lines of a table that stale entries fill.)
 *   - the stamps in the table span fewer than 65,536 values since the last
 *     clear (a cycle uses at most SP_WSET_MAX_EPOCHS + 1 of them; the table
 *     is cleared, between cycles, before the window would wrap), so a 16-bit
 *     stamp never matches an entry of an earlier cycle or GC epoch.
 *
 * The caller's protocol: sp_wset_open when a cycle starts, with no lookup
 * running (the runtime does it with the world stopped); lookups and adds with
 * the GC epoch read while the object cannot move (no safepoint between the
 * read and the use); sp_wset_close when the cycle ends.  A lookup that
 * began in a cycle finishes before the next cycle opens (the runtime's
 * barrier has no safepoint, and a cycle starts with the world stopped).
 */
#ifndef SP_WSET_H
#define SP_WSET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_WSET_PROBES 16u
/* GC epochs one cycle may use the set for; past that it answers "absent" (adds are dropped). */
#define SP_WSET_MAX_EPOCHS 16383u

typedef struct SpWrittenSet {
	uint64_t *slots;          /* address | stamp << 48; 0: empty (accessed atomically) */
	size_t mask;              /* capacity - 1 */
	uint32_t stamp_base;      /* the running cycle's stamp at GC epoch epoch_base (a counter; 16 bits are stored) */
	uint32_t epoch_base;
	uint32_t next_stamp;      /* the next cycle's stamp_base */
	uint32_t clear_stamp;     /* next_stamp when the table was last cleared */
	bool open;                /* a cycle is running */
} SpWrittenSet;

/* A set of 2^capacity_log2 slots, its pages touched now (not in a cycle): 0, or -1 out of memory. */
int sp_wset_init (SpWrittenSet *ws, unsigned capacity_log2);
void sp_wset_free (SpWrittenSet *ws);
/* A cycle starts at GC epoch `epoch`; no lookup may be running. */
void sp_wset_open (SpWrittenSet *ws, uint32_t epoch);
/* The cycle ended at GC epoch `epoch` (lookups may still run; they may answer either way). */
void sp_wset_close (SpWrittenSet *ws, uint32_t epoch);
/* Object at addr needs nothing more in this cycle (caller holds the cycle's lock). */
void sp_wset_add (SpWrittenSet *ws, const void *addr, uint32_t epoch);
/* Is object at addr known to need nothing more in this cycle?  Lock-free, any thread. */
bool sp_wset_has (const SpWrittenSet *ws, const void *addr, uint32_t epoch);

#endif
