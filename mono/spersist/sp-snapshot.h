/*
 * sp-snapshot.h: reading a snapshot back: check, parse and validate, decode.
 *
 * Input is untrusted (a damaged disk, a hostile file).  sp_snapshot_check looks at
 * the header, trailer and checksum only; sp_snapshot_parse then validates every
 * invariant listed in sp-format.h and indexes the records, so that the restore
 * (construction phase, then fix-up phase, paper section 4) can run without
 * further checks of the structure.  Memory used is bounded by the input's size.
 */
#ifndef SP_SNAPSHOT_H
#define SP_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

#include "sp-error.h"
#include "sp-format.h"
#include "sp-layout.h"

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
	void *resolved;          /* for the restorer: the live SpClass */
} SpSnapClass;

typedef struct SpSnapObject {
	uint8_t kind;            /* SP_CLASS_*, 0 until defined */
	uint32_t class_id;       /* OBJECT, ARRAY */
	uint64_t length;         /* STRING, ARRAY */
	size_t body;             /* offset of the field values, or of the first piece */
	uint32_t next_chunk;     /* index+1 into chunks of the first ELEMS record, 0 = none */
	uint32_t last_chunk;     /* while parsing: to append in order */
	uint64_t filled;         /* while parsing: elements covered so far */
} SpSnapObject;

typedef struct SpSnapChunk {
	size_t piece;            /* offset of the piece (count first) */
	uint64_t start;
	uint32_t next;           /* index+1 of the next chunk of the same object, 0 = last */
} SpSnapChunk;

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
	SpSnapObject *objects;   /* [1..nobjects] */
	SpSnapRoot *roots;       /* [0..nroots) */
	SpSnapChunk *chunks;
	uint32_t nchunks;
	uint32_t chunk_cap;
} SpSnapshot;

/* Header, trailer and checksum; fills header/trailer (either may be NULL). */
int sp_snapshot_check (const uint8_t *data, size_t size, SpSnapHeader *header, SpSnapTrailer *trailer, SpError *err);
/* Full validation and indexing; `data` must outlive `snap`. */
int sp_snapshot_parse (const uint8_t *data, size_t size, SpSnapshot *snap, SpError *err);
void sp_snapshot_free (SpSnapshot *snap);

/* Does the live class map entry have exactly the snapshot class's leaves?  Names the first difference. */
int sp_snapshot_class_matches (const SpSnapClass *snap_class, const SpClass *live, SpError *err);

/* Decode string `lid` into dst (room for its length). */
void sp_snapshot_string_chars (const SpSnapshot *snap, uint32_t lid, uint16_t *dst);

/*
 * Fix-up of one OBJECT or ARRAY: primitive leaves are stored into memory at
 * `base` (the object, or the first array element) at the offsets of `live`;
 * each reference leaf is handed to store_ref with the address of its slot and
 * the LID it refers to (0: null), which decides and performs the store.
 */
typedef int (*SpStoreRefFn) (void *ctx, void *slot, const SpField *field, uint32_t lid, SpError *err);
int sp_snapshot_fill (const SpSnapshot *snap, uint32_t lid, void *base, const SpClass *live,
		      SpStoreRefFn store_ref, void *ctx, SpError *err);

/*
 * The same in two parts, so a restorer can store the primitives while the new
 * object is still in cache (construction phase) and the references once every
 * object exists (fix-up phase).  `parts` is a mask of:
 */
#define SP_FILL_PRIMITIVES 1u
#define SP_FILL_REFERENCES 2u
int sp_snapshot_fill_parts (const SpSnapshot *snap, uint32_t lid, void *base, const SpClass *live,
			    unsigned parts, SpStoreRefFn store_ref, void *ctx, SpError *err);
/* Does object lid have reference leaves (is there anything for SP_FILL_REFERENCES)? */
bool sp_snapshot_has_references (const SpSnapshot *snap, uint32_t lid);

#endif
