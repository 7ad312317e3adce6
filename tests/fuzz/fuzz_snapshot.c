/*
 * fuzz_snapshot.c: libFuzzer target for the snapshot reader (the validating
 * walk, the index, the streaming decoder), built with ASan and UBSan.
 *
 *   cmake -S . -B build-fuzz -DCMAKE_C_COMPILER=clang -DSPMONO_FUZZ=ON -DSPMONO_BUILD_RUNTIME=OFF
 *   cmake --build build-fuzz --target fuzz_snapshot
 *   build-fuzz/fuzz_snapshot -runs=10000000 tests/fuzz/corpus   (a fresh copy of it, to keep the seeds)
 *
 * Each input is read twice: as it is (the checksum refuses almost every
 * mutation: that path must be safe too), and with its trailer's checksum
 * recomputed, so that mutations reach the records.  The decoder restores into
 * plain memory: every class the snapshot names is "live" with the snapshot's
 * own leaves, 8 bytes a leaf, as a client that knows every class would.
 * Properties checked besides memory safety: parse and decode agree on
 * whether the input is valid, and decode never creates more objects than the
 * trailer counts.  It restores twice: linking references as it meets them
 * (sp-decode.c; the object a field declares made early, by name) and with
 * every reference left to the fix-up; both must succeed or fail alike and
 * make the same objects byte for byte.  Seed links-miss.spm has a reference
 * whose record is not of its declared class (test_links.c's late miss);
 * class-index.spm has a class index (two classes, read before the
 * objects), the other seeds none (snapshots of before it).
 *
 * A delta input (version 2) is also read as the second part of a chain
 * (sp_chain_decode) on a built-in full snapshot: its header's links are
 * rewritten to name that snapshot, so that mutations reach the rules of
 * deltas (prior objects given again, patches, new objects).  Properties: a
 * delta that does not parse alone never applies, and a chain that applies
 * has made exactly its objects.
 *
 * The checksum-fixed input is also restored into a program whose classes
 * changed (sp-evolve.h): each live class is the snapshot's with every
 * primitive leaf widened as far as the rules allow, its first leaf renamed
 * (the old name declared former), its last dropped and one leaf added; only
 * memory safety and the object count are checked there (a hostile class
 * record may be refused by the rules).  Such a chain is also folded (sp-fold.h): the
 * fold must succeed, be a valid full snapshot, and restore alone to the very
 * objects the chain made (the same classes, lengths and values, references
 * compared as LIDs, which is what this restorer stores).
 */
#include "sp-chain.h"
#include "sp-crc32c.h"
#include "sp-evolve.h"
#include "sp-fold.h"
#include "sp-snapshot.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The built-in full snapshot deltas apply to (tests/unit/craft-chain.c's: two App.Node, an int[6]). */
static const uint8_t fuzz_chain_base [] = {
	0x89, 0x53, 0x50, 0x4d, 0x0d, 0x0a, 0x1a, 0x0a, 0x01, 0x00, 0x28, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0xe9, 0x03, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00,
	0x00, 0x00, 0x00, 0x00, 0x01, 0x01, 0x01, 0x03, 0x41, 0x70, 0x70, 0x08,
	0x41, 0x70, 0x70, 0x2e, 0x4e, 0x6f, 0x64, 0x65, 0x02, 0x05, 0x76, 0x61,
	0x6c, 0x75, 0x65, 0x07, 0x04, 0x6e, 0x65, 0x78, 0x74, 0x0d, 0x08, 0x41,
	0x70, 0x70, 0x2e, 0x4e, 0x6f, 0x64, 0x65, 0x01, 0x02, 0x03, 0x08, 0x6d,
	0x73, 0x63, 0x6f, 0x72, 0x6c, 0x69, 0x62, 0x0e, 0x53, 0x79, 0x73, 0x74,
	0x65, 0x6d, 0x2e, 0x49, 0x6e, 0x74, 0x33, 0x32, 0x5b, 0x5d, 0x01, 0x00,
	0x07, 0x02, 0x01, 0x01, 0x07, 0x00, 0x00, 0x00, 0x02, 0x02, 0x02, 0x01,
	0x08, 0x00, 0x00, 0x00, 0x00, 0x04, 0x03, 0x02, 0x06, 0x06, 0x01, 0x00,
	0x00, 0x00, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00, 0x00, 0x04, 0x00,
	0x00, 0x00, 0x05, 0x00, 0x00, 0x00, 0x06, 0x00, 0x00, 0x00, 0x06, 0x01,
	0x01, 0x06, 0x02, 0x03, 0x7f, 0x02, 0x00, 0x00, 0x00, 0x03, 0x00, 0x00,
	0x00, 0x02, 0x00, 0x00, 0x00, 0xf5, 0x1b, 0xcf, 0xa5,
};

#define FUZZ_MAX_CLASSES 4096

typedef struct Restore {
	void **objects;          /* [1..nobjects] */
	SpClass **classes;       /* [1..nobjects]: each object's live class (NULL: a string) */
	uint64_t *lengths;       /* [1..nobjects] */
	bool *early;             /* [1..nobjects]: made by a link, before its record (sp-decode.c, "links") */
	bool missed;             /* a record's class was not that of the object made early for it */
	uint32_t nobjects;
	uint32_t created;
	SpClass *live [FUZZ_MAX_CLASSES]; /* made from the snapshots' classes, one per name and layout */
	uint32_t nlive;
	bool evolve;             /* each live class a changed version of the snapshot's (fuzz_evolve) */
} Restore;

static int
fuzz_begin (void *ctx, const SpSnapTrailer *t, SpError *err)
{
	Restore *r = ctx;
	r->objects = calloc ((size_t)t->nobjects + 1, sizeof *r->objects);
	r->classes = calloc ((size_t)t->nobjects + 1, sizeof *r->classes);
	r->lengths = calloc ((size_t)t->nobjects + 1, sizeof *r->lengths);
	r->early = calloc ((size_t)t->nobjects + 1, sizeof *r->early);
	if (!r->objects || !r->classes || !r->lengths || !r->early)
		return sp_error_set (err, "out of memory");
	r->nobjects = t->nobjects;
	return 0;
}

/* The same live class for the same name and leaves, in whichever file of a chain. */
static SpClass *
fuzz_find_live (Restore *r, const SpSnapClass *c)
{
	for (uint32_t i = 0; i < r->nlive; i++) {
		SpClass *l = r->live [i];
		size_t la = strcspn (l->assembly, ","), lc = strcspn (c->assembly, ",");
		if (l->kind != c->kind || l->nfields != c->nfields || strcmp (l->name, c->name) != 0 || la != lc ||
		    memcmp (l->assembly, c->assembly, la) != 0)
			continue;
		bool same = true;
		for (uint32_t f = 0; f < c->nfields && same; f++) {
			const SpField *a = &l->fields [f], *b = &c->fields [f];
			same = a->kind == b->kind && strcmp (a->name, b->name) == 0 &&
			       (a->kind != SP_KIND_REF || strcmp (a->type_name ? a->type_name : "", b->type_name ? b->type_name : "") == 0);
		}
		if (same)
			return l;
	}
	return NULL;
}

/* The widest kind leaf kind k may become (itself when none is wider). */
static uint8_t
fuzz_widest (uint8_t k)
{
	static const uint8_t wide [] = { SP_KIND_R8, SP_KIND_I8, SP_KIND_U8 };
	for (size_t i = 0; k != SP_KIND_REF && i < sizeof wide; i++)
		if (sp_evolve_widens (k, wide [i]))
			return wide [i];
	return k;
}

/* A later version of live (a copy of the snapshot's class): leaves widened, the first renamed, the last dropped, one added. */
static void
fuzz_evolve (SpClass *live)
{
	for (uint32_t i = 0; i < live->nfields; i++)
		live->fields [i].kind = fuzz_widest (live->fields [i].kind);
	if (live->nfields > 2) {
		uint32_t last = live->nfields - 1;         /* dropped: the new leaf takes its place */
		free ((char *)live->fields [last].name);
		free ((char *)live->fields [last].type_name);
		live->fields [last] = (SpField){ .name = strdup ("fuzz.added"), .kind = SP_KIND_I4, .offset = 8 * last };
	}
	if (live->nfields > 0 && live->fields [0].name) {
		live->fields [0].former_names = live->fields [0].name;
		live->fields [0].name = strdup ("fuzz.renamed");
	}
}

static int
fuzz_resolve (void *ctx, SpSnapClass *c, SpError *err)
{
	Restore *r = ctx;
	if (!r->evolve && (c->resolved = fuzz_find_live (r, c)))
		return 0;
	if (r->nlive == FUZZ_MAX_CLASSES)
		return sp_error_set (err, "too many classes");
	SpClass *live = r->live [r->nlive++] = calloc (1, sizeof *live);
	if (!live)
		return sp_error_set (err, "out of memory");
	/* Its own copies of the names: a chain's earlier files are freed while later ones restore. */
	live->kind = c->kind;
	live->name = strdup (c->name);
	live->assembly = strdup (c->assembly);
	live->nfields = c->nfields;
	live->fields = calloc (c->nfields ? c->nfields : 1, sizeof *live->fields);
	if (!live->name || !live->assembly || !live->fields)
		return sp_error_set (err, "out of memory");
	for (uint32_t i = 0; i < c->nfields; i++) {
		live->fields [i] = c->fields [i];
		live->fields [i].name = strdup (c->fields [i].name);
		live->fields [i].type_name = c->fields [i].type_name ? strdup (c->fields [i].type_name) : NULL;
		live->fields [i].offset = 8 * i;
	}
	live->elem_size = 8 * (c->nfields ? c->nfields : 1);
	if (r->evolve)
		fuzz_evolve (live);
	c->resolved = live;
	c->keep_unknown = r->evolve && c->kind == SP_CLASS_OBJECT;     /* its dropped leaves' values read (fuzz_old_values) */
	return 0;
}

static void *
fuzz_create (void *ctx, uint32_t lid, const SpSnapClass *c, uint64_t length, SpError *err)
{
	Restore *r = ctx;
	if (lid == 0 || lid > r->nobjects || (r->objects [lid] && !r->early [lid]))
		return sp_error_set (err, "object %u created twice or out of range", lid), NULL;
	if (r->objects [lid]) {   /* made early: kept when its record says its class, else made anew */
		r->early [lid] = false;
		if (c && c->kind == SP_CLASS_OBJECT && r->classes [lid] == c->resolved) {
			r->created++;
			return r->objects [lid];
		}
		r->missed = true;
		free (r->objects [lid]);
		r->objects [lid] = NULL;
	}
	size_t unit = c ? ((SpClass *)c->resolved)->elem_size : 2;
	size_t n = c && c->kind == SP_CLASS_OBJECT ? 1 : (size_t)length;
	if (n > (64u << 20) / unit)                     /* the walk bounds lengths by the input: a big one is a finding */
		abort ();
	r->objects [lid] = calloc (n ? n : 1, unit);
	if (!r->objects [lid])
		return sp_error_set (err, "out of memory"), NULL;
	r->classes [lid] = c ? c->resolved : NULL;
	r->lengths [lid] = length;
	r->created++;
	return r->objects [lid];
}

/* A delta's record of an object the chain made: the same live class, and long enough for a patch. */
static void *
fuzz_reuse (void *ctx, uint32_t lid, const SpSnapClass *c, uint64_t end, SpError *err)
{
	Restore *r = ctx;
	if (lid == 0 || lid > r->nobjects || !r->objects [lid])
		abort ();                                   /* the walk lets only the chain's objects through */
	if (r->classes [lid] != c->resolved || (c->kind == SP_CLASS_ARRAY && end > r->lengths [lid]))
		return sp_error_set (err, "object %u is not what the delta says", lid), NULL;
	return r->objects [lid];
}

static void *
fuzz_base (void *ctx, uint32_t lid, uint8_t kind)
{
	(void)kind;
	return ((Restore *)ctx)->objects [lid];
}

static int
fuzz_store_ref (void *ctx, void *slot, const SpField *field, uint32_t lid, SpError *err)
{
	Restore *r = ctx;
	(void)field;
	if (lid > r->nobjects)
		return sp_error_set (err, "reference to %u beyond %u objects", lid, r->nobjects);
	uint64_t stored = lid;                          /* the LID: two restores then compare byte for byte */
	memcpy (slot, &stored, sizeof stored);
	return 0;
}

/* The live object class named as a field's declared type, if one was made from the snapshot's classes. */
static void *
fuzz_early_class (void *ctx, const SpField *field, const SpSnapClass *known, uint32_t nknown)
{
	Restore *r = ctx;
	for (uint32_t i = 0; known && i < nknown; i++)
		if (!known [i].resolved)
			abort ();                           /* the decoder promises every class resolved */
	for (uint32_t i = 0; field->type_name && i < r->nlive; i++)
		if (r->live [i]->kind == SP_CLASS_OBJECT && strcmp (r->live [i]->name, field->type_name) == 0)
			return r->live [i];
	return NULL;
}

/* A link stores the target's LID, as fuzz_store_ref does, when the target is of the declared class itself. */
static int
fuzz_link (void *ctx, uint32_t owner, uint8_t kind, size_t offset, const SpField *field, void *early, uint32_t lid, SpError *err)
{
	Restore *r = ctx;
	if (lid == 0 || lid > r->nobjects || owner == 0 || owner > r->nobjects || !r->objects [owner] || kind == SP_CLASS_STRING)
		abort ();                                   /* the walk validated both */
	const SpClass *holder = r->classes [owner];
	size_t room = kind == SP_CLASS_ARRAY ? (size_t)r->lengths [owner] * holder->elem_size : holder->elem_size;
	if (offset + sizeof (uint64_t) > room)
		abort ();                                   /* a slot outside its object: the decoder's arithmetic is wrong */
	if (r->missed)
		return 1;
	if (!r->objects [lid]) {
		if (!early)
			return 1;
		if (!(r->objects [lid] = calloc (1, ((SpClass *)early)->elem_size)))
			return sp_error_set (err, "out of memory");
		r->classes [lid] = early;
		r->early [lid] = true;
	}
	const SpClass *target = r->classes [lid];
	if (!target || !field->type_name || strcmp (target->name, field->type_name) != 0)
		return 1;
	uint64_t stored = lid;
	memcpy ((uint8_t *)r->objects [owner] + offset, &stored, sizeof stored);
	return 0;
}

static bool
fuzz_early_missed (void *ctx)
{
	return ((Restore *)ctx)->missed;
}

static void
fuzz_old_leaf (void *ctx, const SpField *leaf, const uint8_t *value, uint32_t lid)
{
	uint64_t *sum = ctx;
	*sum += leaf->kind + lid + (value ? value [0] : 0);
}

/* A changed class's record: its old leaves and its dropped values, read as the restorers read them (under ASan). */
static void
fuzz_old_values (void *ctx, uint32_t lid, const SpSnapClass *c, const uint8_t *values)
{
	(void)ctx;
	(void)lid;
	uint32_t prim_bytes = 0, nrefs = 0;
	for (uint32_t i = 0; i < c->nfields; i++)
		if (c->leaf_changed [i] == SP_LEAF_DROPPED)
			c->fields [i].kind == SP_KIND_REF ? nrefs++ : (prim_bytes += sp_kind_size (c->fields [i].kind));
	uint8_t *prims = malloc (prim_bytes + 1);
	uint32_t *lids = malloc ((nrefs + 1) * sizeof *lids);
	if (prims && lids)
		sp_evolve_dropped_values (c, values, prims, lids);
	free (prims);
	free (lids);
	uint64_t sum = 0;
	sp_evolve_old_leaves (c, values, fuzz_old_leaf, &sum);
}

static const SpDecodeOps fuzz_ops = {
	.old_values = fuzz_old_values,
	.begin = fuzz_begin,
	.resolve = fuzz_resolve,
	.create = fuzz_create,
	.base = fuzz_base,
	.store_ref = fuzz_store_ref,
	.reuse = fuzz_reuse,
	.early_class = fuzz_early_class,
	.link = fuzz_link,
	.early_missed = fuzz_early_missed,
};

/* The same restorer without links: every reference by the fix-up (read_twice compares the two). */
static const SpDecodeOps *
fuzz_ops_no_links (void)
{
	static SpDecodeOps ops;
	ops = fuzz_ops;
	ops.early_class = NULL;
	ops.link = NULL;
	ops.early_missed = NULL;
	return &ops;
}

static void
restore_free (Restore *r)
{
	for (uint32_t i = 1; r->objects && i <= r->nobjects; i++)
		free (r->objects [i]);
	for (uint32_t i = 0; i < r->nlive; i++) {
		for (uint32_t f = 0; r->live [i]->fields && f < r->live [i]->nfields; f++) {
			free ((char *)r->live [i]->fields [f].name);
			free ((char *)r->live [i]->fields [f].type_name);
			free ((char *)r->live [i]->fields [f].former_names);
		}
		free ((char *)r->live [i]->name);
		free ((char *)r->live [i]->assembly);
		free (r->live [i]->fields);
		free (r->live [i]);
	}
	free (r->objects);
	free (r->classes);
	free (r->lengths);
	free (r->early);
}

static bool restores_equal (const Restore *a, const Restore *b);

static void
read_twice (const uint8_t *data, size_t size)
{
	SpSnapshot snap;
	SpError err = { 0 };
	int parsed = sp_snapshot_parse (data, size, &snap, &err);
	sp_snapshot_free (&snap);
	Restore r = { 0 };
	SpSnapshot dsnap;
	int decoded = sp_snapshot_decode (data, size, &fuzz_ops, &r, &dsnap, &err);
	sp_snapshot_free (&dsnap);
	/*
	 * A valid full snapshot decodes (every class is live here); an invalid one
	 * never does; a delta never decodes alone (read_as_delta applies it).
	 */
	SpSnapHeader h;
	bool delta = sp_snapshot_check (data, size, &h, NULL, &err) == 0 && sp_header_is_delta (&h);
	if (delta ? decoded == 0 : (parsed == 0) != (decoded == 0))
		abort ();
	if (decoded == 0 && r.created != r.nobjects)
		abort ();
	/* Without links, every reference by the fix-up: the same outcome, the same objects byte for byte. */
	Restore u = { 0 };
	int unlinked = sp_snapshot_decode (data, size, fuzz_ops_no_links (), &u, &dsnap, &err);
	sp_snapshot_free (&dsnap);
	if ((unlinked == 0) != (decoded == 0) || (decoded == 0 && !restores_equal (&r, &u)))
		abort ();
	restore_free (&u);
	restore_free (&r);
}

/* Restored into changed classes: memory safety, and never more objects than the trailer counts. */
static void
read_evolved (const uint8_t *data, size_t size)
{
	Restore r = { .evolve = true };
	SpSnapshot snap;
	SpError err = { 0 };
	int decoded = sp_snapshot_decode (data, size, &fuzz_ops, &r, &snap, &err);
	sp_snapshot_free (&snap);
	if (r.created > r.nobjects || (decoded == 0 && r.created != r.nobjects))
		abort ();
	restore_free (&r);
}

static int
fuzz_append (void *ctx, const uint8_t *data, size_t size, SpError *err)
{
	(void)err;
	sp_buf_put_bytes (ctx, data, size);
	return 0;
}

/* Two restores made the same objects: classes (by name), lengths, bytes. */
static bool
restores_equal (const Restore *a, const Restore *b)
{
	if (a->nobjects != b->nobjects)
		return false;
	for (uint32_t lid = 1; lid <= a->nobjects; lid++) {
		const SpClass *x = a->classes [lid], *y = b->classes [lid];
		if (!x != !y || (x && (x->kind != y->kind || strcmp (x->name, y->name) != 0)) || a->lengths [lid] != b->lengths [lid])
			return false;
		size_t unit = x ? x->elem_size : 2;
		size_t n = x && x->kind == SP_CLASS_OBJECT ? 1 : (size_t)a->lengths [lid];
		if (memcmp (a->objects [lid], b->objects [lid], n * unit) != 0)
			return false;
	}
	return true;
}

/* A chain that applied, folded: the fold is a full snapshot that restores alone to the same objects. */
static void
fold_and_compare (const SpChainPart *parts, size_t n, const Restore *chain)
{
	SpChain c;
	SpError err = { 0 };
	if (sp_chain_of_memory (parts, n, &c, &err) < 0)
		abort ();                                   /* the restorer took the chain: its model holds */
	SpBuf out;
	sp_buf_init (&out);
	SpFoldResult res;
	int rc = sp_fold_write (&c, fuzz_append, &out, &res, &err);
	sp_chain_free (NULL, &c);
	if (rc < 0 || out.oom)
		abort ();
	Restore f = { 0 };
	SpSnapshot snap;
	if (sp_snapshot_decode (out.data, out.len, &fuzz_ops, &f, &snap, &err) != 0 || !restores_equal (chain, &f))
		abort ();
	sp_snapshot_free (&snap);
	restore_free (&f);
	sp_buf_free (&out);
}

/* A delta input, its links rewritten to name the built-in base, then its checksum: read alone and as a chain. */
static void
read_as_delta (const uint8_t *data, size_t size)
{
	if (size < SP_FORMAT_DELTA_HEADER_SIZE + SP_FORMAT_TRAILER_SIZE || sp_get_le (data + 8, 2) != SP_FORMAT_VERSION_DELTA)
		return;
	static uint32_t base_crc, base_objects;
	if (!base_objects) {
		SpSnapTrailer t;
		if (sp_snapshot_check (fuzz_chain_base, sizeof fuzz_chain_base, NULL, &t, NULL) < 0)
			abort ();
		base_crc = t.crc;
		base_objects = t.nobjects;
	}
	uint8_t *delta = malloc (size);
	if (!delta)
		return;
	memcpy (delta, data, size);
	sp_put_le (delta + 32, 1, 8);                   /* base_sequence */
	sp_put_le (delta + 40, 1, 8);                   /* prev_sequence */
	sp_put_le (delta + 48, base_crc, 4);
	sp_put_le (delta + 52, base_objects, 4);
	if (sp_get_le (delta + 16, 8) < 2)
		sp_put_le (delta + 16, 2, 8);
	sp_put_le (delta + size - 4, sp_crc32c (0, delta, size - 4), 4);
	SpSnapshot snap, last;
	SpError err = { 0 };
	int parsed = sp_snapshot_parse (delta, size, &snap, &err);
	sp_snapshot_free (&snap);
	SpChainPart parts [2] = { { fuzz_chain_base, sizeof fuzz_chain_base, false }, { delta, size, false } };
	Restore r = { 0 };
	size_t failed;
	int applied = sp_chain_decode (parts, 2, &fuzz_ops, &r, &last, &failed, &err);
	sp_snapshot_free (&last);
	if (applied == 0 && (parsed != 0 || r.created != r.nobjects))
		abort ();
	if (applied == 0)
		fold_and_compare (parts, 2, &r);
	restore_free (&r);
	free (delta);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	read_twice (data, size);
	if (size >= SP_FORMAT_HEADER_SIZE + SP_FORMAT_TRAILER_SIZE) {
		uint8_t *fixed = malloc (size);
		if (!fixed)
			return 0;
		memcpy (fixed, data, size);
		uint32_t crc = sp_crc32c (0, fixed, size - 4);
		for (int i = 0; i < 4; i++)
			fixed [size - 4 + i] = (uint8_t)(crc >> (8 * i));
		read_twice (fixed, size);
		read_evolved (fixed, size);
		free (fixed);
		read_as_delta (data, size);
	}
	return 0;
}
