/* sp-chain.c: see sp-chain.h. */
#include "sp-chain.h"

#include "sp-store.h"
#include "sp-walk.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

void
sp_chain_free (SpStore *s, SpChain *c)
{
	for (size_t k = 0; c->parts && k < c->n; k++) {
		sp_snapshot_free (&c->parts [k].snap);
		if (s)
			sp_store_release (s, c->parts [k].data, c->parts [k].size);
	}
	free (c->parts);
	free (c->updates);
	free (c->latest);
	free (c->ends);
	*c = (SpChain){ 0 };
}

size_t
sp_chain_definer (const SpChain *c, uint32_t lid)
{
	size_t lo = 0, hi = c->n - 1;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (c->ends [mid] >= lid)
			hi = mid;
		else
			lo = mid + 1;
	}
	return lo;
}

bool
sp_snap_class_same (const SpSnapClass *a, const SpSnapClass *b)
{
	size_t la = strcspn (a->assembly, ","), lb = strcspn (b->assembly, ",");
	return strcmp (a->name, b->name) == 0 && la == lb && memcmp (a->assembly, b->assembly, la) == 0;
}

bool
sp_snap_class_equal (const SpSnapClass *a, const SpSnapClass *b)
{
	if (a->kind != b->kind || a->nfields != b->nfields || !sp_snap_class_same (a, b))
		return false;
	for (uint32_t i = 0; i < a->nfields; i++) {
		const SpField *x = &a->fields [i], *y = &b->fields [i];
		if (x->kind != y->kind || strcmp (x->name, y->name) != 0 ||
		    (x->kind == SP_KIND_REF && strcmp (x->type_name, y->type_name) != 0))
			return false;
	}
	return true;
}

const uint8_t *
sp_snap_class_skip (const SpSnapClass *c, const uint8_t *p)
{
	p += c->prim_bytes;
	for (uint32_t i = 0; i < c->wire_refs; i++)
		(void)sp_trusted_varint (&p);
	return p;
}

/* err says what is wrong with part k; say which part that is, unless it is the last. */
static int
sp_chain_broken (const SpChain *c, size_t k, SpError *err)
{
	if (k + 1 < c->n)
		sp_error_prefix (err, "its chain breaks at snapshot %" PRIu64, c->parts [k].seq);
	return -1;
}

static const char *
sp_kind_words (uint8_t kind)
{
	return kind == SP_CLASS_OBJECT ? "an object of " : kind == SP_CLASS_ARRAY ? "an array " : "a string";
}

/*
 * A delta's record about an earlier object must fit it (FORMAT.md): the same
 * class, an OBJECT record for an object, a PATCH within an array.  The
 * restorer refuses a chain that contradicts itself; so does every reader of
 * the model, which would otherwise print, patch or fold past an array.
 */
static int
sp_chain_change_fits (const SpChain *c, size_t k, const SpSnapChange *ch, SpError *err)
{
	const SpChainFile *def = &c->parts [sp_chain_definer (c, ch->lid)];
	const SpSnapObject *obj = sp_snapshot_object_const (&def->snap, ch->lid);
	const SpSnapClass *now = &c->parts [k].snap.classes [ch->class_id];
	const SpSnapClass *was = obj->kind == SP_CLASS_STRING ? NULL : &def->snap.classes [obj->class_id];
	if (obj->kind != ch->kind || !sp_snap_class_same (was, now))
		return sp_error_set (err, "it %s #%" PRIu32 " as %s%s, but snapshot %" PRIu64 " made it %s%s",
				     ch->kind == SP_CLASS_OBJECT ? "gives" : "patches", ch->lid, sp_kind_words (ch->kind), now->name,
				     def->seq, sp_kind_words (obj->kind), was ? was->name : "");
	if (ch->kind == SP_CLASS_ARRAY && (ch->start > obj->length || ch->count > obj->length - ch->start))
		return sp_error_set (err, "it patches elements [%" PRIu64 ", %" PRIu64 ") of #%" PRIu32 ", which has %" PRIu64,
				     ch->start, ch->start + ch->count, ch->lid, obj->length);
	return 0;
}

/* Every part's records about earlier objects, in chain order, each checked against the object. */
static int
sp_chain_index (SpChain *c, SpError *err)
{
	size_t total = 0;
	for (size_t k = 1; k < c->n; k++)
		total += c->parts [k].snap.nchanges;
	uint32_t nobjects = c->parts [c->n - 1].snap.trailer.nobjects;
	c->updates = malloc ((total ? total : 1) * sizeof *c->updates);
	c->latest = calloc ((size_t)nobjects + 1, sizeof *c->latest);
	if (!c->updates || !c->latest)
		return sp_error_set (err, "out of memory indexing a chain of %" PRIu32 " objects", nobjects);
	size_t nu = 0;
	for (size_t k = 1; k < c->n; k++) {
		const SpSnapshot *s = &c->parts [k].snap;
		for (uint32_t i = 0; i < s->nchanges; i++) {
			uint32_t lid = s->changes [i].lid;
			if (sp_chain_change_fits (c, k, &s->changes [i], err) < 0)
				return sp_chain_broken (c, k, err);
			c->updates [nu] = (SpChainUpdate){ .part = (uint32_t)k, .change = i, .prev = c->latest [lid] };
			c->latest [lid] = ++nu;
		}
	}
	return 0;
}

int
sp_chain_complete (SpChain *c, SpError *err)
{
	if (c->n == 0)
		return sp_error_set (err, "an empty chain");
	for (size_t a = 0, b = c->n - 1; a < b; a++, b--) {
		SpChainFile t = c->parts [a];
		c->parts [a] = c->parts [b];
		c->parts [b] = t;
	}
	if (!(c->ends = malloc (c->n * sizeof *c->ends)))
		return sp_error_set (err, "out of memory reading a chain");
	for (size_t k = 0; k < c->n; k++)
		c->ends [k] = c->parts [k].snap.trailer.nobjects;
	if (sp_header_is_delta (&c->parts [0].snap.header))
		return sp_error_set (err, "a chain starts at a full snapshot; %" PRIu64 " is a delta", c->parts [0].seq);
	/* Oldest first: the first link that fails names the first part that does not apply. */
	for (size_t k = 1; k < c->n; k++) {
		const SpSnapshot *prev = &c->parts [k - 1].snap;
		if (sp_chain_link_check (&c->parts [0].snap.header, &prev->header, &prev->trailer, &c->parts [k].snap.header, err) < 0)
			return sp_chain_broken (c, k, err);
	}
	return sp_chain_index (c, err);
}

/* One more file of c (read newest first; sp_chain_complete turns them around). */
static SpChainFile *
sp_chain_push (SpChain *c, size_t *cap)
{
	if (c->n == *cap) {
		size_t grown = *cap ? 2 * *cap : 8;
		SpChainFile *p = realloc (c->parts, grown * sizeof *p);
		if (!p)
			return NULL;
		c->parts = p;
		*cap = grown;
	}
	SpChainFile *f = &c->parts [c->n++];
	*f = (SpChainFile){ 0 };
	return f;
}

static int
sp_chain_read (SpStore *s, uint64_t seq, SpChain *c, SpError *err)
{
	size_t cap = 0;
	for (uint64_t at = seq;;) {
		SpChainFile *f = sp_chain_push (c, &cap);
		if (!f)
			return sp_error_set (err, "out of memory reading a chain");
		f->seq = at;
		if (s->ops->read (s, at, &f->data, &f->size, err) < 0) {
			f->data = NULL;
			c->n--;
			return at == seq ? -1 : sp_error_prefix (err, "its chain needs snapshot %" PRIu64, at);
		}
		c->bytes += f->size;
		if (sp_snapshot_parse (f->data, f->size, &f->snap, err) < 0)
			return at == seq ? -1 : sp_error_prefix (err, "its chain needs snapshot %" PRIu64 ", which is not valid", at);
		if (!sp_header_is_delta (&f->snap.header))
			return 0;
		/* Ends: a delta's prev_sequence is below its own (sp_snapshot_check). */
		at = f->snap.header.prev_sequence;
	}
}

int
sp_chain_load (SpStore *s, uint64_t seq, SpChain *c, SpError *err)
{
	*c = (SpChain){ 0 };
	int rc = sp_chain_read (s, seq, c, err);
	if (rc == 0)
		rc = sp_chain_complete (c, err);
	if (rc < 0)
		sp_chain_free (s, c);
	return rc;
}

int
sp_chain_of_memory (const SpChainPart *parts, size_t n, SpChain *c, SpError *err)
{
	*c = (SpChain){ .parts = calloc (n ? n : 1, sizeof *c->parts) };
	if (!c->parts)
		return sp_error_set (err, "out of memory reading a chain");
	int rc = 0;
	/* Newest first, as sp_chain_complete takes them. */
	for (size_t i = n; i > 0 && rc == 0; i--) {
		SpChainFile *f = &c->parts [c->n++];
		f->data = (uint8_t *)parts [i - 1].data;
		f->size = parts [i - 1].size;
		c->bytes += f->size;
		rc = sp_snapshot_parse (f->data, f->size, &f->snap, err);
		f->seq = f->snap.header.sequence;
	}
	if (rc == 0)
		rc = sp_chain_complete (c, err);
	if (rc < 0)
		sp_chain_free (NULL, c);
	return rc;
}
