/*
 * test_delta.c: delta snapshots and chains on the reading side
 * (docs/FORMAT.md, "Delta snapshots"): what a chain restores to, how each
 * link is checked, and that a delta which contradicts its chain, or breaks a
 * rule of its own, is refused rather than applied.
 *
 * The chain used throughout (classes are per file: the delta numbers them
 * the other way round on purpose):
 *
 *   1 (full)   class 1 App.Node { value: int, next: App.Node }, class 2 System.Int32[]
 *              1: Node { 7, -> 2 }   2: Node { 8, null }   3: int[6] = { 1 .. 6 }
 *              roots 1 -> 1, 2 -> 3
 *   2 (delta)  class 1 System.Int32[], class 2 App.Node
 *              2 again: Node { 80, -> 4 }   4 (new): Node { 9, -> 1 }
 *              3 patched: [2, 4) = { 30, 40 }
 *              roots 1 -> 1, 2 -> 3, 3 -> 4
 *   3 (delta)  class 1 App.Node
 *              1 again: Node { 70, null }   5 (new): "hi"
 *              roots 1 -> 1, 2 -> 3, 3 -> 5
 */
#include "unit.h"

#include "craft-chain.h"
#include "fake-objects.h"
#include "sp-chain.h"
#include "sp-crc32c.h"
#include "sp-fold.h"
#include "sp-format.h"
#include "sp-serialize.h"
#include "sp-snapshot.h"

/* ---- the chain, and its defects ---------------------------------------------- */

typedef enum Defect {
	OK = 0,
	REDEFINE_ARRAY,           /* delta 2 gives array 3 again by an ARRAY record */
	REDEFINE_TWICE,           /* delta 2 gives object 2 again twice */
	REDEFINE_OTHER_CLASS,     /* delta 2 gives array 3 again as a Node */
	PATCH_OBJECT,             /* delta 2 patches Node 1 as an int[] */
	PATCH_PAST_LENGTH,        /* delta 2 patches [5, 7) of int[6] */
	PATCH_NEW_LID,            /* delta 2 patches its own new object 4 */
	ELEMS_OF_PRIOR,           /* delta 2 continues array 3 by ELEMS */
	NEW_NEVER_DEFINED,        /* delta 2 says 5 objects, defines 4 */
	REF_BEYOND,               /* delta 2's object 4 points at 5 of 4 */
	DEFECT_COUNT
} Defect;


static void
make_base (Part *p)
{
	static const int32_t six [6] = { 1, 2, 3, 4, 5, 6 };
	part_begin (p, 1, NULL, NULL);
	put_class_node (&p->b, 1);
	put_class_ints (&p->b, 2);
	put_node (&p->b, 1, 1, 7, 2);
	put_node (&p->b, 2, 1, 8, 0);
	sp_buf_put_u8 (&p->b, SP_REC_ARRAY);
	sp_buf_put_varint (&p->b, 3);
	sp_buf_put_varint (&p->b, 2);
	sp_buf_put_varint (&p->b, 6);
	put_ints (&p->b, six, 6);
	put_root (&p->b, 1, 1);
	put_root (&p->b, 2, 3);
	part_finish (p, 2, 3, 2);
}

static void
make_delta2 (Part *p, const Part *base, Defect d)
{
	static const int32_t patch [2] = { 30, 40 };
	part_begin (p, 2, base, base);
	put_class_ints (&p->b, 1);
	put_class_node (&p->b, 2);
	put_node (&p->b, 2, 2, 80, 4);
	if (d == REDEFINE_TWICE)
		put_node (&p->b, 2, 2, 81, 4);
	if (d == REDEFINE_OTHER_CLASS)
		put_node (&p->b, 3, 2, 1, 0);
	put_node (&p->b, 4, 2, 9, d == REF_BEYOND ? 5 : 1);
	if (d == REDEFINE_ARRAY) {
		sp_buf_put_u8 (&p->b, SP_REC_ARRAY);
		sp_buf_put_varint (&p->b, 3);
		sp_buf_put_varint (&p->b, 1);
		sp_buf_put_varint (&p->b, 2);
		put_ints (&p->b, patch, 2);
	} else if (d == ELEMS_OF_PRIOR) {
		sp_buf_put_u8 (&p->b, SP_REC_ELEMS);
		sp_buf_put_varint (&p->b, 3);
		sp_buf_put_varint (&p->b, 2);
		put_ints (&p->b, patch, 2);
	} else {
		put_patch (&p->b, d == PATCH_OBJECT ? 1 : d == PATCH_NEW_LID ? 4 : 3, 1, d == PATCH_PAST_LENGTH ? 5 : 2, patch, 2);
	}
	put_root (&p->b, 1, 1);
	put_root (&p->b, 2, 3);
	put_root (&p->b, 3, 4);
	part_finish (p, 2, d == NEW_NEVER_DEFINED ? 5 : 4, 3);
}

static void
make_delta3 (Part *p, const Part *base, const Part *prev)
{
	part_begin (p, 3, base, prev);
	put_class_node (&p->b, 1);
	put_node (&p->b, 1, 1, 70, 0);
	sp_buf_put_u8 (&p->b, SP_REC_STRING);
	sp_buf_put_varint (&p->b, 5);
	sp_buf_put_varint (&p->b, 2);
	sp_buf_put_varint (&p->b, 2);
	sp_buf_put_u8 (&p->b, SP_STR_LATIN1);
	sp_buf_put_bytes (&p->b, "hi", 2);
	put_root (&p->b, 1, 1);
	put_root (&p->b, 2, 3);
	put_root (&p->b, 3, 5);
	part_finish (p, 1, 5, 3);
}

typedef struct Chain {
	Part part [3];
	SpChainPart parts [3];
} Chain;

static void
make_chain (Chain *c, Defect d)
{
	craft_register_classes ();
	make_base (&c->part [0]);
	make_delta2 (&c->part [1], &c->part [0], d);
	make_delta3 (&c->part [2], &c->part [0], &c->part [1]);
	for (int i = 0; i < 3; i++)
		c->parts [i] = (SpChainPart){ c->part [i].b.data, c->part [i].b.len, false };
}

static void
free_chain (Chain *c)
{
	for (int i = 0; i < 3; i++)
		sp_buf_free (&c->part [i].b);
}

static int32_t
node_value (void *node)
{
	int32_t v;
	fake_get (node, "value", &v, sizeof v);
	return v;
}

static int32_t
int_at (void *arr, uint64_t i)
{
	int32_t v;
	memcpy (&v, fake_elem (arr, i), sizeof v);
	return v;
}

/* Decode the first n parts; returns sp_chain_decode's result (objects freed). */
static int
decode_prefix (Chain *c, size_t n, size_t *failed, SpError *err)
{
	SpSnapshot last;
	void **objects;
	size_t mark = fake_object_mark ();
	int rc = fake_decode_chain (c->parts, n, &last, &objects, failed, err);
	fake_free_objects_since (mark);
	free (objects);
	sp_snapshot_free (&last);
	return rc;
}

static int
append_to_buf (void *ctx, const uint8_t *data, size_t size, SpError *err)
{
	(void)err;
	sp_buf_put_bytes (ctx, data, size);
	return 0;
}

/* The chain parts [0..n) folded into out (sp-fold.h): 0, or -1 with err set. */
static int
fold_chain (const SpChainPart *parts, size_t n, SpBuf *out, SpFoldResult *res, SpError *err)
{
	SpChain c;
	sp_buf_init (out);
	if (sp_chain_of_memory (parts, n, &c, err) < 0)
		return -1;
	int rc = sp_fold_write (&c, append_to_buf, out, res, err);
	sp_chain_free (NULL, &c);
	return rc;
}

/* Do the chain `parts` and the live roots hold the same graph? */
static void
assert_chain_is (const SpChainPart *parts, size_t n, void **roots, const char *what)
{
	SpSnapshot last;
	void **o;
	size_t failed = 99;
	SpError err = { 0 };
	int rc = fake_decode_chain (parts, n, &last, &o, &failed, &err);
	if (rc != 0)
		print_error ("%s: %s (part %zu)\n", what, err.msg, failed);
	assert_int_equal (rc, 0);
	void *restored [2] = { fake_restored_root (&last, o, 1, NULL), fake_restored_root (&last, o, 2, NULL) };
	char why [256];
	if (!fake_graphs_equal (roots, restored, 2, why, sizeof why))
		print_error ("%s: %s\n", what, why);
	assert_true (fake_graphs_equal (roots, restored, 2, why, sizeof why));
	free (o);
	sp_snapshot_free (&last);
}

/* ---- tests ------------------------------------------------------------------- */

static void
test_headers_say_what_they_are (void **state)
{
	(void)state;
	Chain c;
	make_chain (&c, OK);
	SpSnapHeader h;
	SpError err = { 0 };
	assert_int_equal (sp_snapshot_check (c.parts [0].data, c.parts [0].size, &h, NULL, &err), 0);
	assert_int_equal (h.version, SP_FORMAT_VERSION);     /* full snapshots stay readable by version 1 */
	assert_int_equal (h.header_size, SP_FORMAT_HEADER_SIZE);
	assert_false (sp_header_is_delta (&h));
	assert_int_equal (sp_snapshot_check (c.parts [2].data, c.parts [2].size, &h, NULL, &err), 0);
	assert_int_equal (h.version, SP_FORMAT_VERSION_DELTA);
	assert_int_equal (h.header_size, SP_FORMAT_DELTA_HEADER_SIZE);
	assert_true (sp_header_is_delta (&h));
	assert_true (h.base_sequence == 1 && h.prev_sequence == 2);
	assert_int_equal (h.prev_crc, c.part [1].crc);
	assert_int_equal (h.prior_objects, 4);
	free_chain (&c);
}

/* What the crafted chain's first n parts hold (the table at the top), as restored into o. */
static void
check_crafted_state (const SpSnapshot *last, void **o, size_t n)
{
	assert_int_equal (last->trailer.nroots, n == 1 ? 2 : 3);
	assert_ptr_equal (fake_restored_root (last, o, 2, NULL), o [3]);
	assert_int_equal (node_value (o [1]), n == 3 ? 70 : 7);
	assert_ptr_equal (fake_get_ref (o [1], "next"), n == 3 ? NULL : o [2]);
	assert_int_equal (node_value (o [2]), n == 1 ? 8 : 80);
	assert_ptr_equal (fake_get_ref (o [2], "next"), n == 1 ? NULL : o [4]);
	static const int32_t want1 [6] = { 1, 2, 3, 4, 5, 6 }, want2 [6] = { 1, 2, 30, 40, 5, 6 };
	for (int i = 0; i < 6; i++)
		assert_int_equal (int_at (o [3], i), (n == 1 ? want1 : want2) [i]);
	if (n >= 2) {
		assert_int_equal (node_value (o [4]), 9);
		assert_ptr_equal (fake_get_ref (o [4], "next"), o [1]);
		assert_ptr_equal (fake_restored_root (last, o, 3, NULL), n == 2 ? o [4] : o [5]);
	}
	if (n == 3) {
		assert_int_equal (fake_length (o [5]), 2);
		assert_int_equal (fake_string_units (o [5]) [1], 'i');
	}
}

/* Each prefix of the chain restores the state at its last sequence. */
static void
test_chain_restores_each_prefix (void **state)
{
	(void)state;
	Chain c;
	make_chain (&c, OK);
	for (size_t n = 1; n <= 3; n++) {
		SpSnapshot last;
		void **o;
		size_t failed = 99;
		SpError err = { 0 };
		int rc = fake_decode_chain (c.parts, n, &last, &o, &failed, &err);
		if (rc != 0)
			print_error ("prefix %zu: %s (part %zu)\n", n, err.msg, failed);
		assert_int_equal (rc, 0);
		assert_int_equal (last.trailer.nobjects, c.part [n - 1].nobjects);
		check_crafted_state (&last, o, n);
		free (o);
		sp_snapshot_free (&last);
	}
	free_chain (&c);
}

/*
 * Folded (sp-fold.h), each prefix of two or three parts restores alone to
 * the same state, its class ids its own; delta 3 applies to the fold of
 * parts 1-2 (it names delta 2's checksum, which the fold says it stands for).
 */
static void
test_folded_prefixes_restore_the_same_state (void **state)
{
	(void)state;
	Chain c;
	make_chain (&c, OK);
	for (size_t n = 2; n <= 3; n++) {
		SpBuf folded;
		SpFoldResult res;
		SpError err = { 0 };
		assert_ok (fold_chain (c.parts, n, &folded, &res, &err), &err);
		assert_int_equal (res.classes, 2);            /* App.Node and System.Int32[], once each */
		/* At 3, nodes 2 and 4 are reached by nothing (node 1's next is null, root 3 names the string). */
		assert_int_equal (res.unreached, n == 3 ? 2 : 0);
		SpChainPart parts [2] = { { folded.data, folded.len, false }, c.parts [2] };
		size_t count = n == 2 ? 2 : 1;
		SpSnapshot last;
		void **o;
		size_t failed = 99;
		int rc = fake_decode_chain (parts, count, &last, &o, &failed, &err);
		if (rc != 0)
			print_error ("fold of %zu: %s (part %zu)\n", n, err.msg, failed);
		assert_int_equal (rc, 0);
		check_crafted_state (&last, o, 3);
		free (o);
		sp_snapshot_free (&last);
		sp_buf_free (&folded);
	}
	free_chain (&c);
}

/* Delta 2 again, App.Node described with `value` as a long: the same class, another layout. */
static void
make_delta2_relaid (Part *p, const Part *base)
{
	SpField fields [2] = { { .name = "value", .kind = SP_KIND_I8 }, { .name = "next", .kind = SP_KIND_REF, .type_name = "App.Node" } };
	part_begin (p, 2, base, base);
	sp_format_put_class (&p->b, 1, SP_CLASS_OBJECT, "App", "App.Node", 2, fields);
	sp_buf_put_u8 (&p->b, SP_REC_OBJECT);
	sp_buf_put_varint (&p->b, 2);
	sp_buf_put_varint (&p->b, 1);
	sp_buf_put_le (&p->b, 80, 8);
	sp_buf_put_varint (&p->b, 0);
	put_root (&p->b, 1, 1);
	part_finish (p, 1, 3, 1);
}

/*
 * What a fold refuses, and what a folded snapshot may not claim: a chain
 * whose class changed layout between its files (the restorer refuses it
 * too); a fold of a full snapshot alone; a folded header naming a base at or
 * after itself; a delta whose checksum is neither the fold's own nor the one
 * it stands for.
 */
static void
test_folds_refuse_what_does_not_hold (void **state)
{
	(void)state;
	Chain c;
	make_chain (&c, OK);
	SpBuf folded;
	SpFoldResult res;
	SpError err = { 0 };
	Part relaid;
	make_delta2_relaid (&relaid, &c.part [0]);
	SpChainPart two [2] = { c.parts [0], { relaid.b.data, relaid.b.len, false } };
	assert_int_equal (fold_chain (two, 2, &folded, &res, &err), -1);
	assert_contains (err.msg, "another layout");
	sp_buf_free (&folded);
	sp_buf_free (&relaid.b);
	assert_int_equal (fold_chain (c.parts, 1, &folded, &res, &err), -1);
	assert_contains (err.msg, "nothing to fold");
	sp_buf_free (&folded);

	assert_ok (fold_chain (c.parts, 2, &folded, &res, &err), &err);
	SpSnapHeader h;
	assert_ok (sp_snapshot_check (folded.data, folded.len, &h, NULL, &err), &err);
	SpSnapHeader bad = h;
	bad.fold_base = h.sequence;
	sp_format_write_header (folded.data, &bad);
	sp_put_le (folded.data + folded.len - 4, sp_crc32c (0, folded.data, folded.len - 4), 4);
	assert_int_equal (sp_snapshot_check (folded.data, folded.len, NULL, NULL, &err), -1);
	assert_contains (err.msg, "impossible chain");
	bad = h;
	bad.fold_crc ^= 1;
	sp_format_write_header (folded.data, &bad);
	sp_put_le (folded.data + folded.len - 4, sp_crc32c (0, folded.data, folded.len - 4), 4);
	SpChainPart on [2] = { { folded.data, folded.len, false }, c.parts [2] };
	size_t failed = 99;
	SpSnapshot last;
	void **o;
	assert_int_equal (fake_decode_chain (on, 2, &last, &o, &failed, &err), SP_DECODE_DAMAGED);
	assert_int_equal (failed, 1);
	assert_contains (err.msg, "does not apply");
	free (o);
	sp_snapshot_free (&last);
	sp_buf_free (&folded);
	free_chain (&c);
}

/* A delta alone is not a snapshot: sp_snapshot_decode refuses it, parse indexes it. */
static void
test_delta_alone (void **state)
{
	(void)state;
	Chain c;
	make_chain (&c, OK);
	SpSnapshot snap;
	void **o;
	SpError err = { 0 };
	assert_int_equal (fake_decode (c.parts [1].data, c.parts [1].size, &snap, &o, &err), SP_DECODE_DAMAGED);
	assert_contains (err.msg, "is a delta");
	free (o);
	sp_snapshot_free (&snap);
	assert_int_equal (sp_snapshot_parse (c.parts [1].data, c.parts [1].size, &snap, &err), 0);
	assert_int_equal (snap.nchanges, 2);           /* object 2 again, then the patch of 3 */
	assert_int_equal (snap.changes [0].lid, 2);
	assert_int_equal (snap.changes [0].kind, SP_CLASS_OBJECT);
	assert_int_equal (snap.changes [1].lid, 3);
	assert_int_equal (snap.changes [1].kind, SP_CLASS_ARRAY);
	assert_true (snap.changes [1].start == 2 && snap.changes [1].count == 2);
	assert_int_equal (sp_snapshot_object (&snap, 4)->kind, SP_CLASS_OBJECT);
	sp_snapshot_free (&snap);
	free_chain (&c);
}

/* A link that does not hold fails at that part, before anything is built. */
static void
test_broken_links_fail_at_their_part (void **state)
{
	(void)state;
	enum { WRONG_CRC, WRONG_PRIOR, WRONG_BASE, WRONG_PREV, STARTS_AT_DELTA, HUGE_COUNT, LINK_COUNT };
	for (int k = 0; k < LINK_COUNT; k++) {
		Chain c;
		make_chain (&c, OK);
		Part *p = &c.part [2];
		size_t at = 2;
		if (k == STARTS_AT_DELTA) {
			c.parts [0] = c.parts [1];
			at = 0;
		} else if (k == HUGE_COUNT) {
			/* 3 billion objects claimed by 40 bytes: refused before room is made for them. */
			sp_put_le (p->b.data + p->b.len - SP_FORMAT_TRAILER_SIZE + 5, 3000000000u, 4);
			sp_put_le (p->b.data + p->b.len - 4, sp_crc32c (0, p->b.data, p->b.len - 4), 4);
		} else {
			SpSnapHeader h = p->h;
			h.prev_crc ^= k == WRONG_CRC;
			h.prior_objects += k == WRONG_PRIOR;
			h.base_sequence += k == WRONG_BASE ? 1 : 0;   /* 2: still a possible chain, not this one */
			h.prev_sequence -= k == WRONG_PREV ? 1 : 0;
			sp_format_write_header (p->b.data, &h);
			sp_put_le (p->b.data + p->b.len - 4, sp_crc32c (0, p->b.data, p->b.len - 4), 4);
			c.parts [2].data = p->b.data;
		}
		size_t failed = 99;
		SpError err = { 0 };
		SpSnapshot last;
		void **o;
		assert_int_equal (fake_decode_chain (c.parts, 3, &last, &o, &failed, &err), SP_DECODE_DAMAGED);
		assert_null (o);                              /* not even room for objects was made */
		sp_snapshot_free (&last);
		assert_int_equal (failed, at);
		assert_true (strlen (err.msg) > 0);
		/* The intact prefix still restores. */
		if (at == 2)
			assert_int_equal (decode_prefix (&c, 2, &failed, &err), 0);
		free_chain (&c);
	}
}

/*
 * A part the store verified as it loaded it (SpChainPart.verified) is not
 * checksummed again; any other part is.  A stored checksum that is wrong
 * shows which: the chain decodes only when its part is marked verified.
 */
static void
test_verified_parts_keep_their_checksum (void **state)
{
	(void)state;
	Chain c;
	make_chain (&c, OK);
	Part *p = &c.part [2];
	p->b.data [p->b.len - 1] ^= 0x40;                  /* the trailer's checksum, not what it covers */
	size_t failed = 99;
	SpError err = { 0 };
	assert_int_equal (decode_prefix (&c, 3, &failed, &err), SP_DECODE_DAMAGED);
	assert_int_equal (failed, 2);
	assert_non_null (strstr (err.msg, "checksum mismatch"));
	for (int i = 0; i < 3; i++)
		c.parts [i].verified = true;
	assert_int_equal (decode_prefix (&c, 3, &failed, &err), 0);
	/* Its header is still read and checked. */
	c.part [1].b.data [0] ^= 1;                        /* the magic number */
	assert_int_equal (decode_prefix (&c, 3, &failed, &err), SP_DECODE_DAMAGED);
	assert_int_equal (failed, 1);
	assert_non_null (strstr (err.msg, "bad magic"));
	free_chain (&c);
}

/* A delta that breaks a rule, or contradicts what its chain made, fails at that delta. */
static void
test_defective_deltas_fail (void **state)
{
	(void)state;
	for (int d = OK + 1; d < DEFECT_COUNT; d++) {
		Chain c;
		make_chain (&c, (Defect)d);
		size_t failed = 99;
		SpError err = { 0 };
		int rc = decode_prefix (&c, 2, &failed, &err);
		if (rc == 0)
			print_error ("defect %d was applied\n", d);
		assert_int_equal (rc, SP_DECODE_DAMAGED);
		assert_int_equal (failed, 1);
		assert_true (strlen (err.msg) > 0);
		assert_int_equal (decode_prefix (&c, 1, &failed, &err), 0);
		free_chain (&c);
	}
}

/* ---- the writer: deltas from sp_ser_begin_delta, restored through the chain -------- */

#define W_NODES 200
#define W_INTS 40000           /* 160 KB: a long array, patched by cards when they are tracked */
#define W_ROUNDS 12

typedef struct Writer {
	SpSerializer ser;
	Part part [W_ROUNDS + 1];
	SpChainPart parts [W_ROUNDS + 1];
	void *changed [4 * W_NODES];   /* objects stored into since the last snapshot */
	size_t nchanged;
	size_t distinct_changed;       /* of the chain's objects, given to the delta being written */
	void *roots [2];
	uint32_t ids [2];
	FakeClass *node, *nodes, *ints;
	bool barriers;                 /* deltas: a store barrier writes the int array while the steps run */
	void *stranger;                /* deltas: an int array a barrier meets before the steps, then stored into */
	uint32_t stranger_lid;         /* ... the LID it had then, given as changed to the next delta, as a barrier recording it would */
	bool lazy;                     /* deltas: the changed objects given as a list (sp_ser_set_due), as incremental mode does */
	uint32_t due [4 * W_NODES];
	size_t ndue;
	uint8_t *due_marks;
	size_t due_marks_cap;
} Writer;

static void *
new_node (Writer *w, int32_t value)
{
	void *n = fake_new_object (w->node);
	fake_set (n, "value", &value, sizeof value);
	return n;
}

/* A writer with a serializer and the classes registered; its nodes are App.Node. */
static Writer *
writer_new (bool lazy)
{
	craft_register_classes ();
	Writer *w = calloc (1, sizeof *w);
	assert_non_null (w);
	w->lazy = lazy;
	assert_int_equal (sp_ser_init (&w->ser), 0);
	w->node = fake_class_find ("App.Node");
	return w;
}

/* The writer and its first `parts` snapshots. */
static void
writer_free (Writer *w, size_t parts)
{
	for (size_t k = 0; k < parts; k++)
		sp_buf_free (&w->part [k].b);
	sp_ser_free (&w->ser);
	free (w->due_marks);
	free (w);
}

static void
note (Writer *w, void *obj)
{
	assert_true (w->nchanged < sizeof w->changed / sizeof *w->changed);
	w->changed [w->nchanged++] = obj;
}

/*
 * As an incremental cycle's barrier would, before a store into the int
 * array: write it now, copying its rest outside the lock (here: at once).
 * Every other delta, the steps have begun patching it first (the barrier
 * takes over an array in pieces), else not (it starts it).  The writes must
 * patch the same cards the steps would have: the state restores the same,
 * and the delta stays small.
 */
static void
barrier_writes_ints (Writer *w, size_t k, SpError *err)
{
	uint32_t ints = sp_ser_lid_if_known (&w->ser, w->roots [1]);
	if (k % 2)
		while (w->ser.partial_lid != ints && sp_ser_step (&w->ser, 1, err) == 1)
			;
	/* Given lazily and not reached by the steps yet, the array is due all the same: the barrier writes it. */
	bool unfed = w->lazy && ints < w->due_marks_cap && w->due_marks [ints] == SP_SER_DUE;
	SpPreserveTicket t;
	int rc = sp_ser_write_now (&w->ser, w->roots [1], &t, err);
	assert_true (rc >= 0);
	if (unfed)
		assert_true (rc > 0 && w->due_marks [ints] == SP_SER_FED);
	if (rc == SP_SER_WRITE_COPY) {
		uint8_t *copy = malloc (t.bytes);
		memcpy (copy, (uint8_t *)fake_elem (w->roots [1], 0) + t.offset, t.bytes);
		assert_ok (sp_ser_preserve_attach (&w->ser, w->roots [1], &t, copy, err), err);
	}
}

/* Element i of int array a, set to i * mul + add. */
static void
fill_ints (void *a, int32_t mul, int32_t add)
{
	for (uint64_t i = 0; i < fake_length (a); i++) {
		int32_t v = (int32_t)i * mul + add;
		memcpy (fake_elem (a, i), &v, sizeof v);
	}
}

/* A barrier meets w->stranger (no LID yet, short: set aside, copied at once), then the store lands. */
static void
barrier_meets_stranger (Writer *w, SpError *err)
{
	SpPreserveTicket t;
	assert_int_equal (sp_ser_write_now (&w->ser, w->stranger, &t, err), 1);
	w->stranger_lid = sp_ser_lid_if_known (&w->ser, w->stranger);
	assert_true (w->ser.state [w->stranger_lid] & SP_SER_ASIDE);
	fill_ints (w->stranger, 0, -1);
}

/* Snapshot k of the chain: full for 0, else a delta with what note () saw; parts [k] gets it. */
static void
write_snapshot (Writer *w, size_t k)
{
	Part *p = &w->part [k];
	SpError err = { 0 };
	sp_buf_init (&p->b);
	p->h = (SpSnapHeader){ .sequence = 1 + k, .time_ns = 5 };
	if (k == 0) {
		assert_ok (sp_ser_begin (&w->ser, &p->b, &p->h, &err), &err);
	} else {
		p->h.base_sequence = 1;
		p->h.prev_sequence = k;
		p->h.prev_crc = w->part [k - 1].crc;
		assert_ok (sp_ser_begin_delta (&w->ser, &p->b, &p->h, &err), &err);
		size_t ndue = 0;
		if (w->lazy) {
			free (w->due_marks);
			w->due_marks_cap = (size_t)w->ser.prior + 1;
			w->due_marks = calloc (w->due_marks_cap, 1);
		}
		for (size_t i = 0; i < w->nchanged; i++) {
			uint32_t lid = sp_ser_lid_if_known (&w->ser, w->changed [i]);
			bool again = false;
			for (size_t j = 0; j < i; j++)
				again |= w->changed [j] == w->changed [i];
			if (lid && lid <= w->ser.prior && !again) {
				if (w->lazy) {
					w->due [ndue++] = lid;
					w->due_marks [lid] = SP_SER_DUE;
				} else {
					assert_ok (sp_ser_changed (&w->ser, lid, &err), &err);
				}
				w->distinct_changed++;
			}
		}
		/* A LID a barrier met in the last cycle is recorded as changed, whatever became of it. */
		if (w->stranger_lid && w->lazy) {
			w->due [ndue++] = w->stranger_lid;
			w->due_marks [w->stranger_lid] = SP_SER_DUE;
		}
		w->stranger_lid = 0;
		if (w->lazy)
			sp_ser_set_due (&w->ser, w->due, ndue, w->due_marks, w->due_marks_cap);
		w->ndue = ndue;
	}
	w->nchanged = 0;
	for (size_t r = 0; r < 2; r++)
		assert_ok (sp_ser_root (&w->ser, w->ids [r], w->roots [r], &err), &err);
	if (k && w->barriers)
		barrier_writes_ints (w, k, &err);
	if (k && w->stranger)
		barrier_meets_stranger (w, &err);
	int more;
	while ((more = sp_ser_step (&w->ser, 7, &err)) == 1)
		;
	assert_ok (more, &err);
	assert_ok (sp_ser_finish (&w->ser, &err), &err);
	/* Given lazily, every changed object was given, by a step or by the barrier that met it first. */
	for (size_t i = 0; w->lazy && k && i < w->ndue; i++)
		assert_int_equal (w->due_marks [w->due [i]], SP_SER_FED);
	p->crc = (uint32_t)sp_get_le (p->b.data + p->b.len - 4, 4);
	p->nobjects = w->ser.nobjects;
	w->parts [k] = (SpChainPart){ p->b.data, p->b.len, false };
}

/* Random stores of every kind into the graph, each noted as the barrier would. */
static void
mutate (Writer *w, unsigned *seed)
{
	void *nodes = w->roots [0];
	for (int i = 0; i < 40; i++) {
		void *n = fake_elem_get_ref (nodes, (uint64_t)(rand_r (seed) % W_NODES));
		switch (rand_r (seed) % 5) {
		case 0: {                      /* a field */
			int32_t v = rand_r (seed);
			fake_set (n, "value", &v, sizeof v);
			note (w, n);
			break;
		}
		case 1:                        /* a reference to another node, or to a new one */
			fake_set_ref (n, "next", rand_r (seed) % 2 ? new_node (w, -i) : fake_elem_get_ref (nodes, (uint64_t)(rand_r (seed) % W_NODES)));
			note (w, n);
			break;
		case 2:                        /* an element of the array of nodes */
			fake_elem_set_ref (nodes, (uint64_t)(rand_r (seed) % W_NODES), new_node (w, 1000 + i));
			note (w, nodes);
			break;
		case 3: {                      /* an element of the int array */
			int32_t v = rand_r (seed);
			memcpy (fake_elem (w->roots [1], (uint64_t)(rand_r (seed) % W_INTS)), &v, sizeof v);
			note (w, w->roots [1]);
			break;
		}
		default:                       /* nothing stored: a read */
			break;
		}
	}
}

/*
 * Folding (sp-fold.h) the chain up to delta k gives one full snapshot of the
 * same state: it restores alone to the live graph; it stands for delta k (the
 * delta k + 1 the writer goes on with applies to it); and a chain that starts
 * at it folds again.
 */
static void
check_folds (Writer *w, size_t k)
{
	SpBuf folded, refolded;
	SpFoldResult res;
	SpError err = { 0 };
	assert_ok (fold_chain (w->parts, k + 1, &folded, &res, &err), &err);
	assert_int_equal (res.bytes, folded.len);
	SpSnapHeader h;
	SpSnapTrailer t;
	assert_ok (sp_snapshot_check (folded.data, folded.len, &h, &t, &err), &err);
	assert_true (sp_header_is_folded (&h) && !sp_header_is_delta (&h));
	assert_int_equal (h.version, 1);                       /* an older reader takes it as a full snapshot */
	assert_int_equal (h.sequence, k + 1);
	assert_int_equal (h.fold_base, 1);
	assert_int_equal (h.fold_crc, w->part [k].crc);
	assert_int_equal (t.nobjects, w->part [k].nobjects);
	assert_int_equal (t.crc, res.crc);
	/* Nodes the mutations dropped stay in the fold; it counts them. */
	assert_int_equal (res.unreached, w->part [k].nobjects - fake_graph_count (w->roots, 2));
	SpChainPart alone = { folded.data, folded.len, false };
	assert_chain_is (&alone, 1, w->roots, "a folded chain");
	if (k >= 2) {
		/* The chain up to k - 1 folded, then delta k on it: the delta names the delta the fold replaced. */
		SpBuf before;
		assert_ok (fold_chain (w->parts, k, &before, &res, &err), &err);
		SpChainPart on_fold [2] = { { before.data, before.len, false }, w->parts [k] };
		assert_chain_is (on_fold, 2, w->roots, "a delta on a folded chain");
		/* ... which folds again, to the state at k. */
		assert_ok (fold_chain (on_fold, 2, &refolded, &res, &err), &err);
		SpChainPart again = { refolded.data, refolded.len, false };
		assert_chain_is (&again, 1, w->roots, "a folded chain folded again");
		assert_ok (sp_snapshot_check (refolded.data, refolded.len, &h, &t, &err), &err);
		assert_int_equal (h.fold_crc, w->part [k].crc);
		sp_buf_free (&refolded);
		sp_buf_free (&before);
	}
	sp_buf_free (&folded);
}

/*
 * Deltas of random changes, each restored with its whole chain and compared
 * with the live graph: what a chain restores is the state at its last
 * snapshot, with identity and sharing.  With and without identity slots.
 */
static void
check_writer_chains (bool slots, bool cards, bool barriers, bool lazy)
{
	fake_set_identity_slots (slots);
	Writer *w = writer_new (lazy);
	w->barriers = barriers;
	if (cards)
		sp_ser_track_cards (&w->ser);
	sp_ser_set_chunk (&w->ser, 4096);      /* long arrays in pieces: patches continue as PATCH records */
	w->nodes = fake_class_ref_array ("App.Node[]", "App.Node");
	w->ints = fake_class_find ("System.Int32[]");
	w->roots [0] = fake_new_array (w->nodes, W_NODES);
	w->roots [1] = fake_new_array (w->ints, W_INTS);
	w->ids [0] = 1;
	w->ids [1] = 2;
	for (int i = 0; i < W_NODES; i++)
		fake_elem_set_ref (w->roots [0], (uint64_t)i, new_node (w, i));
	unsigned seed = slots ? 7 : 11;
	for (size_t k = 0; k <= W_ROUNDS; k++) {
		if (k)
			mutate (w, &seed);
		write_snapshot (w, k);
		assert_chain_is (w->parts, k + 1, w->roots, "the chain");
		if (k)
			check_folds (w, k);
		/* A delta writes what changed and what is new, each once, and nothing else. */
		if (k)
			assert_int_equal (w->ser.objects_written, w->distinct_changed + (w->ser.nobjects - w->ser.prior));
		w->distinct_changed = 0;
		/* With cards, a few ints changed cost a few 4 KiB cards, not the whole 160 KB array. */
		if (k && cards)
			assert_true (w->part [k].b.len < 48 * 1024);
	}
	writer_free (w, W_ROUNDS + 1);
}

static void
test_writer_chains_restore_the_state (void **state)
{
	(void)state;
	check_writer_chains (false, false, false, false);
}

static void
test_writer_chains_with_identity_slots (void **state)
{
	(void)state;
	check_writer_chains (true, false, false, false);
}

static void
test_writer_chains_with_cards (void **state)
{
	(void)state;
	check_writer_chains (true, true, false, false);
}

/* The barrier's writes of a delta's long array (incremental mode): starting it, or taking over its pieces, from a copy. */
static void
test_barrier_copies_patch_changed_cards (void **state)
{
	(void)state;
	check_writer_chains (true, true, true, false);
}

/* ... and without cards, the copy's pieces patch the whole array. */
static void
test_barrier_copies_patch_whole_arrays (void **state)
{
	(void)state;
	check_writer_chains (false, false, true, false);
}

/* Incremental mode's way: the changed objects given as a list, fed as the steps reach them or a barrier meets one first. */
static void
test_writer_chains_changed_given_lazily (void **state)
{
	(void)state;
	check_writer_chains (true, true, false, true);
}

static void
test_writer_chains_lazily_with_barriers (void **state)
{
	(void)state;
	check_writer_chains (false, false, true, true);
}

/*
 * Delta k of w's chain, with `changed` nodes of the array stored into, given
 * lazily and listed from the highest LID down; lids gets its records' LIDs
 * in file order.  The chain restores to the live graph.
 */
#define O_NODES 1000
static size_t
lazy_delta_record_order (Writer *w, size_t k, size_t changed, uint32_t *lids)
{
	for (size_t i = 0; i < changed; i++) {
		void *n = fake_elem_get_ref (w->roots [0], (uint64_t)(O_NODES - 1 - i));
		int32_t v = -(int32_t)(i + 1000 * k);
		fake_set (n, "value", &v, sizeof v);
		note (w, n);
	}
	write_snapshot (w, k);
	SpSnapshot snap;
	SpError err = { 0 };
	assert_ok (sp_snapshot_parse (w->parts [k].data, w->parts [k].size, &snap, &err), &err);
	assert_int_equal (snap.nchanges, changed);
	for (uint32_t i = 0; i < snap.nchanges; i++)
		lids [i] = snap.changes [i].lid;
	sp_snapshot_free (&snap);
	assert_chain_is (w->parts, k + 1, w->roots, "the chain");
	return changed;
}

/*
 * Many changed objects (one LID in 256 of the chain or more) are written in
 * LID order, as a full snapshot meets them, whatever the order they were
 * stored into; a few are written as listed, without scanning every LID's mark.
 */
static void
test_many_changed_are_written_in_lid_order (void **state)
{
	(void)state;
	Writer *w = writer_new (true);
	w->nodes = fake_class_ref_array ("App.Node[]", "App.Node");
	w->roots [0] = fake_new_array (w->nodes, O_NODES);
	w->roots [1] = NULL;
	w->ids [0] = 1;
	w->ids [1] = 2;
	for (int i = 0; i < O_NODES; i++)
		fake_elem_set_ref (w->roots [0], (uint64_t)i, new_node (w, i));
	write_snapshot (w, 0);
	uint32_t lids [O_NODES];
	size_t n = lazy_delta_record_order (w, 1, O_NODES / 2, lids);
	for (size_t i = 1; i < n; i++)
		assert_true (lids [i - 1] < lids [i]);
	n = lazy_delta_record_order (w, 2, 3, lids);
	for (size_t i = 1; i < n; i++)
		assert_true (lids [i - 1] > lids [i]);
	writer_free (w, 3);
}

/*
 * A delta's barrier meets an array of primitives that no record of the delta
 * reaches (a program's own buffer, stored into while the cycle runs): it is
 * set aside, gets an empty record, and is let go (no LID after), so the
 * delta is not its 4,000 bytes longer.  Linked into the state by a later
 * delta, it is new there: a new LID, written whole with what it holds then
 * (kept, it would name the empty record).  An array linked in by the very
 * delta whose barrier set it aside (met before the record that reaches it:
 * parked until the steps are done) is written from its copy: what it held
 * when the barrier met it, not the store after.  The LID a barrier met the
 * buffer under, recorded as changed for the next delta before it was let
 * go, is dropped there: a patch of its empty record would break the chain.
 */
static void
test_delta_sets_aside_arrays_not_reached (void **state)
{
	(void)state;
	Writer *w = writer_new (true);               /* changed objects fed after the queue, as incremental mode does */
	sp_ser_track_cards (&w->ser);                /* a chain, as with --sp-delta=on */
	w->ints = fake_class_find ("System.Int32[]");
	FakeClass *objs = fake_class_ref_array ("System.Object[]", "System.Object");
	w->roots [0] = new_node (w, 1);
	w->roots [1] = fake_new_array (objs, 4);
	w->ids [0] = 1;
	w->ids [1] = 2;
	write_snapshot (w, 0);
	void *buffer = fake_new_array (w->ints, 1000);
	fill_ints (buffer, 7, 0);
	w->stranger = buffer;
	write_snapshot (w, 1);
	assert_int_equal (w->ser.unreached_aside, 1);
	assert_int_equal (sp_ser_lid_if_known (&w->ser, buffer), 0);
	assert_true (w->part [1].b.len < 500);
	assert_chain_is (w->parts, 2, w->roots, "a delta that set a buffer aside");

	w->stranger = NULL;
	fill_ints (buffer, 5, 0);
	fake_elem_set_ref (w->roots [1], 0, buffer);
	note (w, w->roots [1]);
	write_snapshot (w, 2);
	assert_true (sp_ser_lid_if_known (&w->ser, buffer) > w->part [1].nobjects);
	assert_chain_is (w->parts, 3, w->roots, "a delta that linked in a buffer set aside before");

	void *fresh = fake_new_array (w->ints, 1000);
	fill_ints (fresh, 3, 0);
	fake_elem_set_ref (w->roots [1], 1, fresh);
	note (w, w->roots [1]);
	w->stranger = fresh;
	write_snapshot (w, 3);
	assert_int_equal (w->ser.unreached_aside, 0);
	fill_ints (fresh, 3, 0);                      /* as its copy has it: the chain must restore that */
	assert_chain_is (w->parts, 4, w->roots, "a delta that linked in an array its barrier set aside");
	writer_free (w, 4);
}

/* A delta with nothing changed holds the roots only, and restores the same state. */
static void
test_empty_delta (void **state)
{
	(void)state;
	Writer *w = writer_new (false);
	w->roots [0] = new_node (w, 1);
	fake_set_ref (w->roots [0], "next", new_node (w, 2));
	w->roots [1] = NULL;
	w->ids [0] = 1;
	w->ids [1] = 2;
	write_snapshot (w, 0);
	write_snapshot (w, 1);
	SpSnapshot snap;
	SpError err = { 0 };
	assert_ok (sp_snapshot_parse (w->parts [1].data, w->parts [1].size, &snap, &err), &err);
	assert_int_equal (snap.trailer.nclasses, 0);
	assert_int_equal (snap.nchanges, 0);
	assert_int_equal (snap.trailer.nobjects, 2);
	assert_int_equal (snap.trailer.nroots, 2);
	sp_snapshot_free (&snap);
	writer_free (w, 2);
}

/*
 * After a restart: the restored objects adopted by a new serializer, changed,
 * and written as a delta on the restored snapshot, restore (with it) to the
 * changed graph.
 */
static void
test_delta_on_a_restored_snapshot (void **state)
{
	(void)state;
	Writer *w = writer_new (false);
	w->ints = fake_class_find ("System.Int32[]");
	w->roots [0] = new_node (w, 1);
	fake_set_ref (w->roots [0], "next", new_node (w, 2));
	w->roots [1] = fake_new_array (w->ints, 10);
	w->ids [0] = 1;
	w->ids [1] = 2;
	write_snapshot (w, 0);
	sp_ser_free (&w->ser);

	/* A new process: the snapshot restored, its objects adopted in LID order. */
	SpSnapshot snap;
	void **o;
	SpError err = { 0 };
	assert_int_equal (fake_decode (w->parts [0].data, w->parts [0].size, &snap, &o, &err), 0);
	assert_int_equal (sp_ser_init (&w->ser), 0);
	sp_ser_adopt_begin (&w->ser);
	for (uint32_t lid = 1; lid <= snap.trailer.nobjects; lid++)
		assert_ok (sp_ser_adopt (&w->ser, lid, o [lid], &err), &err);
	assert_int_equal (sp_ser_adopt (&w->ser, 7, o [1], &err), -1);   /* out of order: refused */
	w->roots [0] = fake_restored_root (&snap, o, 1, NULL);
	w->roots [1] = fake_restored_root (&snap, o, 2, NULL);
	sp_snapshot_free (&snap);
	free (o);

	int32_t v = 42;
	void *second = fake_get_ref (w->roots [0], "next");
	fake_set (second, "value", &v, sizeof v);
	note (w, second);
	memcpy (fake_elem (w->roots [1], 3), &v, sizeof v);
	note (w, w->roots [1]);
	write_snapshot (w, 1);
	assert_int_equal (w->ser.objects_written, 2);
	SpSnapshot last;
	size_t failed;
	assert_int_equal (fake_decode_chain (w->parts, 2, &last, &o, &failed, &err), 0);
	void *restored [2] = { fake_restored_root (&last, o, 1, NULL), fake_restored_root (&last, o, 2, NULL) };
	char why [256];
	assert_true (fake_graphs_equal (w->roots, restored, 2, why, sizeof why));
	free (o);
	sp_snapshot_free (&last);
	writer_free (w, 2);
}

/*
 * An object a barrier wrote in case it was part of the state (incremental
 * mode, a delta cycle), which the chain never reached, stored into since
 * and holding by the next delta something that cannot be persisted: that
 * delta does not fail for it (it is poisoned, its earlier record stands),
 * unless the delta reaches it.
 */
static int
junk_changed (bool reached, size_t *poisoned, SpError *err)
{
	FakeClass *plant = fake_class_object ("App", "Plant");
	fake_class_add_field (plant, "next", SP_KIND_REF, "Plant");
	fake_class_add_field (plant, "valve", SP_KIND_REF, "System.Object");
	FakeClass *stream = fake_class_unpersistable ("System.IO.FileStream");
	void *root = fake_new_object (plant), *junk = fake_new_object (plant);
	SpSerializer s;
	Part part [3];
	SpChainPart parts [3];
	assert_int_equal (sp_ser_init (&s), 0);
	int rc = 0;
	for (int k = 0; k < 3 && rc == 0; k++) {
		sp_buf_init (&part [k].b);
		part [k].h = (SpSnapHeader){ .sequence = 1 + k, .base_sequence = k ? 1 : 0, .prev_sequence = k,
					     .prev_crc = k ? part [k - 1].crc : 0 };
		rc = k ? sp_ser_begin_delta (&s, &part [k].b, &part [k].h, err) : sp_ser_begin (&s, &part [k].b, &part [k].h, err);
		if (rc == 0 && k == 2) {
			/* Since delta 1: junk's valve set, and (reached) the root made to refer to it. */
			fake_set_ref (junk, "valve", fake_new_object (stream));
			rc = sp_ser_changed (&s, sp_ser_lid_if_known (&s, junk), err);
			if (rc == 0 && reached) {
				fake_set_ref (root, "next", junk);
				rc = sp_ser_changed (&s, sp_ser_lid_if_known (&s, root), err);
			}
		}
		if (rc == 0)
			rc = sp_ser_root (&s, 1, root, err);
		/* Delta 1: the barrier meets junk (no LID yet) and writes it, unreached. */
		if (rc == 0 && k == 1)
			rc = sp_ser_write_now (&s, junk, NULL, err) < 0 ? -1 : 0;
		int more = 1;
		while (rc == 0 && (more = sp_ser_step (&s, 1, err)) == 1)
			;
		if (rc == 0 && more < 0)
			rc = -1;
		if (rc == 0)
			rc = sp_ser_finish (&s, err);
		if (rc == 0) {
			part [k].crc = (uint32_t)sp_get_le (part [k].b.data + part [k].b.len - 4, 4);
			parts [k] = (SpChainPart){ part [k].b.data, part [k].b.len, false };
		}
	}
	*poisoned = s.npoison;
	if (rc == 0) {
		/* The chain restores: the root, alone, as written. */
		SpSnapshot last;
		void **o;
		size_t failed;
		assert_ok (fake_decode_chain (parts, 3, &last, &o, &failed, err), err);
		void *back = fake_restored_root (&last, o, 1, NULL);
		assert_non_null (back);
		assert_null (fake_get_ref (back, "next"));
		free (o);
		sp_snapshot_free (&last);
	}
	for (int k = 0; k < 3; k++)
		sp_buf_free (&part [k].b);
	sp_ser_free (&s);
	return rc;
}

static void
test_unreached_junk_that_cannot_be_persisted (void **state)
{
	(void)state;
	SpError err = { 0 };
	size_t poisoned;
	assert_ok (junk_changed (false, &poisoned, &err), &err);
	assert_int_equal (poisoned, 1);
	fake_reset ();
	assert_fails (junk_changed (true, &poisoned, &err), &err);
	assert_contains (err.msg, "System.IO.FileStream");
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test_teardown (test_headers_say_what_they_are, fake_teardown),
		cmocka_unit_test_teardown (test_chain_restores_each_prefix, fake_teardown),
		cmocka_unit_test_teardown (test_folded_prefixes_restore_the_same_state, fake_teardown),
		cmocka_unit_test_teardown (test_folds_refuse_what_does_not_hold, fake_teardown),
		cmocka_unit_test_teardown (test_delta_alone, fake_teardown),
		cmocka_unit_test_teardown (test_broken_links_fail_at_their_part, fake_teardown),
		cmocka_unit_test_teardown (test_verified_parts_keep_their_checksum, fake_teardown),
		cmocka_unit_test_teardown (test_defective_deltas_fail, fake_teardown),
		cmocka_unit_test_teardown (test_writer_chains_restore_the_state, fake_teardown),
		cmocka_unit_test_teardown (test_writer_chains_with_identity_slots, fake_teardown),
		cmocka_unit_test_teardown (test_writer_chains_with_cards, fake_teardown),
		cmocka_unit_test_teardown (test_writer_chains_changed_given_lazily, fake_teardown),
		cmocka_unit_test_teardown (test_writer_chains_lazily_with_barriers, fake_teardown),
		cmocka_unit_test_teardown (test_many_changed_are_written_in_lid_order, fake_teardown),
		cmocka_unit_test_teardown (test_barrier_copies_patch_changed_cards, fake_teardown),
		cmocka_unit_test_teardown (test_barrier_copies_patch_whole_arrays, fake_teardown),
		cmocka_unit_test_teardown (test_unreached_junk_that_cannot_be_persisted, fake_teardown),
		cmocka_unit_test_teardown (test_empty_delta, fake_teardown),
		cmocka_unit_test_teardown (test_delta_sets_aside_arrays_not_reached, fake_teardown),
		cmocka_unit_test_teardown (test_delta_on_a_restored_snapshot, fake_teardown),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
