/*
 * sp-snapshot.h: reading a snapshot back: check, validate, index or restore.
 *
 * Input is untrusted (a damaged disk, a hostile file).  sp_snapshot_check looks at
 * the header, trailer and checksum only.  One validating walk over the records
 * then checks every invariant listed in sp-format.h and hands each record to
 * one of two readers:
 *
 *   sp_snapshot_parse   indexes the records (tools, tests, the folder: random
 *                       access by LID, through sp_snapshot_fill for a class
 *                       the program has unchanged);
 *   sp_snapshot_decode  restores as it goes: each object is created and its
 *                       primitives stored while its record is in cache
 *                       (construction phase), then a second pass over the
 *                       now-validated bytes stores the references (fix-up
 *                       phase, paper section 4).  No per-object index: a warm
 *                       restart touches the snapshot, the new objects and one
 *                       byte a LID.
 *
 * Memory used is bounded by the input's size.
 */
#ifndef SP_SNAPSHOT_H
#define SP_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "sp-buf.h"
#include "sp-error.h"
#include "sp-format.h"
#include "sp-layout.h"

#define SP_LEAF_DROPPED 2

typedef struct SpSnapClass {
	uint8_t kind;            /* SP_CLASS_OBJECT or SP_CLASS_ARRAY */
	char *assembly;
	char *name;
	uint32_t nfields;
	SpField *fields;         /* names and kinds (offsets are 0: the live class map has them) */
	uint32_t wire_size;      /* bytes of one instance/element if it has no REF leaf, else 0 */
	uint32_t prim_bytes;     /* the block of primitive values of one instance/element */
	uint32_t nsteps;         /* the values as validation steps: the primitive block, then each reference */
	uint32_t *steps;         /* a step > 0 skips that many bytes, 0 reads a reference */
	uint32_t wire_refs;      /* the references of one instance/element (its REF leaves) */
	void *resolved;          /* for the restorer: the live SpClass */
	void *restorer_data;     /* the restorer's own (metadata/sp-restore.c: the vtable objects are allocated with) */
	SpPrimCopy *prim_copies; /* decode, a class the program has unchanged: its primitives' copies (sp-layout.h) ... */
	uint32_t prim_end [SP_COPY_GROUPS];
	SpPrimFill *prim_fills;  /* ... and, for a new instance of an object class, the same as fills (0: none) */
	uint32_t nfills;
	uint8_t *prim_kinds;     /* decode, a class that changed: kind of each primitive leaf in wire order ... */
	uint32_t *prim_offsets;  /* ... and its offset in the live object/element */
	uint32_t nprims;
	const SpField **ref_fields; /* decode: the live reference leaves, in wire order (fix-up skips the rest; NULL: dropped) */
	uint32_t nrefs;
	void **ref_early;        /* decode: per reference leaf, the class of an object made where a reference meets it first (SpDecodeOps.early_class) */
	bool links;              /* decode: the references of its new objects (elements) are stored as the walk meets them (sp-decode.c) */
	uint8_t *prim_live_kinds; /* decode, a class that changed (sp-evolve.h): each primitive's live kind, 0 = dropped; NULL: exact */
	char *evolution;         /* what changed against the live class, for the log; NULL: nothing */
	uint8_t *leaf_changed;   /* [nfields], with evolution: 1 for a leaf renamed or widened, SP_LEAF_DROPPED for one no live leaf takes */
	bool keep_old;           /* the restorer wants those leaves' old values (SpDecodeOps.old_values) */
	bool keep_unknown;       /* set by the restorer before the plan: leaves the live class lacks are kept (sp-evolve.h) */
	uint32_t ndefaults;      /* decode, a class that changed: live leaves the snapshot lacks that declare a Default */
	const SpField **defaults;
} SpSnapClass;

typedef struct SpSnapObject {
	uint8_t kind;            /* SP_CLASS_*, 0 until defined */
	uint32_t class_id;       /* OBJECT, ARRAY */
	uint64_t length;         /* STRING, ARRAY */
	size_t body;             /* offset of the field values, or of the first piece */
	uint32_t next_chunk;     /* index+1 into chunks of the first ELEMS record, 0 = none */
	uint32_t last_chunk;     /* while parsing: to append in order */
} SpSnapObject;

typedef struct SpSnapChunk {
	size_t piece;            /* offset of the piece (count first) */
	uint64_t start;
	uint32_t next;           /* index+1 of the next chunk of the same object, 0 = last */
} SpSnapChunk;

/* A delta's record about an object of the snapshot it applies to. */
typedef struct SpSnapChange {
	uint32_t lid;
	uint8_t kind;            /* SP_CLASS_OBJECT: an OBJECT record (its whole value); SP_CLASS_ARRAY: a PATCH */
	uint32_t class_id;
	uint64_t start, count;   /* PATCH: the elements */
	size_t body;             /* OBJECT: offset of the values; PATCH: offset of the piece (count first) */
} SpSnapChange;

typedef struct SpSnapRoot {
	uint32_t id;
	uint32_t lid;            /* 0: the root was null */
} SpSnapRoot;

typedef struct SpSnapshot {
	const uint8_t *data;
	size_t size;
	SpSnapHeader header;
	SpSnapTrailer trailer;
	SpSnapClass *classes;    /* [1..nclasses] */
	SpSnapObject *objects;   /* by sp_snapshot_object: the objects this file defines; NULL after sp_snapshot_decode */
	SpSnapChange *changes;   /* a delta's records of prior objects, in file order */
	uint32_t nchanges;
	uint32_t change_cap;
	SpSnapRoot *roots;       /* [0..nroots) */
	SpSnapChunk *chunks;
	uint32_t nchunks;
	uint32_t chunk_cap;
	bool classes_ahead;      /* every class was read before the first object, from the class index (SP_OPT_CLASS_INDEX) */
} SpSnapshot;

/* An object this file defines (a delta: one of its new lids, above header.prior_objects). */
static inline SpSnapObject *
sp_snapshot_object (SpSnapshot *snap, uint32_t lid)
{
	return &snap->objects [lid - snap->header.prior_objects];
}

static inline const SpSnapObject *
sp_snapshot_object_const (const SpSnapshot *snap, uint32_t lid)
{
	return &snap->objects [lid - snap->header.prior_objects];
}

/* A CLASS record (docs/FORMAT.md, "The class cache"): the serializer's, and the folder's. */
void sp_format_put_class (SpBuf *o, uint32_t id, uint8_t kind, const char *assembly, const char *name, uint32_t nfields,
			  const SpField *fields);

/*
 * The class index (SP_OPT_CLASS_INDEX), the record before the trailer:
 * offsets [0..n), each CLASS record's from the start of the file, in id
 * order (increasing).  The serializer's and the folder's.
 */
void sp_format_put_class_index (SpBuf *o, const uint64_t *offsets, uint32_t n);
/*
 * The class index of a checked snapshot with SP_OPT_CLASS_INDEX: the
 * trailer's nclasses offsets into `offsets`, each checked to be where a CLASS
 * record with that id starts (the walk checks that the records are those);
 * *index_at: where the index's record starts.  -1 with err when it is missing
 * or inconsistent (the snapshot is then invalid).
 */
int sp_format_read_class_index (const uint8_t *data, size_t size, const SpSnapHeader *h, const SpSnapTrailer *t,
				uint64_t *offsets, size_t *index_at, SpError *err);

/* Header, trailer and checksum; fills header/trailer (either may be NULL). */
int sp_snapshot_check (const uint8_t *data, size_t size, SpSnapHeader *header, SpSnapTrailer *trailer, SpError *err);
/*
 * Do a checked file's counts fit its size (every record takes a few bytes)?
 * Before anything is allocated by them: a reader's memory stays within a
 * multiple of its input.  (sp_snapshot_parse and the decoders check it.)
 */
int sp_snapshot_counts_fit (const SpSnapHeader *h, const SpSnapTrailer *t, size_t size, SpError *err);
/* Full validation and indexing; `data` must outlive `snap`. */
int sp_snapshot_parse (const uint8_t *data, size_t size, SpSnapshot *snap, SpError *err);
void sp_snapshot_free (SpSnapshot *snap);

typedef int (*SpStoreRefFn) (void *ctx, void *slot, const SpField *field, uint32_t lid, SpError *err);

/*
 * What sp_snapshot_decode asks of the restorer (the client).  The client may
 * move objects it made (a moving GC) between calls: the decoder keeps no
 * addresses, it asks `base` again.
 */
typedef struct SpDecodeOps {
	/* Once, after the checks: room for objects 1..t->nobjects. */
	int (*begin) (void *ctx, const SpSnapTrailer *t, SpError *err);
	/*
	 * Each CLASS record, in id order: set c->resolved to the live class map
	 * (the decoder then checks its kind and plans its leaves: sp-evolve.h).
	 */
	int (*resolve) (void *ctx, SpSnapClass *c, SpError *err);
	/* Optional: class c restores across a change of its leaves (c->evolution says which). */
	void (*evolved) (void *ctx, const SpSnapClass *c);
	/*
	 * Optional: the record of object lid, of a changed class the restorer set
	 * keep_old on, whose old leaves it may read (sp_evolve_old_leaves) before
	 * the call returns.
	 */
	void (*old_values) (void *ctx, uint32_t lid, const SpSnapClass *c, const uint8_t *values);
	/*
	 * Object `lid`, zeroed, of class c (NULL: a string of `length` UTF-16
	 * units; for arrays `length` elements); returns base(lid), or NULL with
	 * err set.  When `link` made the object already, create returns it if
	 * it is of c's live class (an object class), else makes it anew and
	 * early_missed says so from then on.
	 */
	void *(*create) (void *ctx, uint32_t lid, const SpSnapClass *c, uint64_t length, SpError *err);
	/* Where the values of created object lid go: the object, its first element, its first unit. */
	void *(*base) (void *ctx, uint32_t lid, uint8_t kind);
	/*
	 * Fix-up of one reference: `slot` is where the live field `field` of the
	 * object is, `lid` the object it refers to (0: null); the client checks
	 * the target against the field's declared type and stores it.
	 */
	SpStoreRefFn store_ref;
	/*
	 * Deltas (sp_chain_decode; NULL: this restorer takes full snapshots only):
	 * object lid, which an earlier file of the chain created, is given again
	 * with class c (an OBJECT record: end is 0) or patched up to element `end`
	 * (a PATCH: c is an array class).  Returns base(lid), or NULL with err set
	 * when that object is not of c's live class or is shorter than `end`: the
	 * chain then contradicts itself and counts as damaged.
	 */
	void *(*reuse) (void *ctx, uint32_t lid, const SpSnapClass *c, uint64_t end, SpError *err);
	/*
	 * Links (optional, all three or none; sp-decode.c says when the decoder
	 * uses them).  early_class: the class the restorer makes an object of
	 * when a reference stored in `field` meets it before its record, or
	 * NULL when there is none it may make so (a string or an array may
	 * come, the class has a finalizer).  `known`: the snapshot's classes,
	 * [0, nknown), every one resolved, when the file has its class index:
	 * the early class may then be the one class of the snapshot the field
	 * can hold, whatever its declared type; NULL: only the classes before
	 * are known, and the restorer guesses from the declared class.
	 */
	void *(*early_class) (void *ctx, const SpField *field, const SpSnapClass *known, uint32_t nknown);
	/*
	 * Store a reference of new object `owner` (`kind`: an object, or an
	 * array whose element's leaf it is) to object `lid` as the walk meets
	 * it: at `offset` from base(owner, kind), the slot of leaf `field`.
	 * The object is made first, of class `early`, when it does not exist
	 * yet.  Returns 0 when stored; 1 when not (no early class, or the
	 * target does not fit the field's declared type: the fix-up decides);
	 * -1 with err set when it could not be made.
	 */
	int (*link) (void *ctx, uint32_t owner, uint8_t kind, size_t offset, const SpField *field, void *early, uint32_t lid,
		     SpError *err);
	/* Whether create met an object made early of another class than its record's. */
	bool (*early_missed) (void *ctx);
} SpDecodeOps;

/*
 * A build with one restorer may bind the decoder's per-object calls to it at
 * compile time, as sp-client.h's SP_CLIENT_HOT does for the serializer: it
 * defines SP_RESTORER_CREATE, SP_RESTORER_BASE, SP_RESTORER_STORE_REF and
 * SP_RESTORER_LINK to its create, base, store_ref and link, declared before
 * sp-decode.c, and the decoder calls them directly, where they inline into
 * its loops (the runtime's unity build does: sp-runtime.c).  Its ops must
 * then name the same four functions; the decoders refuse other ops.  The other calls
 * (once a class, once a decode, a delta's) always go through ops.
 */

/* sp_snapshot_decode's failures: the input is damaged (an older snapshot may do), or it does not fit the program. */
#define SP_DECODE_DAMAGED (-1)
#define SP_DECODE_UNFIT   (-2)

/*
 * Validate and restore `data`: `snap` gets the header, trailer, classes and
 * roots (objects stays NULL); free it with sp_snapshot_free whatever the
 * result.  Returns 0, SP_DECODE_DAMAGED (the structure is invalid) or
 * SP_DECODE_UNFIT (a class is missing or changed, the client could not create
 * an object, a reference does not fit its slot).  On failure, objects already
 * created are the client's to drop.
 */
int sp_snapshot_decode (const uint8_t *data, size_t size, const SpDecodeOps *ops, void *ctx,
			SpSnapshot *snap, SpError *err);

/*
 * One file of a chain, as a store gave it.  `verified`: whoever loaded it
 * checked these very bytes with sp_snapshot_check already (the store does,
 * to choose a chain that loads), so its checksum is not computed again; its
 * header is.
 */
typedef struct SpChainPart {
	const uint8_t *data;
	size_t size;
	bool verified;
} SpChainPart;

/*
 * Restore a chain: parts [0] a full snapshot, each next part a delta that
 * applies to the one before it (sp_chain_link_check).  Every part's checksum
 * (unless it is `verified`) and link is checked before anything is created;
 * then each part is built and fixed up in turn, on what the parts before it
 * built.  `last` gets the
 * last part's header, trailer, classes and roots (free it whatever the
 * result).  Returns 0 or, as sp_snapshot_decode, SP_DECODE_DAMAGED or
 * SP_DECODE_UNFIT, with *failed the index of the part at fault.  Objects the
 * chain created are then the client's to drop: a caller that falls back to a
 * shorter chain restores it from the start (never a mix of the two).
 */
int sp_chain_decode (const SpChainPart *parts, size_t n, const SpDecodeOps *ops, void *ctx,
		     SpSnapshot *last, size_t *failed, SpError *err);

/* Does `delta` apply to `prev` (whose chain starts at `base`)?  Says why not. */
int sp_chain_link_check (const SpSnapHeader *base, const SpSnapHeader *prev, const SpSnapTrailer *prev_trailer,
			 const SpSnapHeader *delta, SpError *err);

/*
 * The pieces of string or array lid of a parsed snapshot, in order (the one in
 * its record, then its ELEMS records): fn gets a reader just past the piece's
 * count (a string piece's encoding byte comes next), the index of its first
 * element and its count.
 */
typedef void (*SpPieceFn) (void *ctx, SpReader *r, uint64_t start, uint64_t count);
void sp_snapshot_pieces (const SpSnapshot *snap, uint32_t lid, SpPieceFn fn, void *ctx);

/* Does the live class map entry have exactly the snapshot class's leaves?  Names the first difference. */
int sp_snapshot_class_matches (const SpSnapClass *snap_class, const SpClass *live, SpError *err);

/*
 * Fix-up of one OBJECT or ARRAY whose class the program has unchanged
 * (sp_snapshot_class_matches): primitive leaves are stored into memory at
 * `base` (the object, or the first array element) at the offsets of `live`;
 * each reference leaf is handed to store_ref with the address of its slot and
 * the LID it refers to (0: null), which decides and performs the store.
 */
int sp_snapshot_fill (const SpSnapshot *snap, uint32_t lid, void *base, const SpClass *live,
		      SpStoreRefFn store_ref, void *ctx, SpError *err);

#endif
