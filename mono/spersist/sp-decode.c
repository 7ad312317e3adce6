/*
 * sp-decode.c: restoring a snapshot into live objects (sp_snapshot_decode, see
 * sp-snapshot.h), in the two phases of the paper's section 4:
 *
 *   construction  the validating walk (sp-walk.h) hands over each record as it
 *                 is checked; the object is created and its primitives stored
 *                 while the record's bytes are in cache, and so, in a full
 *                 snapshot, are its references (links, below);
 *   fix-up        once the walk has succeeded, every byte is known valid and
 *                 every object exists: an unchecked pass over the records
 *                 whose references were not all linked stores them.
 *
 * Links.  A reference in a full snapshot, an object's or an array
 * element's, is stored as the walk meets it: to an object made already (a
 * tree node's parent) when it fits the declared type (the fix-up's check),
 * or to one the restorer makes there and then, before its record (a node's
 * children: their records come later, and create finds them made), of the
 * class it picks for the field (SpDecodeOps.early_class).  A snapshot with
 * its class index (SP_OPT_CLASS_INDEX) has every class read before the
 * first object and the links planned once all are resolved
 * (sp_decode_classes): the pick is the one class of the snapshot the field
 * can hold, if there is one, whatever the field's declared type.  An older
 * snapshot's classes come as the walk meets them: the pick is the field's
 * declared class, a guess.  The object made is the right one only when its
 * record says the same class.  Whenever that fails, the fix-up goes over
 * all records as if nothing had been linked, and checks and stores every
 * reference again: a guess made early is never trusted.  A reference is not
 * linked when its target does not fit (the fix-up says why), or does not
 * exist yet and cannot be made early (a string or an array may come, the
 * field holds more than one class, a finalizer:
 * sp_mono_restore_early_class); nor are those of classes that changed, or
 * of deltas.  Their records (an array's: its piece)
 * are listed (SpPending), and the fix-up reads only those, storing the slots
 * no link set.  The second pass over every record had been a third of a
 * 1,000,000-node restore's instructions (186 of 439 a node): it read each
 * record's LID, class and references again, and, beyond the cache, its bytes.
 *
 * Nothing is indexed per object: memory beyond the snapshot and the new objects
 * is the walk's byte per LID and the list of records left to the fix-up (at
 * most eight times the input's size: beyond it, the fix-up reads every
 * record).  The client may move objects between calls
 * (SGen's nursery collections), so no address is kept here, only asked for
 * again through the restorer's base.
 */
#include "sp-snapshot.h"
#include "sp-walk.h"

#include <stdlib.h>
#include <string.h>

/* A record some of whose references were not linked: the fix-up stores those (sp_decode_fixup_pending). */
typedef struct SpPending {
	uint32_t lid, class_id;
	uint64_t start;          /* a piece of an array of references: its first element */
	const uint8_t *at;       /* an object's values, or a piece's count */
} SpPending;

typedef struct SpDecode {
	const SpDecodeOps *ops;
	void *ctx;
	SpSnapshot *snap;
	const SpSnapTrailer *room;  /* a chain's: ops->begin was called for its last part; NULL: call it at the walk's begin */
	bool any_references;     /* some class has reference leaves: fix-up has work */
	bool linking;            /* references are linked as the walk meets them (a full snapshot, a restorer with links) */
	SpPending *pending;      /* linking: the records whose references the fix-up stores */
	uint32_t npending, pending_cap;
	bool pending_full;       /* the list outgrew its bound: the fix-up goes over every record */
	bool unfit;              /* the failure is the program's or the client's, not the input's */
} SpDecode;

/*
 * The restorer's per-object calls: bound at compile time where the build
 * names its restorer (sp-snapshot.h), else through ops.
 */
#ifdef SP_RESTORER_CREATE
#define sp_decode_create(d, lid, c, length, err) SP_RESTORER_CREATE ((d)->ctx, lid, c, length, err)
#define sp_decode_base(d, lid, kind)             SP_RESTORER_BASE ((d)->ctx, lid, kind)
#define sp_decode_store_ref(d)                   SP_RESTORER_STORE_REF
#define sp_decode_link(d, owner, kind, offset, f, early, lid, err) SP_RESTORER_LINK ((d)->ctx, owner, kind, offset, f, early, lid, err)
#else
#define sp_decode_create(d, lid, c, length, err) (d)->ops->create ((d)->ctx, lid, c, length, err)
#define sp_decode_base(d, lid, kind)             (d)->ops->base ((d)->ctx, lid, kind)
#define sp_decode_store_ref(d)                   (d)->ops->store_ref
#define sp_decode_link(d, owner, kind, offset, f, early, lid, err) (d)->ops->link ((d)->ctx, owner, kind, offset, f, early, lid, err)
#endif

/* Are these ops the ones the decoder was built to call (sp-snapshot.h)? */
static int
sp_decode_ops_bound (const SpDecodeOps *ops, SpError *err)
{
#ifdef SP_RESTORER_CREATE
	if (ops->create != SP_RESTORER_CREATE || ops->base != SP_RESTORER_BASE || ops->store_ref != SP_RESTORER_STORE_REF ||
	    ops->link != SP_RESTORER_LINK)
		return sp_error_set (err, "internal error: this decoder is built for another restorer");
#else
	(void)ops, (void)err;
#endif
	return 0;
}

/* ---- construction (the walk's sink) ---------------------------------------- */

static int
sp_decode_begin (void *ctx, SpSnapshot *snap, SpError *err)
{
	SpDecode *d = ctx;
	d->linking = d->ops->link && d->ops->early_class && d->ops->early_missed && snap->header.prior_objects == 0;
	if (d->room)
		return 0;
	if (d->ops->begin (d->ctx, &snap->trailer, err) < 0) {
		d->unfit = true;
		return -1;
	}
	return 0;
}

/*
 * Class c's new objects link their references: each leaf's early class
 * (NULL where the restorer has none: such a reference is linked only to an
 * object made before it).
 */
static int
sp_decode_plan_links (SpDecode *d, SpSnapClass *c)
{
	if (!(c->ref_early = calloc (c->nrefs + 1, sizeof *c->ref_early)))
		return -1;
	const SpSnapshot *snap = d->snap;
	const SpSnapClass *known = snap->classes_ahead ? snap->classes + 1 : NULL;
	for (uint32_t i = 0; i < c->nrefs; i++)
		c->ref_early [i] = c->ref_fields [i] ? d->ops->early_class (d->ctx, c->ref_fields [i], known, snap->trailer.nclasses) : NULL;
	c->links = true;
	return 0;
}

/* Whether class c's new objects link their references: a full snapshot's, with the restorer's links, unchanged. */
static bool
sp_decode_links_class (const SpDecode *d, const SpSnapClass *c)
{
	return d->linking && c->wire_size == 0 && !c->evolution;
}

/* With a class index, once every class is known: their links planned, each early class chosen among them all. */
static int
sp_decode_classes (void *ctx, SpSnapshot *snap, SpError *err)
{
	SpDecode *d = ctx;
	for (uint32_t id = 1; id <= snap->trailer.nclasses; id++) {
		SpSnapClass *c = &snap->classes [id];
		if (sp_decode_links_class (d, c) && sp_decode_plan_links (d, c) < 0)
			return sp_error_set (err, "out of memory planning class %s", c->name);
	}
	return 0;
}

/* The live class of each snapshot class: resolved by the client, checked here. */
static int
sp_decode_class (void *ctx, SpSnapClass *c, SpError *err)
{
	SpDecode *d = ctx;
	d->unfit = true;
	if (d->ops->resolve (d->ctx, c, err) < 0)
		return -1;
	const SpClass *live = c->resolved;
	if (live->kind != c->kind)
		return sp_error_set (err, "class %s is not of the kind the snapshot says", c->name);
	if (sp_snapshot_plan (c, live, err) < 0)
		return -1;
	if (c->evolution && d->ops->evolved)
		d->ops->evolved (d->ctx, c);
	if (c->wire_size == 0)
		d->any_references = true;
	/* With a class index the links wait for every class (sp_decode_classes). */
	if (!d->snap->classes_ahead && sp_decode_links_class (d, c) && sp_decode_plan_links (d, c) < 0)
		return sp_error_set (err, "out of memory planning class %s", c->name);
	d->unfit = false;
	return 0;
}

/*
 * A delta's record of a prior object (its whole value, or a PATCH ending at
 * element `end`): the client checks that the object the chain made is of this
 * class (and that long); when it is not, the chain contradicts itself.
 */
static uint8_t *
sp_decode_reuse (SpDecode *d, uint32_t lid, const SpSnapClass *c, uint64_t end, SpError *err)
{
	if (!d->ops->reuse) {
		d->unfit = true;
		sp_error_set (err, "this restorer cannot apply delta snapshots");
		return NULL;
	}
	return d->ops->reuse (d->ctx, lid, c, end, err);
}

/* The values of object lid, whose class changed: dropped, converted, and the old ones to the client if it keeps them. */
static __attribute__ ((noinline)) void
sp_decode_evolved (SpDecode *d, uint32_t lid, const SpSnapClass *c, const uint8_t *values, uint8_t *base)
{
	sp_evolved_primitives (c, values, base);
	if (c->keep_old && d->ops->old_values)
		d->ops->old_values (d->ctx, lid, c, values);
}

/*
 * List the references of object lid (class_id; `at`: its values) or of a
 * piece of an array of references (`at`: its count; `start`: its first
 * element) for the fix-up.  One entry of 24 bytes a record, and a record
 * takes at least four: the list stays under eight times the input's size,
 * the bound that keeps a hostile input's allocations within a small multiple
 * of it.  Beyond it, or out of memory, the fix-up goes over every record.
 */
static void
sp_decode_pend (SpDecode *d, uint32_t lid, uint32_t class_id, uint64_t start, const uint8_t *at)
{
	if (d->pending_full)
		return;
	if (d->npending == d->pending_cap) {
		/* After an early object was replaced, every record will be read again: no need to list them. */
		if (d->ops->early_missed (d->ctx)) {
			d->pending_full = true;
			return;
		}
		uint32_t cap = d->pending_cap ? 2 * d->pending_cap : 64;
		bool within = (uint64_t)cap * sizeof (SpPending) <= 8 * (uint64_t)d->snap->size;
		SpPending *grown = within ? realloc (d->pending, cap * sizeof *grown) : NULL;
		if (!grown) {
			d->pending_full = true;
			return;
		}
		d->pending = grown;
		d->pending_cap = cap;
	}
	d->pending [d->npending++] = (SpPending){ .lid = lid, .class_id = class_id, .start = start, .at = at };
}

/*
 * The references of new object `owner` of class c, linked: as the walk
 * decoded them (`refs`), else read after its primitives.  Those the restorer
 * does not store are left to the fix-up, which stores the slots still null.
 */
static inline __attribute__ ((always_inline)) int
sp_decode_links (SpDecode *d, uint32_t owner, uint32_t class_id, const SpSnapClass *c, const uint32_t *refs,
		 const uint8_t *values, SpError *err)
{
	/* In locals: the stores into objects may alias c for all the compiler knows. */
	const SpField **fields = c->ref_fields;
	void **early = c->ref_early;
	uint32_t n = c->nrefs;
	const uint8_t *p = values + c->prim_bytes;
	bool pend = false;
	for (uint32_t i = 0; i < n; i++) {
		uint32_t lid = refs ? refs [i] : (uint32_t)sp_trusted_varint (&p);    /* validated: at most nobjects */
		if (!lid)
			continue;
		int linked = sp_decode_link (d, owner, SP_CLASS_OBJECT, fields [i]->offset, fields [i], early [i], lid, err);
		if (__builtin_expect (linked != 0, 0)) {
			if (linked < 0) {
				d->unfit = true;
				return -1;
			}
			pend = true;
		}
	}
	if (pend)
		sp_decode_pend (d, owner, class_id, 0, values);
	return 0;
}

/* An OBJECT record; `refs`: its references as the walk decoded them (sp-walk.h), or NULL. */
static inline __attribute__ ((always_inline)) int
sp_decode_object_refs (void *ctx, uint32_t lid, uint32_t class_id, const uint8_t *values, const uint32_t *refs, SpError *err)
{
	SpDecode *d = ctx;
	const SpSnapClass *c = &d->snap->classes [class_id];
	uint8_t *base;
	bool fresh = lid > d->snap->header.prior_objects;   /* not a delta's record of an object the chain made */
	if (!fresh) {
		base = sp_decode_reuse (d, lid, c, 0, err);
		if (!base)
			return -1;
	} else if (!(base = sp_decode_create (d, lid, c, 0, err))) {
		d->unfit = true;
		return -1;
	}
	/* One test an object keeps the restore of unchanged classes as it was (sp-evolve.h has the rest). */
	if (__builtin_expect (c->evolution != NULL, 0))
		sp_decode_evolved (d, lid, c, values, base);
	else if (__builtin_expect (fresh && c->nfills != 0, 1))   /* its bytes are zero: a fill writes zeros below its leaf */
		sp_prim_fills_from_wire (c->prim_fills, c->nfills, c->prim_copies + c->prim_end [SP_COPY_1],
					 c->prim_copies + c->prim_end [SP_COPY_BOOL], values, base);
	else
		sp_trusted_primitives (c, values, base);
	if (__builtin_expect (c->links, 1))   /* linking: a full snapshot, every object fresh */
		return sp_decode_links (d, lid, class_id, c, refs, values, err);
	if (c->wire_size == 0 && d->linking)  /* a class that changed: its plan is the fix-up's */
		sp_decode_pend (d, lid, class_id, 0, values);
	return 0;
}

/* The walk's OBJECT sink. */
static int
sp_decode_object (void *ctx, uint32_t lid, uint32_t class_id, const uint8_t *values, SpError *err)
{
	return sp_decode_object_refs (ctx, lid, class_id, values, NULL, err);
}

static int
sp_decode_sized (void *ctx, uint8_t kind, uint32_t lid, uint32_t class_id, uint64_t length, size_t piece, SpError *err)
{
	(void)piece;
	SpDecode *d = ctx;
	const SpSnapClass *c = kind == SP_CLASS_ARRAY ? &d->snap->classes [class_id] : NULL;
	if (!sp_decode_create (d, lid, c, length, err)) {
		d->unfit = true;
		return -1;
	}
	return 0;
}

/* The primitives of `count` array elements from `start` of the array at `base`. */
static void
sp_decode_elements (const SpSnapClass *c, uint8_t *base, uint64_t start, uint64_t count, const uint8_t *elems)
{
	const SpClass *live = c->resolved;
	uint8_t *dst = base + start * live->elem_size;
	if (c->nprims == 0)
		return;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (!c->prim_live_kinds && sp_class_is_primitive_array (live) && live->fields [0].kind != SP_KIND_BOOL) {
		memcpy (dst, elems, (size_t)count * live->elem_size);
		return;
	}
#endif
	for (uint64_t i = 0; i < count; i++, dst += live->elem_size) {
		if (c->evolution)
			sp_evolved_primitives (c, elems, dst);
		else
			sp_trusted_primitives (c, elems, dst);
		elems += c->prim_bytes;
		for (uint32_t r = 0; r < c->nrefs; r++)
			sp_trusted_varint (&elems);
	}
}

/*
 * The references of `count` elements from `start` of new array lid (elems
 * at the first), linked as an object's are (sp_decode_links); when some are
 * not, the piece (`at`: its count) is listed for the fix-up.
 */
static int
sp_decode_link_elements (SpDecode *d, uint32_t lid, uint32_t class_id, const SpSnapClass *c, uint64_t start, uint64_t count,
			 const uint8_t *elems, const uint8_t *at, SpError *err)
{
	const SpField **fields = c->ref_fields;
	void **early = c->ref_early;
	size_t elem_size = ((const SpClass *)c->resolved)->elem_size, where = (size_t)start * elem_size;
	bool pend = false;
	for (uint64_t e = 0; e < count; e++, where += elem_size) {
		elems += c->prim_bytes;
		for (uint32_t i = 0; i < c->nrefs; i++) {
			uint32_t target = (uint32_t)sp_trusted_varint (&elems);   /* validated: at most nobjects */
			if (!target)
				continue;
			int linked = sp_decode_link (d, lid, SP_CLASS_ARRAY, where + fields [i]->offset, fields [i], early [i], target, err);
			if (linked < 0) {
				d->unfit = true;
				return -1;
			}
			pend |= linked != 0;
		}
	}
	if (pend)
		sp_decode_pend (d, lid, class_id, start, at);
	return 0;
}

/* The primitives of a piece, and its references linked or listed for the fix-up. */
static int
sp_decode_piece (void *ctx, uint8_t kind, uint32_t lid, uint32_t class_id, uint64_t start, uint64_t count,
		 uint8_t enc, const uint8_t *elems, size_t piece, SpError *err)
{
	SpDecode *d = ctx;
	uint8_t *base = sp_decode_base (d, lid, kind);
	if (kind == SP_CLASS_STRING) {
		sp_trusted_units ((uint16_t *)base + start, enc, elems, count);
		return 0;
	}
	const SpSnapClass *c = &d->snap->classes [class_id];
	sp_decode_elements (c, base, start, count, elems);
	if (c->links)
		return sp_decode_link_elements (d, lid, class_id, c, start, count, elems, d->snap->data + piece, err);
	if (c->wire_size == 0 && d->linking && count)
		sp_decode_pend (d, lid, class_id, start, d->snap->data + piece);
	return 0;
}

static int
sp_decode_patch (void *ctx, uint32_t lid, uint32_t class_id, uint64_t start, uint64_t count,
		 const uint8_t *elems, size_t piece, SpError *err)
{
	(void)piece;
	SpDecode *d = ctx;
	const SpSnapClass *c = &d->snap->classes [class_id];
	uint8_t *base = sp_decode_reuse (d, lid, c, start + count, err);
	if (!base)
		return -1;
	sp_decode_elements (c, base, start, count, elems);
	return 0;
}

static const SpWalkSink sp_decode_sink = {
	.begin = sp_decode_begin,
	.klass = sp_decode_class,
	.classes = sp_decode_classes,
	.object = sp_decode_object,
	.sized = sp_decode_sized,
	.piece = sp_decode_piece,
	.patch = sp_decode_patch,
};

/* ---- fix-up (an unchecked pass: the walk validated every byte) ------------- */

static const uint8_t *
sp_skip_str (const uint8_t *p)
{
	uint64_t len = sp_trusted_varint (&p);
	return p + len;
}

static const uint8_t *
sp_skip_class (const uint8_t *p)
{
	sp_trusted_varint (&p);             /* id */
	p++;                                /* kind */
	p = sp_skip_str (sp_skip_str (p));  /* assembly, name */
	uint64_t nfields = sp_trusted_varint (&p);
	for (uint64_t i = 0; i < nfields; i++) {
		p = sp_skip_str (p);
		if (*p++ == SP_KIND_REF)
			p = sp_skip_str (p);
	}
	return p;
}

static const uint8_t *
sp_skip_string_piece (const uint8_t *p)
{
	uint64_t count = sp_trusted_varint (&p);
	return p + 1 + (*p == SP_STR_LATIN1 ? count : 2 * count);
}

/* The references of one array piece (from element `start`). */
static const uint8_t *
sp_fixup_piece (SpDecode *d, uint32_t lid, uint32_t class_id, uint64_t start, const uint8_t *p, bool linked, int *rc,
		SpError *err)
{
	const SpSnapClass *c = &d->snap->classes [class_id];
	uint64_t count = sp_trusted_varint (&p);
	if (c->wire_size)
		return p + count * c->wire_size;
	const SpClass *live = c->resolved;
	uint8_t *dst = (uint8_t *)sp_decode_base (d, lid, SP_CLASS_ARRAY) + start * live->elem_size;
	bool zeroed = lid > d->snap->header.prior_objects;   /* not a delta's PATCH of an array the chain made */
	for (uint64_t i = 0; i < count && *rc == 0; i++, dst += live->elem_size)
		p = sp_planned_references (c, p + c->prim_bytes, dst, zeroed, linked, sp_decode_store_ref (d), d->ctx, rc, err);
	return p;
}

/*
 * A run of OBJECT records (p after the first one's tag), the fix-up's common
 * case: a state's objects come in runs of one class (a tree's nodes, a list's
 * cells).  The class is looked up again only where it changes, and what the
 * loop needs of it is held in locals, which the stores into the objects
 * would otherwise make the compiler load again for every record.  Returns
 * the position after the run: the next record's tag, or the end.
 */
static const uint8_t *
sp_fixup_objects (SpDecode *d, const uint8_t *p, const uint8_t *end, int *rc, SpError *err)
{
	const SpSnapClass *classes = d->snap->classes, *c = NULL;
	uint32_t prior = d->snap->header.prior_objects, last_id = SP_NO_CLASS;
	uint32_t wire_size = 0, prim_bytes = 0;
	for (;;) {
		uint32_t lid = (uint32_t)sp_trusted_varint (&p);
		uint32_t id = (uint32_t)sp_trusted_varint (&p);
		if (__builtin_expect (id != last_id, 0)) {
			c = &classes [id], last_id = id;
			wire_size = c->wire_size, prim_bytes = c->prim_bytes;
		}
		if (wire_size) {
			p += wire_size;
		} else {
			uint8_t *base = sp_decode_base (d, lid, SP_CLASS_OBJECT);
			bool zeroed = lid > prior;   /* not a delta's record of an object the chain made */
			p = sp_planned_references (c, p + prim_bytes, base, zeroed, false, sp_decode_store_ref (d), d->ctx, rc, err);
			if (*rc)
				return p;
		}
		if (p >= end || *p != SP_REC_OBJECT)
			return p;
		p++;
	}
}

/* A record other than OBJECT (sp_fixup_objects). */
static const uint8_t *
sp_fixup_record (SpDecode *d, const SpWalk *w, uint8_t tag, const uint8_t *p, int *rc, SpError *err)
{
	uint32_t lid;
	switch (tag) {
	case SP_REC_CLASS:
		return sp_skip_class (p);
	case SP_REC_STRING:
		sp_trusted_varint (&p);
		sp_trusted_varint (&p);
		return sp_skip_string_piece (p);
	case SP_REC_ARRAY: {
		lid = (uint32_t)sp_trusted_varint (&p);
		uint32_t class_id = (uint32_t)sp_trusted_varint (&p);
		sp_trusted_varint (&p);
		return sp_fixup_piece (d, lid, class_id, 0, p, false, rc, err);
	}
	case SP_REC_ELEMS: {
		lid = (uint32_t)sp_trusted_varint (&p);
		uint64_t start = sp_trusted_varint (&p);
		if (sp_walk_kind (w, lid) == SP_CLASS_STRING)
			return sp_skip_string_piece (p);
		return sp_fixup_piece (d, lid, sp_walk_open_class (w, lid), start, p, false, rc, err);
	}
	case SP_REC_PATCH: {
		lid = (uint32_t)sp_trusted_varint (&p);
		uint32_t class_id = (uint32_t)sp_trusted_varint (&p);
		uint64_t start = sp_trusted_varint (&p);
		return sp_fixup_piece (d, lid, class_id, start, p, false, rc, err);
	}
	case SP_REC_ROOT:
		sp_trusted_varint (&p);
		sp_trusted_varint (&p);
		return p;
	default: {                          /* an extension */
		uint64_t len = sp_trusted_varint (&p);
		return p + len;
	}
	}
}

static int
sp_decode_fixup (SpDecode *d, const SpWalk *w, SpError *err)
{
	const SpSnapshot *s = d->snap;
	const uint8_t *p = s->data + s->header.header_size;
	const uint8_t *end = s->data + s->size - SP_FORMAT_TRAILER_SIZE;
	int rc = 0;
	while (p < end && rc == 0) {
		uint8_t tag = *p++;
		/* OBJECT records come in runs, taken a run at a time; the others one by one. */
		p = tag == SP_REC_OBJECT ? sp_fixup_objects (d, p, end, &rc, err) : sp_fixup_record (d, w, tag, p, &rc, err);
	}
	return rc;
}

/* The fix-up of the records the walk listed (sp_decode_pend): the references linking left. */
static int
sp_decode_fixup_pending (SpDecode *d, SpError *err)
{
	int rc = 0;
	for (uint32_t i = 0; i < d->npending && rc == 0; i++) {
		const SpPending *e = &d->pending [i];
		const SpSnapClass *c = &d->snap->classes [e->class_id];
		if (c->kind == SP_CLASS_ARRAY) {
			sp_fixup_piece (d, e->lid, e->class_id, e->start, e->at, true, &rc, err);
		} else {
			uint8_t *base = sp_decode_base (d, e->lid, SP_CLASS_OBJECT);
			sp_planned_references (c, e->at + c->prim_bytes, base, true, true, sp_decode_store_ref (d), d->ctx, &rc, err);
		}
	}
	return rc;
}

/*
 * After the walk: no fix-up, a fix-up of the records it listed, or one over
 * every record (without links; or when an object made early was of another
 * class than its record's, which any link may have stored).
 */
static int
sp_decode_fixups (SpDecode *d, const SpWalk *w, SpError *err)
{
	if (!d->linking)
		return d->any_references ? sp_decode_fixup (d, w, err) : 0;
	if (d->pending_full || d->ops->early_missed (d->ctx))
		return sp_decode_fixup (d, w, err);
	return sp_decode_fixup_pending (d, err);
}

/* Construction, then fix-up, of one file (a full snapshot, or a delta on what the chain built). */
static int
sp_decode_part (SpDecode *d, const uint8_t *data, size_t size, SpError *err)
{
	SpWalk w;
	/* A chain's parts had their checksums verified by sp_chain_check, before anything was built. */
	int rc = sp_walk_run (&w, data, size, d->room != NULL, d->snap, &sp_decode_sink, d, err);
	if (rc == 0 && sp_decode_fixups (d, &w, err) != 0) {
		rc = -1;
		d->unfit = true;
	}
	sp_walk_free (&w);
	free (d->pending);
	if (rc == 0)
		return 0;
	return d->unfit ? SP_DECODE_UNFIT : SP_DECODE_DAMAGED;
}

int
sp_snapshot_decode (const uint8_t *data, size_t size, const SpDecodeOps *ops, void *ctx,
		    SpSnapshot *snap, SpError *err)
{
	SpDecode d = { .ops = ops, .ctx = ctx, .snap = snap };
	SpSnapHeader h;
	memset (snap, 0, sizeof *snap);
	if (sp_decode_ops_bound (ops, err) < 0)
		return SP_DECODE_UNFIT;
	if (sp_snapshot_check (data, size, &h, NULL, err) < 0)
		return SP_DECODE_DAMAGED;
	if (sp_header_is_delta (&h)) {
		sp_error_set (err, "snapshot %llu is a delta: it restores only with its chain", (unsigned long long)h.sequence);
		return SP_DECODE_DAMAGED;
	}
	return sp_decode_part (&d, data, size, err);
}

int
sp_chain_link_check (const SpSnapHeader *base, const SpSnapHeader *prev, const SpSnapTrailer *prev_trailer,
		     const SpSnapHeader *delta, SpError *err)
{
	if (!sp_header_is_delta (delta))
		return sp_error_set (err, "snapshot %llu follows %llu in a chain but is not a delta",
				     (unsigned long long)delta->sequence, (unsigned long long)prev->sequence);
	/* A folded base stands for the delta it replaced: the deltas after it name that delta's base and checksum. */
	bool base_ok = delta->base_sequence == base->sequence ||
		(sp_header_is_folded (base) && delta->base_sequence == base->fold_base);
	bool crc_ok = delta->prev_crc == prev_trailer->crc || (sp_header_is_folded (prev) && delta->prev_crc == prev->fold_crc);
	if (!base_ok || delta->prev_sequence != prev->sequence || !crc_ok || delta->prior_objects != prev_trailer->nobjects)
		return sp_error_set (err, "delta %llu does not apply to snapshot %llu (it names base %llu, previous %llu "
				     "with checksum %08x and %u objects; that one has checksum %08x and %u objects)",
				     (unsigned long long)delta->sequence, (unsigned long long)prev->sequence,
				     (unsigned long long)delta->base_sequence, (unsigned long long)delta->prev_sequence,
				     delta->prev_crc, delta->prior_objects,
				     sp_header_is_folded (prev) ? prev->fold_crc : prev_trailer->crc, prev_trailer->nobjects);
	return 0;
}

/*
 * Every part's checksum and header, and the links between them, before
 * anything is built.  A part the store verified as it loaded it is not
 * checksummed again: a restore used to read the whole snapshot twice for it
 * (40-45 us at 25,000 tree nodes, 817 KB; 35 MB at 1,000,000).
 */
static int
sp_chain_check (const SpChainPart *parts, size_t n, SpSnapTrailer *last, size_t *failed, SpError *err)
{
	SpSnapHeader base, prev, h;
	SpSnapTrailer prev_trailer, t;
	for (size_t i = 0; i < n; i++) {
		*failed = i;
		if (sp_snapshot_check_known (parts [i].data, parts [i].size, parts [i].verified, &h, &t, err) < 0 ||
		    sp_snapshot_counts_fit (&h, &t, parts [i].size, err) < 0)
			return -1;
		if (i == 0 && sp_header_is_delta (&h))
			return sp_error_set (err, "a chain starts at a full snapshot; %llu is a delta", (unsigned long long)h.sequence);
		if (i > 0 && sp_chain_link_check (&base, &prev, &prev_trailer, &h, err) < 0)
			return -1;
		if (i == 0)
			base = h;
		prev = h;
		prev_trailer = t;
	}
	*last = t;
	return 0;
}

int
sp_chain_decode (const SpChainPart *parts, size_t n, const SpDecodeOps *ops, void *ctx,
		 SpSnapshot *last, size_t *failed, SpError *err)
{
	SpSnapTrailer room;
	memset (last, 0, sizeof *last);
	*failed = 0;
	if (n == 0)
		return sp_error_set (err, "an empty chain"), SP_DECODE_DAMAGED;
	if (sp_decode_ops_bound (ops, err) < 0)
		return SP_DECODE_UNFIT;
	if (sp_chain_check (parts, n, &room, failed, err) < 0)
		return SP_DECODE_DAMAGED;
	*failed = 0;
	if (ops->begin (ctx, &room, err) < 0)
		return SP_DECODE_UNFIT;
	for (size_t i = 0; i < n; i++) {
		SpDecode d = { .ops = ops, .ctx = ctx, .snap = last, .room = &room };
		*failed = i;
		if (i > 0)
			sp_snapshot_free (last);
		int rc = sp_decode_part (&d, parts [i].data, parts [i].size, err);
		if (rc != 0)
			return rc;
	}
	return 0;
}
