/* sp-fold.c: see sp-fold.h; the format is docs/FORMAT.md's. */
#include "sp-fold.h"

#include "sp-crc32c.h"
#include "sp-format.h"
#include "sp-walk.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* Output is handed to `write` when this much is buffered: memory stays bounded however large the state. */
#define SP_FOLD_FLUSH_BYTES (1u << 20)

typedef struct SpFold {
	const SpChain *c;
	SpBuf out;
	uint32_t crc;            /* of what was written so far */
	uint64_t bytes;
	SpWriteFn write;
	void *write_ctx;
	uint32_t **ids;          /* [part][class id]: the folded file's id of that class */
	const SpSnapClass **classes; /* [folded id]: its description (one of the parts') */
	uint32_t nclasses;
	uint64_t *class_at;      /* [folded id - 1]: where its CLASS record is in the file (the class index) */
	SpError *err;
	int rc;
} SpFold;

static void
sp_fold_flush (SpFold *f, size_t at_least)
{
	if (f->rc < 0 || f->out.len < at_least)
		return;
	if (f->out.oom) {
		f->rc = sp_error_set (f->err, "out of memory folding a chain");
		return;
	}
	f->crc = sp_crc32c (f->crc, f->out.data, f->out.len);
	f->bytes += f->out.len;
	if (f->write (f->write_ctx, f->out.data, f->out.len, f->err) < 0)
		f->rc = -1;
	sp_buf_reset (&f->out);
}

/* Bytes of any length, flushed as they go (a long array's elements). */
static void
sp_fold_put_bytes (SpFold *f, const uint8_t *p, size_t n)
{
	while (n && f->rc == 0) {
		size_t room = f->out.len < SP_FOLD_FLUSH_BYTES ? SP_FOLD_FLUSH_BYTES - f->out.len : 0;
		size_t take = n < room ? n : room;
		sp_buf_put_bytes (&f->out, p, take);
		p += take;
		n -= take;
		sp_fold_flush (f, SP_FOLD_FLUSH_BYTES);
	}
}

/* ---- classes --------------------------------------------------------------- */

/* The folded id of each class of each part: one per distinct description, in order of first appearance. */
static int
sp_fold_map_classes (SpFold *f)
{
	const SpChain *c = f->c;
	size_t total = 0;
	for (size_t k = 0; k < c->n; k++)
		total += c->parts [k].snap.trailer.nclasses;
	f->ids = calloc (c->n, sizeof *f->ids);
	f->classes = calloc (total + 1, sizeof *f->classes);
	if (!f->ids || !f->classes)
		return sp_error_set (f->err, "out of memory folding a chain");
	for (size_t k = 0; k < c->n; k++) {
		const SpSnapshot *s = &c->parts [k].snap;
		f->ids [k] = calloc ((size_t)s->trailer.nclasses + 1, sizeof **f->ids);
		if (!f->ids [k])
			return sp_error_set (f->err, "out of memory folding a chain");
		for (uint32_t id = 1; id <= s->trailer.nclasses; id++) {
			uint32_t j = 1;
			while (j <= f->nclasses && !sp_snap_class_equal (f->classes [j], &s->classes [id]))
				j++;
			if (j > f->nclasses)
				f->classes [++f->nclasses] = &s->classes [id];
			f->ids [k][id] = j;
		}
	}
	return 0;
}

static void
sp_fold_put_classes (SpFold *f)
{
	if (!(f->class_at = calloc ((size_t)f->nclasses + 1, sizeof *f->class_at))) {
		f->rc = sp_error_set (f->err, "out of memory folding a chain");
		return;
	}
	for (uint32_t j = 1; j <= f->nclasses; j++) {
		const SpSnapClass *k = f->classes [j];
		f->class_at [j - 1] = f->bytes + f->out.len;
		sp_format_put_class (&f->out, j, k->kind, k->assembly, k->name, k->nfields, k->fields);
		sp_fold_flush (f, SP_FOLD_FLUSH_BYTES);
	}
}

/* An update must give an object the very description it had: a changed layout is not the fold's to resolve. */
static int
sp_fold_same_layout (SpFold *f, uint32_t lid, size_t def_part, uint32_t def_id, size_t part, uint32_t id)
{
	if (f->ids [def_part][def_id] == f->ids [part][id])
		return 0;
	return sp_error_set (f->err, "snapshot %" PRIu64 " gives #%" PRIu32 " (%s) another layout than snapshot %" PRIu64
			     " did: the chain cannot be folded", f->c->parts [part].seq, lid,
			     f->c->parts [def_part].snap.classes [def_id].name, f->c->parts [def_part].seq);
}

/* ---- objects --------------------------------------------------------------- */

/* An instance: its latest OBJECT record, with the folded class id. */
static void
sp_fold_instance (SpFold *f, uint32_t lid, size_t d)
{
	const SpChain *c = f->c;
	const SpSnapshot *s = &c->parts [d].snap;
	const SpSnapObject *obj = sp_snapshot_object_const (s, lid);
	size_t part = d;
	uint32_t id = obj->class_id;
	size_t body = obj->body;
	if (c->latest [lid]) {
		const SpChainUpdate *u = &c->updates [c->latest [lid] - 1];
		part = u->part;
		s = &c->parts [part].snap;
		id = s->changes [u->change].class_id;
		body = s->changes [u->change].body;
		if (sp_fold_same_layout (f, lid, d, obj->class_id, part, id) < 0) {
			f->rc = -1;
			return;
		}
	}
	const uint8_t *p = s->data + body;
	const uint8_t *end = sp_snap_class_skip (&s->classes [id], p);
	sp_buf_put_u8 (&f->out, SP_REC_OBJECT);
	sp_buf_put_varint (&f->out, lid);
	sp_buf_put_varint (&f->out, f->ids [part][id]);
	sp_fold_put_bytes (f, p, (size_t)(end - p));
}

/* Copying a string's or an unpatched array's pieces as they are: the first in its record, the others as ELEMS. */
typedef struct SpFoldPieces {
	SpFold *f;
	uint32_t lid;
	const SpSnapClass *c;    /* NULL: a string */
} SpFoldPieces;

static void
sp_fold_piece (void *ctx, SpReader *r, uint64_t start, uint64_t count)
{
	SpFoldPieces *p = ctx;
	SpFold *f = p->f;
	const uint8_t *from = r->pos, *to;
	if (!p->c) {
		uint8_t enc = *from;
		to = from + 1 + (size_t)count * (enc == SP_STR_LATIN1 ? 1 : 2);
	} else if (p->c->wire_size) {
		to = from + (size_t)count * p->c->wire_size;
	} else {
		to = from;
		for (uint64_t i = 0; i < count; i++)
			to = sp_snap_class_skip (p->c, to);
	}
	if (start) {
		sp_buf_put_u8 (&f->out, SP_REC_ELEMS);
		sp_buf_put_varint (&f->out, p->lid);
		sp_buf_put_varint (&f->out, start);
	}
	sp_buf_put_varint (&f->out, count);
	sp_fold_put_bytes (f, from, (size_t)(to - from));
}

static void
sp_fold_sized (SpFold *f, uint32_t lid, size_t d)
{
	const SpSnapshot *s = &f->c->parts [d].snap;
	const SpSnapObject *obj = sp_snapshot_object_const (s, lid);
	SpFoldPieces p = { .f = f, .lid = lid, .c = obj->kind == SP_CLASS_ARRAY ? &s->classes [obj->class_id] : NULL };
	sp_buf_put_u8 (&f->out, obj->kind == SP_CLASS_ARRAY ? SP_REC_ARRAY : SP_REC_STRING);
	sp_buf_put_varint (&f->out, lid);
	if (p.c)
		sp_buf_put_varint (&f->out, f->ids [d][obj->class_id]);
	sp_buf_put_varint (&f->out, obj->length);
	sp_snapshot_pieces (s, lid, sp_fold_piece, &p);
}

/*
 * A patched array: where each element's latest encoding is (its defining
 * pieces, then every patch in chain order over them), then the elements in
 * one piece.  Elements of a fixed size are gathered into one buffer (a long
 * primitive array: its bytes once); others by a pointer each.
 */
typedef struct SpFoldSlots {
	const SpSnapClass *c;
	const uint8_t **at;      /* variable-size elements: each one's encoding */
	uint8_t *bytes;          /* fixed-size elements, gathered */
} SpFoldSlots;

static void
sp_fold_slots_fill (SpFoldSlots *s, const uint8_t *p, uint64_t start, uint64_t count)
{
	if (s->bytes) {
		memcpy (s->bytes + start * s->c->wire_size, p, (size_t)count * s->c->wire_size);
		return;
	}
	for (uint64_t i = 0; i < count; i++) {
		s->at [start + i] = p;
		p = sp_snap_class_skip (s->c, p);
	}
}

static void
sp_fold_slots_piece (void *ctx, SpReader *r, uint64_t start, uint64_t count)
{
	sp_fold_slots_fill (ctx, r->pos, start, count);
}

/* The array's updates, oldest first (the chain links them newest first). */
static size_t *
sp_fold_updates_of (const SpChain *c, uint32_t lid, size_t *n)
{
	*n = 0;
	for (size_t u = c->latest [lid]; u; u = c->updates [u - 1].prev)
		(*n)++;
	size_t *order = malloc (*n * sizeof *order);
	if (!order)
		return NULL;
	size_t i = *n;
	for (size_t u = c->latest [lid]; u; u = c->updates [u - 1].prev)
		order [--i] = u - 1;
	return order;
}

static int
sp_fold_patch_all (SpFold *f, uint32_t lid, size_t d, SpFoldSlots *slots)
{
	const SpChain *c = f->c;
	const SpSnapObject *obj = sp_snapshot_object_const (&c->parts [d].snap, lid);
	size_t n;
	size_t *order = sp_fold_updates_of (c, lid, &n);
	if (!order)
		return sp_error_set (f->err, "out of memory folding a chain");
	int rc = 0;
	for (size_t i = 0; i < n && rc == 0; i++) {
		const SpChainUpdate *u = &c->updates [order [i]];
		const SpSnapshot *ps = &c->parts [u->part].snap;
		const SpSnapChange *ch = &ps->changes [u->change];
		rc = sp_fold_same_layout (f, lid, d, obj->class_id, u->part, ch->class_id);
		const uint8_t *p = ps->data + ch->body;
		(void)sp_trusted_varint (&p);          /* the piece's count: ch->count */
		if (rc == 0)
			sp_fold_slots_fill (slots, p, ch->start, ch->count);
	}
	free (order);
	return rc;
}

/* Patched array lid (defined by part d): its elements' latest encodings in *slots (free them with sp_fold_slots_free). */
static int
sp_fold_gather (SpFold *f, uint32_t lid, size_t d, SpFoldSlots *slots)
{
	const SpSnapshot *s = &f->c->parts [d].snap;
	const SpSnapObject *obj = sp_snapshot_object_const (s, lid);
	*slots = (SpFoldSlots){ .c = &s->classes [obj->class_id] };
	size_t n = (size_t)obj->length ? (size_t)obj->length : 1;
	if (slots->c->wire_size)
		slots->bytes = malloc (n * slots->c->wire_size);
	else
		slots->at = malloc (n * sizeof *slots->at);
	if (!slots->bytes && !slots->at)
		return sp_error_set (f->err, "out of memory folding array #%" PRIu32 " (%" PRIu64 " elements)", lid, obj->length);
	sp_snapshot_pieces (s, lid, sp_fold_slots_piece, slots);
	return sp_fold_patch_all (f, lid, d, slots);
}

static void
sp_fold_slots_free (SpFoldSlots *slots)
{
	free (slots->bytes);
	free (slots->at);
}

static void
sp_fold_patched (SpFold *f, uint32_t lid, size_t d)
{
	const SpSnapshot *s = &f->c->parts [d].snap;
	const SpSnapObject *obj = sp_snapshot_object_const (s, lid);
	SpFoldSlots slots;
	if (sp_fold_gather (f, lid, d, &slots) < 0) {
		f->rc = -1;
	} else {
		sp_buf_put_u8 (&f->out, SP_REC_ARRAY);
		sp_buf_put_varint (&f->out, lid);
		sp_buf_put_varint (&f->out, f->ids [d][obj->class_id]);
		sp_buf_put_varint (&f->out, obj->length);
		sp_buf_put_varint (&f->out, obj->length);
		if (slots.bytes)
			sp_fold_put_bytes (f, slots.bytes, (size_t)obj->length * slots.c->wire_size);
		for (uint64_t i = 0; slots.at && i < obj->length && f->rc == 0; i++)
			sp_fold_put_bytes (f, slots.at [i], (size_t)(sp_snap_class_skip (slots.c, slots.at [i]) - slots.at [i]));
	}
	sp_fold_slots_free (&slots);
}

/* Object lid, which part d defines. */
static void
sp_fold_object (SpFold *f, uint32_t lid, size_t d)
{
	uint8_t kind = sp_snapshot_object_const (&f->c->parts [d].snap, lid)->kind;
	if (kind == SP_CLASS_OBJECT)
		sp_fold_instance (f, lid, d);
	else if (kind == SP_CLASS_ARRAY && f->c->latest [lid])
		sp_fold_patched (f, lid, d);
	else
		sp_fold_sized (f, lid, d);
	sp_fold_flush (f, SP_FOLD_FLUSH_BYTES);
}

/* ---- what the roots reach ----------------------------------------------------- */

/* A breadth-first walk of the folded state from its roots: which LIDs it reaches. */
typedef struct SpFoldReach {
	SpFold *f;
	uint8_t *seen;           /* [lid] */
	uint32_t *queue;         /* LIDs seen, in order: each is queued once, so nobjects + 1 fit */
	uint32_t head, tail;
	const SpSnapClass *c;    /* the class whose elements sp_fold_reach_piece reads */
} SpFoldReach;

static void
sp_fold_reach_lid (SpFoldReach *r, uint32_t lid)
{
	if (lid && !r->seen [lid]) {
		r->seen [lid] = 1;
		r->queue [r->tail++] = lid;
	}
}

/* The references of one instance or element of c at p (they follow its primitives). */
static const uint8_t *
sp_fold_reach_values (SpFoldReach *r, const SpSnapClass *c, const uint8_t *p)
{
	p += c->prim_bytes;
	for (uint32_t i = 0; i < c->nfields; i++)
		if (c->fields [i].kind == SP_KIND_REF)
			sp_fold_reach_lid (r, (uint32_t)sp_trusted_varint (&p));
	return p;
}

static void
sp_fold_reach_piece (void *ctx, SpReader *rd, uint64_t start, uint64_t count)
{
	SpFoldReach *r = ctx;
	(void)start;
	const uint8_t *p = rd->pos;
	for (uint64_t i = 0; i < count; i++)
		p = sp_fold_reach_values (r, r->c, p);
}

/* What object lid refers to in the folded state (its latest record; a patched array's latest elements). */
static int
sp_fold_reach_from (SpFoldReach *r, uint32_t lid)
{
	const SpChain *c = r->f->c;
	size_t d = sp_chain_definer (c, lid);
	const SpSnapshot *s = &c->parts [d].snap;
	const SpSnapObject *obj = sp_snapshot_object_const (s, lid);
	if (obj->kind == SP_CLASS_STRING)
		return 0;
	const SpSnapClass *cls = &s->classes [obj->class_id];
	if (obj->kind == SP_CLASS_OBJECT) {
		const uint8_t *body = s->data + obj->body;
		if (c->latest [lid]) {
			const SpChainUpdate *u = &c->updates [c->latest [lid] - 1];
			const SpSnapshot *us = &c->parts [u->part].snap;
			cls = &us->classes [us->changes [u->change].class_id];
			body = us->data + us->changes [u->change].body;
		}
		sp_fold_reach_values (r, cls, body);
		return 0;
	}
	if (cls->wire_size)                         /* no reference among its elements */
		return 0;
	r->c = cls;
	if (!c->latest [lid]) {
		sp_snapshot_pieces (s, lid, sp_fold_reach_piece, r);
		return 0;
	}
	SpFoldSlots slots;
	int rc = sp_fold_gather (r->f, lid, d, &slots);     /* cls has references: slots.at */
	for (uint64_t i = 0; rc == 0 && i < obj->length; i++)
		sp_fold_reach_values (r, cls, slots.at [i]);
	sp_fold_slots_free (&slots);
	return rc;
}

/* How many of the folded state's objects its roots do not reach. */
static int
sp_fold_count_unreached (SpFold *f, uint32_t *unreached)
{
	const SpSnapshot *last = &sp_chain_last (f->c)->snap;
	uint32_t n = last->trailer.nobjects;
	SpFoldReach r = { .f = f, .seen = calloc ((size_t)n + 1, 1), .queue = malloc (((size_t)n + 1) * sizeof *r.queue) };
	int rc = r.seen && r.queue ? 0 : sp_error_set (f->err, "out of memory counting what a chain's roots reach");
	for (uint32_t i = 0; rc == 0 && i < last->trailer.nroots; i++)
		sp_fold_reach_lid (&r, last->roots [i].lid);
	while (rc == 0 && r.head < r.tail)
		rc = sp_fold_reach_from (&r, r.queue [r.head++]);
	*unreached = n - r.tail;
	free (r.seen);
	free (r.queue);
	return rc;
}

/* ---- the file ------------------------------------------------------------------ */

static void
sp_fold_header (SpFold *f)
{
	const SpChainFile *last = sp_chain_last (f->c);
	SpSnapHeader h = {
		.optional_flags = SP_OPT_FOLDED | SP_OPT_CLASS_INDEX,
		.sequence = last->seq,
		.time_ns = last->snap.header.time_ns,
		.fold_base = last->snap.header.base_sequence,
		.fold_crc = last->snap.trailer.crc,
	};
	uint8_t *p = sp_buf_reserve (&f->out, SP_FORMAT_HEADER_MAX);
	if (p) {
		sp_format_write_header (p, &h);
		f->out.len += sp_format_header_size (&h);
	}
}

static void
sp_fold_trailer (SpFold *f, SpFoldResult *out)
{
	const SpSnapshot *last = &sp_chain_last (f->c)->snap;
	for (uint32_t i = 0; i < last->trailer.nroots; i++) {
		sp_buf_put_u8 (&f->out, SP_REC_ROOT);
		sp_buf_put_varint (&f->out, last->roots [i].id);
		sp_buf_put_varint (&f->out, last->roots [i].lid);
		sp_fold_flush (f, SP_FOLD_FLUSH_BYTES);
	}
	sp_format_put_class_index (&f->out, f->class_at, f->nclasses);
	SpSnapTrailer t = { .nclasses = f->nclasses, .nobjects = last->trailer.nobjects, .nroots = last->trailer.nroots };
	uint8_t *p = sp_buf_reserve (&f->out, SP_FORMAT_TRAILER_SIZE);
	if (!p || f->rc < 0)
		return;
	sp_format_write_trailer (p, &t);
	f->out.len += SP_FORMAT_TRAILER_SIZE - 4;
	t.crc = sp_crc32c (f->crc, f->out.data, f->out.len);
	sp_put_le (f->out.data + f->out.len, t.crc, 4);
	f->out.len += 4;
	sp_fold_flush (f, 0);
	*out = (SpFoldResult){ .bytes = f->bytes, .crc = t.crc, .objects = t.nobjects, .classes = f->nclasses };
}

int
sp_fold_write (const SpChain *c, SpWriteFn write, void *write_ctx, SpFoldResult *out, SpError *err)
{
	if (c->n < 2)
		return sp_error_set (err, "a chain of one snapshot has nothing to fold");
	SpFold f = { .c = c, .write = write, .write_ctx = write_ctx, .err = err };
	sp_buf_init (&f.out);
	f.rc = sp_fold_map_classes (&f);
	if (f.rc == 0) {
		sp_fold_header (&f);
		sp_fold_put_classes (&f);
	}
	/* In LID order, so the defining part only moves forward (a delta's new LIDs follow its prior ones). */
	uint32_t nobjects = sp_chain_last (c)->snap.trailer.nobjects;
	size_t d = 0;
	for (uint32_t lid = 1; lid <= nobjects && f.rc == 0; lid++) {
		while (c->ends [d] < lid)
			d++;
		sp_fold_object (&f, lid, d);
	}
	if (f.rc == 0)
		sp_fold_trailer (&f, out);
	if (f.rc == 0)
		f.rc = sp_fold_count_unreached (&f, &out->unreached);
	if (f.rc == 0 && f.out.oom)
		f.rc = sp_error_set (err, "out of memory folding a chain");
	for (size_t k = 0; f.ids && k < c->n; k++)
		free (f.ids [k]);
	free (f.ids);
	free (f.classes);
	free (f.class_at);
	sp_buf_free (&f.out);
	return f.rc;
}
