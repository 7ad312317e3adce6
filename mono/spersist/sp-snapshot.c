/* sp-snapshot.c: see sp-snapshot.h; the format is in sp-format.h and docs/FORMAT.md. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* strdup */
#endif
#include "sp-snapshot.h"
#include "sp-walk.h"

#include "sp-buf.h"
#include "sp-crc32c.h"

#include <stdlib.h>
#include <string.h>

/* ---- header and trailer ------------------------------------------------ */

void
sp_format_write_header (uint8_t out [SP_FORMAT_HEADER_MAX], const SpSnapHeader *h)
{
	bool delta = sp_header_is_delta (h);
	memcpy (out, SP_FORMAT_MAGIC, SP_FORMAT_MAGIC_LEN);
	sp_put_le (out + 8, delta ? SP_FORMAT_VERSION_DELTA : SP_FORMAT_VERSION, 2);
	sp_put_le (out + 10, sp_format_header_size (h), 2);
	sp_put_le (out + 12, h->required_flags, 2);
	sp_put_le (out + 14, h->optional_flags, 2);
	sp_put_le (out + 16, h->sequence, 8);
	sp_put_le (out + 24, h->time_ns, 8);
	sp_put_le (out + 32, h->base_sequence, 8);
	if (delta) {
		sp_put_le (out + 40, h->prev_sequence, 8);
		sp_put_le (out + SP_FORMAT_PREV_CRC_OFFSET, h->prev_crc, 4);
		sp_put_le (out + 52, h->prior_objects, 4);
	} else if (sp_header_is_folded (h)) {
		sp_put_le (out + 40, h->fold_base, 8);
		sp_put_le (out + 48, h->fold_crc, 4);
		sp_put_le (out + 52, 0, 4);
	}
}

void
sp_format_put_class (SpBuf *o, uint32_t id, uint8_t kind, const char *assembly, const char *name, uint32_t nfields,
		     const SpField *fields)
{
	sp_buf_put_u8 (o, SP_REC_CLASS);
	sp_buf_put_varint (o, id);
	sp_buf_put_u8 (o, kind);
	sp_buf_put_str (o, assembly);
	sp_buf_put_str (o, name);
	sp_buf_put_varint (o, nfields);
	for (uint32_t i = 0; i < nfields; i++) {
		const SpField *f = &fields [i];
		sp_buf_put_str (o, f->name);
		sp_buf_put_u8 (o, f->kind);
		if (f->kind == SP_KIND_REF)
			sp_buf_put_str (o, f->type_name ? f->type_name : "");
	}
}

void
sp_format_put_class_index (SpBuf *o, const uint64_t *offsets, uint32_t n)
{
	SpBuf body;
	sp_buf_init (&body);
	sp_buf_put_varint (&body, n);
	for (uint32_t i = 0; i < n; i++)
		sp_buf_put_varint (&body, i ? offsets [i] - offsets [i - 1] : offsets [0]);
	if (body.oom) {
		o->oom = true;
		sp_buf_free (&body);
		return;
	}
	uint64_t len = body.len + 4;
	size_t start = o->len;
	sp_buf_put_u8 (o, SP_REC_CLASS_INDEX);
	sp_buf_put_varint (o, len);
	sp_buf_put_bytes (o, body.data, body.len);
	uint8_t *size = sp_buf_reserve (o, 4);
	if (size) {
		sp_put_le (size, o->len + 4 - start, 4);   /* the whole record's bytes, these four included */
		o->len += 4;
	}
	sp_buf_free (&body);
}

/* Where the class index starts: from its size, the 4 bytes before the trailer; 0 when they cannot be one. */
static size_t
sp_class_index_start (const uint8_t *data, size_t size, const SpSnapHeader *h)
{
	size_t end = size - SP_FORMAT_TRAILER_SIZE;
	if (end < (size_t)h->header_size + 7)     /* the smallest index: tag, len, count, 4 bytes of size */
		return 0;
	uint32_t record = (uint32_t)sp_get_le (data + end - 4, 4);
	if (record < 7 || record > end - h->header_size)
		return 0;
	return end - record;
}

int
sp_format_read_class_index (const uint8_t *data, size_t size, const SpSnapHeader *h, const SpSnapTrailer *t,
			    uint64_t *offsets, size_t *index_at, SpError *err)
{
	size_t start = sp_class_index_start (data, size, h), end = size - SP_FORMAT_TRAILER_SIZE;
	if (!start || data [start] != SP_REC_CLASS_INDEX)
		return sp_error_set (err, "malformed snapshot: its header announces a class index that is not before the trailer");
	SpReader r;
	sp_reader_init (&r, data + start + 1, end - start - 1);
	uint64_t len = sp_reader_varint (&r);
	if (r.bad || len != sp_reader_left (&r) || len < 5)
		return sp_error_set (err, "malformed snapshot: the class index's length disagrees with its size");
	r.end -= 4;
	uint64_t n = sp_reader_varint (&r), at = 0;
	if (r.bad || n != t->nclasses)
		return sp_error_set (err, "malformed snapshot: the class index has %llu classes, the trailer %u",
				     (unsigned long long)n, t->nclasses);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t gap = sp_reader_varint (&r);
		/* A CLASS record takes at least 6 bytes: each starts after the one before, all after the header. */
		if (r.bad || gap > start || (i ? gap < 6 : gap < h->header_size) || (at += gap) > start - 6)
			return sp_error_set (err, "malformed snapshot: the class index's offset %u is out of range", i + 1);
		SpReader rec;
		sp_reader_init (&rec, data + at, start - at);
		uint8_t tag = sp_reader_u8 (&rec);
		if (tag != SP_REC_CLASS || sp_reader_varint (&rec) != i + 1 || rec.bad)
			return sp_error_set (err, "malformed snapshot: the class index gives byte %llu for class %u, where no such CLASS record starts",
					     (unsigned long long)at, i + 1);
		offsets [i] = at;
	}
	if (sp_reader_left (&r) != 0)
		return sp_error_set (err, "malformed snapshot: the class index has bytes beyond its offsets");
	*index_at = start;
	return 0;
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

/* A delta's place in its chain: before its own sequence, after its base. */
static int
sp_check_delta_header (const SpSnapHeader *h, SpError *err)
{
	if (h->version < SP_FORMAT_VERSION_DELTA || h->header_size < SP_FORMAT_DELTA_HEADER_SIZE)
		return sp_error_set (err, "a delta snapshot needs format version %u and a %u-byte header (has version %u, %u bytes)",
				     SP_FORMAT_VERSION_DELTA, SP_FORMAT_DELTA_HEADER_SIZE, h->version, h->header_size);
	if (h->base_sequence == 0 || h->prev_sequence < h->base_sequence || h->prev_sequence >= h->sequence)
		return sp_error_set (err, "delta snapshot %llu names an impossible chain (base %llu, previous %llu)",
				     (unsigned long long)h->sequence, (unsigned long long)h->base_sequence,
				     (unsigned long long)h->prev_sequence);
	return 0;
}

static void
sp_read_header (const uint8_t *data, SpSnapHeader *h)
{
	*h = (SpSnapHeader){
		.version = (uint16_t)sp_get_le (data + 8, 2),
		.header_size = (uint16_t)sp_get_le (data + 10, 2),
		.required_flags = (uint16_t)sp_get_le (data + 12, 2),
		.optional_flags = (uint16_t)sp_get_le (data + 14, 2),
		.sequence = sp_get_le (data + 16, 8),
		.time_ns = sp_get_le (data + 24, 8),
		.base_sequence = sp_get_le (data + 32, 8),
	};
	/* The delta fields are read only from a header long enough to hold them (checked by the caller). */
	if (sp_header_is_delta (h) && h->header_size >= SP_FORMAT_DELTA_HEADER_SIZE) {
		h->prev_sequence = sp_get_le (data + 40, 8);
		h->prev_crc = (uint32_t)sp_get_le (data + 48, 4);
		h->prior_objects = (uint32_t)sp_get_le (data + 52, 4);
	}
	/* A header too short for the fold fields is not taken as folded (the flag is only a hint). */
	if (sp_header_is_folded (h) && h->header_size >= SP_FORMAT_DELTA_HEADER_SIZE) {
		h->fold_base = sp_get_le (data + 40, 8);
		h->fold_crc = (uint32_t)sp_get_le (data + 48, 4);
	} else {
		h->optional_flags &= (uint16_t)~SP_OPT_FOLDED;
	}
}

/* sp_snapshot_check, with the checksum taken as verified when crc_known (the caller computed it). */
int
sp_snapshot_check_known (const uint8_t *data, size_t size, bool crc_known, SpSnapHeader *header, SpSnapTrailer *trailer,
			 SpError *err)
{
	if (size < SP_FORMAT_HEADER_SIZE + SP_FORMAT_TRAILER_SIZE)
		return sp_error_set (err, "truncated: %zu bytes is shorter than an empty snapshot", size);
	if (memcmp (data, SP_FORMAT_MAGIC, SP_FORMAT_MAGIC_LEN) != 0)
		return sp_error_set (err, "not an spmono snapshot (bad magic number)");
	SpSnapHeader h;
	const uint8_t *t = data + size - SP_FORMAT_TRAILER_SIZE;
	SpSnapTrailer tr = {
		.nclasses = (uint32_t)sp_get_le (t + 1, 4),
		.nobjects = (uint32_t)sp_get_le (t + 5, 4),
		.nroots = (uint32_t)sp_get_le (t + 9, 4),
		.crc = (uint32_t)sp_get_le (t + 13, 4),
	};
	/* The checksum first: a damaged file gets the one message that says so. */
	uint32_t crc = crc_known ? tr.crc : sp_crc32c (0, data, size - 4);
	if (crc != tr.crc)
		return sp_error_set (err, "checksum mismatch (stored %08x, computed %08x): the file is damaged or incomplete", tr.crc, crc);
	if (t [0] != SP_REC_END)
		return sp_error_set (err, "malformed snapshot: no trailer record at byte %zu", size - SP_FORMAT_TRAILER_SIZE);
	uint16_t version = (uint16_t)sp_get_le (data + 8, 2), header_size = (uint16_t)sp_get_le (data + 10, 2);
	if (version < SP_FORMAT_VERSION || version > SP_FORMAT_VERSION_MAX)
		return sp_error_set (err, "format version %u is not supported (this spmono reads versions %u to %u)", version,
				     SP_FORMAT_VERSION, SP_FORMAT_VERSION_MAX);
	if (header_size < SP_FORMAT_HEADER_SIZE || header_size > size - SP_FORMAT_TRAILER_SIZE)
		return sp_error_set (err, "header size %u is out of range", header_size);
	sp_read_header (data, &h);
	if (h.required_flags & ~SP_FLAGS_KNOWN)
		return sp_error_set (err, "snapshot needs features this spmono lacks (flags %#x)", h.required_flags);
	if (sp_header_is_delta (&h) && sp_check_delta_header (&h, err) < 0)
		return -1;
	if (!sp_header_is_delta (&h) && h.base_sequence != 0)
		return sp_error_set (err, "a full snapshot names a base snapshot (%llu)", (unsigned long long)h.base_sequence);
	if (sp_header_is_folded (&h) && (h.fold_base == 0 || h.fold_base >= h.sequence))
		return sp_error_set (err, "folded snapshot %llu names an impossible chain (base %llu)",
				     (unsigned long long)h.sequence, (unsigned long long)h.fold_base);
	if (tr.nobjects < h.prior_objects)
		return sp_error_set (err, "delta snapshot has fewer objects (%u) than the snapshot it applies to (%u)",
				     tr.nobjects, h.prior_objects);
	if (header)
		*header = h;
	if (trailer)
		*trailer = tr;
	return 0;
}

int
sp_snapshot_check (const uint8_t *data, size_t size, SpSnapHeader *header, SpSnapTrailer *trailer, SpError *err)
{
	return sp_snapshot_check_known (data, size, false, header, trailer, err);
}

/* ---- the validating walk (sp-walk.h) --------------------------------------- */

static __attribute__ ((noinline, cold)) int
sp_walk_fail (SpWalk *w, const char *what)
{
	return sp_error_set (w->err, "malformed snapshot at byte %zu: %s", sp_reader_offset (&w->r), what);
}

static char *
sp_walk_name (SpWalk *w)
{
	char tmp [SP_MAX_NAME + 1];
	sp_reader_str (&w->r, tmp, sizeof tmp);
	return w->r.bad ? NULL : strdup (tmp);
}

/* Values on the wire: one block of primitives, then the references; as validation steps. */
static int
sp_walk_plan_steps (SpWalk *w, SpSnapClass *c)
{
	c->steps = calloc (c->nfields + 1, sizeof *c->steps);
	if (!c->steps)
		return sp_error_set (w->err, "out of memory reading the class cache");
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
	c->wire_refs = n - (c->prim_bytes ? 1 : 0);
	return 0;
}

/* A CLASS record's body, checked into snap->classes [id] (the sink is not told). */
static int
sp_walk_class_read (SpWalk *w)
{
	SpSnapshot *s = w->snap;
	uint64_t id = sp_reader_varint (&w->r);
	if (w->r.bad || id != (uint64_t)w->classes_seen + 1 || id > s->trailer.nclasses)
		return sp_walk_fail (w, "class id out of order or beyond the class count");
	SpSnapClass *c = &s->classes [id];
	w->classes_seen++;
	c->kind = sp_reader_u8 (&w->r);
	if (c->kind != SP_CLASS_OBJECT && c->kind != SP_CLASS_ARRAY)
		return sp_walk_fail (w, "unknown class kind");
	c->assembly = sp_walk_name (w);
	c->name = sp_walk_name (w);
	uint64_t nfields = sp_reader_varint (&w->r);
	/* Each field takes at least 2 bytes, which bounds the allocation by the input. */
	if (w->r.bad || !c->assembly || !c->name || nfields > SP_MAX_FIELDS || nfields > sp_reader_left (&w->r) / 2)
		return sp_walk_fail (w, "bad class name or field count");
	if (c->kind == SP_CLASS_ARRAY && nfields == 0)
		return sp_walk_fail (w, "array class without an element layout");
	c->nfields = (uint32_t)nfields;
	c->fields = calloc (nfields ? nfields : 1, sizeof *c->fields);
	if (!c->fields)
		return sp_error_set (w->err, "out of memory reading the class cache");
	uint32_t wire = 0;
	bool has_ref = false;
	for (uint32_t i = 0; i < c->nfields; i++) {
		SpField *f = &c->fields [i];
		f->name = sp_walk_name (w);
		f->kind = sp_reader_u8 (&w->r);
		if (w->r.bad || !f->name || !sp_kind_valid (f->kind))
			return sp_walk_fail (w, "bad field in the class cache");
		if (f->kind == SP_KIND_REF) {
			has_ref = true;
			f->type_name = sp_walk_name (w);
			if (!f->type_name)
				return sp_walk_fail (w, "bad field type name");
		}
		wire += sp_kind_size (f->kind);
	}
	c->wire_size = has_ref ? 0 : wire;
	return sp_walk_plan_steps (w, c);
}

static int
sp_walk_class (SpWalk *w)
{
	if (sp_walk_class_read (w) < 0)
		return -1;
	return w->sink->klass ? w->sink->klass (w->ctx, &w->snap->classes [w->classes_seen], w->err) : 0;
}

/* A delta gives a prior object's whole value again: at most once a delta (checked at the end). */
static uint32_t
sp_walk_redefine (SpWalk *w, uint32_t lid, uint8_t kind)
{
	if (kind != SP_CLASS_OBJECT) {
		sp_walk_fail (w, "a delta redefines a string or array (arrays change by PATCH records)");
		return 0;
	}
	if (w->nredefined == w->redefined_cap) {
		/* Each OBJECT record takes at least 3 bytes: growth is bounded by the input. */
		uint32_t cap = w->redefined_cap ? w->redefined_cap * 2 : 64;
		uint32_t *grown = realloc (w->redefined, (size_t)cap * sizeof *grown);
		if (!grown) {
			sp_error_set (w->err, "out of memory reading a delta");
			return 0;
		}
		w->redefined = grown;
		w->redefined_cap = cap;
	}
	w->redefined [w->nredefined++] = lid;
	return lid;
}

/* Claim a LID for an object of `kind`: a new one, or in a delta a prior one given again; 0 (error set). */
static inline __attribute__ ((always_inline)) uint32_t
sp_walk_new_lid (SpWalk *w, uint8_t kind)
{
	uint64_t lid = sp_reader_varint (&w->r);
	if (w->r.bad || lid == 0 || lid > w->snap->trailer.nobjects) {
		sp_walk_fail (w, "object id out of range");
		return 0;
	}
	if (lid <= w->prior)
		return sp_walk_redefine (w, (uint32_t)lid, kind);
	if (w->kinds [lid - w->prior]) {
		sp_walk_fail (w, "object id defined twice");
		return 0;
	}
	w->kinds [lid - w->prior] = kind;
	w->objects_seen++;
	return (uint32_t)lid;
}

/* A class id of `want_kind` defined before this record, or 0 (error set). */
static inline __attribute__ ((always_inline)) uint32_t
sp_walk_class_ref (SpWalk *w, uint8_t want_kind)
{
	uint64_t id = sp_reader_varint (&w->r);
	if (w->r.bad || id == 0 || id > w->classes_seen || w->snap->classes [id].kind != want_kind) {
		sp_walk_fail (w, "object refers to an undefined class or one of the wrong kind");
		return 0;
	}
	return (uint32_t)id;
}

/* One instance's values (an OBJECT record's): the primitive block, then each reference in range. */
static inline bool
sp_walk_instance (SpReader *r, const SpSnapClass *c, uint32_t nobjects)
{
	if (!sp_reader_take (r, c->prim_bytes))
		return false;
	for (uint32_t i = 0; i < c->wire_refs; i++)
		if (sp_reader_varint (r) > nobjects)
			return false;
	return !r->bad;
}

static int
sp_walk_values_fail (SpWalk *w)
{
	return sp_walk_fail (w, w->r.bad ? "values run past the end" : "reference to an object id beyond the object count");
}

/* Values of `count` instances or elements: skip primitives, check references. */
static int
sp_walk_values (SpWalk *w, const SpSnapClass *c, uint64_t count)
{
	if (c->wire_size) {
		if (count > sp_reader_left (&w->r) / c->wire_size)
			return sp_walk_fail (w, "values run past the end");
		sp_reader_take (&w->r, (size_t)(count * c->wire_size));
		return 0;
	}
	for (uint64_t n = 0; n < count; n++)
		if (!sp_walk_instance (&w->r, c, w->snap->trailer.nobjects))
			return sp_walk_values_fail (w);
	return 0;
}

/* One piece of a STRING or ARRAY, from `*filled` of `length`. */
static int
sp_walk_piece (SpWalk *w, uint8_t kind, uint32_t lid, uint32_t class_id, uint64_t length, uint64_t *filled)
{
	size_t at = sp_reader_offset (&w->r);
	uint64_t count = sp_reader_varint (&w->r);
	if (w->r.bad || count > length - *filled)
		return sp_walk_fail (w, "piece longer than what is left of its object");
	uint8_t enc = 0;
	const uint8_t *elems;
	if (kind == SP_CLASS_ARRAY) {
		elems = w->r.pos;
		if (sp_walk_values (w, &w->snap->classes [class_id], count) < 0)
			return -1;
	} else {
		enc = sp_reader_u8 (&w->r);
		if (enc != SP_STR_LATIN1 && enc != SP_STR_UTF16LE)
			return sp_walk_fail (w, "unknown string encoding");
		uint64_t bytes = enc == SP_STR_LATIN1 ? count : count * 2;
		if (bytes > sp_reader_left (&w->r))
			return sp_walk_fail (w, "string runs past the end");
		elems = sp_reader_take (&w->r, (size_t)bytes);
	}
	uint64_t start = *filled;
	*filled += count;
	return w->sink->piece ? w->sink->piece (w->ctx, kind, lid, class_id, start, count, enc, elems, at, w->err) : 0;
}

/* Remember a string or array whose pieces continue in ELEMS records (growth bounded: one a record). */
static int
sp_walk_open (SpWalk *w, uint32_t lid, uint32_t class_id, uint64_t length, uint64_t filled)
{
	if (!w->open_of) {
		/* calloc'd: only the pages of LIDs that are looked up get touched. */
		w->open_of = calloc ((size_t)(w->snap->trailer.nobjects - w->prior) + 1, sizeof *w->open_of);
		if (!w->open_of)
			return sp_error_set (w->err, "out of memory indexing chunked objects");
	}
	if (w->nopen == w->open_cap) {
		uint32_t cap = w->open_cap ? w->open_cap * 2 : 16;
		SpOpenObject *open = realloc (w->open, (size_t)cap * sizeof *open);
		if (!open)
			return sp_error_set (w->err, "out of memory indexing chunked objects");
		w->open = open;
		w->open_cap = cap;
	}
	w->open [w->nopen] = (SpOpenObject){ .lid = lid, .class_id = class_id, .length = length, .filled = filled };
	w->open_of [lid - w->prior] = ++w->nopen;
	return 0;
}

static int
sp_walk_sized (SpWalk *w, uint8_t kind)
{
	uint32_t lid = sp_walk_new_lid (w, kind), class_id = 0;
	if (!lid)
		return -1;
	if (kind == SP_CLASS_ARRAY && !(class_id = sp_walk_class_ref (w, SP_CLASS_ARRAY)))
		return -1;
	uint64_t length = sp_reader_varint (&w->r), filled = 0;
	if (w->r.bad || length > SP_MAX_LENGTH)
		return sp_walk_fail (w, "length out of range");
	/*
	 * Every element takes at least one byte on the wire: a longer object cannot
	 * be complete, and refusing it now keeps a restorer (which allocates the
	 * object before its pieces are read) within a multiple of the input's size.
	 */
	if (length > sp_reader_left (&w->r))
		return sp_walk_fail (w, "length exceeds what the rest of the snapshot can hold");
	if (w->sink->sized && w->sink->sized (w->ctx, kind, lid, class_id, length, sp_reader_offset (&w->r), w->err) < 0)
		return -1;
	if (sp_walk_piece (w, kind, lid, class_id, length, &filled) < 0)
		return -1;
	return filled < length ? sp_walk_open (w, lid, class_id, length, filled) : 0;
}

static int
sp_walk_elems (SpWalk *w)
{
	uint64_t lid = sp_reader_varint (&w->r);
	uint64_t start = sp_reader_varint (&w->r);
	if (w->r.bad || lid == 0 || lid > w->snap->trailer.nobjects)
		return sp_walk_fail (w, "chunk of an object id out of range");
	uint32_t at = lid > w->prior ? (uint32_t)(lid - w->prior) : 0;
	SpOpenObject *o = at && w->open_of && w->open_of [at] ? &w->open [w->open_of [at] - 1] : NULL;
	if (!o || start != o->filled || o->filled == o->length)
		return sp_walk_fail (w, "chunk does not continue a string or array in order");
	return sp_walk_piece (w, w->kinds [at], (uint32_t)lid, o->class_id, o->length, &o->filled);
}

/* A delta's PATCH: elements [start, start + count) of a prior array, by this file's class cache. */
static int
sp_walk_patch (SpWalk *w)
{
	if (!w->prior)
		return sp_walk_fail (w, "a patch record outside a delta, or in a delta of an empty snapshot");
	uint64_t lid = sp_reader_varint (&w->r);
	if (w->r.bad || lid == 0 || lid > w->prior)
		return sp_walk_fail (w, "patch of an object id that the snapshot it applies to lacks");
	uint32_t class_id = sp_walk_class_ref (w, SP_CLASS_ARRAY);
	if (!class_id)
		return -1;
	uint64_t start = sp_reader_varint (&w->r);
	size_t at = sp_reader_offset (&w->r);
	uint64_t count = sp_reader_varint (&w->r);
	if (w->r.bad || start > SP_MAX_LENGTH || count > SP_MAX_LENGTH - start)
		return sp_walk_fail (w, "patch beyond the largest array");
	const uint8_t *elems = w->r.pos;
	if (sp_walk_values (w, &w->snap->classes [class_id], count) < 0)
		return -1;
	return w->sink->patch ? w->sink->patch (w->ctx, (uint32_t)lid, class_id, start, count, elems, at, w->err) : 0;
}

/*
 * What a run of OBJECT records reads of the walk, and of the class of the
 * last record it took, held in locals for the run: the sink's stores into
 * new objects may alias the walk's fields for all the compiler knows, and
 * would make it load them again for every record.
 */
typedef struct SpObjectRun {
	const uint8_t *end;
	const SpSnapClass *classes;
	uint8_t *kinds;
	uint32_t nobjects, prior, classes_seen;
	uint32_t class_id;       /* the class of the last record taken, an OBJECT class; SP_NO_CLASS before the first */
	uint32_t nrefs;          /* its wire_refs */
	uint32_t prim_bytes;
	uint32_t refs [SP_WALK_REFS]; /* the last record's references, decoded (the first SP_WALK_REFS) */
	uint32_t taken;          /* records taken by the fast path, not yet counted in the walk's objects_seen */
	bool to_decoder;         /* the sink's object is the decoder's, called directly (sp-walk.h) */
} SpObjectRun;

/*
 * The common case of an OBJECT record (p after its tag), read without a
 * bounds check a byte: a new object (not a delta's prior one) whose LID,
 * class id and references take four bytes or fewer each (a state of fewer
 * than 268,435,456 objects), with room left for the longest such record.  It
 * checks all the checked path checks, and claims the LID as it does.
 * Anything it does not take, or finds wrong, it leaves untouched to that
 * path, which reads the record again and says what is wrong.  Returns the
 * position after the record, NULL: not taken.  (The walk of a tree node:
 * 190 instructions became 155.)
 */
static inline const uint8_t *
sp_walk_object_fast (SpObjectRun *run, const uint8_t *p, uint32_t *lid, const uint8_t **values)
{
	uint32_t id, ref;
	unsigned n;
	if (run->end - p < 2 * SP_VARINT_SHORT_MAX || !(n = sp_varint_short (p, lid)))
		return NULL;
	p += n;
	if (!(n = sp_varint_short (p, &id)))
		return NULL;
	p += n;
	if (*lid == 0 || *lid > run->nobjects || *lid <= run->prior || run->kinds [*lid - run->prior])
		return NULL;
	if (id != run->class_id) {
		if (id == 0 || id > run->classes_seen || run->classes [id].kind != SP_CLASS_OBJECT)
			return NULL;
		run->class_id = id;
		/* Without references, the primitive block is the whole value (wire_size). */
		run->nrefs = run->classes [id].wire_refs;
		run->prim_bytes = run->classes [id].prim_bytes;
	}
	if ((size_t)(run->end - p) < run->prim_bytes + SP_VARINT_SHORT_MAX * (size_t)run->nrefs)
		return NULL;
	*values = p;
	p += run->prim_bytes;
	for (uint32_t i = 0; i < run->nrefs; i++, p += n) {
		if (!(n = sp_varint_short (p, &ref)) || ref > run->nobjects)
			return NULL;
		run->refs [i % SP_WALK_REFS] = ref;   /* beyond SP_WALK_REFS, overwritten: not handed over then */
	}
	run->kinds [*lid - run->prior] = SP_CLASS_OBJECT;
	return p;
}

/* Whether the walk's sink takes objects by the decoder's own function, which it then calls directly (sp-walk.h). */
static inline bool
sp_walk_to_decoder (const SpWalk *w)
{
#ifdef SP_WALK_DECODER_OBJECT
	return w->sink->object == SP_WALK_DECODER_OBJECT;
#else
	(void)w;
	return false;
#endif
}

/*
 * The sink's object call; the decoder's, called directly where the build
 * names it (`to_decoder`: sp_walk_to_decoder), inlines into the walk and
 * takes the references decoded (`refs`, or NULL).
 */
static inline __attribute__ ((always_inline)) int
sp_walk_sink_object (const SpWalk *w, bool to_decoder, uint32_t lid, uint32_t class_id, const uint8_t *values,
		     const uint32_t *refs)
{
#ifdef SP_WALK_DECODER_OBJECT
	if (to_decoder)
		return SP_WALK_DECODER_OBJECT_REFS (w->ctx, lid, class_id, values, refs, w->err);
#endif
	(void)refs, (void)to_decoder;
	return w->sink->object ? w->sink->object (w->ctx, lid, class_id, values, w->err) : 0;
}

/* An OBJECT record (w->r after its tag) by the checked path, which says what is wrong with it. */
static int
sp_walk_object_checked (SpWalk *w)
{
	uint32_t lid, class_id;
	if (!(lid = sp_walk_new_lid (w, SP_CLASS_OBJECT)) || !(class_id = sp_walk_class_ref (w, SP_CLASS_OBJECT)))
		return -1;
	const uint8_t *values = w->r.pos;
	if (!sp_walk_instance (&w->r, &w->snap->classes [class_id], w->snap->trailer.nobjects))
		return sp_walk_values_fail (w);
	return sp_walk_sink_object (w, sp_walk_to_decoder (w), lid, class_id, values, NULL);
}

/*
 * A run of OBJECT records (w->r after the first one's tag): a state's
 * objects come in runs, mostly of one class (a tree's nodes, a list's
 * cells).  Each is taken by sp_walk_object_fast where it can be, else by
 * the checked path.  Leaves w->r at the next record's tag, or the end.
 */
static int
sp_walk_objects (SpWalk *w)
{
	SpObjectRun run = { .end = w->r.end, .classes = w->snap->classes, .kinds = w->kinds,
			    .nobjects = w->snap->trailer.nobjects, .prior = w->prior, .classes_seen = w->classes_seen,
			    .class_id = SP_NO_CLASS, .to_decoder = sp_walk_to_decoder (w) };
	const uint8_t *p = w->r.pos;
	for (;;) {
		uint32_t lid;
		const uint8_t *values, *next = sp_walk_object_fast (&run, p, &lid, &values);
		if (next) {
			run.taken++;
			if (sp_walk_sink_object (w, run.to_decoder, lid, run.class_id, values,
						 run.nrefs <= SP_WALK_REFS ? run.refs : NULL) < 0)
				return -1;
			p = next;
		} else {
			w->r.pos = p;
			if (sp_walk_object_checked (w) < 0)
				return -1;
			if (w->r.bad)
				return sp_walk_fail (w, "record runs past the end");
			p = w->r.pos;
		}
		if (p == run.end || *p != SP_REC_OBJECT)
			break;
		p++;
	}
	w->objects_seen += run.taken;
	w->r.pos = p;
	return 0;
}

static int
sp_walk_root (SpWalk *w)
{
	SpSnapshot *s = w->snap;
	uint64_t id = sp_reader_varint (&w->r);
	uint64_t lid = sp_reader_varint (&w->r);
	if (w->r.bad || id == 0 || id > SP_MAX_ROOT_ID || lid > s->trailer.nobjects || w->roots_seen >= s->trailer.nroots)
		return sp_walk_fail (w, "root id or object id out of range");
	s->roots [w->roots_seen].id = (uint32_t)id;
	s->roots [w->roots_seen].lid = (uint32_t)lid;
	w->roots_seen++;
	return 0;
}

static int
sp_walk_extension (SpWalk *w)
{
	uint64_t len = sp_reader_varint (&w->r);
	if (w->r.bad || len > sp_reader_left (&w->r))
		return sp_walk_fail (w, "extension record runs past the end");
	sp_reader_take (&w->r, (size_t)len);
	return 0;
}

/*
 * A snapshot with a class index: every CLASS record read first, in id order,
 * where the index says, so that the sink knows them all before the first
 * object (sink->classes).  The walk then meets each in its place
 * (sp_walk_class_again): the index is checked against the records.
 */
static int
sp_walk_classes_ahead (SpWalk *w)
{
	SpSnapshot *s = w->snap;
	uint32_t n = s->trailer.nclasses;
	if (!(w->class_at = calloc ((size_t)n * 2 + 1, sizeof *w->class_at)))
		return sp_error_set (w->err, "out of memory reading the class index");
	if (sp_format_read_class_index (s->data, s->size, &s->header, &s->trailer, w->class_at, &w->index_at, w->err) < 0)
		return -1;
	s->classes_ahead = true;
	uint64_t *ends = w->class_at + n;
	for (uint32_t i = 0; i < n; i++) {
		sp_reader_init (&w->r, s->data, w->index_at);
		w->r.pos += w->class_at [i] + 1;   /* after the tag, checked */
		if (sp_walk_class_read (w) < 0 || (w->r.bad && sp_walk_fail (w, "record runs past the end") < 0))
			return sp_error_prefix (w->err, "class %u, where the class index puts it", i + 1);
		ends [i] = sp_reader_offset (&w->r);
		if (i + 1 < n && ends [i] > w->class_at [i + 1])
			return sp_walk_fail (w, "the class index's records overlap");
	}
	/* Every class checked: the sink's, in id order, then all of them at once. */
	for (uint32_t id = 1; id <= n && w->sink->klass; id++)
		if (w->sink->klass (w->ctx, &s->classes [id], w->err) < 0)
			return -1;
	w->classes_seen = 0;   /* met again in order: each defined before its first use, as without an index */
	return w->sink->classes ? w->sink->classes (w->ctx, s, w->err) : 0;
}

/* A CLASS record read ahead: it must be the next the index gives; stepped over. */
static int
sp_walk_class_again (SpWalk *w)
{
	size_t at = sp_reader_offset (&w->r) - 1;
	uint32_t i = w->classes_seen, n = w->snap->trailer.nclasses;
	if (i >= n || at != w->class_at [i])
		return sp_walk_fail (w, "a CLASS record the class index does not give");
	w->r.pos = w->r.start + w->class_at [n + i];
	w->classes_seen++;
	return 0;
}

/* The class index, when the header announces it: where its size says, the last record. */
static int
sp_walk_class_index (SpWalk *w)
{
	if (w->snap->classes_ahead) {
		if (sp_reader_offset (&w->r) - 1 != w->index_at)
			return sp_walk_fail (w, "a class index where its size does not put it");
		w->index_met = true;
	}
	return sp_walk_extension (w);
}

static int
sp_walk_record (SpWalk *w, uint8_t tag)
{
	switch (tag) {
	case SP_REC_CLASS: return w->snap->classes_ahead ? sp_walk_class_again (w) : sp_walk_class (w);
	case SP_REC_CLASS_INDEX: return sp_walk_class_index (w);
	case SP_REC_OBJECT: return sp_walk_objects (w);
	case SP_REC_STRING: return sp_walk_sized (w, SP_CLASS_STRING);
	case SP_REC_ARRAY: return sp_walk_sized (w, SP_CLASS_ARRAY);
	case SP_REC_ELEMS: return sp_walk_elems (w);
	case SP_REC_ROOT: return sp_walk_root (w);
	case SP_REC_PATCH: return sp_walk_patch (w);
	default:
		if (tag >= SP_REC_EXTENSION_FIRST)
			return sp_walk_extension (w);
		return sp_walk_fail (w, "unknown record type");
	}
}

static int
sp_u32_cmp (const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
	return x < y ? -1 : x > y;
}

/* A delta gives each prior object again at most once (sorted: O(n log n) on hostile input). */
static int
sp_walk_unique_redefinitions (SpWalk *w)
{
	if (w->nredefined < 2)
		return 0;
	qsort (w->redefined, w->nredefined, sizeof *w->redefined, sp_u32_cmp);
	for (uint32_t i = 1; i < w->nredefined; i++)
		if (w->redefined [i] == w->redefined [i - 1])
			return sp_error_set (w->err, "malformed snapshot: object %u given twice in one delta", w->redefined [i]);
	return 0;
}

/* Root ids are unique: sort a copy (O(n log n), not O(n^2) on hostile input). */
static int
sp_walk_unique_roots (SpWalk *w)
{
	SpSnapshot *s = w->snap;
	if (w->roots_seen < 2)
		return 0;
	uint32_t *ids = malloc ((size_t)w->roots_seen * sizeof *ids);
	if (!ids)
		return sp_error_set (w->err, "out of memory checking root ids");
	for (uint32_t i = 0; i < w->roots_seen; i++)
		ids [i] = s->roots [i].id;
	qsort (ids, w->roots_seen, sizeof *ids, sp_u32_cmp);
	for (uint32_t i = 1; i < w->roots_seen; i++) {
		if (ids [i] == ids [i - 1]) {
			uint32_t dup = ids [i];
			free (ids);
			return sp_error_set (w->err, "malformed snapshot: root id %u defined twice", dup);
		}
	}
	free (ids);
	return 0;
}

/* After the last record: everything promised is there, and complete. */
static int
sp_walk_complete (SpWalk *w)
{
	SpSnapshot *s = w->snap;
	if (s->classes_ahead && !w->index_met)
		return sp_error_set (w->err, "malformed snapshot: its class index is not a record of its own");
	if (w->classes_seen != s->trailer.nclasses || w->roots_seen != s->trailer.nroots)
		return sp_error_set (w->err, "malformed snapshot: trailer counts %u classes and %u roots, body has %u and %u",
				     s->trailer.nclasses, s->trailer.nroots, w->classes_seen, w->roots_seen);
	if (sp_walk_unique_roots (w) < 0 || sp_walk_unique_redefinitions (w) < 0)
		return -1;
	if (w->objects_seen != s->trailer.nobjects - w->prior) {
		uint32_t at = 1;
		while (w->kinds [at])
			at++;
		return sp_error_set (w->err, "malformed snapshot: object %u is referred to but never defined", w->prior + at);
	}
	for (uint32_t i = 0; i < w->nopen; i++) {
		const SpOpenObject *o = &w->open [i];
		if (o->filled != o->length)
			return sp_error_set (w->err, "malformed snapshot: object %u has %llu of %llu elements", o->lid,
					     (unsigned long long)o->filled, (unsigned long long)o->length);
	}
	return 0;
}

int
sp_snapshot_counts_fit (const SpSnapHeader *h, const SpSnapTrailer *t, size_t size, SpError *err)
{
	/* Smallest records: an object 3 bytes, a class 6, a root 3.  A delta holds its new objects only. */
	size_t body_size = size - h->header_size - SP_FORMAT_TRAILER_SIZE;
	uint32_t fresh = t->nobjects - h->prior_objects;
	if (fresh > body_size / 3 || t->nclasses > body_size / 6 || t->nroots > body_size / 3)
		return sp_error_set (err, "malformed snapshot: counts (%u new objects, %u classes, %u roots) exceed what %zu bytes can hold",
				     fresh, t->nclasses, t->nroots, body_size);
	return 0;
}

/* Allocations sized by trailer counts, which were bounded by the input size first. */
static int
sp_walk_alloc (SpWalk *w)
{
	SpSnapshot *s = w->snap;
	const SpSnapTrailer *t = &s->trailer;
	if (sp_snapshot_counts_fit (&s->header, t, s->size, w->err) < 0)
		return -1;
	uint32_t fresh = t->nobjects - w->prior;
	w->kinds = calloc ((size_t)fresh + 1, 1);
	s->classes = calloc ((size_t)t->nclasses + 1, sizeof *s->classes);
	s->roots = calloc ((size_t)t->nroots + 1, sizeof *s->roots);
	if (!w->kinds || !s->classes || !s->roots)
		return sp_error_set (w->err, "out of memory: snapshot index for %u objects", t->nobjects);
	return 0;
}

int
sp_walk_run (SpWalk *w, const uint8_t *data, size_t size, bool crc_known, SpSnapshot *snap,
	     const SpWalkSink *sink, void *ctx, SpError *err)
{
	memset (snap, 0, sizeof *snap);
	*w = (SpWalk){ .snap = snap, .sink = sink, .ctx = ctx, .err = err };
	snap->data = data;
	snap->size = size;
	if (sp_snapshot_check_known (data, size, crc_known, &snap->header, &snap->trailer, err) < 0)
		return -1;
	w->prior = snap->header.prior_objects;
	if (sp_walk_alloc (w) < 0)
		return -1;
	if (sink->begin && sink->begin (ctx, snap, err) < 0)
		return -1;
	if ((snap->header.optional_flags & SP_OPT_CLASS_INDEX) && sp_walk_classes_ahead (w) < 0)
		return -1;
	sp_reader_init (&w->r, data, size - SP_FORMAT_TRAILER_SIZE);
	sp_reader_take (&w->r, snap->header.header_size);
	while (sp_reader_left (&w->r) > 0) {
		if (sp_walk_record (w, sp_reader_u8 (&w->r)) < 0)
			return -1;
		if (w->r.bad)
			return sp_walk_fail (w, "record runs past the end");
	}
	return sp_walk_complete (w);
}

void
sp_walk_free (SpWalk *w)
{
	free (w->kinds);
	free (w->open_of);
	free (w->open);
	free (w->redefined);
	free (w->class_at);
	memset (w, 0, sizeof *w);
}

/* ---- the index (sp_snapshot_parse) ----------------------------------------- */

/* A delta's record about a prior object: kept in file order (growth bounded: one a record). */
static int
sp_index_change (SpSnapshot *s, const SpSnapChange *change, SpError *err)
{
	if (s->nchanges == s->change_cap) {
		uint32_t cap = s->change_cap ? s->change_cap * 2 : 64;
		SpSnapChange *grown = realloc (s->changes, (size_t)cap * sizeof *grown);
		if (!grown)
			return sp_error_set (err, "out of memory indexing a delta");
		s->changes = grown;
		s->change_cap = cap;
	}
	s->changes [s->nchanges++] = *change;
	return 0;
}

static int
sp_index_object (void *ctx, uint32_t lid, uint32_t class_id, const uint8_t *values, SpError *err)
{
	SpSnapshot *s = ctx;
	size_t body = (size_t)(values - s->data);
	if (lid <= s->header.prior_objects)
		return sp_index_change (s, &(SpSnapChange){ .lid = lid, .kind = SP_CLASS_OBJECT, .class_id = class_id, .body = body }, err);
	*sp_snapshot_object (s, lid) = (SpSnapObject){ .kind = SP_CLASS_OBJECT, .class_id = class_id, .body = body };
	return 0;
}

static int
sp_index_sized (void *ctx, uint8_t kind, uint32_t lid, uint32_t class_id, uint64_t length, size_t piece, SpError *err)
{
	(void)err;
	SpSnapshot *s = ctx;
	*sp_snapshot_object (s, lid) = (SpSnapObject){ .kind = kind, .class_id = class_id, .length = length, .body = piece };
	return 0;
}

static int
sp_index_patch (void *ctx, uint32_t lid, uint32_t class_id, uint64_t start, uint64_t count,
		const uint8_t *elems, size_t piece, SpError *err)
{
	(void)elems;
	SpSnapChange change = { .lid = lid, .kind = SP_CLASS_ARRAY, .class_id = class_id, .start = start, .count = count, .body = piece };
	return sp_index_change (ctx, &change, err);
}

/* Pieces after the inline one are chained, in order, from their object. */
static int
sp_index_piece (void *ctx, uint8_t kind, uint32_t lid, uint32_t class_id, uint64_t start, uint64_t count,
		uint8_t enc, const uint8_t *elems, size_t piece, SpError *err)
{
	(void)kind, (void)class_id, (void)count, (void)enc, (void)elems;
	SpSnapshot *s = ctx;
	SpSnapObject *o = sp_snapshot_object (s, lid);
	if (piece == o->body)
		return 0;
	if (s->nchunks == s->chunk_cap) {
		/* Every chunk record takes at least 4 bytes: growth is bounded by the input. */
		uint32_t cap = s->chunk_cap ? s->chunk_cap * 2 : 64;
		SpSnapChunk *chunks = realloc (s->chunks, (size_t)cap * sizeof *chunks);
		if (!chunks)
			return sp_error_set (err, "out of memory indexing chunks");
		s->chunks = chunks;
		s->chunk_cap = cap;
	}
	s->chunks [s->nchunks++] = (SpSnapChunk){ .piece = piece, .start = start, .next = 0 };
	if (o->last_chunk)
		s->chunks [o->last_chunk - 1].next = s->nchunks;
	else
		o->next_chunk = s->nchunks;
	o->last_chunk = s->nchunks;
	return 0;
}

static int
sp_index_begin (void *ctx, SpSnapshot *s, SpError *err)
{
	(void)ctx;
	uint32_t fresh = s->trailer.nobjects - s->header.prior_objects;
	s->objects = calloc ((size_t)fresh + 1, sizeof *s->objects);
	return s->objects ? 0 : sp_error_set (err, "out of memory: snapshot index for %u objects", fresh);
}

static const SpWalkSink sp_index_sink = {
	.begin = sp_index_begin,
	.object = sp_index_object,
	.sized = sp_index_sized,
	.piece = sp_index_piece,
	.patch = sp_index_patch,
};

int
sp_snapshot_parse (const uint8_t *data, size_t size, SpSnapshot *snap, SpError *err)
{
	SpWalk w;
	int rc = sp_walk_run (&w, data, size, false, snap, &sp_index_sink, snap, err);
	sp_walk_free (&w);
	if (rc < 0)
		sp_snapshot_free (snap);
	return rc;
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
			free (c->prim_copies);
			free (c->prim_fills);
			free (c->prim_kinds);
			free (c->prim_offsets);
			free (c->ref_fields);
			free (c->ref_early);
			free (c->prim_live_kinds);
			free (c->evolution);
			free (c->leaf_changed);
			free (c->defaults);
			free (c->assembly);
			free (c->name);
		}
	}
	free (snap->classes);
	free (snap->objects);
	free (snap->roots);
	free (snap->chunks);
	free (snap->changes);
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

int
sp_snapshot_plan_primitives (SpSnapClass *c, const SpClass *live, SpError *err)
{
	c->prim_copies = malloc ((live->nfields + 1) * sizeof *c->prim_copies);
	c->ref_fields = malloc ((live->nfields + 1) * sizeof *c->ref_fields);
	c->prim_fills = malloc ((live->nfields + 4) * sizeof *c->prim_fills);
	if (!c->prim_copies || !c->ref_fields || !c->prim_fills)
		return sp_error_set (err, "out of memory planning class %s", c->name);
	c->nprims = c->nrefs = 0;
	for (uint32_t i = 0; i < live->nfields; i++) {
		if (live->fields [i].kind == SP_KIND_REF)
			c->ref_fields [c->nrefs++] = &live->fields [i];
		else
			c->nprims++;
	}
	(void)sp_prim_copies_build (c->prim_copies, c->prim_end, live->fields, live->nfields);
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (live->kind == SP_CLASS_OBJECT)
		c->nfills = sp_prim_fills_build (c->prim_fills, c->prim_copies, c->prim_end, live->fields, live->nfields);
#endif
	return 0;
}

void
sp_snapshot_pieces (const SpSnapshot *snap, uint32_t lid, SpPieceFn fn, void *ctx)
{
	const SpSnapObject *o = sp_snapshot_object_const (snap, lid);
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

typedef struct SpFill {
	const SpClass *live;
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
static void
sp_fill_values (SpFill *f, const uint8_t **pp, uint8_t *dst)
{
	const uint8_t *p = *pp;
	const SpField *fields = f->live->fields;
	uint32_t n = f->live->nfields;
	for (uint32_t i = 0; i < n; i++) {
		unsigned kind = fields [i].kind;
		if (kind != SP_KIND_REF) {
			sp_kind_copy (dst + fields [i].offset, p, kind);
			p += sp_kind_size (kind);
		}
	}
	*pp = sp_trusted_references (f->live, p, dst, f->store_ref, f->ctx, &f->rc, f->err);
}

static void
sp_fill_piece (void *ctx, SpReader *r, uint64_t start, uint64_t count)
{
	SpFill *f = ctx;
	uint8_t *dst = f->base + start * f->live->elem_size;
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (sp_class_is_primitive_array (f->live) && f->live->fields [0].kind != SP_KIND_BOOL) {
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

int
sp_snapshot_fill (const SpSnapshot *snap, uint32_t lid, void *base, const SpClass *live,
		  SpStoreRefFn store_ref, void *ctx, SpError *err)
{
	const SpSnapObject *o = sp_snapshot_object_const (snap, lid);
	SpFill f = { .live = live, .base = base, .store_ref = store_ref, .ctx = ctx, .err = err };
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
