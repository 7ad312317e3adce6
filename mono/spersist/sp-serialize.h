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

#include <stddef.h>
#include <stdint.h>

#include "sp-buf.h"
#include "sp-error.h"
#include "sp-format.h"
#include "sp-lidmap.h"
#include "sp-queue.h"

typedef struct SpSerializer {
	SpBuf *out;
	SpLidMap lids;
	SpQueue queue;
	uint64_t cycle;          /* unique per snapshot: tags SpClass.snap_id as current */
	uint32_t nobjects;       /* LIDs handed out */
	uint32_t nclasses;
	uint32_t nroots;
	uint64_t objects_written;
	uint32_t marked;         /* marking: objects 1..marked have had their children given LIDs */
	uint32_t partial_lid;    /* a long string or array whose pieces are being written, 0 = none */
	uint64_t partial_next;   /* its first element not written yet */
	uint8_t *written;        /* [lid]: 1 once the object's record is written (by a step or a barrier) */
	size_t written_cap;
} SpSerializer;

int sp_ser_init (SpSerializer *s);
void sp_ser_free (SpSerializer *s);

/* Start a snapshot in `out` (emptied first). */
int sp_ser_begin (SpSerializer *s, SpBuf *out, const SpSnapHeader *h, SpError *err);
/* Register root `root_id` (obj may be NULL). */
int sp_ser_root (SpSerializer *s, uint32_t root_id, void *obj, SpError *err);
/*
 * Write up to max_objects queued objects: 1 = more remain, 0 = queue empty, -1 = error.
 * A long string or array is written in pieces (an ARRAY/STRING record, then
 * ELEMS records), one piece a step, each worth SP_SER_PIECE_COST objects, so
 * that a step's time is bounded whatever the object (the pause target holds
 * for any graph).
 */
#define SP_SER_PIECE_BYTES (64u << 10)  /* data of a piece of primitives or characters, at most */
#define SP_SER_PIECE_ELEMS 1024u        /* elements of a piece encoded one by one (references, structs), at most */
#define SP_SER_PIECE_COST  8u
int sp_ser_step (SpSerializer *s, size_t max_objects, SpError *err);
/*
 * Marking, the first phase of an incremental snapshot: give every object
 * reachable from the roots its LID (queueing it), as the writing steps would,
 * but write nothing.  Once it has returned 0, the objects with a LID are
 * exactly those reachable when it ran, so a barrier can tell an object of the
 * snapshot from any other (sp_ser_lid_if_known).  Up to max_objects objects
 * a call: 1 = more remain, 0 = done, -1 = error (an object that cannot be
 * persisted, named as by the steps).
 */
int sp_ser_mark (SpSerializer *s, size_t max_objects, SpError *err);
/* obj's LID in this snapshot, 0 when it has none. */
uint32_t sp_ser_lid_if_known (SpSerializer *s, void *obj);
/* Has object lid's record been written? */
static inline bool
sp_ser_is_written (const SpSerializer *s, uint32_t lid)
{
	return lid < s->written_cap && s->written [lid];
}

/* Must a store into object lid wait for sp_ser_write_now: not written yet, or written only in part? */
static inline bool
sp_ser_needs_write (const SpSerializer *s, uint32_t lid)
{
	return lid && (!sp_ser_is_written (s, lid) || lid == s->partial_lid);
}

/*
 * The barrier's part (a store into obj is about to land): write obj's record
 * now, from its current state, unless it is already written in this snapshot;
 * its children are queued as usual.  Returns 1 when it wrote the record, 0 when
 * there was nothing to do, -1 on error (obj's class cannot be persisted...).
 */
int sp_ser_write_now (SpSerializer *s, void *obj, SpError *err);
/* Write the trailer and checksum; the snapshot in `out` is then complete. */
int sp_ser_finish (SpSerializer *s, SpError *err);

#endif
