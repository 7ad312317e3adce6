/* sp-snapshot.c: see sp-snapshot.h; the format is in sp-format.h and docs/FORMAT.md. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* strdup */
#endif
#include "sp-snapshot.h"

#include "sp-buf.h"
#include "sp-crc32c.h"

#include <stdlib.h>
#include <string.h>

/* ---- header and trailer ------------------------------------------------ */

void
sp_format_write_header (uint8_t out [SP_FORMAT_HEADER_SIZE], const SpSnapHeader *h)
{
	memcpy (out, SP_FORMAT_MAGIC, SP_FORMAT_MAGIC_LEN);
	sp_put_le (out + 8, SP_FORMAT_VERSION, 2);
	sp_put_le (out + 10, SP_FORMAT_HEADER_SIZE, 2);
	sp_put_le (out + 12, h->required_flags, 2);
	sp_put_le (out + 14, h->optional_flags, 2);
	sp_put_le (out + 16, h->sequence, 8);
	sp_put_le (out + 24, h->time_ns, 8);
	sp_put_le (out + 32, h->base_sequence, 8);
}

void
sp_format_write_trailer (uint8_t out [SP_FORMAT_TRAILER_SIZE], const SpSnapTrailer *t)
{
	out [0] = SP_REC_END;
	sp_put_le (out + 1, t->nclasses, 4);
	sp_put_le (out + 5, t->nobjects, 4);
	sp_put_le (out + 9, t->nroots, 4);
	sp_put_le (out + 13, t->crc, 4);
}

int
sp_snapshot_check (const uint8_t *data, size_t size, SpSnapHeader *header, SpSnapTrailer *trailer, SpError *err)
{
	if (size < SP_FORMAT_HEADER_SIZE + SP_FORMAT_TRAILER_SIZE)
		return sp_error_set (err, "truncated: %zu bytes is shorter than an empty snapshot", size);
	if (memcmp (data, SP_FORMAT_MAGIC, SP_FORMAT_MAGIC_LEN) != 0)
		return sp_error_set (err, "not an spmono snapshot (bad magic number)");
	SpSnapHeader h = {
		.version = (uint16_t)sp_get_le (data + 8, 2),
		.header_size = (uint16_t)sp_get_le (data + 10, 2),
		.required_flags = (uint16_t)sp_get_le (data + 12, 2),
		.optional_flags = (uint16_t)sp_get_le (data + 14, 2),
		.sequence = sp_get_le (data + 16, 8),
		.time_ns = sp_get_le (data + 24, 8),
		.base_sequence = sp_get_le (data + 32, 8),
	};
	const uint8_t *t = data + size - SP_FORMAT_TRAILER_SIZE;
	SpSnapTrailer tr = {
		.nclasses = (uint32_t)sp_get_le (t + 1, 4),
		.nobjects = (uint32_t)sp_get_le (t + 5, 4),
		.nroots = (uint32_t)sp_get_le (t + 9, 4),
		.crc = (uint32_t)sp_get_le (t + 13, 4),
	};
	/* The checksum first: a damaged file gets the one message that says so. */
	uint32_t crc = sp_crc32c (0, data, size - 4);
	if (crc != tr.crc)
		return sp_error_set (err, "checksum mismatch (stored %08x, computed %08x): the file is damaged or incomplete", tr.crc, crc);
	if (t [0] != SP_REC_END)
		return sp_error_set (err, "malformed snapshot: no trailer record at byte %zu", size - SP_FORMAT_TRAILER_SIZE);
	if (h.version != SP_FORMAT_VERSION)
		return sp_error_set (err, "format version %u is not supported (this spmono reads version %u)", h.version, SP_FORMAT_VERSION);
	if (h.header_size < SP_FORMAT_HEADER_SIZE || h.header_size > size - SP_FORMAT_TRAILER_SIZE)
		return sp_error_set (err, "header size %u is out of range", h.header_size);
	if (h.required_flags & ~SP_FLAGS_KNOWN)
		return sp_error_set (err, "snapshot needs features this spmono lacks (flags %#x)", h.required_flags);
	if (header)
		*header = h;
	if (trailer)
		*trailer = tr;
	return 0;
}

/* ---- parsing ----------------------------------------------------------- */

typedef struct SpParse {
	SpSnapshot *snap;
	SpReader r;
	uint32_t classes_seen;
	uint32_t roots_seen;
	SpError *err;
} SpParse;

static int
sp_parse_fail (SpParse *p, const char *what)
{
	return sp_error_set (p->err, "malformed snapshot at byte %zu: %s", sp_reader_offset (&p->r), what);
}

static char *
sp_parse_name (SpParse *p)
{
	char tmp [SP_MAX_NAME + 1];
	sp_reader_str (&p->r, tmp, sizeof tmp);
	return p->r.bad ? NULL : strdup (tmp);
}

/* Values on the wire: one block of primitives, then the references; as validation steps. */
static int
sp_parse_plan_steps (SpParse *p, SpSnapClass *c)
{
	c->steps = calloc (c->nfields + 1, sizeof *c->steps);
	if (!c->steps)
		return sp_error_set (p->err, "out of memory reading the class cache");
	uint32_t n = 0;
	c->prim_bytes = 0;
	for (uint32_t i = 0; i < c->nfields; i++)
		c->prim_bytes += sp_kind_size (c->fields [i].kind);
	if (c->prim_bytes)
		c->steps [n++] = c->prim_bytes;
	for (uint32_t i = 0; i < c->nfields; i++)
		if (c->fields [i].kind == SP_KIND_REF)
			c->steps [n++] = 0;
	c->nsteps = n;
	return 0;
}

static int
sp_parse_class (SpParse *p)
{
	SpSnapshot *s = p->snap;
	uint64_t id = sp_reader_varint (&p->r);
	if (p->r.bad || id != (uint64_t)p->classes_seen + 1 || id > s->trailer.nclasses)
		return sp_parse_fail (p, "class id out of order or beyond the class count");
	SpSnapClass *c = &s->classes [id];
	p->classes_seen++;
	c->kind = sp_reader_u8 (&p->r);
	if (c->kind != SP_CLASS_OBJECT && c->kind != SP_CLASS_ARRAY)
		return sp_parse_fail (p, "unknown class kind");
	c->assembly = sp_parse_name (p);
	c->name = sp_parse_name (p);
	uint64_t nfields = sp_reader_varint (&p->r);
	/* Each field takes at least 2 bytes, which bounds the allocation by the input. */
	if (p->r.bad || !c->assembly || !c->name || nfields > SP_MAX_FIELDS || nfields > sp_reader_left (&p->r) / 2)
		return sp_parse_fail (p, "bad class name or field count");
	if (c->kind == SP_CLASS_ARRAY && nfields == 0)
		return sp_parse_fail (p, "array class without an element layout");
	c->nfields = (uint32_t)nfields;
	c->fields = calloc (nfields ? nfields : 1, sizeof *c->fields);
	if (!c->fields)
		return sp_error_set (p->err, "out of memory reading the class cache");
	uint32_t wire = 0;
	bool has_ref = false;
	for (uint32_t i = 0; i < c->nfields; i++) {
		SpField *f = &c->fields [i];
		f->name = sp_parse_name (p);
		f->kind = sp_reader_u8 (&p->r);
		if (p->r.bad || !f->name || !sp_kind_valid (f->kind))
			return sp_parse_fail (p, "bad field in the class cache");
		if (f->kind == SP_KIND_REF) {
			has_ref = true;
			f->type_name = sp_parse_name (p);
			if (!f->type_name)
				return sp_parse_fail (p, "bad field type name");
		}
		wire += sp_kind_size (f->kind);
	}
	c->wire_size = has_ref ? 0 : wire;
	return sp_parse_plan_steps (p, c);
}

/* Claim lid for a new object of `kind`; returns the object or NULL (error set). */
static SpSnapObject *
sp_parse_new_object (SpParse *p, uint8_t kind)
{
	uint64_t lid = sp_reader_varint (&p->r);
	if (p->r.bad || lid == 0 || lid > p->snap->trailer.nobjects) {
		sp_parse_fail (p, "object id out of range");
		return NULL;
	}
	SpSnapObject *o = &p->snap->objects [lid];
	if (o->kind) {
		sp_parse_fail (p, "object id defined twice");
		return NULL;
	}
	o->kind = kind;
	return o;
}

static int
sp_parse_class_ref (SpParse *p, SpSnapObject *o, uint8_t want_kind)
{
	uint64_t id = sp_reader_varint (&p->r);
	if (p->r.bad || id == 0 || id > p->classes_seen || p->snap->classes [id].kind != want_kind)
		return sp_parse_fail (p, "object refers to an undefined class or one of the wrong kind");
	o->class_id = (uint32_t)id;
	return 0;
}

/* Values of one instance or element: skip primitives, check references. */
static int
sp_parse_values (SpParse *p, const SpSnapClass *c, uint64_t count)
{
	if (c->wire_size) {
		if (count > sp_reader_left (&p->r) / c->wire_size)
			return sp_parse_fail (p, "values run past the end");
		sp_reader_take (&p->r, (size_t)(count * c->wire_size));
		return 0;
	}
	uint32_t nobjects = p->snap->trailer.nobjects;
	for (uint64_t n = 0; n < count; n++) {
		for (uint32_t i = 0; i < c->nsteps; i++) {
			if (c->steps [i] > 0) {
				sp_reader_take (&p->r, c->steps [i]);
			} else if (sp_reader_varint (&p->r) > nobjects) {
				return sp_parse_fail (p, "reference to an object id beyond the object count");
			}
		}
		if (p->r.bad)
			return sp_parse_fail (p, "values run past the end");
	}
	return 0;
}

/* One piece of a STRING or ARRAY, continuing at o->filled. */
static int
sp_parse_piece (SpParse *p, SpSnapObject *o)
{
	uint64_t count = sp_reader_varint (&p->r);
	if (p->r.bad || count > o->length - o->filled)
		return sp_parse_fail (p, "piece longer than what is left of its object");
	o->filled += count;
	if (o->kind == SP_CLASS_ARRAY)
		return sp_parse_values (p, &p->snap->classes [o->class_id], count);
	uint8_t enc = sp_reader_u8 (&p->r);
	if (enc != SP_STR_LATIN1 && enc != SP_STR_UTF16LE)
		return sp_parse_fail (p, "unknown string encoding");
	uint64_t bytes = enc == SP_STR_LATIN1 ? count : count * 2;
	if (bytes > sp_reader_left (&p->r))
		return sp_parse_fail (p, "string runs past the end");
	sp_reader_take (&p->r, (size_t)bytes);
	return 0;
}

static int
sp_parse_sized (SpParse *p, uint8_t kind)
{
	SpSnapObject *o = sp_parse_new_object (p, kind);
	if (!o)
		return -1;
	if (kind == SP_CLASS_ARRAY && sp_parse_class_ref (p, o, SP_CLASS_ARRAY) < 0)
		return -1;
	o->length = sp_reader_varint (&p->r);
	if (p->r.bad || o->length > SP_MAX_LENGTH)
		return sp_parse_fail (p, "length out of range");
	o->body = sp_reader_offset (&p->r);
	return sp_parse_piece (p, o);
}

static int
sp_parse_elems (SpParse *p)
{
	SpSnapshot *s = p->snap;
	uint64_t lid = sp_reader_varint (&p->r);
	uint64_t start = sp_reader_varint (&p->r);
	if (p->r.bad || lid == 0 || lid > s->trailer.nobjects)
		return sp_parse_fail (p, "chunk of an object id out of range");
	SpSnapObject *o = &s->objects [lid];
	if ((o->kind != SP_CLASS_ARRAY && o->kind != SP_CLASS_STRING) || start != o->filled)
		return sp_parse_fail (p, "chunk does not continue a string or array in order");
	if (s->nchunks == s->chunk_cap) {
		/* Every chunk record takes at least 4 bytes: growth is bounded by the input. */
		uint32_t cap = s->chunk_cap ? s->chunk_cap * 2 : 64;
		SpSnapChunk *chunks = realloc (s->chunks, (size_t)cap * sizeof *chunks);
		if (!chunks)
			return sp_error_set (p->err, "out of memory indexing chunks");
		s->chunks = chunks;
		s->chunk_cap = cap;
	}
	SpSnapChunk *ch = &s->chunks [s->nchunks++];
	ch->piece = sp_reader_offset (&p->r);
	ch->start = start;
	ch->next = 0;
	if (o->last_chunk)
		s->chunks [o->last_chunk - 1].next = s->nchunks;
	else
		o->next_chunk = s->nchunks;
	o->last_chunk = s->nchunks;
	return sp_parse_piece (p, o);
}

static int
sp_parse_root (SpParse *p)
{
	SpSnapshot *s = p->snap;
	uint64_t id = sp_reader_varint (&p->r);
	uint64_t lid = sp_reader_varint (&p->r);
	if (p->r.bad || id == 0 || id > SP_MAX_ROOT_ID || lid > s->trailer.nobjects || p->roots_seen >= s->trailer.nroots)
		return sp_parse_fail (p, "root id or object id out of range");
	s->roots [p->roots_seen].id = (uint32_t)id;
	s->roots [p->roots_seen].lid = (uint32_t)lid;
	p->roots_seen++;
	return 0;
}

static int
sp_parse_extension (SpParse *p)
{
	uint64_t len = sp_reader_varint (&p->r);
	if (p->r.bad || len > sp_reader_left (&p->r))
		return sp_parse_fail (p, "extension record runs past the end");
	sp_reader_take (&p->r, (size_t)len);
	return 0;
}

static int
sp_parse_record (SpParse *p, uint8_t tag)
{
	SpSnapObject *o;
	switch (tag) {
	case SP_REC_CLASS: return sp_parse_class (p);
	case SP_REC_OBJECT:
		if (!(o = sp_parse_new_object (p, SP_CLASS_OBJECT)) || sp_parse_class_ref (p, o, SP_CLASS_OBJECT) < 0)
			return -1;
		o->body = sp_reader_offset (&p->r);
		return sp_parse_values (p, &p->snap->classes [o->class_id], 1);
	case SP_REC_STRING: return sp_parse_sized (p, SP_CLASS_STRING);
	case SP_REC_ARRAY: return sp_parse_sized (p, SP_CLASS_ARRAY);
	case SP_REC_ELEMS: return sp_parse_elems (p);
	case SP_REC_ROOT: return sp_parse_root (p);
	default:
		if (tag >= SP_REC_EXTENSION_FIRST)
			return sp_parse_extension (p);
		return sp_parse_fail (p, "unknown record type");
	}
}

static int
sp_root_id_cmp (const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* Root ids are unique: sort a copy (O(n log n), not O(n^2) on hostile input). */
static int
sp_parse_unique_roots (SpParse *p)
{
	SpSnapshot *s = p->snap;
	if (p->roots_seen < 2)
		return 0;
	uint32_t *ids = malloc ((size_t)p->roots_seen * sizeof *ids);
	if (!ids)
		return sp_error_set (p->err, "out of memory checking root ids");
	for (uint32_t i = 0; i < p->roots_seen; i++)
		ids [i] = s->roots [i].id;
	qsort (ids, p->roots_seen, sizeof *ids, sp_root_id_cmp);
	for (uint32_t i = 1; i < p->roots_seen; i++) {
		if (ids [i] == ids [i - 1]) {
			uint32_t dup = ids [i];
			free (ids);
			return sp_error_set (p->err, "malformed snapshot: root id %u defined twice", dup);
		}
	}
	free (ids);
	return 0;
}

/* After the last record: everything promised is there, and complete. */
static int
sp_parse_complete (SpParse *p)
{
	SpSnapshot *s = p->snap;
	if (p->classes_seen != s->trailer.nclasses || p->roots_seen != s->trailer.nroots)
		return sp_error_set (p->err, "malformed snapshot: trailer counts %u classes and %u roots, body has %u and %u",
				     s->trailer.nclasses, s->trailer.nroots, p->classes_seen, p->roots_seen);
	if (sp_parse_unique_roots (p) < 0)
		return -1;
	for (uint32_t lid = 1; lid <= s->trailer.nobjects; lid++) {
		const SpSnapObject *o = &s->objects [lid];
		if (!o->kind)
			return sp_error_set (p->err, "malformed snapshot: object %u is referred to but never defined", lid);
		if (o->kind != SP_CLASS_OBJECT && o->filled != o->length)
			return sp_error_set (p->err, "malformed snapshot: object %u has %llu of %llu elements", lid,
					     (unsigned long long)o->filled, (unsigned long long)o->length);
	}
	return 0;
}

/* Allocations sized by trailer counts, which were bounded by the input size first. */
static int
sp_parse_alloc (SpSnapshot *s, size_t body_size, SpError *err)
{
	const SpSnapTrailer *t = &s->trailer;
	/* Smallest records: an object 3 bytes, a class 6, a root 3. */
	if (t->nobjects > body_size / 3 || t->nclasses > body_size / 6 || t->nroots > body_size / 3)
		return sp_error_set (err, "malformed snapshot: counts (%u objects, %u classes, %u roots) exceed what %zu bytes can hold",
				     t->nobjects, t->nclasses, t->nroots, body_size);
	s->objects = calloc ((size_t)t->nobjects + 1, sizeof *s->objects);
	s->classes = calloc ((size_t)t->nclasses + 1, sizeof *s->classes);
	s->roots = calloc ((size_t)t->nroots + 1, sizeof *s->roots);
	if (!s->objects || !s->classes || !s->roots)
		return sp_error_set (err, "out of memory: snapshot index for %u objects", t->nobjects);
	return 0;
}

int
sp_snapshot_parse (const uint8_t *data, size_t size, SpSnapshot *snap, SpError *err)
{
	memset (snap, 0, sizeof *snap);
	snap->data = data;
	snap->size = size;
	if (sp_snapshot_check (data, size, &snap->header, &snap->trailer, err) < 0)
		return -1;
	size_t body_size = size - snap->header.header_size - SP_FORMAT_TRAILER_SIZE;
	if (sp_parse_alloc (snap, body_size, err) < 0)
		goto fail;
	SpParse p = { .snap = snap, .err = err };
	sp_reader_init (&p.r, data, size - SP_FORMAT_TRAILER_SIZE);
	sp_reader_take (&p.r, snap->header.header_size);
	while (sp_reader_left (&p.r) > 0) {
		if (sp_parse_record (&p, sp_reader_u8 (&p.r)) < 0)
			goto fail;
		if (p.r.bad) {
			sp_parse_fail (&p, "record runs past the end");
			goto fail;
		}
	}
	if (sp_parse_complete (&p) < 0)
		goto fail;
	return 0;
fail:
	sp_snapshot_free (snap);
	return -1;
}

void
sp_snapshot_free (SpSnapshot *snap)
{
	if (snap->classes) {
		for (uint32_t i = 1; i <= snap->trailer.nclasses; i++) {
			SpSnapClass *c = &snap->classes [i];
			for (uint32_t f = 0; c->fields && f < c->nfields; f++) {
				free ((char *)c->fields [f].name);
				free ((char *)c->fields [f].type_name);
			}
			free (c->fields);
			free (c->steps);
			free (c->assembly);
			free (c->name);
		}
	}
	free (snap->classes);
	free (snap->objects);
	free (snap->roots);
	free (snap->chunks);
	memset (snap, 0, sizeof *snap);
}

/* ---- restore helpers --------------------------------------------------- */

int
sp_snapshot_class_matches (const SpSnapClass *sc, const SpClass *live, SpError *err)
{
	for (uint32_t i = 0; i < sc->nfields || i < live->nfields; i++) {
		const SpField *a = i < sc->nfields ? &sc->fields [i] : NULL;
		const SpField *b = i < live->nfields ? &live->fields [i] : NULL;
		if (!a)
			return sp_error_set (err, "class %s has a persistent field '%s' (%s) that the snapshot lacks: its layout changed",
					     sc->name, b->name, sp_kind_name (b->kind));
		if (!b)
			return sp_error_set (err, "the snapshot's class %s has a persistent field '%s' (%s) that the loaded class lacks: its layout changed",
					     sc->name, a->name, sp_kind_name (a->kind));
		if (strcmp (a->name, b->name) != 0 || a->kind != b->kind)
			return sp_error_set (err, "class %s: persistent field %u is '%s' (%s) in the snapshot but '%s' (%s) in the loaded class: its layout changed",
					     sc->name, i, a->name, sp_kind_name (a->kind), b->name, sp_kind_name (b->kind));
		if (a->kind == SP_KIND_REF && strcmp (a->type_name, b->type_name ? b->type_name : "") != 0)
			return sp_error_set (err, "class %s: field '%s' has type %s in the snapshot but %s in the loaded class: its layout changed",
					     sc->name, a->name, a->type_name, b->type_name);
	}
	return 0;
}

/* Walk the pieces of object lid: the inline one, then its ELEMS chunks. */
typedef void (*SpPieceFn) (void *ctx, SpReader *r, uint64_t start, uint64_t count);

static void
sp_snapshot_pieces (const SpSnapshot *snap, uint32_t lid, SpPieceFn fn, void *ctx)
{
	const SpSnapObject *o = &snap->objects [lid];
	SpReader r;
	sp_reader_init (&r, snap->data, snap->size);
	r.pos = snap->data + o->body;
	uint64_t count = sp_reader_varint (&r);
	fn (ctx, &r, 0, count);
	for (uint32_t c = o->next_chunk; c; c = snap->chunks [c - 1].next) {
		const SpSnapChunk *ch = &snap->chunks [c - 1];
		r.pos = snap->data + ch->piece;
		count = sp_reader_varint (&r);
		fn (ctx, &r, ch->start, count);
	}
}

static void
sp_string_piece (void *ctx, SpReader *r, uint64_t start, uint64_t count)
{
	uint16_t *dst = (uint16_t *)ctx + start;
	uint8_t enc = sp_reader_u8 (r);
	const uint8_t *src = sp_reader_take (r, enc == SP_STR_LATIN1 ? count : count * 2);
	for (uint64_t i = 0; src && i < count; i++)
		dst [i] = enc == SP_STR_LATIN1 ? src [i] : (uint16_t)sp_get_le (src + 2 * i, 2);
}

void
sp_snapshot_string_chars (const SpSnapshot *snap, uint32_t lid, uint16_t *dst)
{
	sp_snapshot_pieces (snap, lid, sp_string_piece, dst);
}

typedef struct SpFill {
	const SpClass *live;
	uint32_t prim_bytes;     /* of one instance/element on the wire */
	unsigned parts;
	uint8_t *base;
	SpStoreRefFn store_ref;
	void *ctx;
	SpError *err;
	int rc;
} SpFill;

/*
 * Filling runs only on a snapshot sp_snapshot_parse validated, so values are
 * read with a bare pointer: every length and varint was checked once already.
 */
static inline uint32_t
sp_fill_lid (const uint8_t **pp)
{
	const uint8_t *p = *pp;
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;
	do {
		b = *p++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	*pp = p;
	return (uint32_t)v;        /* validated: at most nobjects */
}

static void
sp_fill_values (SpFill *f, const uint8_t **pp, uint8_t *dst)
{
	const uint8_t *p = *pp;
	const SpField *fields = f->live->fields;
	uint32_t n = f->live->nfields;
	if (f->parts & SP_FILL_PRIMITIVES) {
		for (uint32_t i = 0; i < n; i++) {
			unsigned kind = fields [i].kind;
			if (kind != SP_KIND_REF) {
				sp_kind_copy (dst + fields [i].offset, p, kind);
				p += sp_kind_size (kind);
			}
		}
	} else {
		p += f->prim_bytes;       /* the primitives are one block on the wire */
	}
	for (uint32_t i = 0; i < n; i++) {
		if (fields [i].kind != SP_KIND_REF)
			continue;
		uint32_t lid = sp_fill_lid (&p);
		if ((f->parts & SP_FILL_REFERENCES) &&
		    (f->rc = f->store_ref (f->ctx, dst + fields [i].offset, &fields [i], lid, f->err)) != 0)
			break;
	}
	*pp = p;
}

static void
sp_fill_piece (void *ctx, SpReader *r, uint64_t start, uint64_t count)
{
	SpFill *f = ctx;
	uint8_t *dst = f->base + start * f->live->elem_size;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (sp_class_is_primitive_array (f->live) && f->live->fields [0].kind != SP_KIND_BOOL) {
		if (!(f->parts & SP_FILL_PRIMITIVES))
			return;
		const uint8_t *src = sp_reader_take (r, (size_t)count * f->live->elem_size);
		if (src)
			memcpy (dst, src, (size_t)count * f->live->elem_size);
		return;
	}
#endif
	const uint8_t *p = r->pos;
	for (uint64_t i = 0; i < count && f->rc == 0; i++)
		sp_fill_values (f, &p, dst + i * f->live->elem_size);
	r->pos = p;
}

bool
sp_snapshot_has_references (const SpSnapshot *snap, uint32_t lid)
{
	const SpSnapObject *o = &snap->objects [lid];
	return o->kind != SP_CLASS_STRING && snap->classes [o->class_id].wire_size == 0;
}

int
sp_snapshot_fill (const SpSnapshot *snap, uint32_t lid, void *base, const SpClass *live,
		  SpStoreRefFn store_ref, void *ctx, SpError *err)
{
	return sp_snapshot_fill_parts (snap, lid, base, live, SP_FILL_PRIMITIVES | SP_FILL_REFERENCES, store_ref, ctx, err);
}

int
sp_snapshot_fill_parts (const SpSnapshot *snap, uint32_t lid, void *base, const SpClass *live,
			unsigned parts, SpStoreRefFn store_ref, void *ctx, SpError *err)
{
	const SpSnapObject *o = &snap->objects [lid];
	SpFill f = { .live = live, .parts = parts, .base = base, .store_ref = store_ref, .ctx = ctx, .err = err };
	if (o->kind != SP_CLASS_STRING)
		f.prim_bytes = snap->classes [o->class_id].prim_bytes;
	if (o->kind == SP_CLASS_OBJECT) {
		const uint8_t *p = snap->data + o->body;
		sp_fill_values (&f, &p, base);
	} else if (o->kind == SP_CLASS_ARRAY) {
		sp_snapshot_pieces (snap, lid, sp_fill_piece, &f);
	}
	return f.rc;
}

const char *
sp_kind_name (unsigned k)
{
	static const char *const names [SP_KIND_LAST + 1] = {
		"?", "bool", "char", "sbyte", "byte", "short", "ushort", "int", "uint",
		"long", "ulong", "float", "double", "reference",
	};
	return k <= SP_KIND_LAST ? names [k] : "?";
}
