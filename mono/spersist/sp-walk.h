/*
 * sp-walk.h: the validating walk over a snapshot's records, shared by the
 * indexer (sp_snapshot_parse, sp-snapshot.c) and the restorer
 * (sp_snapshot_decode, sp-decode.c).  Internal to the core.
 *
 * The walk checks every invariant of sp-format.h before it hands a record to
 * its sink: a sink sees only classes with valid leaves, LIDs in range and
 * defined once, values whose references are in range, pieces that continue
 * their object in order.  After a successful walk, the whole input is valid
 * and may be read again with the unchecked helpers at the end of this file.
 */
#ifndef SP_WALK_H
#define SP_WALK_H

#include "sp-buf.h"
#include "sp-evolve.h"
#include "sp-snapshot.h"

/*
 * A build may name the decoder's OBJECT sink (sp-decode.c's
 * sp_decode_object) as SP_WALK_DECODER_OBJECT, and its body that takes the
 * record's references as the walk decoded them (sp_decode_object_refs) as
 * SP_WALK_DECODER_OBJECT_REFS, both declared before sp-snapshot.c: the walk
 * then calls the latter directly when its sink's object is the former, and
 * the compiler inlines it into the walk's loop (the runtime's unity build
 * does: sp-runtime.c), as SP_RESTORER_* binds the decoder's calls to the
 * restorer (sp-snapshot.h).  The references come as SP_WALK_REFS LIDs or
 * fewer; NULL when the record has more, or was read by the checked path.
 */
#define SP_WALK_REFS 8
typedef struct SpWalkSink {
	/* Once, after the checks and the walk's own allocations (the counts are bounded by then). */
	int (*begin) (void *ctx, SpSnapshot *snap, SpError *err);
	/*
	 * After a CLASS record (its fields, prim_bytes, wire_size and steps are
	 * set); with a class index, all of them before the first object.
	 */
	int (*klass) (void *ctx, SpSnapClass *c, SpError *err);
	/* Optional: with a class index (snap->classes_ahead), once every class is read, before any other record. */
	int (*classes) (void *ctx, SpSnapshot *snap, SpError *err);
	/* An OBJECT record; `values` is its validated value block. */
	int (*object) (void *ctx, uint32_t lid, uint32_t class_id, const uint8_t *values, SpError *err);
	/* A STRING (class_id 0) or ARRAY record, before its inline piece; `piece` is the offset of that piece. */
	int (*sized) (void *ctx, uint8_t kind, uint32_t lid, uint32_t class_id, uint64_t length, size_t piece, SpError *err);
	/*
	 * A validated piece of a STRING or ARRAY: `count` elements from `start`;
	 * `elems` points at the first (for strings, after the encoding byte `enc`);
	 * `piece` is the offset of the piece's count.
	 */
	int (*piece) (void *ctx, uint8_t kind, uint32_t lid, uint32_t class_id, uint64_t start, uint64_t count,
		      uint8_t enc, const uint8_t *elems, size_t piece, SpError *err);
	/*
	 * A delta's PATCH record: `count` elements from `start` of array lid, which
	 * an earlier snapshot of the chain defined (whether it is an array of that
	 * class, that long, only the chain knows: the sink checks), values as a piece's.
	 */
	int (*patch) (void *ctx, uint32_t lid, uint32_t class_id, uint64_t start, uint64_t count,
		      const uint8_t *elems, size_t piece, SpError *err);
} SpWalkSink;

/* A string or array whose first piece did not cover it: its ELEMS records follow. */
typedef struct SpOpenObject {
	uint32_t lid;
	uint32_t class_id;
	uint64_t length;
	uint64_t filled;
} SpOpenObject;

typedef struct SpWalk {
	SpSnapshot *snap;        /* header, trailer set; classes and roots filled by the walk */
	const SpWalkSink *sink;
	void *ctx;
	SpReader r;
	uint32_t classes_seen;
	uint32_t roots_seen;
	uint32_t objects_seen;   /* new objects defined (in a delta, beyond prior) */
	uint32_t prior;          /* a delta's prior_objects: lids 1..prior are the chain's before it; 0 in a full snapshot */
	uint8_t *kinds;          /* [lid - prior], for the new lids: SP_CLASS_* once defined, 0 before */
	uint32_t *open_of;       /* [lid - prior], allocated with the first open object: 1 + index into open */
	SpOpenObject *open;
	uint32_t nopen;
	uint32_t open_cap;
	uint32_t *redefined;     /* a delta's OBJECT records of prior lids (each at most once) */
	uint32_t nredefined;
	uint32_t redefined_cap;
	uint64_t *class_at;      /* a class index's (snap->classes_ahead): [0, n) each CLASS record's offset, [n, 2n) its end */
	size_t index_at;         /* ... and where the index starts */
	bool index_met;          /* the walk met it there, a record of its own */
	SpError *err;
} SpWalk;

/*
 * Check header, trailer and checksum (crc_known: the caller verified the
 * checksum already, it is not computed again), allocate what the counts need
 * (bounded by the size first), walk every record into `sink`, and check
 * completeness.  `snap` is filled as far as it got; free it and the walk with
 * sp_walk_free.
 */
int sp_walk_run (SpWalk *w, const uint8_t *data, size_t size, bool crc_known, SpSnapshot *snap,
		 const SpWalkSink *sink, void *ctx, SpError *err);
void sp_walk_free (SpWalk *w);

/* sp_snapshot_check, the checksum taken as verified when crc_known (the caller computed it: sp_chain_decode's verified parts). */
int sp_snapshot_check_known (const uint8_t *data, size_t size, bool crc_known, SpSnapHeader *header, SpSnapTrailer *trailer,
			     SpError *err);

/* No class: what a run of OBJECT records has met before its first (class ids are 1 to the class count). */
#define SP_NO_CLASS UINT32_MAX

/* The class of an ELEMS record's object (after a successful walk). */
static inline uint32_t
sp_walk_open_class (const SpWalk *w, uint32_t lid)
{
	return w->open [w->open_of [lid - w->prior] - 1].class_id;
}

/* The kind of a lid this snapshot defines (after a successful walk): 0 for a delta's prior lids. */
static inline uint8_t
sp_walk_kind (const SpWalk *w, uint32_t lid)
{
	return lid > w->prior ? w->kinds [lid - w->prior] : 0;
}

/* ---- reading validated bytes (no checks) -------------------------------- */

static inline uint64_t
sp_trusted_varint (const uint8_t **pp)
{
	const uint8_t *p = *pp;
	uint32_t v32;
	unsigned n = sp_varint_short (p, &v32);
	if (n) {
		*pp = p + n;
		return v32;
	}
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*pp = p;
	return v;
}

/* Store the primitive leaves of one instance/element (wire order) at their live offsets: a class the program has unchanged. */
static inline void
sp_trusted_primitives (const SpSnapClass *c, const uint8_t *src, uint8_t *dst)
{
	sp_prims_from_wire (c->prim_copies, c->prim_end, src, dst);
}

/*
 * The references of one instance/element (they follow its primitive block),
 * each handed to store_ref with its slot; stops at the first failure (*rc).
 * Returns the position after them.
 */
static inline const uint8_t *
sp_trusted_references (const SpClass *live, const uint8_t *p, uint8_t *dst,
		       SpStoreRefFn store_ref, void *ctx, int *rc, SpError *err)
{
	for (uint32_t i = 0; i < live->nfields; i++) {
		const SpField *f = &live->fields [i];
		if (f->kind != SP_KIND_REF)
			continue;
		uint32_t lid = (uint32_t)sp_trusted_varint (&p);    /* validated: at most nobjects */
		if ((*rc = store_ref (ctx, dst + f->offset, f, lid, err)) != 0)
			break;
	}
	return p;
}

/* Whether the reference slot at p holds an object. */
static inline bool
sp_slot_is_set (const uint8_t *p)
{
	void *v;
	memcpy (&v, p, sizeof v);
	return v != NULL;
}

/*
 * sp_trusted_references by the class's plan (sp_snapshot_plan): each handed
 * to store_ref with its live slot (by the class's plan: a leaf the
 * program no longer has is skipped); stops at the first failure (*rc, which
 * the caller set to 0).
 * In a `zeroed` object (new, its slots null) a null reference needs no store
 * and is skipped; with `linked` too, a slot already set (a link stored it,
 * sp-decode.c) is left as it is.  Returns the position after them.
 */
static inline const uint8_t *
sp_planned_references (const SpSnapClass *c, const uint8_t *p, uint8_t *dst, bool zeroed, bool linked,
		       SpStoreRefFn store_ref, void *ctx, int *rc, SpError *err)
{
	/* In locals: the stores through slots may alias c for all the compiler knows, and would make it load them again. */
	const SpField **fields = c->ref_fields;
	uint32_t n = c->nrefs;
	for (uint32_t i = 0; i < n; i++) {
		const SpField *f = fields [i];
		uint32_t lid = (uint32_t)sp_trusted_varint (&p);    /* validated: at most nobjects */
		if (__builtin_expect (f != NULL, 1) && (lid || !zeroed) && !(linked && sp_slot_is_set (dst + f->offset))) {
			int failed = store_ref (ctx, dst + f->offset, f, lid, err);
			if (failed) {   /* *rc is written on failure only: a store to the stack a reference less */
				*rc = failed;
				break;
			}
		}
	}
	return p;
}

/* Decode `count` string units (encoding `enc`) into host UTF-16. */
static inline void
sp_trusted_units (uint16_t *dst, uint8_t enc, const uint8_t *src, uint64_t count)
{
	if (enc == SP_STR_LATIN1) {
		for (uint64_t i = 0; i < count; i++)
			dst [i] = src [i];
	} else {
		for (uint64_t i = 0; i < count; i++)
			dst [i] = (uint16_t)sp_get_le (src + 2 * i, 2);
	}
}

/* The primitive copy plan of a class against its live map, when the leaves are the same (sp_snapshot_plan). */
int sp_snapshot_plan_primitives (SpSnapClass *c, const SpClass *live, SpError *err);

#endif
