/*
 * sp-serialize.h: the breadth-first serializer of paper section 4.
 *
 * Roots get the first LIDs; every object met through a persistent reference gets
 * the next LID and joins the queue; sp_ser_step then writes queued objects in
 * order.  Classes enter the snapshot's class cache the first time one of their
 * objects is written.  The serializer reads object memory through the class map
 * (SpClass) and the sp_client_* functions only, and writes an SpBuf.
 *
 *   sp_ser_begin -> sp_ser_root* -> sp_ser_step until 0 -> sp_ser_finish
 */
#ifndef SP_SERIALIZE_H
#define SP_SERIALIZE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "sp-buf.h"
#include "sp-cards.h"
#include "sp-error.h"
#include "sp-format.h"
#include "sp-kids.h"
#include "sp-lidmap.h"
#include "sp-queue.h"
#include "sp-reserve.h"
#include "sp-wset.h"

/* What the serializer knows of object lid in this snapshot (SpSerializer.state [lid]). */
enum {
	SP_SER_WRITTEN = 1,      /* its record is written (by a step or a barrier) */
	SP_SER_REACHED = 2,      /* a root, or referenced by an object of the snapshot (else only a barrier met it) */
	SP_SER_POISONED = 4,     /* a barrier met it while marking and it could not be written: an error once reached */
	SP_SER_ASIDE = 8,        /* an array of primitives a barrier met while marking, before anything reached it: its
				    elements as they were are kept aside, written only if marking reaches it (sp_ser_write_now) */
	SP_SER_LET_GO = 16,      /* with deltas, such an array never reached: its record is empty, and it is no object of
				    the chain any more (until the next full snapshot): a change recorded for it is dropped */
};

/*
 * The plain classes the serializer's plain turns met last (sp_ser_plain_turns),
 * with their tokens, most recent first: a run's objects are of one class, or
 * of two that interleave (a tree's nodes and the payloads they hold), and an
 * object of either is taken without the class map or the plain test.  Kept
 * from one unit of work to the next, forgotten when a snapshot starts (a
 * class is plain in a snapshot once its CLASS record is written).  A token
 * is never NULL.
 */
typedef struct SpPlainClasses {
	const void *token [2];
	struct SpClass *c [2];
} SpPlainClasses;

typedef struct SpSerializer {
	SpBuf *out;
	SpLidMap lids;
	/*
	 * The turns to come (sp_ser_turn_pop): a delta's changed objects as
	 * they are fed, in `queue`, then the LIDs handed out in this snapshot
	 * from next_new to nobjects, in order.  Every LID handed out takes a
	 * turn after those before it, so a cursor holds them: queueing each cost
	 * a store and a load a node (serializing a tree: 20 of 417 instructions).
	 */
	SpQueue queue;
	uint32_t next_new;
	uint64_t cycle;          /* unique per snapshot: tags SpClass.snap_id as current */
	SpPlainClasses plain;    /* this snapshot's plain classes met last */
	uint32_t nobjects;       /* LIDs handed out */
	uint32_t prior;          /* a delta's: LIDs 1..prior are its chain's, handed out by the snapshots before it (0: a full snapshot) */
	uint32_t nclasses;
	uint32_t nroots;
	uint64_t objects_written;
	uint64_t unreached_written; /* written by a barrier before marking was done (or where nothing marks), not (yet) reached: not part of the state */
	uint64_t unreached_aside;   /* arrays set aside by such a barrier and never reached: an empty record each */
	uint32_t marked;         /* marking: objects 1..marked have had their children given LIDs */
	uint64_t mark_next;      /* marking: first element of array marked+1 not looked at yet */
	bool mark_done;          /* marking is complete: an object without a LID is not in the snapshot (never set where nothing marks) */
	uint32_t partial_lid;    /* a long string or array whose pieces are being written, 0 = none */
	uint64_t partial_next;   /* its first element not written yet */
	bool partial_cards;      /* it is a delta's array of the chain: only its cards that differ are patched (sp-cards.h) */
	struct SpPreserved *preserved; /* long arrays whose rest a barrier copied (or copies) before a store: sp_ser_write_now */
	size_t npreserved, preserved_cap;
	struct _GHashTable *aside; /* LID -> SpPreserved of each array set aside and not met by the steps yet (SP_SER_ASIDE) */
	uint32_t *parked;        /* arrays set aside, met unreached where nothing marks: judged once the steps are otherwise done */
	size_t nparked, parked_cap;
	uint64_t preserve_serial; /* the last ticket handed out (never reset: a ticket outlives a failed snapshot) */
	bool whole_objects;      /* no pieces: each string or array in one record (stop-the-world) */
	uint32_t piece_bytes;    /* bytes of primitives or characters a piece (SP_SER_PIECE_BYTES, less for small chunk buffers) */
	uint8_t *state;          /* [lid]: SP_SER_* bits; room for every LID handed out (state_room.base, which never moves) */
	SpReserve state_room;    /* grows in place, page by page as touched: no unit copies or zeroes it; .cap bytes usable */
	struct SpPoison *poison; /* why each poisoned object could not be written */
	size_t npoison;
	bool clean;              /* sp_ser_reset ran since the last snapshot */
	SpWrittenSet *written;   /* if set, every object whose record a step completes is added (sp-wset.h) */
	SpKids kids;             /* marking: each marked object's children's LIDs, for its record (sp-kids.h) */
	struct _GHashTable *cards; /* delta chains (sp_ser_track_cards): LID -> SpCards of each long primitive array written */
	/* A delta's changed objects given lazily (sp_ser_set_due): the list, how far it is fed, and a mark a LID. */
	const uint32_t *due;
	size_t ndue, due_next;    /* the list's length and next index, or (due_scan) the LIDs' end and the next to scan */
	bool due_scan;            /* given in LID order, by scanning due_marks */
	uint8_t *due_marks;      /* [lid]: SP_SER_DUE, or SP_SER_FED once given to sp_ser_changed */
	size_t due_marks_cap;
	/* sp_ser_reset_step's progress: which structure, and how far into it. */
	unsigned reset_phase;
	size_t reset_at, reset_end;
	/* A full snapshot's class index (SP_OPT_CLASS_INDEX): where each CLASS record is in the file. */
	bool class_index;
	uint64_t *class_at;      /* [0, nclasses) */
	uint32_t class_at_cap;
	uint64_t out_handed;     /* the snapshot's bytes before out->data [0] (sp_ser_handed_on) */
} SpSerializer;

/*
 * A caller that streams the snapshot as it is written: the `bytes` of out
 * so far went on to the store, and out is emptied (or swapped for an empty
 * buffer).  The class index gives offsets in the file: they count these.
 */
static inline void
sp_ser_handed_on (SpSerializer *s, size_t bytes)
{
	s->out_handed += bytes;
}

int sp_ser_init (SpSerializer *s);
void sp_ser_free (SpSerializer *s);

/* Start a snapshot in `out` (emptied first). */
int sp_ser_begin (SpSerializer *s, SpBuf *out, const SpSnapHeader *h, SpError *err);
/*
 * Forget the last snapshot's objects (LID map, states, queue): the part of
 * starting a snapshot that costs in proportion to the last one.  sp_ser_begin
 * does it unless it ran since; the incremental mode runs it when a cycle ends,
 * so that neither an increment nor the next SendPData pays for it.  Touches
 * no object (it may run in GC-safe mode).
 */
void sp_ser_reset (SpSerializer *s);
/*
 * sp_ser_reset in steps that each zero about max_bytes (the incremental mode
 * runs them in the SP task's increments, under the pause bound, whatever the
 * size of the snapshot forgotten): 1 = more to do, 0 = done (as after
 * sp_ser_reset).  Nothing else may use the serializer until it is done.
 */
int sp_ser_reset_step (SpSerializer *s, size_t max_bytes);
/*
 * A delta (docs/FORMAT.md) instead: only what changed since the previous
 * snapshot of the chain, the one this serializer wrote or restored last.
 * Nothing is forgotten: the LIDs handed out so far are the chain's, and
 * stay the objects' (h gets prior_objects and the DELTA flag; the caller
 * sets its base, previous sequence and checksum).  Each object stored into
 * since is given by sp_ser_changed, the roots as usual; an object met
 * through their references that has no LID yet is new: it gets the next LID
 * and is written whole, as in a full snapshot.  A changed object is written
 * whole (an OBJECT record), a changed array as PATCH records.
 */
int sp_ser_begin_delta (SpSerializer *s, SpBuf *out, SpSnapHeader *h, SpError *err);
/* Object lid of the chain (at most s->prior) changed: its new value goes in the delta. */
int sp_ser_changed (SpSerializer *s, uint32_t lid, SpError *err);
/*
 * The changed objects of a delta, given at once rather than one by one
 * (incremental mode: the snapshot's instant, with the world stopped, then
 * costs nothing per object).  Each is given to sp_ser_changed when
 * sp_ser_step has written what is queued before it, or when
 * sp_ser_write_now meets it first (a store into it must not land before its
 * record is written), whichever comes first; sp_ser_close checks that all
 * were.  marks [lid] is SP_SER_DUE for each LID of the list (the caller's,
 * set already; not grown while the snapshot is written) and becomes
 * SP_SER_FED.  Both stay the caller's and must live until the snapshot ends.
 */
#define SP_SER_DUE 1
#define SP_SER_FED 2
void sp_ser_set_due (SpSerializer *s, const uint32_t *lids, size_t n, uint8_t *marks, size_t marks_cap);
/*
 * For delta chains: remember, for each long array of primitives written, a
 * hash of each of its cards (sp-cards.h), so that a delta patches only the
 * cards of a changed array that differ.  Until a full snapshot forgets them.
 */
void sp_ser_track_cards (SpSerializer *s);
/*
 * After a restart: the objects a chain restored become this serializer's, so
 * that the next snapshot can be a delta on that chain.  sp_ser_adopt_begin
 * forgets everything (as a full snapshot's start does); sp_ser_adopt then
 * takes restored object lid = 1, 2, ... in order, as written.
 */
void sp_ser_adopt_begin (SpSerializer *s);
int sp_ser_adopt (SpSerializer *s, uint32_t lid, void *obj, SpError *err);
/* Register root `root_id` (obj may be NULL). */
int sp_ser_root (SpSerializer *s, uint32_t root_id, void *obj, SpError *err);
/*
 * Write up to max_objects queued objects: 1 = more remain, 0 = queue empty,
 * SP_SER_STEP_WAITING (below), -1 = error.
 * Unless whole_objects is set, a long string or array is written in pieces (an
 * ARRAY/STRING record, then ELEMS records), one piece a step, each worth
 * SP_SER_PIECE_COST objects, so that a step's time is bounded whatever the
 * object (the pause target holds for any graph).  A piece is sized to take
 * about as long as a few objects (a few microseconds): 16 KiB of primitives
 * or characters, or SP_SER_PIECE_LEAVES values encoded one by one (references
 * and the leaves of structs, each a LID lookup or a store).  A piece is also
 * at most a quarter of the chunk buffer the snapshot streams through
 * (sp_ser_set_chunk), so that a step never outgrows it.
 */
#define SP_SER_PIECE_BYTES (16u << 10)
#define SP_SER_PIECE_LEAVES 32u
#define SP_SER_PIECE_COST  8u
/* sp_ser_step: nothing to write until a barrier's copy comes (sp_ser_preserve_attach). */
#define SP_SER_STEP_WAITING 2
int sp_ser_step (SpSerializer *s, size_t max_objects, SpError *err);
/* After SP_SER_STEP_WAITING: is a barrier's copy attached since, so that a step has work again? */
bool sp_ser_copy_came (const SpSerializer *s);
/* The snapshot streams through buffers of `chunk` bytes: pieces of long objects fit them. */
void sp_ser_set_chunk (SpSerializer *s, size_t chunk);
/*
 * Marking, the first phase of an incremental snapshot of two passes
 * (--sp-passes=2, paper section 3.2.2; one pass, the default, does not mark):
 * give every object reachable from the roots its LID (queueing it), as the
 * writing steps would, but write nothing, so that afterwards a barrier can
 * tell an object of the snapshot (it has a LID) from any other.  Marking runs
 * in increments while the program stores into the graph; it reads an object's
 * references from memory only while the object is not written, i.e. not yet
 * stored into (every store meets the barrier first, which writes it, and its
 * record's references get their LIDs then), so what it reaches is the graph at
 * the start.  A long array of references is looked at in pieces, as the
 * steps write it.  Up to max_objects objects (or pieces) a call:
 * 1 = more remain, 0 = done (mark_done is set), -1 = error (an object that
 * cannot be persisted, named as by the steps).
 */
int sp_ser_mark (SpSerializer *s, size_t max_objects, SpError *err);
/* obj's LID in this snapshot, 0 when it has none. */
uint32_t sp_ser_lid_if_known (SpSerializer *s, void *obj);
/* Has object lid's record been written? */
static inline bool
sp_ser_is_written (const SpSerializer *s, uint32_t lid)
{
	return lid && lid < s->state_room.cap && (s->state [lid] & SP_SER_WRITTEN);
}

/*
 * The barrier's part (a store into obj is about to land): write obj's record
 * now, from its current state, unless it is already written in this snapshot,
 * or finish it when it is being written in pieces; its children are queued as
 * usual.  Which objects it writes:
 *   - marking complete (mark_done): only objects with a LID (the snapshot's);
 *   - before that (marking underway, or a snapshot without marking: a
 *     delta, a one-pass cycle): any object whose class can be persisted,
 *     but a string, since it may be reachable through objects not reached
 *     yet (a string is stored into only while it is built, before anything
 *     refers to it).  One that is not ends up in the snapshot unreferenced
 *     (counted in unreached_written; a reader creates it and the GC
 *     collects it), as the paper's "false-serialized" objects.
 *     Except an array of primitives (with delta chains, one under 64 KiB,
 *     whose cards a chain would not keep): it gets its LID, and its
 *     elements are copied aside (SP_SER_ASIDE; with `ticket`, a long one
 *     outside the lock, as below), not written.  The steps write it from
 *     the copy if marking reached it, and else an empty record for its LID
 *     (counted in unreached_aside), so that a program's own buffers stored
 *     into while a cycle marks (a control loop's log of its latencies) cost
 *     it a copy and the snapshot a few bytes, not their elements each cycle.
 *     A snapshot that does not mark (a delta, a one-pass cycle) judges
 *     such an array once its steps are otherwise done (reached then by a
 *     record they wrote, or not), and with delta chains an unreached one's
 *     LID is let go (SP_SER_LET_GO).
 *     It needs no copy of references (what marking must see of an object
 *     is the references it had at the start), so objects keep the rule
 *     above.
 *     One that cannot be written (a reference to an object that cannot be
 *     persisted) is poisoned, not written: if the snapshot reaches it after
 *     all, that is the snapshot's error, as if the steps had met it; if not,
 *     sp_ser_close gives it a placeholder record (every reference null), so
 *     that every LID handed out is defined.
 * Returns 1 when it wrote the record (or set it aside), 0 when there was
 * nothing to do, -1 on error.
 *
 * Copy before write, outside the lock.  With `ticket` (not NULL), a long
 * array of primitives (SP_SER_PRESERVE_MIN_BYTES or more not written yet:
 * never moved by the collector, which keeps objects over 8,000 bytes in its
 * large-object space) is not written whole under the caller's lock: its
 * record is begun (or, being written in pieces, detached from the steps),
 * and SP_SER_WRITE_COPY asks the caller to copy the ticket's bytes of the
 * array's data, with the lock released, and to hand the copy over with
 * sp_ser_preserve_attach before the store lands.  The steps then write the
 * rest from the copy, a piece at a time.  So the storing thread pays for
 * its copy, and no other thread waits for it, except one that stores into
 * the same array meanwhile: SP_SER_WRITE_WAIT says so (wait for the attach,
 * then call again).  Without `ticket` the array is written whole.
 */
#define SP_SER_WRITE_COPY 2
#define SP_SER_WRITE_WAIT 3
#define SP_SER_PRESERVE_MIN_BYTES (64u << 10)
typedef struct SpPreserveTicket {
	uint32_t lid;
	uint64_t serial;         /* names the copy awaited (sp_ser_preserve_attach) */
	size_t offset, bytes;    /* the bytes of the array's data to copy */
} SpPreserveTicket;
int sp_ser_write_now (SpSerializer *s, void *obj, SpPreserveTicket *ticket, SpError *err);
/*
 * The copy a SP_SER_WRITE_COPY asked for (malloc'd, owned by the serializer
 * from here; NULL: it could not be allocated, an error), of obj's bytes the
 * ticket names, taken before the store.  0, or -1 on error (the snapshot
 * fails).  A copy for a snapshot that ended meanwhile is freed.
 */
int sp_ser_preserve_attach (SpSerializer *s, void *obj, const SpPreserveTicket *ticket, uint8_t *copy, SpError *err);
/*
 * Is obj's record known to be complete in this snapshot, from obj's identity
 * slot alone?  Lock-free (the barrier asks it without the cycle's lock, while
 * the lock holder hands out LIDs and completes records); false when obj has
 * no slot or it cannot tell.  A true answer is never wrong: see
 * sp_ser_complete for the protocol.
 */
bool sp_ser_written_hint (const SpSerializer *s, void *obj);
/* Write the trailer and checksum; the snapshot in `out` is then complete. */
int sp_ser_finish (SpSerializer *s, SpError *err);
/*
 * sp_ser_finish in two parts: the trailer (its checksum left 0), then the
 * checksum of a closed snapshot held whole in one buffer.  A snapshot
 * streamed in chunks is closed only: sp-stream.h computes its checksum as
 * the chunks go by.
 */
int sp_ser_close (SpSerializer *s, SpError *err);
void sp_ser_seal (SpBuf *closed);

#endif
