/* sp-serialize.c: see sp-serialize.h and sp-format.h for the records written. */
#include "sp-serialize.h"

#include "sp-client.h"
#include "sp-crc32c.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static uint64_t sp_ser_cycle_counter;

/* How many queued objects ahead sp_ser_step prefetches (about a memory latency of work). */
#define SP_SER_PREFETCH_DISTANCE 4

int
sp_ser_init (SpSerializer *s)
{
	memset (s, 0, sizeof *s);
	sp_queue_init (&s->queue);
	return sp_lidmap_init (&s->lids, 1024);
}

void
sp_ser_free (SpSerializer *s)
{
	free (s->written);
	sp_lidmap_free (&s->lids);
	sp_queue_free (&s->queue);
}

static int
sp_ser_oom (SpError *err)
{
	return sp_error_set (err, "out of memory while serializing the snapshot");
}

int
sp_ser_begin (SpSerializer *s, SpBuf *out, const SpSnapHeader *h, SpError *err)
{
	s->out = out;
	s->cycle = __atomic_add_fetch (&sp_ser_cycle_counter, 1, __ATOMIC_RELAXED);
	/* The previous snapshot's marks, as far as it went (a snapshot costs what it wrote). */
	if (s->written)
		memset (s->written, 0, s->nobjects + 1 < s->written_cap ? s->nobjects + 1 : s->written_cap);
	s->nobjects = s->nclasses = s->nroots = 0;
	s->marked = 0;
	s->partial_lid = 0;
	s->objects_written = 0;
	sp_lidmap_clear (&s->lids);
	sp_queue_clear (&s->queue);
	sp_client_lid_reset ();
	sp_buf_reset (out);
	uint8_t *hdr = sp_buf_reserve (out, SP_FORMAT_HEADER_SIZE);
	if (!hdr)
		return sp_ser_oom (err);
	sp_format_write_header (hdr, h);
	out->len += SP_FORMAT_HEADER_SIZE;
	return 0;
}

/*
 * The LID of obj, handing out a new one (and queueing obj) the first time.
 * Fails, with err saying why, when obj's class cannot be persisted.
 */
static int
sp_ser_lid_of (SpSerializer *s, void *obj, uint32_t *lid, SpError *err)
{
	if (!obj) {
		*lid = 0;
		return 0;
	}
	uint32_t hash = sp_client_identity_hash (obj);
	uint32_t epoch = sp_client_gc_epoch ();
	SpLidEntry *e = sp_lidmap_find (&s->lids, hash, obj, epoch);
	if (e) {
		*lid = sp_lid_of (e);
		return 0;
	}
	if (!sp_client_class_of (obj, err))
		return -1;
	if (s->nobjects >= SP_LID_MAX)
		return sp_error_set (err, "the snapshot would hold more than %u objects", SP_LID_MAX);
	uint32_t new_lid = s->nobjects + 1;
	if (sp_client_lid_bind (new_lid, obj, err) < 0)
		return -1;
	/* Binding may allocate, and so collect: read the epoch again for the cached address. */
	if (!sp_lidmap_add (&s->lids, hash, new_lid, obj, sp_client_gc_epoch ()) || sp_queue_push (&s->queue, new_lid) < 0)
		return sp_ser_oom (err);
	*lid = s->nobjects = new_lid;
	return 0;
}

/* Say which reference led to an object that cannot be persisted (only on failure). */
static int
sp_ser_blame (SpError *err, const SpClass *owner, const SpField *f)
{
	if (owner->kind == SP_CLASS_OBJECT)
		return sp_error_prefix (err, "field %s.%s", owner->name, f->name);
	if (f->name [0])
		return sp_error_prefix (err, "field %s of an element of %s", f->name, owner->name);
	return sp_error_prefix (err, "an element of %s", owner->name);
}

/* The LID of what reference leaf f of the instance at `base` points to (the failure names the field). */
static inline int
sp_ser_child_lid (SpSerializer *s, const SpClass *c, const SpField *f, const uint8_t *base, uint32_t *lid, SpError *err)
{
	void *child;
	memcpy (&child, base + f->offset, sizeof child);
	return sp_ser_lid_of (s, child, lid, err) < 0 ? sp_ser_blame (err, c, f) : 0;
}

int
sp_ser_root (SpSerializer *s, uint32_t root_id, void *obj, SpError *err)
{
	if (root_id == 0 || root_id > SP_MAX_ROOT_ID)
		return sp_error_set (err, "root id %u is out of range (1 to %u)", root_id, SP_MAX_ROOT_ID);
	uint32_t lid;
	if (sp_ser_lid_of (s, obj, &lid, err) < 0)
		return sp_error_prefix (err, "root %u", root_id);
	sp_buf_put_u8 (s->out, SP_REC_ROOT);
	sp_buf_put_varint (s->out, root_id);
	sp_buf_put_varint (s->out, lid);
	s->nroots++;
	return s->out->oom ? sp_ser_oom (err) : 0;
}

/* The class's id in this snapshot, writing its CLASS record the first time. */
static uint32_t
sp_ser_class_id (SpSerializer *s, SpClass *c)
{
	if (c->snap_cycle == s->cycle)
		return c->snap_id;
	c->snap_cycle = s->cycle;
	c->snap_id = ++s->nclasses;
	SpBuf *o = s->out;
	sp_buf_put_u8 (o, SP_REC_CLASS);
	sp_buf_put_varint (o, c->snap_id);
	sp_buf_put_u8 (o, c->kind);
	sp_buf_put_str (o, c->assembly);
	sp_buf_put_str (o, c->name);
	sp_buf_put_varint (o, c->nfields);
	uint32_t wire_max = 0;
	for (uint32_t i = 0; i < c->nfields; i++) {
		const SpField *f = &c->fields [i];
		sp_buf_put_str (o, f->name);
		sp_buf_put_u8 (o, f->kind);
		if (f->kind == SP_KIND_REF)
			sp_buf_put_str (o, f->type_name ? f->type_name : "");
		wire_max += f->kind == SP_KIND_REF ? SP_VARINT32_MAX : sp_kind_size (f->kind);
	}
	c->wire_max = wire_max;
	return c->snap_id;
}

static inline uint8_t *
sp_put_varint_raw (uint8_t *dst, uint32_t v)
{
	while (v >= 0x80) {
		*dst++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*dst++ = (uint8_t)v;
	return dst;
}

static inline uint8_t *
sp_put_primitive_raw (uint8_t *dst, const uint8_t *src, unsigned kind)
{
	sp_kind_copy (dst, src, kind);
	return dst + sp_kind_size (kind);
}

/*
 * The values of one object or array element at `base`: its primitive leaves,
 * then its references (sp-format.h: primitives first, so a reader skips or
 * copies them as one block).  Room for the largest encoding is reserved once,
 * so the loops write without further checks: nothing in them touches the output
 * buffer but these loops.
 */
static int
sp_ser_leaves (SpSerializer *s, const SpClass *c, const uint8_t *base, SpError *err)
{
	uint8_t *start = sp_buf_reserve (s->out, c->wire_max);
	if (!start)
		return sp_ser_oom (err);
	uint8_t *dst = start;
	for (uint32_t i = 0; i < c->nfields; i++) {
		const SpField *f = &c->fields [i];
		if (f->kind != SP_KIND_REF) {
			dst = sp_put_primitive_raw (dst, base + f->offset, f->kind);
		} else {
			/* Its header is read for its identity hash below: start the load now. */
			void *child;
			memcpy (&child, base + f->offset, sizeof child);
			if (child)
				__builtin_prefetch (child);
		}
	}
	for (uint32_t i = 0; i < c->nfields; i++) {
		uint32_t lid;
		if (c->fields [i].kind != SP_KIND_REF)
			continue;
		if (sp_ser_child_lid (s, c, &c->fields [i], base, &lid, err) < 0)
			return -1;
		dst = sp_put_varint_raw (dst, lid);
	}
	s->out->len += (size_t)(dst - start);
	return 0;
}

static int
sp_ser_object (SpSerializer *s, void *obj, SpClass *c, uint32_t lid, SpError *err)
{
	uint32_t class_id = sp_ser_class_id (s, c);
	/* Tag, LID and class id with one reservation: this runs once per object. */
	uint8_t *dst = sp_buf_reserve (s->out, 1 + 2 * SP_VARINT32_MAX);
	if (!dst)
		return sp_ser_oom (err);
	uint8_t *start = dst;
	*dst++ = SP_REC_OBJECT;
	dst = sp_put_varint_raw (dst, lid);
	dst = sp_put_varint_raw (dst, class_id);
	s->out->len += (size_t)(dst - start);
	return sp_ser_leaves (s, c, obj, err);
}

static bool
sp_ser_string_is_latin1 (const uint16_t *chars, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (chars [i] > 0xff)
			return false;
	return true;
}

/* Elements in one piece of a string (c NULL) or an array of class c. */
static uint64_t
sp_ser_piece_length (const SpClass *c)
{
	if (!c || c->kind == SP_CLASS_STRING)
		return SP_SER_PIECE_BYTES / 2;
	if (sp_class_is_primitive_array (c))
		return SP_SER_PIECE_BYTES / (c->elem_size ? c->elem_size : 1);
	return SP_SER_PIECE_ELEMS;
}

/* A piece of a string: count, encoding (Latin-1 when every unit fits), units. */
static void
sp_ser_string_piece (SpBuf *o, const uint16_t *chars, uint64_t n)
{
	sp_buf_put_varint (o, n);
	bool latin1 = sp_ser_string_is_latin1 (chars, (uint32_t)n);
	sp_buf_put_u8 (o, latin1 ? SP_STR_LATIN1 : SP_STR_UTF16LE);
	uint8_t *dst = sp_buf_reserve (o, (size_t)n * (latin1 ? 1 : 2));
	if (!dst)
		return;
	for (uint64_t i = 0; i < n; i++) {
		if (latin1)
			dst [i] = (uint8_t)chars [i];
		else
			sp_put_le (dst + 2 * i, chars [i], 2);
	}
	o->len += (size_t)n * (latin1 ? 1 : 2);
}

static int
sp_ser_array_elements (SpSerializer *s, const SpClass *c, const uint8_t *data, uint64_t n, SpError *err)
{
#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (sp_class_is_primitive_array (c) && c->fields [0].kind != SP_KIND_BOOL) {
		sp_buf_put_bytes (s->out, data, (size_t)n * c->elem_size);
		return 0;
	}
#endif
	for (uint64_t i = 0; i < n; i++)
		if (sp_ser_leaves (s, c, data + i * c->elem_size, err) < 0)
			return -1;
	return 0;
}

/* Elements [start, start + count) of string or array obj, as a piece. */
static int
sp_ser_piece (SpSerializer *s, void *obj, const SpClass *c, uint64_t start, uint64_t count, SpError *err)
{
	if (c->kind == SP_CLASS_STRING) {
		sp_ser_string_piece (s->out, sp_client_string_chars (obj) + start, count);
		return 0;
	}
	sp_buf_put_varint (s->out, count);
	return sp_ser_array_elements (s, c, (const uint8_t *)sp_client_array_data (obj) + start * c->elem_size, count, err);
}

static uint64_t
sp_ser_length (void *obj, const SpClass *c)
{
	return c->kind == SP_CLASS_STRING ? sp_client_string_length (obj) : sp_client_array_length (obj);
}

/*
 * The record of a string or array, with its first piece; the rest follow as
 * ELEMS records (sp_ser_continue), unless `whole` (the barrier: the object's
 * state must be taken entirely before the store lands, and there is one
 * object in pieces at a time).
 */
static int
sp_ser_sized (SpSerializer *s, void *obj, SpClass *c, uint32_t lid, bool whole, SpError *err)
{
	uint64_t n = sp_ser_length (obj, c);
	SpBuf *o = s->out;
	if (c->kind == SP_CLASS_STRING) {
		sp_buf_put_u8 (o, SP_REC_STRING);
		sp_buf_put_varint (o, lid);
	} else {
		uint32_t class_id = sp_ser_class_id (s, c);
		sp_buf_put_u8 (o, SP_REC_ARRAY);
		sp_buf_put_varint (o, lid);
		sp_buf_put_varint (o, class_id);
	}
	sp_buf_put_varint (o, n);
	uint64_t first = whole || n < sp_ser_piece_length (c) ? n : sp_ser_piece_length (c);
	if (first < n) {
		s->partial_lid = lid;
		s->partial_next = first;
	}
	return sp_ser_piece (s, obj, c, 0, first, err);
}

/* The next piece of the string or array being written in pieces. */
static int
sp_ser_continue (SpSerializer *s, SpError *err)
{
	uint32_t lid = s->partial_lid;
	void *obj = sp_client_lid_object (lid);     /* read again: the GC may have moved it since the last piece */
	SpClass *c = sp_client_class_of (obj, err);
	if (!c)
		return -1;
	uint64_t n = sp_ser_length (obj, c), start = s->partial_next;
	uint64_t count = n - start < sp_ser_piece_length (c) ? n - start : sp_ser_piece_length (c);
	sp_buf_put_u8 (s->out, SP_REC_ELEMS);
	sp_buf_put_varint (s->out, lid);
	sp_buf_put_varint (s->out, start);
	s->partial_next += count;
	if (s->partial_next == n)
		s->partial_lid = 0;
	if (sp_ser_piece (s, obj, c, start, count, err) < 0)
		return -1;
	return s->out->oom ? sp_ser_oom (err) : 0;
}

/* Mark object `lid` written; false when it already was (a barrier or a step got there first). */
static int
sp_ser_claim (SpSerializer *s, uint32_t lid, SpError *err)
{
	if (lid >= s->written_cap) {
		size_t cap = s->written_cap ? s->written_cap : 1024;
		while (cap <= lid)
			cap *= 2;
		uint8_t *grown = realloc (s->written, cap);
		if (!grown)
			return sp_ser_oom (err);
		memset (grown + s->written_cap, 0, cap - s->written_cap);
		s->written = grown;
		s->written_cap = cap;
	}
	if (s->written [lid])
		return 0;
	s->written [lid] = 1;
	return 1;
}

/* Write the record of object `lid` (obj) of class c (`whole`: no pieces left for later). */
static int
sp_ser_write (SpSerializer *s, void *obj, SpClass *c, uint32_t lid, bool whole, SpError *err)
{
	int rc = 0;
	switch (c->kind) {
	case SP_CLASS_OBJECT: rc = sp_ser_object (s, obj, c, lid, err); break;
	case SP_CLASS_STRING:
	case SP_CLASS_ARRAY: rc = sp_ser_sized (s, obj, c, lid, whole, err); break;
	default: rc = sp_error_set (err, "internal error: class %s has kind %u", c->name, c->kind);
	}
	if (rc < 0)
		return -1;
	if (s->out->oom)
		return sp_ser_oom (err);
	s->objects_written++;
	return 0;
}

int
sp_ser_step (SpSerializer *s, size_t max_objects, SpError *err)
{
	uint32_t lid;
	for (size_t done = 0; done < max_objects; done++) {
		if (s->partial_lid) {
			if (sp_ser_continue (s, err) < 0)
				return -1;
			done += SP_SER_PIECE_COST - 1;
			continue;
		}
		if (!sp_queue_pop (&s->queue, &lid))
			return 0;
		/* Breadth-first order is known ahead: fetch an object a few turns before its turn. */
		uint32_t ahead;
		if (sp_queue_peek (&s->queue, SP_SER_PREFETCH_DISTANCE, &ahead))
			__builtin_prefetch (sp_client_lid_object (ahead));
		int claimed = sp_ser_claim (s, lid, err);
		if (claimed < 0)
			return -1;
		if (!claimed)
			continue;               /* a barrier wrote it already */
		void *obj = sp_client_lid_object (lid);
		SpClass *c = sp_client_class_of (obj, err);   /* known persistable: checked when queued */
		if (!c)
			return sp_error_set (err, "internal error: queued object %u lost its class", lid);
		if (sp_ser_write (s, obj, c, lid, false, err) < 0)
			return -1;
	}
	return sp_queue_count (&s->queue) || s->partial_lid ? 1 : 0;
}

/* Give LIDs to the objects the reference leaves of one instance/element at `base` point to. */
static int
sp_ser_mark_leaves (SpSerializer *s, const SpClass *c, const uint8_t *base, SpError *err)
{
	for (uint32_t i = 0; i < c->nfields; i++) {
		uint32_t lid;
		if (c->fields [i].kind == SP_KIND_REF && sp_ser_child_lid (s, c, &c->fields [i], base, &lid, err) < 0)
			return -1;
	}
	return 0;
}

static int
sp_ser_mark_object (SpSerializer *s, void *obj, const SpClass *c, SpError *err)
{
	if (c->kind == SP_CLASS_OBJECT)
		return sp_ser_mark_leaves (s, c, obj, err);
	if (c->kind != SP_CLASS_ARRAY || sp_class_is_primitive_array (c))
		return 0;
	const uint8_t *data = sp_client_array_data (obj);
	uint64_t n = sp_client_array_length (obj);
	for (uint64_t i = 0; i < n; i++)
		if (sp_ser_mark_leaves (s, c, data + i * c->elem_size, err) < 0)
			return -1;
	return 0;
}

int
sp_ser_mark (SpSerializer *s, size_t max_objects, SpError *err)
{
	for (size_t done = 0; done < max_objects && s->marked < s->nobjects; done++) {
		uint32_t lid = ++s->marked;
		void *obj = sp_client_lid_object (lid);
		SpClass *c = sp_client_class_of (obj, err);
		if (!c || sp_ser_mark_object (s, obj, c, err) < 0)
			return -1;
	}
	return s->marked < s->nobjects ? 1 : 0;
}

uint32_t
sp_ser_lid_if_known (SpSerializer *s, void *obj)
{
	if (!obj)
		return 0;
	SpLidEntry *e = sp_lidmap_find (&s->lids, sp_client_identity_hash (obj), obj, sp_client_gc_epoch ());
	return e ? sp_lid_of (e) : 0;
}

int
sp_ser_write_now (SpSerializer *s, void *obj, SpError *err)
{
	uint32_t lid;
	if (!obj || sp_ser_lid_of (s, obj, &lid, err) < 0)
		return obj ? -1 : 0;
	if (lid == s->partial_lid) {
		/* Being written in pieces: the rest of it, now, before the store lands. */
		while (s->partial_lid == lid)
			if (sp_ser_continue (s, err) < 0)
				return -1;
		return 1;
	}
	int claimed = sp_ser_claim (s, lid, err);
	if (claimed <= 0)
		return claimed;
	SpClass *c = sp_client_class_of (obj, err);
	if (!c || sp_ser_write (s, obj, c, lid, true, err) < 0)
		return -1;
	return 1;
}

int
sp_ser_finish (SpSerializer *s, SpError *err)
{
	if (sp_queue_count (&s->queue) || s->partial_lid)
		return sp_error_set (err, "internal error: snapshot finished with %zu objects still queued", sp_queue_count (&s->queue) + (s->partial_lid != 0));
	SpSnapTrailer t = { .nclasses = s->nclasses, .nobjects = s->nobjects, .nroots = s->nroots };
	uint8_t *dst = sp_buf_reserve (s->out, SP_FORMAT_TRAILER_SIZE);
	if (!dst)
		return sp_ser_oom (err);
	sp_format_write_trailer (dst, &t);   /* crc still 0 */
	s->out->len += SP_FORMAT_TRAILER_SIZE;
	uint32_t crc = sp_crc32c (0, s->out->data, s->out->len - 4);
	sp_put_le (s->out->data + s->out->len - 4, crc, 4);
	return 0;
}
