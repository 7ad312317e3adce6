/*
 * sp-client.h: what the core needs from the object model, and nothing more.
 *
 * Like SGen's sgen-client.h: the runtime implements these in
 * metadata/sp-identity.c (compiled into the same unity translation unit as
 * the core, so calls inline), the unit
 * tests implement them over a fake object model (tests/unit/fake-objects.c).
 *
 * Object pointers passed here are only held for the duration of one call or
 * in local variables of the caller (which a conservative stack scan pins); any
 * object the core needs later is named by its LID and fetched again through
 * sp_client_lid_object, whose table the GC keeps current when objects move.
 */
#ifndef SP_CLIENT_H
#define SP_CLIENT_H

#include <stdbool.h>
#include <stdint.h>

#include "sp-error.h"
#include "sp-layout.h"

/*
 * SP_CLIENT_HOT marks the client's definitions of the calls the core makes
 * for every object or reference it meets (class_of, lid_slot, lid_bind,
 * lid_object, gc_epoch, changed_unseen).  The runtime's unity build
 * (metadata/sp-runtime.c) defines it as an always-inline hint, so that their
 * fast paths become part of the serializer's loops rather than calls (at
 * -O2 GCC inlined none of them); their external definitions are still
 * emitted for callers outside that unit.  Elsewhere they are plain functions.
 */
#ifndef SP_CLIENT_HOT
#define SP_CLIENT_HOT
#endif

/*
 * The persistent class map entry of obj's class: an [SPersistent] class, a
 * string or a persistable array.  Otherwise NULL, with err saying which type
 * it is and why it cannot be persisted.
 */
SpClass *sp_client_class_of (void *obj, SpError *err);
/*
 * A value that two objects share exactly when they are of one class (Mono:
 * the vtable), found without the class map: the serializer's prefetch asks
 * it for every object, and each reference leaf keeps the last one it met to
 * know a child's class (SpField.ic_token).
 */
const void *sp_client_class_token (const void *obj);

/* Strings: length in UTF-16 code units, and the units. */
uint32_t sp_client_string_length (void *str);
const uint16_t *sp_client_string_chars (void *str);

/* Arrays (SP_CLASS_ARRAY): element count and the first element. */
uint64_t sp_client_array_length (void *arr);
void *sp_client_array_data (void *arr);

/*
 * Identity: a hash of obj that stays the same when the GC moves it, and the
 * table of objects by LID for the snapshot being written or read.  The hash
 * should be address-like (objects allocated together get nearby values): the
 * LID map uses that for cache locality.  Any hash is correct, only slower.
 */
uint32_t sp_client_identity_hash (void *obj);
/*
 * Where obj keeps its LID while a snapshot is written: the offset of 4 bytes
 * of it the client reserved for the serializer (its class map's lid_slot,
 * found without building the map), or 0 when it has none and the LID map
 * keeps its identity.  Cheap: called for every reference the snapshot meets.
 * Safe without the cycle's lock (the barrier's check, sp_ser_written_hint).
 */
uint32_t sp_client_lid_slot (void *obj);
/* Record that `lid` (1, 2, ... in order) names obj; -1 when memory runs out. */
int sp_client_lid_bind (uint32_t lid, void *obj, SpError *err);
/*
 * The object named by lid, at its current address.  Also called without the
 * cycle's lock, concurrently with binds (sp_ser_written_hint), for a lid
 * bound in the running cycle: it must then read no memory a bind frees.
 */
void *sp_client_lid_object (uint32_t lid);
/* Start loading what sp_client_lid_object (lid) reads, without waiting for it (a hint: no effect on a LID not bound). */
void sp_client_lid_prefetch (uint32_t lid);
/* Forget every binding (the objects may then be collected). */
void sp_client_lid_reset (void);
/*
 * A number that changes whenever the GC may have moved objects since it was
 * last read: it must change before any object moves, and while the reading
 * thread cannot run (Mono: counted when the world is stopped).
 */
uint32_t sp_client_gc_epoch (void);

/*
 * Incremental cycles: may a store that no barrier saw (sp-storelog.h) have
 * changed bytes [from, to) of obj since the snapshot's instant?  The core
 * asks after it has read those bytes for obj's record (from and to NULL: the
 * whole object).  Stop-the-world snapshots never ask.
 */
bool sp_client_changed_unseen (void *obj, const void *from, const void *to);

/*
 * The values obj (of class c, c->unknown set) carries for its class's
 * unknown leaves: *prims their primitives (c->unknown->prim_bytes bytes, wire
 * order), *refs their references' objects (c->unknown->nrefs, NULL for
 * null), both valid until the GC may move objects (sp_client_gc_epoch).
 * false: obj has none (made by the program, not restored): it writes zeros
 * and nulls.  Called by the serializer and the barriers, with or without the
 * cycle's lock: it reads what the restore left and changes nothing.
 */
bool sp_client_unknown_values (void *obj, const SpClass *c, const uint8_t **prims, void *const **refs);

#endif
