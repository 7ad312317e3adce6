/*
 * sp-storelog.h: the stores no barrier saw, during one incremental cycle.
 *
 * The object barrier runs where a store's target object is known: stfld,
 * stelem, and where a managed pointer into an object is made (ldflda,
 * ldelema, AsSpan).  A store through a pointer made otherwise -- a ref or
 * Span taken before SendPData and used after, `new Span<T>(array)`,
 * MemoryMarshal, `fixed`, unsafe code -- lands in an object nobody wrote
 * first.  The JIT gives every store through an address (stind, stobj,
 * initobj, cpobj, cpblk, initblk, stfld into a struct by reference,
 * Interlocked, Volatile.Write, Unsafe.Write*, the class library's memmove)
 * an address barrier; while a cycle runs it logs the store here, unless the
 * address is on the thread's stack or inside an object the object barrier
 * already handled in this cycle.  When the SP task or a barrier has taken an
 * object's state for its record, it asks whether any logged store fell into
 * the bytes it read: if so, the record may not be the state at SendPData,
 * and the cycle must not commit it (sp-serialize.c: the object is poisoned,
 * which fails the cycle if the snapshot reaches it).
 *
 * Ranges, not objects: the log does not know where objects start (that
 * would need the GC's help on every store).  Two invariants make ranges
 * enough:
 *
 *   - a range never spans two objects: a store never does, and a store is
 *     merged into a range only when it starts at most SP_STORELOG_GAP bytes
 *     after it, less than any object header (16 bytes on 64-bit Mono);
 *   - a range's first byte stays inside its object while the cycle runs: the
 *     runtime registers `ranges` as a conservative (pinning) GC root, so the
 *     object does not move.
 *
 * A store of unknown length (a pointer passed to native code) is logged as
 * "from here to the end of its object" (SP_STORELOG_REST): the check names
 * the object's extent for those.
 *
 * Lookup: ranges of at most SP_STORELOG_PAGE bytes are indexed by the page
 * of their first byte (open addressing; a range reaches at most the next
 * page, so a check probes one page before its own), longer ones and REST
 * ranges are kept in a short list scanned whole.  Checking n bytes costs
 * about n / SP_STORELOG_PAGE probes: proportional to what the record copies.
 *
 * When the log is full (or holds SP_STORELOG_LONG_MAX long ranges) it overflows: every later check answers "may have
 * changed" (the cycle fails, loudly, rather than commit what it cannot vouch
 * for).  Clearing costs in proportion to what was logged.
 */
#ifndef SP_STORELOG_H
#define SP_STORELOG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_STORELOG_PAGE 4096u
#define SP_STORELOG_GAP 7u
#define SP_STORELOG_REST UINTPTR_MAX
/* Long and REST ranges are scanned by every check: past this many, the log overflows. */
#define SP_STORELOG_LONG_MAX 256u

typedef struct SpStoreRange {
	uintptr_t lo;             /* first byte stored: an interior pointer (pins the object) */
	uintptr_t hi;             /* one past the last, or SP_STORELOG_REST */
} SpStoreRange;

typedef struct SpStoreSlot SpStoreSlot;

typedef struct SpStoreLog {
	SpStoreRange *ranges;     /* [capacity]; entry i + 1 is ranges [i] */
	uint32_t *next;           /* the next range of the same page, 0 for none */
	uint32_t *long_ids;       /* ranges longer than a page, and REST ranges */
	uint32_t count, capacity, nlong;
	SpStoreSlot *slots;       /* page -> newest range of that page */
	uint32_t slot_mask, gen;
	bool overflowed;
} SpStoreLog;

/* 0, or -1 when memory runs out.  capacity: ranges before the log overflows. */
int sp_storelog_init (SpStoreLog *log, uint32_t capacity);
void sp_storelog_destroy (SpStoreLog *log);
/* Forget every range (cost: the ranges logged). */
void sp_storelog_clear (SpStoreLog *log);
/* Log a store of len bytes at lo (len SP_STORELOG_REST: to the end of its object); false once overflowed. */
bool sp_storelog_add (SpStoreLog *log, uintptr_t lo, uintptr_t len);
/*
 * Did a logged store touch [from, to), bytes of the object at [obj_lo,
 * obj_hi)?  (True when the log overflowed.)  The object's extent serves
 * the REST ranges, which start inside it.
 */
bool sp_storelog_touches (const SpStoreLog *log, uintptr_t obj_lo, uintptr_t obj_hi, uintptr_t from, uintptr_t to);
/* Nothing logged (and no overflow): every check answers false. */
static inline bool
sp_storelog_empty (const SpStoreLog *log)
{
	return log->count == 0 && !log->overflowed;
}

#endif
