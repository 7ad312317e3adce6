/*
 * sp-layout.h: the persistent class map (paper section 3.1), as the core sees it.
 *
 * The client (metadata/sp-classmap.c) builds one SpClass per persistent class from its custom
 * attributes when the class is first persisted or restored; the core never looks
 * at runtime metadata, only at these descriptions.  A field is a leaf: embedded
 * structs are flattened into their primitive and reference leaves ("pos.x"), with
 * offsets relative to the start of the object (or of the array element).
 */
#ifndef SP_LAYOUT_H
#define SP_LAYOUT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

/* Wire and memory kinds of a leaf field.  The numbers are part of the format. */
typedef enum SpKind {
	SP_KIND_BOOL = 1,
	SP_KIND_CHAR = 2,       /* UTF-16 code unit */
	SP_KIND_I1 = 3,
	SP_KIND_U1 = 4,
	SP_KIND_I2 = 5,
	SP_KIND_U2 = 6,
	SP_KIND_I4 = 7,
	SP_KIND_U4 = 8,
	SP_KIND_I8 = 9,
	SP_KIND_U8 = 10,
	SP_KIND_R4 = 11,
	SP_KIND_R8 = 12,
	SP_KIND_REF = 13,       /* object reference: a LID on the wire, a pointer in memory */
} SpKind;

/* Bytes of the longest varint of a 32-bit value (LIDs are below 2^31). */
#define SP_VARINT32_MAX 5

#define SP_KIND_FIRST SP_KIND_BOOL
#define SP_KIND_LAST  SP_KIND_REF

static inline bool sp_kind_valid (unsigned k) { return k >= SP_KIND_FIRST && k <= SP_KIND_LAST; }

/* Bytes of a primitive kind, in memory and on the wire (references: 0, they vary). */
static inline unsigned
sp_kind_size (unsigned k)
{
	static const uint8_t sizes [SP_KIND_LAST + 1] = { 0, 1, 2, 1, 1, 2, 2, 4, 4, 8, 8, 4, 8, 0 };
	return k <= SP_KIND_LAST ? sizes [k] : 0;
}

const char *sp_kind_name (unsigned k);

/*
 * Copy one primitive between host order and the format's little-endian order
 * (the same operation both ways), normalizing a bool to 0 or 1.
 */
static inline void
sp_kind_copy (uint8_t *dst, const uint8_t *src, unsigned kind)
{
	unsigned size = sp_kind_size (kind);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* Constant sizes: each memcpy is one move, not a call. */
	switch (size) {
	case 1: memcpy (dst, src, 1); break;
	case 2: memcpy (dst, src, 2); break;
	case 4: memcpy (dst, src, 4); break;
	default: memcpy (dst, src, 8); break;
	}
#else
	for (unsigned i = 0; i < size; i++)
		dst [i] = src [size - 1 - i];
#endif
	if (kind == SP_KIND_BOOL)
		dst [0] = dst [0] != 0;
}

/*
 * sp_kind_copy of a primitive kind, returning its size: one switch on the
 * kind (a jump table) where sp_kind_copy looks up the size, switches on it
 * and tests for bool.  For the loops over every primitive of every object.
 */
static inline unsigned
sp_kind_copy_sized (uint8_t *dst, const uint8_t *src, unsigned kind)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	switch (kind) {
	case SP_KIND_BOOL: *dst = *src != 0; return 1;
	case SP_KIND_I1: case SP_KIND_U1: *dst = *src; return 1;
	case SP_KIND_CHAR: case SP_KIND_I2: case SP_KIND_U2: memcpy (dst, src, 2); return 2;
	case SP_KIND_I4: case SP_KIND_U4: case SP_KIND_R4: memcpy (dst, src, 4); return 4;
	case SP_KIND_I8: case SP_KIND_U8: case SP_KIND_R8: memcpy (dst, src, 8); return 8;
	default: return 0;
	}
#else
	sp_kind_copy (dst, src, kind);
	return sp_kind_size (kind);
#endif
}

typedef struct SpField {
	const char *name;       /* "speed", or "pos.x" for a leaf of an embedded struct */
	const char *type_name;  /* declared type of a REF field ("Plant.Valve"), else NULL */
	void *type_client;      /* REF: the client's handle of the declared type (restore checks stores against it) */
	uint32_t offset;        /* from the start of the object / array element */
	uint8_t kind;           /* SpKind */
	/* REF, the serializer's inline cache of the class of the object last met
	 * in this leaf: its token (sp_client_class_token; NULL: none met yet),
	 * where its instances keep their identity slot (0: they have none), and
	 * whether the class map has it (it is persistable).  A child of that
	 * class takes its slot from here, and is not looked up in the class map
	 * when it joins the snapshot; the prefetch of the next child takes
	 * slot_hint as a guess. */
	const void *ic_token;
	uint32_t slot_hint;
	bool ic_persistable;
	/* The full names this leaf had in earlier versions ([SPersistentField
	 * (FormerNames)], "lvl" or "pos.x"), '\n'-separated; NULL: none.  A
	 * snapshot's leaf of such a name restores into it (sp-evolve.h). */
	const char *former_names;
	/* OBJECT, a primitive leaf: the value ([SPersistentField (Default = ...)],
	 * host order, sp_kind_size bytes) a restored object gets when the snapshot
	 * has no value for this leaf (it was added since); NULL: 0. */
	const uint8_t *default_value;
} SpField;

/*
 * The primitive leaves of a class as copies between an instance (or array
 * element) and the wire's primitive block of it, grouped by width so that
 * the loops over them switch on nothing: copies [0, end [SP_COPY_8]) are 8
 * bytes wide, then those of 4, 2 and 1 byte, then the bools (written 0 or 1
 * both ways).  The serializer's plan (SpLeafPlan) and the decoder's exact
 * plan (SpSnapClass) are such copies.  Copying leaf by leaf through a switch
 * on each kind (sp_kind_copy_sized) took 12 instructions more a node of five
 * primitives serializing, and 17 more constructing (about 85 against 73);
 * what is left is mostly each group's compare and the loads of offsets.
 */
typedef struct SpPrimCopy {
	uint32_t live;          /* offset in the instance/element */
	uint32_t wire;          /* offset in the wire's primitive block */
} SpPrimCopy;

enum { SP_COPY_8, SP_COPY_4, SP_COPY_2, SP_COPY_1, SP_COPY_BOOL, SP_COPY_GROUPS };

static inline unsigned
sp_prim_copy_group (unsigned kind)
{
	if (kind == SP_KIND_BOOL)
		return SP_COPY_BOOL;
	switch (sp_kind_size (kind)) {
	case 8: return SP_COPY_8;
	case 4: return SP_COPY_4;
	case 2: return SP_COPY_2;
	default: return SP_COPY_1;
	}
}

/*
 * The copies of the primitive leaves among fields [0, nfields) (wire order:
 * the block holds them in that order); copy has room for one a primitive.
 * Returns the block's size.
 */
static inline uint32_t
sp_prim_copies_build (SpPrimCopy *copy, uint32_t end [SP_COPY_GROUPS], const SpField *fields, uint32_t nfields)
{
	uint32_t n = 0, bytes = 0;
	for (unsigned g = 0; g < SP_COPY_GROUPS; g++) {
		bytes = 0;
		for (uint32_t i = 0; i < nfields; i++) {
			if (fields [i].kind == SP_KIND_REF)
				continue;
			if (sp_prim_copy_group (fields [i].kind) == g)
				copy [n++] = (SpPrimCopy) { .live = fields [i].offset, .wire = bytes };
			bytes += sp_kind_size (fields [i].kind);
		}
		end [g] = n;
	}
	return bytes;
}

/* One value of `width` bytes between host order and the wire's (little-endian); a constant width makes it one move. */
static inline void
sp_copy_le (uint8_t *dst, const uint8_t *src, unsigned width)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	memcpy (dst, src, width);
#else
	for (unsigned i = 0; i < width; i++)
		dst [i] = src [width - 1 - i];
#endif
}

/* Boolean copies [c, e), normalized to 0 or 1 (a byte stored by unsafe code, or a hostile snapshot's, may be any). */
static inline __attribute__ ((always_inline)) void
sp_prim_bools_run (const SpPrimCopy *c, const SpPrimCopy *e, const uint8_t *from, uint8_t *to, bool to_wire)
{
	for (; c < e; c++)
		to [to_wire ? c->wire : c->live] = from [to_wire ? c->live : c->wire] != 0;
}

/* The loops of both directions: each group's copies at its width (`to_wire`: the copy's live offset is the source). */
static inline __attribute__ ((always_inline)) void
sp_prim_copies_run (const SpPrimCopy *copy, const uint32_t end [SP_COPY_GROUPS], const uint8_t *from, uint8_t *to, bool to_wire)
{
	/*
	 * One cursor through the groups, and each group's end in a local (the
	 * stores through `to` may alias anything, and would make GCC load them
	 * again): a group costs a compare, not a loop's set-up.
	 */
	const SpPrimCopy *c = copy, *e8 = copy + end [SP_COPY_8], *e4 = copy + end [SP_COPY_4], *e2 = copy + end [SP_COPY_2],
		*e1 = copy + end [SP_COPY_1], *eb = copy + end [SP_COPY_BOOL];
#define SP_COPY_AT(c) (to + (to_wire ? (c)->wire : (c)->live)), (from + (to_wire ? (c)->live : (c)->wire))
	for (; c < e8; c++)
		sp_copy_le (SP_COPY_AT (c), 8);
	for (; c < e4; c++)
		sp_copy_le (SP_COPY_AT (c), 4);
	for (; c < e2; c++)
		sp_copy_le (SP_COPY_AT (c), 2);
	for (; c < e1; c++)
		sp_copy_le (SP_COPY_AT (c), 1);
	sp_prim_bools_run (c, eb, from, to, to_wire);
#undef SP_COPY_AT
}

/* An instance's primitives into its wire block. */
static inline void
sp_prims_to_wire (const SpPrimCopy *copy, const uint32_t end [SP_COPY_GROUPS], const uint8_t *obj, uint8_t *wire)
{
	sp_prim_copies_run (copy, end, obj, wire, true);
}

/* A wire block's primitives into the instance. */
static inline void
sp_prims_from_wire (const SpPrimCopy *copy, const uint32_t end [SP_COPY_GROUPS], const uint8_t *wire, uint8_t *obj)
{
	sp_prim_copies_run (copy, end, wire, obj, false);
}

/*
 * The size of copy i (not a boolean's): its group's.  (Not a field's looked
 * up by offset: leaves may share one, as System.Decimal's overlapping
 * fields do.)
 */
/* A leaf's bytes in memory (a reference: a pointer). */
static inline unsigned
sp_leaf_mem_size (unsigned kind)
{
	return kind == SP_KIND_REF ? (unsigned)sizeof (void *) : sp_kind_size (kind);
}

static inline unsigned
sp_prim_copy_size (const uint32_t end [SP_COPY_GROUPS], uint32_t i)
{
	return i < end [SP_COPY_8] ? 8 : i < end [SP_COPY_4] ? 4 : i < end [SP_COPY_2] ? 2 : 1;
}

/*
 * The serializer's primitive copies on a little-endian host, in one loop
 * (sp_prim_windows_to_wire): each leaf is read as the 8 bytes that end
 * where it ends (inside the instance: its header comes first), shifted
 * down to the leaf, and written as 8 bytes where it starts on the wire.
 * Written in wire order, each write's upper bytes (zeros) are written over
 * by the next leaf's; the last one's land on what the record writes next
 * (its references) or in the slack past it (SP_PRIM_WINDOW_SLACK).  Against
 * a loop per width (sp_prim_copies_run), serializing the benchmark's tree
 * (five primitives): 73 -> 42 instructions a node for the copies, 399 -> 377
 * for the whole turn (callgrind).  Booleans are normalized apart, after the
 * windows (their raw byte is not the wire's: a bool stored by unsafe code
 * may hold any nonzero byte).  The decoder keeps sp_prims_from_wire: a
 * window written into an instance would clobber its neighbours.
 */
typedef struct SpPrimWindow {
	uint32_t from;          /* offset in the instance: the leaf's end - 8 */
	uint16_t to;            /* offset in the wire's primitive block */
	uint8_t shift;          /* bits to drop: 8 * (8 - the leaf's size) */
} SpPrimWindow;

#define SP_PRIM_WINDOW_SLACK 8

/*
 * The windows of copies [0, end [SP_COPY_1]) (all but the booleans), in
 * wire order, then as many more as make a multiple of 4 (each writing at
 * the block's end, in the slack: the loop takes 4 a turn, without a compare
 * between them).  Returns how many, 0 when one does not fit (a leaf in an
 * instance's first 8 bytes: never in an object, whose header comes first).
 * w has room for SP_PLAN_LEAVES + 3.
 */
static inline uint32_t
sp_prim_windows_build (SpPrimWindow *w, const SpPrimCopy *copy, const uint32_t end [SP_COPY_GROUPS], uint32_t block)
{
	uint32_t n = end [SP_COPY_1];
	for (uint32_t i = 0; i < n; i++) {
		unsigned size = sp_prim_copy_size (end, i);
		if (copy [i].live + size < 8 || block > UINT16_MAX)
			return 0;
		SpPrimWindow win = { .from = copy [i].live + size - 8, .to = (uint16_t)copy [i].wire, .shift = (uint8_t)(8 * (8 - size)) };
		uint32_t at = i;
		for (; at > 0 && w [at - 1].to > win.to; at--)
			w [at] = w [at - 1];
		w [at] = win;
	}
	for (; n % 4; n++)
		w [n] = (SpPrimWindow){ .from = n ? w [0].from : 0, .to = (uint16_t)block, .shift = 0 };
	return n;
}

static inline void
sp_prim_window_run (const SpPrimWindow *w, const uint8_t *obj, uint8_t *wire)
{
	uint64_t v;
	memcpy (&v, obj + w->from, sizeof v);
	v >>= w->shift;
	memcpy (wire + w->to, &v, sizeof v);
}

static inline void
sp_prim_windows_to_wire (const SpPrimWindow *w, uint32_t n, const SpPrimCopy *bools, const SpPrimCopy *bools_end,
			 const uint8_t *obj, uint8_t *wire)
{
	for (const SpPrimWindow *e = w + n; w < e; w += 4) {
		sp_prim_window_run (w, obj, wire);
		sp_prim_window_run (w + 1, obj, wire);
		sp_prim_window_run (w + 2, obj, wire);
		sp_prim_window_run (w + 3, obj, wire);
	}
	sp_prim_bools_run (bools, bools_end, obj, wire, true);
}

/*
 * The decoder's primitive copies into a new instance (every byte of it zero)
 * on a little-endian host, in one loop (sp_prim_fills_from_wire): each leaf
 * read from the wire as the 8 bytes that end where it ends (the record's
 * first bytes, or the snapshot's header, come before any block: always
 * inside the snapshot), masked to the leaf, and written as the 8 bytes that
 * end where it ends in the instance, from the highest offset down.  A
 * write's lower bytes are zeros: they land on bytes still zero (references,
 * set by the fix-up) or on a lower leaf, which its own write sets later;
 * booleans are written last (normalized: the wire's byte may be any).  Only
 * where no write reaches below the class's lowest leaf (the instance's
 * header is under it) and no leaves overlap, else the copies per width.  Decoding the benchmark's
 * tree (five primitives): 72 -> 39 instructions a node for the copies, 529
 * -> 507 for the whole decode (callgrind).
 */
typedef struct SpPrimFill {
	uint32_t live;          /* offset in the instance: the leaf's end - 8 */
	int32_t wire;           /* offset from the wire's primitive block: the leaf's end - 8 */
	uint64_t mask;          /* the leaf's bytes, the upper ones */
} SpPrimFill;

/*
 * The fills of copies [0, end [SP_COPY_1]) from the highest offset down,
 * padded to a multiple of 4 with the last one again; 0 when one would
 * write below the class's lowest leaf.  f has room for nfields + 3.
 */
static inline uint32_t
sp_prim_fills_build (SpPrimFill *f, const SpPrimCopy *copy, const uint32_t end [SP_COPY_GROUPS], const SpField *fields,
		     uint32_t nfields)
{
	uint32_t lowest = UINT32_MAX;
	for (uint32_t k = 0; k < nfields; k++) {
		if (fields [k].offset < lowest)
			lowest = fields [k].offset;
		/* Leaves that overlap (System.Decimal's do): a fill's zeros could land on one written before; copies per width. */
		for (uint32_t j = 0; j < k; j++)
			if (fields [j].offset < fields [k].offset + sp_leaf_mem_size (fields [k].kind) &&
			    fields [k].offset < fields [j].offset + sp_leaf_mem_size (fields [j].kind))
				return 0;
	}
	uint32_t n = end [SP_COPY_1];
	for (uint32_t i = 0; i < n; i++) {
		unsigned size = sp_prim_copy_size (end, i);
		if (copy [i].live + size < lowest + 8 || copy [i].wire > INT32_MAX)
			return 0;
		SpPrimFill fill = { .live = copy [i].live + size - 8, .wire = (int32_t)(copy [i].wire + size) - 8,
				    .mask = UINT64_MAX << (8 * (8 - size)) };
		uint32_t at = i;
		for (; at > 0 && f [at - 1].live < fill.live; at--)
			f [at] = f [at - 1];
		f [at] = fill;
	}
	for (uint32_t last = n; n && n % 4; n++)
		f [n] = f [last - 1];
	return n;
}

static inline void
sp_prim_fill_run (const SpPrimFill *f, const uint8_t *wire, uint8_t *obj)
{
	uint64_t v;
	memcpy (&v, wire + f->wire, sizeof v);
	v &= f->mask;
	memcpy (obj + f->live, &v, sizeof v);
}

static inline void
sp_prim_fills_from_wire (const SpPrimFill *f, uint32_t n, const SpPrimCopy *bools, const SpPrimCopy *bools_end,
			 const uint8_t *wire, uint8_t *obj)
{
	for (const SpPrimFill *e = f + n; f < e; f += 4) {
		sp_prim_fill_run (f, wire, obj);
		sp_prim_fill_run (f + 1, wire, obj);
		sp_prim_fill_run (f + 2, wire, obj);
		sp_prim_fill_run (f + 3, wire, obj);
	}
	sp_prim_bools_run (bools, bools_end, wire, obj, false);
}

/*
 * A class's own leaves as the serializer walks them for every instance: its
 * primitives as copies into the wire (SpPrimCopy), and the indices of its reference
 * leaves.  Built by the serializer (sp_ser_plan) when it first meets the
 * class, if the class has at most SP_PLAN_LEAVES leaves, so that the loops
 * over an instance read only what they use instead of testing every
 * SpField's kind twice.  Not built: the loops read c->fields.  Unknown
 * leaves (c->unknown) are walked apart, as without a plan.
 */
#define SP_PLAN_LEAVES 24
typedef struct SpLeafPlan {
	bool tried, built;
	uint8_t nprims, nrefs;
	SpField *refs [SP_PLAN_LEAVES];         /* the reference leaves (in fields) */
	uint32_t prim_bytes;                    /* the primitives' block on the wire ... */
	uint32_t prim_end [SP_COPY_GROUPS];     /* ... and their copies into it (SpPrimCopy) */
	SpPrimCopy prims [SP_PLAN_LEAVES];
	uint32_t nwindows;                      /* on a little-endian host, the same copies as windows; 0: none */
	SpPrimWindow windows [SP_PLAN_LEAVES + 3];
} SpLeafPlan;

typedef enum SpClassKind {
	SP_CLASS_OBJECT = 1,    /* an [SPersistent] class: fields are its persistent fields */
	SP_CLASS_STRING = 2,    /* System.String (never in the class cache: implied) */
	SP_CLASS_ARRAY = 3,     /* a one-dimensional zero-based array: fields are the element's leaves */
} SpClassKind;

/*
 * Leaves a restored snapshot gave a class that the class itself no longer
 * (or not yet) has: unknown data, carried into every later snapshot so that
 * the version that knows them gets their values back (docs/FORMAT.md,
 * "Class evolution").  The class's record in a snapshot lists its own leaves
 * and then these; each instance's values for them come from the client
 * (sp_client_unknown_values).
 */
typedef struct SpUnknown {
	uint32_t nleaves;       /* the class record's leaves: the class's own, then the unknown ones */
	SpField *leaves;
	uint32_t nprims, nrefs; /* of the unknown ones, in leaf order: their primitives' values ... */
	uint32_t prim_bytes;    /* ... take this many bytes (wire order) */
} SpUnknown;

typedef struct SpClass {
	uint8_t kind;           /* SpClassKind */
	const char *assembly;   /* defining assembly, "App, Version=1.0.0.0" */
	const char *name;       /* full type name, as the client resolves it again */
	uint32_t nfields;
	SpField *fields;
	uint32_t elem_size;     /* ARRAY: distance between elements in memory */
	void *client;           /* the client's class handle (MonoClass *) */
	/* OBJECT: where instances keep their LID in the snapshot being written
	 * (4 bytes the client reserved; a hint, checked against the LID table);
	 * 0: none, identity goes through the LID map. */
	uint32_t lid_slot;
	/* Owned by the serializer: the class id in the snapshot being written, and
	 * the largest encoding of one instance/element (set with the id). */
	uint64_t snap_cycle;
	uint32_t snap_id;
	uint32_t wire_max;
	SpLeafPlan plan;
	/* OBJECT: the unknown leaves its instances carry, NULL: none (set by a restore, before any snapshot is written). */
	const SpUnknown *unknown;
	/* OBJECT: the class says a restore drops the leaves it lacks rather than keep them ([SPersistent (DropUnknown = true)]). */
	bool drop_unknown;
} SpClass;

/* ARRAY whose element is one primitive at offset 0 with nothing around it: copied as a block. */
static inline bool
sp_class_is_primitive_array (const SpClass *c)
{
	return c->kind == SP_CLASS_ARRAY && c->nfields == 1 && c->fields [0].kind != SP_KIND_REF &&
		c->fields [0].offset == 0 && c->elem_size == sp_kind_size (c->fields [0].kind);
}

#endif
