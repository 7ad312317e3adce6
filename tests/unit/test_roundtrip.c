/*
 * test_roundtrip.c: serialize a fake graph, parse the snapshot, restore it
 * (construction phase, then fix-up phase) and compare; plus the properties of
 * the serializer (increments, moving objects, collisions, errors) and of
 * sp_snapshot_class_matches.
 */
#include "unit.h"

#include <math.h>

#include <glib.h>

#include "fake-objects.h"
#include "sample-graph.h"
#include "sp-crc32c.h"
#include "sp-serialize.h"
#include "sp-snapshot.h"
#include "sp-wset.h"

static void
parse_ok (const SpBuf *b, SpSnapshot *snap)
{
	SpError err = { 0 };
	assert_false (b->oom);
	assert_ok (sp_snapshot_parse (b->data, b->len, snap, &err), &err);
}

static void
assert_same_bytes (const SpBuf *a, const SpBuf *b, const char *what)
{
	if (a->len != b->len || memcmp (a->data, b->data, a->len) != 0) {
		size_t i = 0;
		while (i < a->len && i < b->len && a->data [i] == b->data [i])
			i++;
		print_error ("%s: snapshots differ (%zu vs %zu bytes, first difference at byte %zu)\n", what, a->len, b->len, i);
		fail ();
	}
}

static uint64_t
bits64 (const void *p)
{
	uint64_t v;
	memcpy (&v, p, 8);
	return v;
}

static uint32_t
bits32 (const void *p)
{
	uint32_t v;
	memcpy (&v, p, 4);
	return v;
}

/* ---- the sample graph, there and back ----------------------------------- */

/* The sample graph, and a snapshot of it in b (one step). */
static void
build_and_serialize (SampleGraph *g, SpBuf *b)
{
	sample_graph_build (g);
	sp_buf_init (b);
	sample_graph_serialize (g, SIZE_MAX, b);
}

static void
test_sample_round_trip (void **state)
{
	(void)state;
	SampleGraph g;
	SpBuf b;
	build_and_serialize (&g, &b);

	SpSnapshot snap;
	parse_ok (&b, &snap);
	assert_int_equal (snap.header.version, SP_FORMAT_VERSION);
	assert_true (snap.header.sequence == 42);
	assert_true (snap.header.time_ns == 1700000000123456789ull);
	assert_true (snap.header.base_sequence == 0);
	/* Exactly the objects reachable through persistent references: not the
	 * unreferenced node, not the FileStream behind a non-persistent slot. */
	assert_int_equal (snap.trailer.nobjects, fake_graph_count (g.roots, g.nroots));
	assert_int_equal (snap.trailer.nroots, g.nroots);

	/* Roots get the first LIDs, in registration order; a repeated object keeps its LID. */
	bool found;
	uint32_t lid_of_root [16] = { 0 };
	for (uint32_t i = 0; i < snap.trailer.nroots; i++)
		lid_of_root [snap.roots [i].id] = snap.roots [i].lid;
	assert_int_equal (lid_of_root [SAMPLE_ROOT_A], 1);
	assert_int_equal (lid_of_root [SAMPLE_ROOT_D], 2);
	assert_int_equal (lid_of_root [SAMPLE_ROOT_PRIMS], 3);
	assert_int_equal (lid_of_root [SAMPLE_ROOT_BAG], 4);
	assert_int_equal (lid_of_root [SAMPLE_ROOT_NULL], 0);
	assert_int_equal (lid_of_root [SAMPLE_ROOT_A2], 1);

	void **objects;
	SpError err = { 0 };
	assert_ok (fake_restore (&snap, &objects, &err), &err);

	void *restored [SAMPLE_MAX_ROOTS];
	for (size_t i = 0; i < g.nroots; i++) {
		restored [i] = fake_restored_root (&snap, objects, g.ids [i], &found);
		assert_true (found);
		assert_true ((restored [i] == NULL) == (g.roots [i] == NULL));
	}
	fake_restored_root (&snap, objects, 4, &found);
	assert_false (found);

	char why [512] = "";
	if (!fake_graphs_equal (g.roots, restored, g.nroots, why, sizeof why)) {
		print_error ("restored graph differs: %s\n", why);
		fail ();
	}

	/* Spot checks, independent of the equality walk. */
	void *ra = restored [0], *rd = restored [1], *rp = restored [2], *rbag = restored [3];
	assert_ptr_not_equal (ra, g.a);                      /* fresh objects, not the originals */
	assert_ptr_equal (restored [5], ra);                 /* roots 1 and 9: one object */
	assert_null (restored [4]);
	void *rb = fake_get_ref (ra, "next");
	assert_ptr_equal (fake_get_ref (rb, "next"), ra);     /* cycle a <-> b */
	assert_ptr_equal (fake_get_ref (ra, "other"), ra);    /* self loop */
	void *rc = fake_get_ref (rb, "other");
	assert_ptr_equal (fake_get_ref (rd, "other"), rc);    /* c shared by b and d */
	assert_ptr_equal (fake_get_ref (rb, "name"), fake_get_ref (rd, "name"));   /* shared string */
	assert_ptr_equal (fake_get_ref (rp, "owner"), rc);
	void *rj = fake_get_ref (ra, "data");
	assert_int_equal (fake_length (rj), 4);
	assert_ptr_equal (fake_elem_get_ref (rj, 0), fake_elem_get_ref (rj, 3));   /* jagged: shared inner array */
	assert_null (fake_elem_get_ref (rj, 2));
	assert_ptr_equal (fake_elem_get_ref (rj, 1), fake_get_ref (rbag, "empty"));
	assert_int_equal (fake_length (fake_elem_get_ref (rj, 1)), 0);
	void *rnodes = fake_get_ref (rb, "data");
	assert_ptr_equal (fake_get_ref (rbag, "nodes"), rnodes);
	assert_ptr_equal (fake_elem_get_ref (rnodes, 0), ra);
	assert_ptr_equal (fake_elem_get_ref (rnodes, 4), ra);
	assert_ptr_equal (fake_elem_get_ref (rnodes, 2), rb);
	assert_null (fake_elem_get_ref (rnodes, 1));
	/* Strings: empty, Latin-1 (units 0x80..0xFF), UTF-16 with surrogates. */
	assert_int_equal (fake_length (fake_get_ref (ra, "name")), 0);
	void *rlatin = fake_get_ref (rb, "name");
	assert_int_equal (fake_length (rlatin), 13);
	assert_int_equal (fake_string_units (rlatin) [3], 0xe9);
	assert_int_equal (fake_string_units (rlatin) [11], 0xff);
	void *rwide = fake_get_ref (rc, "name");
	assert_int_equal (fake_length (rwide), fake_length (g.utf16));
	assert_memory_equal (fake_string_units (rwide), fake_string_units (g.utf16), 2 * fake_length (g.utf16));
	assert_int_equal (fake_string_units (rwide) [2], 0xd83d);
	assert_int_equal (fake_string_units (rwide) [3], 0xde00);
	void *rlong = fake_get_ref (rbag, "long_string");
	assert_int_equal (fake_length (rlong), 5000);
	assert_int_equal (fake_string_units (rlong) [4999], 0x263a);
	assert_int_equal (fake_string_units (rlong) [27], 'b');
	/* Primitives at their edges, bit for bit. */
	assert_true (bits64 (fake_field_ptr (rp, "d_nan")) == 0x7ff8deadbeef0001ull);
	assert_true (bits64 (fake_field_ptr (rp, "d_neg0")) == 0x8000000000000000ull);
	assert_true (bits32 (fake_field_ptr (rp, "f_nan")) == 0x7fc12345u);
	assert_true (bits32 (fake_field_ptr (rp, "f_neg0")) == 0x80000000u);
	int64_t l;
	fake_get (rp, "l_min", &l, 8);
	assert_true (l == INT64_MIN);
	fake_get (rp, "l_max", &l, 8);
	assert_true (l == INT64_MAX);
	uint16_t ch;
	fake_get (rp, "surrogate", &ch, 2);
	assert_int_equal (ch, 0xdc00);
	assert_int_equal (*(uint8_t *)fake_field_ptr (rp, "flag"), 1);
	assert_int_equal (*(uint8_t *)fake_field_ptr (rp, "flag_false"), 0);
	/* Struct elements: leaves back, NaN payload kept; padding is not part of the state. */
	void *rpoints = fake_get_ref (rc, "data");
	assert_int_equal (fake_length (rpoints), 3);
	assert_true (bits64 (fake_elem (rpoints, 1) + SAMPLE_POINT_X) == 0x7ff800000000beefull);
	assert_true (bits64 (fake_elem (rpoints, 2) + SAMPLE_POINT_X) == 0x8000000000000000ull);
	uint16_t k;
	memcpy (&k, fake_elem (rpoints, 1) + SAMPLE_POINT_K, 2);
	assert_int_equal (k, 0xffff);
	void *tag2;
	memcpy (&tag2, fake_elem (rpoints, 2) + SAMPLE_POINT_TAG, sizeof tag2);
	assert_ptr_equal (tag2, fake_get_ref (ra, "name"));     /* the empty string, shared */
	assert_int_equal (fake_elem (rpoints, 0) [SAMPLE_POINT_K + 2], 0);   /* padding: not copied from 0xEE */

	void *rjust = fake_get_ref (rd, "pos.tag");
	assert_int_equal (fake_length (rjust), 4);
	assert_int_equal (fake_string_units (rjust) [1], 0x0100);
	assert_int_equal (fake_string_units (rjust) [2], 0x017f);
	assert_int_equal (fake_string_units (rjust) [3], 0x00ff);

	/* The class cache holds each class once: as many classes as distinct non-string classes. */
	GHashTable *classes = g_hash_table_new (g_direct_hash, g_direct_equal);
	for (uint32_t i = 1; i <= snap.trailer.nobjects; i++)
		if (fake_class_of (objects [i])->sp.kind != SP_CLASS_STRING)
			g_hash_table_add (classes, fake_class_of (objects [i]));
	assert_int_equal (snap.trailer.nclasses, g_hash_table_size (classes));
	g_hash_table_destroy (classes);

	/* Every restored object is distinct, and nothing outside the snapshot was made. */
	for (uint32_t i = 1; i <= snap.trailer.nobjects; i++) {
		assert_non_null (objects [i]);
		assert_string_not_equal (fake_class_of (objects [i])->sp.name, "System.IO.FileStream");
		for (uint32_t j = i + 1; j <= snap.trailer.nobjects; j++)
			assert_ptr_not_equal (objects [i], objects [j]);
	}
	free (objects);
	sp_snapshot_free (&snap);
	sp_buf_free (&b);
}

/* Serializing the restored graph gives the same bytes: same order, same LIDs, same everything. */
static void
test_restored_graph_reserializes_identically (void **state)
{
	(void)state;
	SampleGraph g;
	sample_graph_build (&g);
	SpBuf first, second;
	sp_buf_init (&first);
	sp_buf_init (&second);
	sample_graph_serialize (&g, SIZE_MAX, &first);
	SpSnapshot snap;
	parse_ok (&first, &snap);
	void **objects;
	SpError err = { 0 };
	assert_ok (fake_restore (&snap, &objects, &err), &err);
	void *roots [SAMPLE_MAX_ROOTS];
	for (size_t i = 0; i < g.nroots; i++)
		roots [i] = fake_restored_root (&snap, objects, g.ids [i], NULL);
	assert_ok (fake_serialize (g.ids, roots, g.nroots, SIZE_MAX, 42, &second, &err), &err);
	assert_same_bytes (&first, &second, "original vs restored");
	free (objects);
	sp_snapshot_free (&snap);
	sp_buf_free (&first);
	sp_buf_free (&second);
}

/* ---- increments ----------------------------------------------------------- */

static void
test_small_steps_same_bytes (void **state)
{
	(void)state;
	SampleGraph g;
	sample_graph_build (&g);
	SpBuf whole, steps;
	sp_buf_init (&whole);
	sp_buf_init (&steps);
	sample_graph_serialize (&g, SIZE_MAX, &whole);
	const size_t sizes [] = { 1, 2, 3, 7, 64 };
	for (size_t i = 0; i < sizeof sizes / sizeof sizes [0]; i++) {
		sample_graph_serialize (&g, sizes [i], &steps);
		assert_same_bytes (&whole, &steps, "steps vs one step");
	}
	sp_buf_free (&whole);
	sp_buf_free (&steps);
}

/* A serializer started on snapshot h with every root of the sample graph registered. */
static void
begin_sample_snapshot (SpSerializer *s, SpBuf *b, const SpSnapHeader *h, const SampleGraph *g, SpError *err)
{
	sp_buf_init (b);
	assert_int_equal (sp_ser_init (s), 0);
	assert_ok (sp_ser_begin (s, b, h, err), err);
	for (size_t i = 0; i < g->nroots; i++)
		assert_ok (sp_ser_root (s, g->ids [i], g->roots [i], err), err);
}

/*
 * Mutate the sample graph while a snapshot of it is being written: values,
 * references cut and re-pointed, the element of an array, a node the
 * traversal has not reached yet.  With `barrier`, each mutation is preceded by
 * sp_ser_write_now on the object it writes (what the store barrier does).
 */
typedef enum {
	NO_BARRIER,
	BARRIER_ANY,            /* no marking: the barrier writes every object stored into */
	BARRIER_MARKED,         /* stores after marking: only objects of the snapshot */
	BARRIER_MARKING,        /* stores while marking, in steps between them (what the runtime does) */
} Barrier;

static void
barrier_before_store (SpSerializer *s, Barrier barrier, void *obj, SpError *err)
{
	if (barrier == NO_BARRIER)
		return;
	int wrote = sp_ser_write_now (s, obj, NULL, err);
	assert_true (wrote == 0 || wrote == 1);
	/* A second barrier on the same object has nothing left to do. */
	assert_int_equal (sp_ser_write_now (s, obj, NULL, err), 0);
}

static void
mutate_during_snapshot (SampleGraph *g, SpSerializer *s, Barrier barrier, SpError *err)
{
	FakeClass *node = fake_class_find ("App.Node");
	void *stranger = fake_new_object (node);
	int32_t v = 999;
	void *targets [] = { g->c, g->b, g->prims, g->points, g->d, stranger };
	for (size_t i = 0; i < sizeof targets / sizeof targets [0]; i++) {
		barrier_before_store (s, barrier, targets [i], err);
		if (targets [i] == g->prims) {
			fake_set (g->prims, "i", &v, 4);
		} else if (targets [i] == g->points) {
			double x = -1.5;
			memcpy (fake_elem (g->points, 0), &x, sizeof x);
		} else {
			fake_set (targets [i], "value", &v, 4);
			fake_set_ref (targets [i], "other", stranger);   /* c: cut from what it held */
			fake_set_ref (targets [i], "next", NULL);
		}
		/* Progress in between: the traversal (or the marking) and the mutator interleave. */
		if (barrier == BARRIER_MARKING && !s->mark_done)
			assert_true (sp_ser_mark (s, 1, err) >= 0);
		else
			assert_true (sp_ser_step (s, 1, err) >= 0);
	}
}

/* Mark s to the end. */
static void
mark_all (SpSerializer *s, SpError *err)
{
	int more;
	while ((more = sp_ser_mark (s, 2, err)) == 1)
		;
	assert_ok (more, err);
	assert_true (s->mark_done);
}

/* Step s to the end and finish it (marking first, when it was started). */
static void
finish_snapshot (SpSerializer *s, SpError *err)
{
	int more;
	if (s->marked && !s->mark_done)
		mark_all (s, err);
	while ((more = sp_ser_step (s, 3, err)) == 1)
		;
	assert_int_equal (more, 0);
	assert_ok (sp_ser_finish (s, err), err);
}

/* Do snapshots a and b restore to equal graphs (roots ids [0..n))?  *count_a, *count_b: their objects. */
static bool
snapshots_restore_equal (const SpBuf *a, const SpBuf *b, const uint32_t *ids, size_t n, char *why, size_t why_cap,
			 uint32_t *count_a, uint32_t *count_b)
{
	SpSnapshot sa, sb;
	SpError err = { 0 };
	parse_ok (a, &sa);
	parse_ok (b, &sb);
	void **oa, **ob;
	assert_ok (fake_restore (&sa, &oa, &err), &err);
	assert_ok (fake_restore (&sb, &ob, &err), &err);
	void *ra [SAMPLE_MAX_ROOTS], *rb [SAMPLE_MAX_ROOTS];
	for (size_t i = 0; i < n; i++) {
		ra [i] = fake_restored_root (&sa, oa, ids [i], NULL);
		rb [i] = fake_restored_root (&sb, ob, ids [i], NULL);
	}
	bool same = fake_graphs_equal (ra, rb, n, why, why_cap);
	*count_a = sa.trailer.nobjects;
	*count_b = sb.trailer.nobjects;
	free (oa);
	free (ob);
	sp_snapshot_free (&sa);
	sp_snapshot_free (&sb);
	return same;
}

/* What a snapshot taken while the graph changes restores to: equal, or not, to the graph before. */
static bool
snapshot_while_mutating_equals_original (Barrier barrier, char *why, size_t why_cap)
{
	SampleGraph g;
	sample_graph_build (&g);
	SpBuf original;
	sp_buf_init (&original);
	sample_graph_serialize (&g, SIZE_MAX, &original);   /* the state at the start */

	SpSerializer s;
	SpBuf b;
	SpError err = { 0 };
	SpSnapHeader h = { .sequence = 43 };
	begin_sample_snapshot (&s, &b, &h, &g, &err);
	if (barrier == BARRIER_MARKED) {
		mark_all (&s, &err);
		assert_int_equal (s.nobjects, fake_graph_count (g.roots, g.nroots));
		assert_true (sp_ser_step (&s, 2, &err) >= 0);
	} else if (barrier == BARRIER_MARKING) {
		assert_int_equal (sp_ser_mark (&s, 1, &err), 1);     /* marking has begun, not finished */
	} else {
		assert_true (sp_ser_step (&s, 2, &err) >= 0);
	}
	mutate_during_snapshot (&g, &s, barrier, &err);
	finish_snapshot (&s, &err);
	uint32_t count_before, count_during;
	bool same = snapshots_restore_equal (&original, &b, g.ids, g.nroots, why, why_cap, &count_before, &count_during);
	/* After marking, an object outside the snapshot stays outside, written to or not. */
	if (barrier == BARRIER_MARKED)
		assert_int_equal (count_during, count_before);
	/* While marking, the stranger (not in the graph) was stored into: it is written, unreferenced, and counted. */
	if (barrier == BARRIER_MARKING) {
		assert_int_equal (count_during, count_before + 1);
		assert_int_equal (s.unreached_written, 1);
	}
	sp_ser_free (&s);
	sp_buf_free (&b);
	sp_buf_free (&original);
	return same;
}

/* The barrier's contract: the snapshot is the graph as it was when the snapshot began. */
static void
test_barrier_keeps_snapshot_at_its_start (void **state)
{
	(void)state;
	char why [512] = "";
	const Barrier kinds [] = { BARRIER_ANY, BARRIER_MARKED, BARRIER_MARKING };
	for (size_t k = 0; k < 3; k++) {
		fake_reset ();
		if (!snapshot_while_mutating_equals_original (kinds [k], why, sizeof why)) {
			print_error ("with barrier %zu, the snapshot differs from the graph at its start: %s\n", k, why);
			fail ();
		}
	}
	/* The same mutations without it tear the snapshot: the test can tell. */
	fake_reset ();
	assert_false (snapshot_while_mutating_equals_original (NO_BARRIER, why, sizeof why));
}

/* A root holding long objects: 3000 references, 40000 ints, 100000 characters (some wide). */
static void *
make_long_objects (void **refs_out)
{
	FakeClass *item = fake_class_object ("App", "App.Item");
	fake_class_add_field (item, "n", SP_KIND_I4, NULL);
	FakeClass *holder = fake_class_object ("App", "App.Holder");
	fake_class_add_field (holder, "refs", SP_KIND_REF, "App.Item[]");
	fake_class_add_field (holder, "ints", SP_KIND_REF, "System.Int32[]");
	fake_class_add_field (holder, "text", SP_KIND_REF, "System.String");
	void *refs = fake_new_array (fake_class_ref_array ("App.Item[]", "App.Item"), 3000);
	for (uint32_t i = 0; i < 3000; i++) {
		void *it = fake_new_object (item);
		FAKE_SET (it, "n", int32_t, (int32_t)i * 3);
		memcpy (fake_elem (refs, i), &it, sizeof it);
	}
	void *ints = fake_new_array (fake_class_prim_array (SP_KIND_I4), 40000);
	for (int32_t i = 0; i < 40000; i++)
		memcpy (fake_elem (ints, (uint64_t)i), &i, 4);
	uint16_t *units = malloc (100000 * sizeof *units);
	for (uint32_t i = 0; i < 100000; i++)
		units [i] = (uint16_t)(i % 50000 == 49999 ? 0x263a : 'a' + i % 26);
	void *text = fake_new_string_utf16 (units, 100000);
	free (units);
	void *h = fake_new_object (holder);
	fake_set_ref (h, "refs", refs);
	fake_set_ref (h, "ints", ints);
	fake_set_ref (h, "text", text);
	*refs_out = refs;
	return h;
}

/* The pieces after the first of n elements in pieces of `per`. */
static size_t
later_pieces (uint64_t n, uint64_t per)
{
	return (size_t)((n + per - 1) / per - 1);
}

/* Long strings and arrays go in pieces, one a step; every step size gives the same bytes. */
static void
test_long_objects_in_pieces (void **state)
{
	(void)state;
	void *refs;
	void *root = make_long_objects (&refs);
	uint32_t id = 1;
	SpBuf whole, steps;
	sp_buf_init (&whole);
	sp_buf_init (&steps);
	SpError err = { 0 };
	assert_ok (fake_serialize (&id, &root, 1, SIZE_MAX, 5, &whole, &err), &err);
	assert_ok (fake_serialize (&id, &root, 1, 1, 5, &steps, &err), &err);
	assert_same_bytes (&whole, &steps, "steps of one vs one step");
	SpSnapshot snap;
	parse_ok (&whole, &snap);
	/* Every piece after the first is an ELEMS record: 3000 refs, 40000 ints, 100000 characters. */
	assert_int_equal (snap.nchunks, later_pieces (3000, SP_SER_PIECE_LEAVES) + later_pieces (40000, SP_SER_PIECE_BYTES / 4) +
			  later_pieces (100000, SP_SER_PIECE_BYTES / 2));
	void **objects;
	assert_ok (fake_restore (&snap, &objects, &err), &err);
	void *back = fake_restored_root (&snap, objects, 1, NULL);
	char why [512] = "";
	if (!fake_graphs_equal (&root, &back, 1, why, sizeof why)) {
		print_error ("restored long objects differ: %s\n", why);
		fail ();
	}
	free (objects);
	sp_snapshot_free (&snap);
	/* A long object written last: its pieces still all come before the end. */
	void *ints = fake_get_ref (root, "ints");
	assert_ok (fake_serialize (&id, &ints, 1, 1, 6, &steps, &err), &err);
	parse_ok (&steps, &snap);
	assert_int_equal (snap.nchunks, later_pieces (40000, SP_SER_PIECE_BYTES / 4));
	sp_snapshot_free (&snap);
	sp_buf_free (&whole);
	sp_buf_free (&steps);
}

/*
 * A snapshot of make_long_objects being written, beside `original`, the one
 * taken in one go: the tests below act on it, then long_snapshot_check
 * finishes it and requires it to restore to the same graph, and
 * long_snapshot_free lets it go.
 */
typedef struct LongSnapshot {
	void *root, *refs;
	uint32_t id;
	SpBuf original, b;
	SpSerializer s;
	SpError err;
} LongSnapshot;

static void
long_snapshot_begin (LongSnapshot *t, uint64_t sequence, bool whole_objects)
{
	memset (t, 0, sizeof *t);
	t->root = make_long_objects (&t->refs);
	t->id = 1;
	sp_buf_init (&t->original);
	sp_buf_init (&t->b);
	assert_ok (fake_serialize (&t->id, &t->root, 1, SIZE_MAX, 5, &t->original, &t->err), &t->err);
	SpSnapHeader h = { .sequence = sequence };
	assert_int_equal (sp_ser_init (&t->s), 0);
	t->s.whole_objects = whole_objects;
	assert_ok (sp_ser_begin (&t->s, &t->b, &h, &t->err), &t->err);
	assert_ok (sp_ser_root (&t->s, 1, t->root, &t->err), &t->err);
}

/* long_snapshot_check for a snapshot that holds `extra` objects the graph does not reach. */
static void
long_snapshot_check_objects (LongSnapshot *t, const char *what, uint32_t extra)
{
	finish_snapshot (&t->s, &t->err);
	char why [512] = "";
	uint32_t count_original, count;
	if (!snapshots_restore_equal (&t->original, &t->b, &t->id, 1, why, sizeof why, &count_original, &count)) {
		print_error ("%s: %s\n", what, why);
		fail ();
	}
	assert_int_equal (count, count_original + extra);
}

static void
long_snapshot_check (LongSnapshot *t, const char *what)
{
	long_snapshot_check_objects (t, what, 0);
}

static void
long_snapshot_free (LongSnapshot *t)
{
	sp_ser_free (&t->s);
	sp_buf_free (&t->b);
	sp_buf_free (&t->original);
}

/* Stop-the-world snapshots (whole_objects): each long object in one record, the same graph. */
static void
test_whole_objects_have_no_pieces (void **state)
{
	(void)state;
	LongSnapshot t;
	long_snapshot_begin (&t, 5, true);
	long_snapshot_check (&t, "whole and in pieces restore differently");
	SpSnapshot snap;
	parse_ok (&t.b, &snap);
	assert_int_equal (snap.nchunks, 0);
	sp_snapshot_free (&snap);
	long_snapshot_free (&t);
}

/* A store into an array being written in pieces: the barrier writes the rest first. */
static void
test_barrier_on_an_array_in_pieces (void **state)
{
	(void)state;
	LongSnapshot t;
	long_snapshot_begin (&t, 6, false);
	while (!(t.s.partial_lid && t.s.partial_next < 3000 && sp_client_lid_object (t.s.partial_lid) == t.refs))
		assert_int_equal (sp_ser_step (&t.s, 1, &t.err), 1);
	/* Half written: the store into element 2900 (not written yet) meets the barrier, which must act. */
	assert_int_equal (sp_ser_write_now (&t.s, t.refs, NULL, &t.err), 1);
	assert_true (sp_ser_is_written (&t.s, sp_ser_lid_if_known (&t.s, t.refs)));
	assert_int_equal (t.s.partial_lid, 0);
	void *none = NULL;
	memcpy (fake_elem (t.refs, 2900), &none, sizeof none);
	assert_int_equal (sp_ser_write_now (&t.s, t.refs, NULL, &t.err), 0);
	long_snapshot_check (&t, "the array written in pieces lost its state at the start");
	long_snapshot_free (&t);
}

/* The int array of make_long_objects (40,000 elements: long enough for a barrier's copy). */
static void *
long_snapshot_ints (LongSnapshot *t)
{
	return fake_get_ref (t->root, "ints");
}

/* What a barrier does with SP_SER_WRITE_COPY: the ticket's bytes, copied (outside the lock), attached. */
static void
barrier_copy_and_attach (LongSnapshot *t, void *arr, const SpPreserveTicket *ticket)
{
	uint8_t *copy = malloc (ticket->bytes);
	assert_non_null (copy);
	memcpy (copy, fake_data (arr) + ticket->offset, ticket->bytes);
	assert_ok (sp_ser_preserve_attach (&t->s, arr, ticket, copy, &t->err), &t->err);
}

/* The stores the barrier let through: every element of the array changes. */
static void
store_everywhere (void *arr)
{
	for (uint64_t i = 0; i < fake_length (arr); i++) {
		int32_t v = -(int32_t)i - 1;
		memcpy (fake_elem (arr, i), &v, 4);
	}
}

/*
 * A store into a long array of primitives being written in pieces, with a
 * ticket (the runtime's barrier): the rest is copied outside the lock, the
 * steps write it from the copy, and a second store waits for the copy.
 */
static void
test_barrier_copies_the_rest_of_an_array_in_pieces (void **state)
{
	(void)state;
	LongSnapshot t;
	long_snapshot_begin (&t, 9, false);
	void *ints = long_snapshot_ints (&t);
	while (!(t.s.partial_lid && sp_client_lid_object (t.s.partial_lid) == ints && t.s.partial_next > 4096))
		assert_int_equal (sp_ser_step (&t.s, 1, &t.err), 1);
	uint64_t written = t.s.partial_next;
	SpPreserveTicket ticket;
	assert_int_equal (sp_ser_write_now (&t.s, ints, &ticket, &t.err), SP_SER_WRITE_COPY);
	assert_int_equal (ticket.offset, written * 4);
	assert_int_equal (ticket.bytes, (40000 - written) * 4);
	assert_int_equal (t.s.partial_lid, 0);          /* the steps no longer write it from the object */
	/* Another thread's store into it, before the copy is attached, must wait. */
	SpPreserveTicket other;
	assert_int_equal (sp_ser_write_now (&t.s, ints, &other, &t.err), SP_SER_WRITE_WAIT);
	/* The steps go on with the other objects, and then wait for the copy. */
	int more;
	while ((more = sp_ser_step (&t.s, 1, &t.err)) == 1)
		;
	assert_int_equal (more, SP_SER_STEP_WAITING);
	barrier_copy_and_attach (&t, ints, &ticket);
	store_everywhere (ints);
	assert_int_equal (sp_ser_write_now (&t.s, ints, &other, &t.err), 0);
	long_snapshot_check (&t, "the array copied by the barrier lost its state at the start");
	assert_int_equal (t.s.npreserved, 0);
	long_snapshot_free (&t);
}

/* A store into a long array no step has begun: its record and first piece now, the rest from the copy. */
static void
test_barrier_copies_an_array_not_begun (void **state)
{
	(void)state;
	LongSnapshot t;
	long_snapshot_begin (&t, 10, false);
	void *ints = long_snapshot_ints (&t);
	uint32_t lid;
	while (!(lid = sp_ser_lid_if_known (&t.s, ints)))
		assert_int_equal (sp_ser_step (&t.s, 1, &t.err), 1);
	assert_false (sp_ser_is_written (&t.s, lid));
	uint64_t objects = t.s.objects_written;
	SpPreserveTicket ticket;
	assert_int_equal (sp_ser_write_now (&t.s, ints, &ticket, &t.err), SP_SER_WRITE_COPY);
	assert_true (sp_ser_is_written (&t.s, lid));    /* claimed: the steps skip it */
	assert_int_equal (t.s.objects_written, objects + 1);
	uint64_t first = t.s.piece_bytes / 4;
	assert_int_equal (ticket.offset, first * 4);
	assert_int_equal (ticket.bytes, (40000 - first) * 4);
	barrier_copy_and_attach (&t, ints, &ticket);
	store_everywhere (ints);
	long_snapshot_check (&t, "the array copied before its first piece lost its state at the start");
	long_snapshot_free (&t);
}

/*
 * Without a ticket (and in stop-the-world snapshots) the array is written
 * whole as before; a copy that comes after its snapshot was abandoned is
 * freed (ASan's leak check sees it otherwise); a copy that could not be
 * allocated is an error that names it.
 */
static void
test_barrier_copy_edges (void **state)
{
	(void)state;
	LongSnapshot t;
	long_snapshot_begin (&t, 11, false);
	void *ints = long_snapshot_ints (&t);
	while (!sp_ser_lid_if_known (&t.s, ints))
		assert_int_equal (sp_ser_step (&t.s, 1, &t.err), 1);
	SpPreserveTicket ticket;
	assert_int_equal (sp_ser_write_now (&t.s, ints, &ticket, &t.err), SP_SER_WRITE_COPY);
	assert_int_equal (sp_ser_preserve_attach (&t.s, ints, &ticket, NULL, &t.err), -1);
	assert_non_null (strstr (t.err.msg, "out of memory for a copy"));
	sp_error_clear (&t.err);
	/* The snapshot is abandoned (a new one begins); the copy arrives late. */
	SpSnapHeader h = { .sequence = 12 };
	assert_ok (sp_ser_begin (&t.s, &t.b, &h, &t.err), &t.err);
	assert_int_equal (t.s.npreserved, 0);
	uint8_t *copy = malloc (ticket.bytes);
	assert_int_equal (sp_ser_preserve_attach (&t.s, ints, &ticket, copy, &t.err), 0);
	/* A new snapshot, in which the array is written whole by a barrier without a ticket. */
	assert_ok (sp_ser_root (&t.s, 1, t.root, &t.err), &t.err);
	while (!sp_ser_lid_if_known (&t.s, ints))
		assert_int_equal (sp_ser_step (&t.s, 1, &t.err), 1);
	assert_int_equal (sp_ser_write_now (&t.s, ints, NULL, &t.err), 1);
	assert_int_equal (t.s.npreserved, 0);
	long_snapshot_check (&t, "the array written whole by a barrier");
	long_snapshot_free (&t);
}

/* A new int array of n elements, each i * 7, that the graph does not reach. */
static void *
stranger_ints (uint64_t n)
{
	void *a = fake_new_array (fake_class_prim_array (SP_KIND_I4), n);
	for (uint64_t i = 0; i < n; i++) {
		int32_t v = (int32_t)(i * 7);
		memcpy (fake_elem (a, i), &v, 4);
	}
	return a;
}

/* Does array lid restore, in snapshot b, with n elements (and, when n > 0, each i * 7, as stranger_ints made them)? */
static bool
restored_ints_are (const SpBuf *b, uint32_t lid, uint64_t n)
{
	SpSnapshot snap;
	SpError err = { 0 };
	void **objects;
	parse_ok (b, &snap);
	assert_ok (fake_restore (&snap, &objects, &err), &err);
	void *a = objects [lid];
	bool same = a && fake_length (a) == n;
	for (uint64_t i = 0; same && i < n; i++) {
		int32_t v;
		memcpy (&v, fake_elem (a, i), 4);
		same = v == (int32_t)(i * 7);
	}
	free (objects);
	sp_snapshot_free (&snap);
	return same;
}

/*
 * While marking, a barrier meets arrays of primitives nothing has reached
 * yet, a short one and a long one (copied outside the lock): both are set
 * aside, not written, and stored into after.  Marking never reaches them:
 * each LID gets an empty record, and the snapshot is the graph's, some
 * bytes longer, not the arrays' 4,000 and 160,000 bytes longer.  A second store
 * finds nothing to do.
 */
static void
test_marking_sets_aside_arrays_not_reached (void **state)
{
	(void)state;
	LongSnapshot t;
	long_snapshot_begin (&t, 13, false);
	assert_int_equal (sp_ser_mark (&t.s, 1, &t.err), 1);
	void *small = stranger_ints (1000), *large = stranger_ints (40000);
	SpPreserveTicket ticket;
	assert_int_equal (sp_ser_write_now (&t.s, small, &ticket, &t.err), 1);
	uint32_t small_lid = sp_ser_lid_if_known (&t.s, small);
	assert_true (t.s.state [small_lid] & SP_SER_ASIDE);
	assert_false (sp_ser_is_written (&t.s, small_lid));
	store_everywhere (small);
	assert_int_equal (sp_ser_write_now (&t.s, small, &ticket, &t.err), 0);
	assert_int_equal (sp_ser_write_now (&t.s, large, &ticket, &t.err), SP_SER_WRITE_COPY);
	assert_int_equal (ticket.offset, 0);
	assert_int_equal (ticket.bytes, 40000 * 4);
	/* Another thread's store into it, before the copy is attached, waits (no array is being written now). */
	SpPreserveTicket other;
	assert_int_equal (t.s.npreserved, 0);
	assert_int_equal (sp_ser_write_now (&t.s, large, &other, &t.err), SP_SER_WRITE_WAIT);
	barrier_copy_and_attach (&t, large, &ticket);
	store_everywhere (large);
	uint32_t large_lid = sp_ser_lid_if_known (&t.s, large);
	long_snapshot_check_objects (&t, "arrays set aside and not reached changed the graph", 2);
	assert_int_equal (t.s.unreached_aside, 2);
	assert_int_equal (t.s.unreached_written, 0);
	assert_true (t.b.len < t.original.len + 1000);     /* the short array alone would take 4,000 */
	assert_true (restored_ints_are (&t.b, small_lid, 0));
	assert_true (restored_ints_are (&t.b, large_lid, 0));
	long_snapshot_free (&t);
}

/*
 * The same arrays, reached after all (a field of the root, marked after the
 * barrier met them): written from the copies, so the snapshot holds them as
 * they were at its start, whatever was stored since.  The long one's copy
 * is still being taken when the steps reach it: its record begins, the
 * steps wait for the copy, and a second store waits for it too.
 */
static void
test_marking_sets_aside_arrays_it_reaches (void **state)
{
	(void)state;
	LongSnapshot t;
	long_snapshot_begin (&t, 14, false);
	FakeClass *pair = fake_class_object ("App", "App.Pair");
	fake_class_add_field (pair, "a", SP_KIND_REF, "System.Int32[]");
	fake_class_add_field (pair, "b", SP_KIND_REF, "System.Int32[]");
	void *small = stranger_ints (1000), *large = stranger_ints (40000), *p = fake_new_object (pair);
	fake_set_ref (p, "a", small);
	fake_set_ref (p, "b", large);
	assert_ok (sp_ser_root (&t.s, 2, p, &t.err), &t.err);
	/* Marking has not looked at the pair yet: its arrays have no LID. */
	SpPreserveTicket ticket, other;
	assert_int_equal (sp_ser_write_now (&t.s, small, &ticket, &t.err), 1);
	store_everywhere (small);
	assert_int_equal (sp_ser_write_now (&t.s, large, &ticket, &t.err), SP_SER_WRITE_COPY);
	mark_all (&t.s, &t.err);
	int more;
	while ((more = sp_ser_step (&t.s, 1, &t.err)) == 1)
		;
	assert_int_equal (more, SP_SER_STEP_WAITING);
	assert_int_equal (sp_ser_write_now (&t.s, large, &other, &t.err), SP_SER_WRITE_WAIT);
	barrier_copy_and_attach (&t, large, &ticket);
	store_everywhere (large);
	assert_int_equal (sp_ser_write_now (&t.s, large, &other, &t.err), 0);
	long_snapshot_check_objects (&t, "arrays set aside and reached changed the graph", 3);
	assert_int_equal (t.s.unreached_aside, 0);
	assert_true (restored_ints_are (&t.b, sp_ser_lid_if_known (&t.s, small), 1000));
	assert_true (restored_ints_are (&t.b, sp_ser_lid_if_known (&t.s, large), 40000));
	long_snapshot_free (&t);
}

/*
 * A long array set aside and never reached, whose copy is still being taken
 * when the steps meet it: its empty record does not wait for the copy, which
 * is freed when it comes (ASan's leak check sees it otherwise).  In a
 * snapshot that does not mark, an array set aside is judged once the steps
 * are otherwise done: never reached, it too gets an empty record (its
 * elements at the start were not part of the state); reached by a record
 * the steps wrote, it is written from its copy, its elements at the start.
 */
static void
test_aside_edges (void **state)
{
	(void)state;
	LongSnapshot t;
	long_snapshot_begin (&t, 15, false);
	assert_int_equal (sp_ser_mark (&t.s, 1, &t.err), 1);
	void *large = stranger_ints (40000);
	SpPreserveTicket ticket;
	assert_int_equal (sp_ser_write_now (&t.s, large, &ticket, &t.err), SP_SER_WRITE_COPY);
	mark_all (&t.s, &t.err);
	int more;
	while ((more = sp_ser_step (&t.s, 1, &t.err)) == 1)
		;
	assert_int_equal (more, 0);
	assert_int_equal (t.s.npreserved, 0);
	barrier_copy_and_attach (&t, large, &ticket);
	long_snapshot_check_objects (&t, "an array dropped while copied changed the graph", 1);
	assert_int_equal (t.s.unreached_aside, 1);
	long_snapshot_free (&t);

	long_snapshot_begin (&t, 16, false);
	void *small = stranger_ints (1000);
	assert_int_equal (sp_ser_write_now (&t.s, small, &ticket, &t.err), 1);
	store_everywhere (small);
	uint32_t lid = sp_ser_lid_if_known (&t.s, small);
	while ((more = sp_ser_step (&t.s, 1, &t.err)) == 1)
		;
	assert_int_equal (more, 0);
	assert_ok (sp_ser_finish (&t.s, &t.err), &t.err);
	assert_int_equal (t.s.unreached_aside, 1);
	assert_true (restored_ints_are (&t.b, lid, 0));
	long_snapshot_free (&t);

	/* An array of the state, stored into before the steps reach it: written from its copy. */
	long_snapshot_begin (&t, 18, false);
	void *ints = long_snapshot_ints (&t);
	assert_int_equal (sp_ser_write_now (&t.s, ints, &ticket, &t.err), SP_SER_WRITE_COPY);
	barrier_copy_and_attach (&t, ints, &ticket);
	store_everywhere (ints);
	long_snapshot_check (&t, "an array of the state set aside before the steps reached it lost its elements at the start");
	assert_int_equal (t.s.unreached_aside, 0);
	long_snapshot_free (&t);
}

/*
 * Thousands set aside at once: 2,000 arrays of the state (elements of a root
 * marking has not looked at) and 2,000 strangers, each stored into after its
 * barrier.  The state's are written from their copies, the strangers' LIDs
 * get empty records, and nothing is left over.
 */
static void
test_many_arrays_set_aside (void **state)
{
	(void)state;
	LongSnapshot t;
	long_snapshot_begin (&t, 17, false);
	enum { N = 2000 };
	void *jagged = fake_new_array (fake_class_ref_array ("System.Int32[][]", "System.Int32[]"), N);
	void *strangers [N];
	for (int i = 0; i < N; i++) {
		void *a = stranger_ints (8);
		memcpy (fake_elem (jagged, (uint64_t)i), &a, sizeof a);
		strangers [i] = stranger_ints (8);
	}
	assert_ok (sp_ser_root (&t.s, 2, jagged, &t.err), &t.err);
	assert_int_equal (sp_ser_mark (&t.s, 1, &t.err), 1);   /* marking has begun, not reached the jagged array's elements */
	SpPreserveTicket ticket;
	for (int i = 0; i < N; i++) {
		void *a;
		memcpy (&a, fake_elem (jagged, (uint64_t)i), sizeof a);
		assert_int_equal (sp_ser_write_now (&t.s, a, &ticket, &t.err), 1);
		assert_int_equal (sp_ser_write_now (&t.s, strangers [i], &ticket, &t.err), 1);
		store_everywhere (a);
		store_everywhere (strangers [i]);
	}
	assert_int_equal (t.s.npreserved, 0);           /* kept apart from the arrays being written */
	long_snapshot_check_objects (&t, "thousands of arrays set aside changed the graph", 1 + 2 * N);
	assert_int_equal (t.s.unreached_aside, N);
	for (int i = 0; i < N; i += 97) {
		void *a;
		memcpy (&a, fake_elem (jagged, (uint64_t)i), sizeof a);
		assert_true (restored_ints_are (&t.b, sp_ser_lid_if_known (&t.s, a), 8));
		assert_true (restored_ints_are (&t.b, sp_ser_lid_if_known (&t.s, strangers [i]), 0));
	}
	long_snapshot_free (&t);
}

/*
 * Marking looks at a long array of references in pieces, one a call; a store
 * into it half-way writes it whole (with its children's LIDs), and marking
 * then skips the rest of it.
 */
static void
test_marking_in_pieces (void **state)
{
	(void)state;
	LongSnapshot t;
	long_snapshot_begin (&t, 8, false);
	uint32_t refs_lid = 0;
	while (!(refs_lid && t.s.marked + 1 == refs_lid && t.s.mark_next))
		assert_int_equal (sp_ser_mark (&t.s, 1, &t.err), 1), refs_lid = sp_ser_lid_if_known (&t.s, t.refs);
	/* One piece looked at: its items have LIDs, the rest not yet. */
	assert_int_equal (t.s.mark_next, SP_SER_PIECE_LEAVES / 4);
	uint32_t before = t.s.nobjects;
	void *item;
	memcpy (&item, fake_elem (t.refs, 2999), sizeof item);
	assert_int_equal (sp_ser_lid_if_known (&t.s, item), 0);
	assert_int_equal (sp_ser_write_now (&t.s, t.refs, NULL, &t.err), 1);
	assert_true (sp_ser_lid_if_known (&t.s, item) != 0);
	assert_int_equal (t.s.nobjects, before + 3000 - SP_SER_PIECE_LEAVES / 4);
	void *none = NULL;
	memcpy (fake_elem (t.refs, 2999), &none, sizeof none);
	assert_int_equal (sp_ser_mark (&t.s, 1, &t.err), 1);
	assert_int_equal (t.s.marked, refs_lid);
	assert_int_equal (t.s.mark_next, 0);
	long_snapshot_check (&t, "the array stored into while marked in pieces lost its state at the start");
	assert_int_equal (t.s.unreached_written, 0);
	long_snapshot_free (&t);
}

/*
 * A barrier, while marking, meets an object that cannot be written (it holds
 * something that cannot be persisted).  Not reached by the snapshot: no
 * error.  Reached after all (through a reference marking had not followed
 * yet): the snapshot fails naming it, even though the store that followed
 * the barrier made it writable; without that rule the snapshot would hold
 * its later state, torn.
 */
static int
poisoned_during_marking (bool reachable, SpError *err)
{
	FakeClass *plant = fake_class_object ("App", "Plant");
	fake_class_add_field (plant, "next", SP_KIND_REF, "Plant");
	fake_class_add_field (plant, "valve", SP_KIND_REF, "System.Object");
	FakeClass *stream = fake_class_unpersistable ("System.IO.FileStream");
	void *root = fake_new_object (plant), *middle = fake_new_object (plant), *leaf = fake_new_object (plant);
	fake_set_ref (root, "next", middle);
	fake_set_ref (middle, "next", reachable ? leaf : NULL);
	fake_set_ref (leaf, "valve", fake_new_object (stream));
	SpSerializer s;
	SpBuf b;
	SpSnapHeader h = { .sequence = 9 };
	sp_buf_init (&b);
	assert_int_equal (sp_ser_init (&s), 0);
	assert_ok (sp_ser_begin (&s, &b, &h, err), err);
	assert_ok (sp_ser_root (&s, 1, root, err), err);
	/* The barrier before `leaf.valve = null`: nothing written, no error yet. */
	assert_int_equal (sp_ser_write_now (&s, leaf, NULL, err), 0);
	fake_set_ref (leaf, "valve", NULL);
	int more;
	while ((more = sp_ser_mark (&s, 1, err)) == 1)
		;
	if (more == 0)
		while ((more = sp_ser_step (&s, 1, err)) == 1)
			;
	if (more == 0)
		more = sp_ser_finish (&s, err);
	/* Not reached: the snapshot is whole, and restores the graph without it. */
	if (more == 0) {
		SpSnapshot snap;
		void **objects = NULL;
		more = fake_decode (b.data, b.len, &snap, &objects, err);
		if (more == 0) {
			void *back = fake_restored_root (&snap, objects, 1, NULL);
			assert_non_null (back);
			assert_non_null (fake_get_ref (back, "next"));
			assert_null (fake_get_ref (fake_get_ref (back, "next"), "next"));
			sp_snapshot_free (&snap);
			free (objects);
		}
	}
	sp_ser_free (&s);
	sp_buf_free (&b);
	return more;
}

static void
test_poisoned_while_marking (void **state)
{
	(void)state;
	SpError err = { 0 };
	assert_ok (poisoned_during_marking (false, &err), &err);
	fake_reset ();
	assert_fails (poisoned_during_marking (true, &err), &err);
	assert_contains (err.msg, "Plant");
	assert_contains (err.msg, "valve");
	assert_contains (err.msg, "System.IO.FileStream");
}

/* Marking, then writing, then the trailer: 0, or -1 with err. */
static int
drain_snapshot (SpSerializer *s, SpError *err)
{
	int more;
	while ((more = sp_ser_mark (s, 1, err)) == 1)
		;
	if (more == 0)
		while ((more = sp_ser_step (s, 1, err)) == 1)
			;
	return more == 0 ? sp_ser_finish (s, err) : more;
}

/*
 * `leaf.level = 7` through a pointer no barrier saw (a ref taken before the
 * start), logged as the runtime's address barrier does; `barrier_first`: an
 * object barrier then meets leaf while marking runs (it writes leaf, too
 * late); `whole_objects`: a stop-the-world snapshot, which never asks.
 */
static int
unseen_store_snapshot (bool reachable, bool barrier_first, bool whole_objects, SpError *err)
{
	FakeClass *plant = fake_class_object ("App", "Plant");
	fake_class_add_field (plant, "next", SP_KIND_REF, "Plant");
	fake_class_add_field (plant, "level", SP_KIND_I8, NULL);
	void *root = fake_new_object (plant), *middle = fake_new_object (plant), *leaf = fake_new_object (plant);
	fake_set_ref (root, "next", middle);
	fake_set_ref (middle, "next", reachable ? leaf : NULL);
	SpStoreLog log;
	assert_int_equal (sp_storelog_init (&log, 16), 0);
	fake_set_unseen_log (&log);
	SpSerializer s;
	SpBuf b;
	SpSnapHeader h = { .sequence = 12 };
	sp_buf_init (&b);
	assert_int_equal (sp_ser_init (&s), 0);
	s.whole_objects = whole_objects;
	assert_ok (sp_ser_begin (&s, &b, &h, err), err);
	assert_ok (sp_ser_root (&s, 1, root, err), err);
	assert_true (sp_storelog_add (&log, (uintptr_t)fake_field_ptr (leaf, "level"), 8));
	FAKE_SET (leaf, "level", int64_t, 7);
	if (barrier_first)
		assert_int_equal (sp_ser_write_now (&s, leaf, NULL, err), 1);
	int rc = drain_snapshot (&s, err);
	sp_ser_free (&s);
	sp_buf_free (&b);
	fake_set_unseen_log (NULL);
	sp_storelog_destroy (&log);
	return rc;
}

static void
test_unseen_store_fails_what_it_reaches (void **state)
{
	(void)state;
	SpError err = { 0 };
	assert_fails (unseen_store_snapshot (true, false, false, &err), &err);
	assert_contains (err.msg, "Plant");
	assert_contains (err.msg, "no barrier saw");
	fake_reset ();
	/* Written by a barrier first, then reached: still its state after the store. */
	memset (&err, 0, sizeof err);
	assert_fails (unseen_store_snapshot (true, true, false, &err), &err);
	assert_contains (err.msg, "Plant");
	fake_reset ();
	/* Only a barrier met it: not in the snapshot, nothing lost. */
	assert_ok (unseen_store_snapshot (false, true, false, &err), &err);
	fake_reset ();
	/* Stop-the-world: the world is stopped, there is no store to miss. */
	assert_ok (unseen_store_snapshot (true, false, true, &err), &err);
}

/* An array in pieces: a store into a piece already written changes nothing; into one not written yet, the snapshot fails. */
static void
test_unseen_store_into_an_array_in_pieces (void **state)
{
	(void)state;
	SpStoreLog log;
	assert_int_equal (sp_storelog_init (&log, 16), 0);
	fake_set_unseen_log (&log);
	for (int later = 0; later < 2; later++) {
		LongSnapshot t;
		long_snapshot_begin (&t, 13 + (uint64_t)later, false);
		void *ints = fake_get_ref (t.root, "ints");
		while (!(t.s.partial_lid && sp_client_lid_object (t.s.partial_lid) == ints))
			assert_int_equal (sp_ser_step (&t.s, 1, &t.err), 1);
		uint64_t at = later ? t.s.partial_next + 10 : t.s.partial_next - 1;
		assert_true (sp_storelog_add (&log, (uintptr_t)fake_elem (ints, at), 4));
		if (later) {
			assert_fails (drain_snapshot (&t.s, &t.err), &t.err);
			assert_contains (t.err.msg, "System.Int32[]");
		} else {
			long_snapshot_check (&t, "a store after its piece was written changed the snapshot");
		}
		long_snapshot_free (&t);
		sp_storelog_clear (&log);
	}
	fake_set_unseen_log (NULL);
	sp_storelog_destroy (&log);
}

/* sp_ser_step (s, 1) writes exactly one object a call, and says 0 only when none remain. */
static void
test_step_one_writes_one_object (void **state)
{
	(void)state;
	SampleGraph g;
	sample_graph_build (&g);
	size_t reachable = fake_graph_count (g.roots, g.nroots);
	SpSerializer s;
	SpBuf b;
	SpError err = { 0 };
	SpSnapHeader h = { .sequence = 1 };
	begin_sample_snapshot (&s, &b, &h, &g, &err);
	s.whole_objects = true;     /* the sample's long string would otherwise take a step a piece */
	size_t calls = 0;
	int rc;
	do {
		uint64_t before = s.objects_written;
		rc = sp_ser_step (&s, 1, &err);
		assert_int_not_equal (rc, -1);
		calls++;
		assert_true (s.objects_written == before + 1);
	} while (rc == 1);
	assert_int_equal (calls, reachable);
	assert_int_equal (s.nobjects, reachable);
	/* Nothing left: another step writes nothing. */
	assert_int_equal (sp_ser_step (&s, 1, &err), 0);
	assert_true (s.objects_written == reachable);
	assert_ok (sp_ser_finish (&s, &err), &err);
	SpSnapshot snap;
	parse_ok (&b, &snap);
	sp_snapshot_free (&snap);
	sp_ser_free (&s);
	sp_buf_free (&b);
}

/* Finishing with objects still queued is refused: the snapshot would be incomplete. */
static void
test_finish_refuses_unfinished (void **state)
{
	(void)state;
	SampleGraph g;
	sample_graph_build (&g);
	SpSerializer s;
	SpBuf b;
	SpError err = { 0 };
	SpSnapHeader h = { .sequence = 1 };
	begin_sample_snapshot (&s, &b, &h, &g, &err);
	assert_int_equal (sp_ser_step (&s, 3, &err), 1);
	assert_fails (sp_ser_finish (&s, &err), &err);
	sp_ser_free (&s);
	sp_buf_free (&b);
}

/* The GC moves every object between increments: the snapshot is the same. */
static void
test_objects_move_between_steps (void **state)
{
	(void)state;
	SampleGraph g;
	sample_graph_build (&g);
	SpBuf ref, moved;
	sp_buf_init (&ref);
	sp_buf_init (&moved);
	sample_graph_serialize (&g, SIZE_MAX, &ref);

	SpSerializer s;
	SpError err = { 0 };
	assert_int_equal (sp_ser_init (&s), 0);
	SpSnapHeader h = { .sequence = 42, .time_ns = 1700000000123456789ull };
	assert_ok (sp_ser_begin (&s, &moved, &h, &err), &err);
	for (size_t i = 0; i < g.nroots; i++) {
		assert_ok (sp_ser_root (&s, g.ids [i], g.roots [i], &err), &err);
		fake_gc_move_all (g.roots, g.nroots);
	}
	int rc;
	while ((rc = sp_ser_step (&s, 1, &err)) == 1)
		fake_gc_move_all (g.roots, g.nroots);
	if (rc < 0) {
		print_error ("sp_ser_step: %s\n", err.msg);
		fail ();
	}
	assert_ok (sp_ser_finish (&s, &err), &err);
	sp_ser_free (&s);
	assert_same_bytes (&ref, &moved, "moving vs still");
	assert_int_equal (fake_class_of_failures (), 0);
	sp_buf_free (&ref);
	sp_buf_free (&moved);
}

/*
 * Marking first, with the objects moving between its steps and the writing
 * steps (the GC between increments): the same bytes as writing alone.  The
 * writing takes each object's references from what marking recorded
 * (sp-kids.h), and does not look its children up again: a reference changed
 * behind the serializer's back after marking (no barrier; the runtime's
 * store log would refuse such a record) still shows the child marking saw.
 */
static void
test_marking_then_writing_same_bytes (void **state)
{
	(void)state;
	SampleGraph g;
	sample_graph_build (&g);
	SpBuf ref, marked;
	sp_buf_init (&ref);
	sample_graph_serialize (&g, SIZE_MAX, &ref);
	SpSerializer s;
	SpError err = { 0 };
	SpSnapHeader h = { .sequence = 42, .time_ns = 1700000000123456789ull };
	begin_sample_snapshot (&s, &marked, &h, &g, &err);
	/* What the moving GC updates: the roots, then a and d (named below). */
	void *slots [SAMPLE_MAX_ROOTS + 2];
	size_t n = g.nroots;
	memcpy (slots, g.roots, n * sizeof *slots);
	slots [n] = g.a;
	slots [n + 1] = g.d;
	int rc;
	while ((rc = sp_ser_mark (&s, 1, &err)) == 1)
		fake_gc_move_all (slots, n + 2);
	assert_ok (rc, &err);
	assert_true (s.kids.len > 0);
	/* Behind the serializer's back: a.other held a itself; now d, which the snapshot holds elsewhere. */
	assert_ptr_equal (fake_get_ref (slots [n], "other"), slots [n]);
	fake_set_ref (slots [n], "other", slots [n + 1]);
	while ((rc = sp_ser_step (&s, 1, &err)) == 1)
		fake_gc_move_all (slots, n + 2);
	assert_ok (rc, &err);
	assert_ok (sp_ser_finish (&s, &err), &err);
	assert_same_bytes (&ref, &marked, "marked and written vs written");
	sp_ser_free (&s);
	sp_buf_free (&ref);
	sp_buf_free (&marked);
}

/* Identity hashes that collide change nothing in the output. */
static void
test_hash_collisions_same_bytes (void **state)
{
	(void)state;
	SampleGraph g;
	sample_graph_build (&g);
	SpBuf ref, collided;
	sp_buf_init (&ref);
	sp_buf_init (&collided);
	sample_graph_serialize (&g, SIZE_MAX, &ref);
	for (uint32_t buckets = 1; buckets <= 4; buckets++) {
		fake_set_hash_buckets (buckets);
		sample_graph_serialize (&g, 5, &collided);
		assert_same_bytes (&ref, &collided, "colliding hashes vs distinct");
	}
	sp_buf_free (&ref);
	sp_buf_free (&collided);
}

/* One serializer, two snapshots: the second starts from nothing (LIDs, classes). */
static void
test_serializer_reuse (void **state)
{
	(void)state;
	SampleGraph g;
	sample_graph_build (&g);
	SpSerializer s;
	SpBuf b;
	SpError err = { 0 };
	SpSnapHeader h = { .sequence = 1 };
	begin_sample_snapshot (&s, &b, &h, &g, &err);
	while (sp_ser_step (&s, 4, &err) == 1)
		;
	assert_ok (sp_ser_finish (&s, &err), &err);
	/* Second snapshot: only node c (and what it reaches), with the same classes. */
	h.sequence = 2;
	assert_ok (sp_ser_begin (&s, &b, &h, &err), &err);
	assert_ok (sp_ser_root (&s, 1, g.c, &err), &err);
	while (sp_ser_step (&s, 4, &err) == 1)
		;
	assert_ok (sp_ser_finish (&s, &err), &err);
	SpSnapshot snap;
	parse_ok (&b, &snap);
	assert_true (snap.header.sequence == 2);
	assert_int_equal (snap.trailer.nobjects, fake_graph_count (&g.c, 1));
	assert_int_equal (snap.trailer.nroots, 1);
	assert_int_equal (snap.roots [0].lid, 1);
	void **objects;
	assert_ok (fake_restore (&snap, &objects, &err), &err);
	void *rc = objects [1];
	char why [512] = "";
	if (!fake_graphs_equal (&g.c, &rc, 1, why, sizeof why)) {
		print_error ("second snapshot differs: %s\n", why);
		fail ();
	}
	free (objects);
	sp_snapshot_free (&snap);
	sp_ser_free (&s);
	sp_buf_free (&b);
}

/*
 * The written mark in identity slots (sp_ser_written_hint: what the barrier
 * asks without a lock) says "written" only of an object whose record is
 * complete in this snapshot: not in the next snapshot before its record is
 * written again, although it gets the same LID; never for a clone.  With
 * slots, every complete object says so.
 */
static void
check_hints (SpSerializer *s, void **objs, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		uint32_t lid = sp_ser_lid_if_known (s, objs [i]);
		bool written = lid && sp_ser_is_written (s, lid);
		bool hint = sp_ser_written_hint (s, objs [i]);
		if (hint && !written) {
			print_error ("object %zu (LID %u): the hint says written, the serializer not\n", i, lid);
			fail ();
		}
		if (sp_client_lid_slot (objs [i]))
			assert_int_equal (hint, written);
	}
}

static void
test_written_hint (void **state)
{
	(void)state;
	SampleGraph g;
	sample_graph_build (&g);
	SpWrittenSet ws;
	assert_int_equal (sp_wset_init (&ws, 10), 0);
	SpSerializer s;
	SpBuf b;
	SpError err = { 0 };
	sp_buf_init (&b);
	assert_int_equal (sp_ser_init (&s), 0);
	s.written = &ws;
	void *clone = NULL;
	for (uint64_t seq = 1; seq <= 3; seq++) {
		SpSnapHeader h = { .sequence = seq };
		sp_wset_open (&ws, sp_client_gc_epoch ());
		assert_ok (sp_ser_begin (&s, &b, &h, &err), &err);
		for (size_t i = 0; i < g.nroots; i++)
			assert_ok (sp_ser_root (&s, g.ids [i], g.roots [i], &err), &err);
		void *objs [] = { g.a, g.b, g.c, g.d, g.prims, clone ? clone : g.a };
		int more;
		do {
			check_hints (&s, objs, sizeof objs / sizeof objs [0]);
			more = sp_ser_step (&s, 1, &err);
			assert_true (more >= 0);
		} while (more);
		check_hints (&s, objs, sizeof objs / sizeof objs [0]);
		assert_true (sp_client_lid_slot (g.a) == 0 || sp_ser_written_hint (&s, g.a));
		assert_ok (sp_ser_finish (&s, &err), &err);
		sp_wset_close (&ws, sp_client_gc_epoch ());
		if (!clone)
			clone = fake_clone (g.a);        /* its slot: a's LID, marked written */
		assert_false (sp_ser_written_hint (&s, clone));
	}
	sp_ser_free (&s);
	sp_wset_free (&ws);
	sp_buf_free (&b);
}

/*
 * An object cloned after a snapshot (its identity slot copied, naming the
 * original's LID) is another object in the next snapshot, whichever of the
 * two the snapshot reaches first.
 */
static void
test_clone_is_another_object (void **state)
{
	(void)state;
	SampleGraph g;
	SpBuf b;
	build_and_serialize (&g, &b);
	void *clone = fake_clone (g.c);
	for (int order = 0; order < 2; order++) {
		void *roots [2] = { order ? g.c : clone, order ? clone : g.c };
		SpSerializer s;
		SpError err = { 0 };
		SpSnapHeader h = { .sequence = 2 + (uint64_t)order };
		assert_int_equal (sp_ser_init (&s), 0);
		assert_ok (sp_ser_begin (&s, &b, &h, &err), &err);
		for (uint32_t i = 0; i < 2; i++)
			assert_ok (sp_ser_root (&s, i + 1, roots [i], &err), &err);
		while (sp_ser_step (&s, 3, &err) == 1)
			;
		assert_ok (sp_ser_finish (&s, &err), &err);
		SpSnapshot snap;
		parse_ok (&b, &snap);
		assert_int_equal (snap.trailer.nobjects, fake_graph_count (roots, 2));
		assert_int_not_equal (snap.roots [0].lid, snap.roots [1].lid);
		void **objects;
		assert_ok (fake_restore (&snap, &objects, &err), &err);
		void *restored [2] = { objects [snap.roots [0].lid], objects [snap.roots [1].lid] };
		char why [512] = "";
		if (!fake_graphs_equal (roots, restored, 2, why, sizeof why)) {
			print_error ("order %d: %s\n", order, why);
			fail ();
		}
		free (objects);
		sp_snapshot_free (&snap);
		sp_ser_free (&s);
	}
	sp_buf_free (&b);
}

static void
test_empty_snapshot (void **state)
{
	(void)state;
	SpBuf b;
	SpError err = { 0 };
	sp_buf_init (&b);
	assert_ok (fake_serialize (NULL, NULL, 0, 1, 3, &b, &err), &err);
	/* The header, an empty class index (tag, length, count 0, its own size: 7 bytes) and the trailer. */
	assert_int_equal (b.len, SP_FORMAT_HEADER_SIZE + 7 + SP_FORMAT_TRAILER_SIZE);
	SpSnapshot snap;
	parse_ok (&b, &snap);
	assert_int_equal (snap.trailer.nobjects, 0);
	assert_int_equal (snap.trailer.nclasses, 0);
	assert_int_equal (snap.trailer.nroots, 0);
	sp_snapshot_free (&snap);
	/* Only null roots. */
	uint32_t id = 5;
	void *none = NULL;
	assert_ok (fake_serialize (&id, &none, 1, 1, 3, &b, &err), &err);
	parse_ok (&b, &snap);
	assert_int_equal (snap.trailer.nroots, 1);
	assert_int_equal (snap.roots [0].id, 5);
	assert_int_equal (snap.roots [0].lid, 0);
	sp_snapshot_free (&snap);
	sp_buf_free (&b);
}

/* bool is stored as 0/1 whatever non-zero byte memory held. */
static void
test_bool_is_normalized (void **state)
{
	(void)state;
	FakeClass *c = fake_class_object ("App", "App.Flags");
	fake_class_add_field (c, "f", SP_KIND_BOOL, NULL);
	fake_class_add_field (c, "arr", SP_KIND_REF, "System.Boolean[]");
	FakeClass *bools = fake_class_prim_array (SP_KIND_BOOL);
	void *o = fake_new_object (c);
	FAKE_SET (o, "f", uint8_t, 0x80);
	void *arr = fake_new_array (bools, 4);
	const uint8_t raw [4] = { 0, 2, 0xff, 1 };
	memcpy (fake_elem (arr, 0), raw, 4);
	fake_set_ref (o, "arr", arr);
	SpBuf b;
	SpError err = { 0 };
	sp_buf_init (&b);
	uint32_t id = 1;
	assert_ok (fake_serialize (&id, &o, 1, 1, 1, &b, &err), &err);
	SpSnapshot snap;
	parse_ok (&b, &snap);
	void **objects;
	assert_ok (fake_restore (&snap, &objects, &err), &err);
	void *r = objects [1];
	assert_int_equal (*(uint8_t *)fake_field_ptr (r, "f"), 1);
	void *rarr = fake_get_ref (r, "arr");
	assert_int_equal (fake_elem (rarr, 0) [0], 0);
	assert_int_equal (fake_elem (rarr, 1) [0], 1);
	assert_int_equal (fake_elem (rarr, 2) [0], 1);
	assert_int_equal (fake_elem (rarr, 3) [0], 1);
	free (objects);
	sp_snapshot_free (&snap);

	/* A 2 on the wire (a damaged or foreign writer) still restores as a proper true. */
	FakeClass *one = fake_class_object ("App", "App.OneFlag");
	fake_class_add_field (one, "g", SP_KIND_BOOL, NULL);
	void *x = fake_new_object (one);
	FAKE_SET (x, "g", uint8_t, 1);
	assert_ok (fake_serialize (&id, &x, 1, 1, 1, &b, &err), &err);
	/* The object record is the last before the class index: its one value is the byte before it. */
	size_t index_size = (size_t)sp_get_le (b.data + b.len - SP_FORMAT_TRAILER_SIZE - 4, 4);
	uint8_t *value = b.data + b.len - SP_FORMAT_TRAILER_SIZE - index_size - 1;
	assert_int_equal (*value, 1);
	*value = 2;
	sp_put_le (b.data + b.len - 4, sp_crc32c (0, b.data, b.len - 4), 4);
	parse_ok (&b, &snap);
	assert_ok (fake_restore (&snap, &objects, &err), &err);
	assert_int_equal (*(uint8_t *)fake_field_ptr (objects [1], "g"), 1);
	free (objects);
	sp_snapshot_free (&snap);
	sp_buf_free (&b);
}

/*
 * Classes of interleaved primitives and references, one with a leaf plan
 * (few leaves) and one past SP_PLAN_LEAVES (its loops read the fields):
 * marking that meets them first writes the same bytes as writing alone, and
 * each leaf restores to its value, each reference to its object's copy.
 */
#define WIDE_LEAVES (SP_PLAN_LEAVES + 6)

static FakeClass *
interleaved_class (const char *name, uint32_t nleaves)
{
	static const SpKind kinds [] = { SP_KIND_I1, SP_KIND_REF, SP_KIND_I8, SP_KIND_BOOL, SP_KIND_R8, SP_KIND_REF,
					 SP_KIND_I2, SP_KIND_U4, SP_KIND_REF, SP_KIND_CHAR, SP_KIND_R4, SP_KIND_U8 };
	FakeClass *c = fake_class_object ("App", name);
	for (uint32_t i = 0; i < nleaves; i++) {
		char leaf [16];
		snprintf (leaf, sizeof leaf, "f%u", i);
		SpKind k = kinds [i % G_N_ELEMENTS (kinds)];
		fake_class_add_field (c, leaf, k, k == SP_KIND_REF ? "System.Object" : NULL);
	}
	return c;
}

/* Leaf i of obj: a value from `seed`, or a reference to targets [i % 2]. */
static void
fill_interleaved (void *obj, uint32_t nleaves, uint8_t seed, void *const targets [2])
{
	for (uint32_t i = 0; i < nleaves; i++) {
		char leaf [16];
		snprintf (leaf, sizeof leaf, "f%u", i);
		const SpField *f = fake_class_field (fake_class_of (obj), leaf);
		if (f->kind == SP_KIND_REF) {
			fake_set_ref (obj, leaf, targets [i % 2]);
			continue;
		}
		uint8_t bytes [8];
		for (unsigned b = 0; b < 8; b++)
			bytes [b] = (uint8_t)(seed + 7 * i + b);
		if (f->kind == SP_KIND_BOOL)
			bytes [0] = 1;
		fake_set (obj, leaf, bytes, sp_kind_size (f->kind));
	}
}

/* b restores a: the same values, and references to the restored copies (restored [k] of originals [k]). */
static void
assert_same_leaves (void *a, void *b, uint32_t nleaves, void *const originals [3], void *const restored [3])
{
	for (uint32_t i = 0; i < nleaves; i++) {
		char leaf [16];
		snprintf (leaf, sizeof leaf, "f%u", i);
		const SpField *f = fake_class_field (fake_class_of (a), leaf);
		if (f->kind != SP_KIND_REF) {
			assert_memory_equal (fake_field_ptr (a, leaf), fake_field_ptr (b, leaf), sp_kind_size (f->kind));
			continue;
		}
		size_t k = 0;
		while (k < 3 && originals [k] != fake_get_ref (a, leaf))
			k++;
		assert_true (k < 3);
		assert_ptr_equal (fake_get_ref (b, leaf), restored [k]);
	}
}

static void
test_leaf_plans_round_trip (void **state)
{
	(void)state;
	FakeClass *narrow = interleaved_class ("App.Node", 9);
	FakeClass *wide = interleaved_class ("App.Wide", WIDE_LEAVES);
	void *n1 = fake_new_object (narrow), *n2 = fake_new_object (narrow), *w = fake_new_object (wide);
	void *to_n [2] = { n2, w }, *to_self [2] = { n1, n1 }, *from_w [2] = { n2, n1 };
	fill_interleaved (n1, 9, 11, to_n);
	fill_interleaved (n2, 9, 101, to_self);
	fill_interleaved (w, WIDE_LEAVES, 51, from_w);
	SpError err = { 0 };

	/* Marking meets the classes first, and plans them. */
	SpBuf marked;
	SpSerializer s;
	SpSnapHeader h = { .sequence = 1, .time_ns = 1700000000123456789ull };
	sp_buf_init (&marked);
	assert_int_equal (sp_ser_init (&s), 0);
	assert_ok (sp_ser_begin (&s, &marked, &h, &err), &err);
	assert_ok (sp_ser_root (&s, 1, n1, &err), &err);
	int rc;
	while ((rc = sp_ser_mark (&s, 1, &err)) == 1)
		;
	assert_ok (rc, &err);
	while ((rc = sp_ser_step (&s, 1, &err)) == 1)
		;
	assert_ok (rc, &err);
	assert_ok (sp_ser_finish (&s, &err), &err);
	sp_ser_free (&s);

	/* Written without marking, as stop-the-world does: the same bytes, and they restore. */
	SpBuf b;
	sp_buf_init (&b);
	uint32_t id = 1;
	assert_ok (fake_serialize (&id, &n1, 1, 1, 1, &b, &err), &err);
	assert_same_bytes (&b, &marked, "marked first vs written");
	SpSnapshot snap;
	parse_ok (&b, &snap);
	void **objects;
	assert_ok (fake_restore (&snap, &objects, &err), &err);
	bool found;
	void *r1 = fake_restored_root (&snap, objects, 1, &found);
	assert_true (found);
	void *originals [3] = { n1, n2, w };
	void *restored [3] = { r1, fake_get_ref (r1, "f8"), fake_get_ref (r1, "f1") };   /* leaf i refers to targets [i % 2] */
	assert_same_leaves (n1, r1, 9, originals, restored);
	assert_same_leaves (n2, restored [1], 9, originals, restored);
	assert_same_leaves (w, restored [2], WIDE_LEAVES, originals, restored);
	free (objects);
	sp_snapshot_free (&snap);
	sp_buf_free (&marked);
	sp_buf_free (&b);
}

/* Equal states give equal bytes: any non-zero bool byte is the same true. */
static void
test_bool_encoding_is_canonical (void **state)
{
	(void)state;
	FakeClass *c = fake_class_object ("App", "App.Flags");
	fake_class_add_field (c, "f", SP_KIND_BOOL, NULL);
	fake_class_add_field (c, "arr", SP_KIND_REF, "System.Boolean[]");
	FakeClass *bools = fake_class_prim_array (SP_KIND_BOOL);
	const uint8_t odd [5] = { 0x80, 0, 2, 0xff, 1 }, canonical [5] = { 1, 0, 1, 1, 1 };
	const uint8_t *const variants [2] = { odd, canonical };
	SpBuf b [2];
	for (int v = 0; v < 2; v++) {
		void *o = fake_new_object (c);
		FAKE_SET (o, "f", uint8_t, variants [v] [0]);
		void *arr = fake_new_array (bools, 4);
		memcpy (fake_elem (arr, 0), variants [v] + 1, 4);
		fake_set_ref (o, "arr", arr);
		SpError err = { 0 };
		uint32_t id = 1;
		sp_buf_init (&b [v]);
		assert_ok (fake_serialize (&id, &o, 1, 1, 1, &b [v], &err), &err);
	}
	assert_same_bytes (&b [0], &b [1], "bools as 0x80/2/0xff vs 1");
	sp_buf_free (&b [0]);
	sp_buf_free (&b [1]);
}

/* What a store_ref callback saw. */
typedef struct RefLog {
	void *slots [8];
	uint32_t lids [8];
	const char *fields [8];
	int n;
	int fail_at;            /* 1-based call that fails, 0 = none */
} RefLog;

static int
log_ref (void *ctx, void *slot, const SpField *field, uint32_t lid, SpError *err)
{
	RefLog *log = ctx;
	if (log->n >= 8)
		return sp_error_set (err, "too many references");
	log->slots [log->n] = slot;
	log->lids [log->n] = lid;
	log->fields [log->n] = field->name;
	log->n++;
	if (log->fail_at == log->n)
		return sp_error_set (err, "store refused");
	void *marker = (void *)(uintptr_t)(0x1000 + lid);
	memcpy (slot, &marker, sizeof marker);
	return 0;
}

/* sp_snapshot_fill writes the leaves and nothing else (padding, neighbours stay). */
static void
test_fill_touches_only_leaves (void **state)
{
	(void)state;
	/* An array whose element is one int at offset 0 inside 8 bytes: not a block copy. */
	FakeClass *wrapped = fake_class_struct_array ("App.Wrapped[]", 8);
	fake_class_add_field_at (wrapped, "v", SP_KIND_I4, NULL, 0);
	FakeClass *points = fake_class_struct_array ("App.Point[]", SAMPLE_POINT_SIZE);
	fake_class_add_field_at (points, "x", SP_KIND_R8, NULL, SAMPLE_POINT_X);
	fake_class_add_field_at (points, "tag", SP_KIND_REF, "System.String", SAMPLE_POINT_TAG);
	fake_class_add_field_at (points, "k", SP_KIND_U2, NULL, SAMPLE_POINT_K);
	fake_class_add_field_at (points, "flag", SP_KIND_BOOL, NULL, SAMPLE_POINT_FLAG);
	FakeClass *holder = fake_class_object ("App", "App.Holder");
	fake_class_add_field (holder, "w", SP_KIND_REF, "App.Wrapped[]");
	fake_class_add_field (holder, "p", SP_KIND_REF, "App.Point[]");
	void *h = fake_new_object (holder);
	void *w = fake_new_array (wrapped, 5);
	memset (fake_elem (w, 0), 0x55, 5 * 8);
	for (int32_t i = 0; i < 5; i++)
		memcpy (fake_elem (w, i), &(int32_t){ -i * 1000 }, 4);
	void *p = fake_new_array (points, 2);
	for (int i = 0; i < 2; i++) {
		memcpy (fake_elem (p, i) + SAMPLE_POINT_X, &(double){ i + 0.5 }, 8);
		memcpy (fake_elem (p, i) + SAMPLE_POINT_K, &(uint16_t){ (uint16_t)(i + 100) }, 2);
		fake_elem (p, i) [SAMPLE_POINT_FLAG] = 1;
	}
	void *tag = fake_new_string_ascii ("t");
	memcpy (fake_elem (p, 0) + SAMPLE_POINT_TAG, &tag, sizeof tag);
	fake_set_ref (h, "w", w);
	fake_set_ref (h, "p", p);
	SpBuf b;
	SpError err = { 0 };
	sp_buf_init (&b);
	uint32_t id = 1;
	assert_ok (fake_serialize (&id, &h, 1, 1, 1, &b, &err), &err);
	SpSnapshot snap;
	parse_ok (&b, &snap);
	/* Breadth-first, in field order: h = 1, w = 2, p = 3, the tag string = 4. */
	assert_int_equal (snap.trailer.nobjects, 4);
	assert_int_equal (snap.objects [2].kind, SP_CLASS_ARRAY);
	assert_true (snap.objects [2].length == 5);
	assert_int_equal (snap.objects [4].kind, SP_CLASS_STRING);

	uint8_t mem [8 + 5 * 8 + 8];
	memset (mem, 0xaa, sizeof mem);
	assert_ok (sp_snapshot_fill (&snap, 2, mem + 8, &wrapped->sp, log_ref, NULL, &err), &err);
	for (int i = 0; i < 5; i++) {
		int32_t v;
		memcpy (&v, mem + 8 + 8 * i, 4);
		assert_int_equal (v, -i * 1000);
		for (int pad = 4; pad < 8; pad++)
			assert_int_equal (mem [8 + 8 * i + pad], 0xaa);
	}
	for (int i = 0; i < 8; i++) {
		assert_int_equal (mem [i], 0xaa);
		assert_int_equal (mem [8 + 40 + i], 0xaa);
	}

	/* Struct elements with a reference: the callback gets each slot and its LID. */
	uint8_t pm [2 * SAMPLE_POINT_SIZE + 8];
	memset (pm, 0xaa, sizeof pm);
	RefLog log = { .n = 0 };
	assert_ok (sp_snapshot_fill (&snap, 3, pm, &points->sp, log_ref, &log, &err), &err);
	assert_int_equal (log.n, 2);
	assert_ptr_equal (log.slots [0], pm + SAMPLE_POINT_TAG);
	assert_int_equal (log.lids [0], 4);
	assert_string_equal (log.fields [0], "tag");
	assert_ptr_equal (log.slots [1], pm + SAMPLE_POINT_SIZE + SAMPLE_POINT_TAG);
	assert_int_equal (log.lids [1], 0);
	for (int i = 0; i < 2; i++) {
		const uint8_t *e = pm + i * SAMPLE_POINT_SIZE;
		double x;
		uint16_t k;
		memcpy (&x, e + SAMPLE_POINT_X, 8);
		memcpy (&k, e + SAMPLE_POINT_K, 2);
		assert_true (x == i + 0.5);
		assert_int_equal (k, i + 100);
		assert_int_equal (e [SAMPLE_POINT_FLAG], 1);
		for (int off = SAMPLE_POINT_K + 2; off < SAMPLE_POINT_SIZE; off++)
			if (off != SAMPLE_POINT_FLAG)
				assert_int_equal (e [off], 0xaa);
	}
	for (int i = 0; i < 8; i++)
		assert_int_equal (pm [2 * SAMPLE_POINT_SIZE + i], 0xaa);

	/* The object's fields: refs through the callback, in field order. */
	uint8_t hm [64];
	memset (hm, 0, sizeof hm);
	log = (RefLog){ .n = 0 };
	assert_ok (sp_snapshot_fill (&snap, 1, hm, &holder->sp, log_ref, &log, &err), &err);
	assert_int_equal (log.n, 2);
	assert_int_equal (log.lids [0], 2);
	assert_int_equal (log.lids [1], 3);
	assert_ptr_equal (log.slots [0], hm + fake_class_field (holder, "w")->offset);

	/* A store the callback refuses stops the fill with its error. */
	log = (RefLog){ .n = 0, .fail_at = 1 };
	assert_int_not_equal (sp_snapshot_fill (&snap, 1, hm, &holder->sp, log_ref, &log, &err), 0);
	assert_int_equal (log.n, 1);
	assert_string_equal (err.msg, "store refused");
	sp_snapshot_free (&snap);
	sp_buf_free (&b);
}

/* ---- errors ------------------------------------------------------------- */

static void
serialize_expect_failure (void *root, SpError *err)
{
	SpSerializer s;
	SpBuf b;
	sp_buf_init (&b);
	assert_int_equal (sp_ser_init (&s), 0);
	SpSnapHeader h = { .sequence = 1 };
	assert_ok (sp_ser_begin (&s, &b, &h, err), err);
	assert_ok (sp_ser_root (&s, 1, root, err), err);
	int rc;
	err->msg [0] = '\0';
	while ((rc = sp_ser_step (&s, 1, err)) == 1)
		;
	assert_int_equal (rc, -1);
	assert_true (err->msg [0] != '\0');
	sp_ser_free (&s);
	sp_buf_free (&b);
}

static void
test_unpersistable_field_names_owner_and_type (void **state)
{
	(void)state;
	FakeClass *plant = fake_class_object ("App", "Plant");
	fake_class_add_field (plant, "speed", SP_KIND_R8, NULL);
	fake_class_add_field (plant, "valve", SP_KIND_REF, "System.Object");
	FakeClass *stream = fake_class_unpersistable ("System.IO.FileStream");
	void *p = fake_new_object (plant);
	fake_set_ref (p, "valve", fake_new_object (stream));
	SpError err = { 0 };
	serialize_expect_failure (p, &err);
	assert_contains (err.msg, "Plant");
	assert_contains (err.msg, "valve");
	assert_contains (err.msg, "System.IO.FileStream");
}

static void
test_unpersistable_element_names_array_and_type (void **state)
{
	(void)state;
	FakeClass *objs = fake_class_ref_array ("System.Object[]", "System.Object");
	FakeClass *socket = fake_class_unpersistable ("System.Net.Sockets.Socket");
	void *arr = fake_new_array (objs, 3);
	fake_elem_set_ref (arr, 0, fake_new_string_ascii ("fine"));
	fake_elem_set_ref (arr, 2, fake_new_object (socket));
	SpError err = { 0 };
	serialize_expect_failure (arr, &err);
	assert_contains (err.msg, "System.Object[]");
	assert_contains (err.msg, "System.Net.Sockets.Socket");

	/* A reference leaf of a struct element: the leaf is named too. */
	FakeClass *points = fake_class_struct_array ("App.Point[]", 16);
	fake_class_add_field_at (points, "x", SP_KIND_R8, NULL, 0);
	fake_class_add_field_at (points, "owner", SP_KIND_REF, "System.Object", 8);
	void *pts = fake_new_array (points, 2);
	void *sock = fake_new_object (socket);
	memcpy (fake_elem (pts, 1) + 8, &sock, sizeof sock);
	serialize_expect_failure (pts, &err);
	assert_contains (err.msg, "App.Point[]");
	assert_contains (err.msg, "owner");
	assert_contains (err.msg, "System.Net.Sockets.Socket");
}

static void
test_unpersistable_root (void **state)
{
	(void)state;
	FakeClass *stream = fake_class_unpersistable ("System.IO.FileStream");
	SpSerializer s;
	SpBuf b;
	SpError err = { 0 };
	sp_buf_init (&b);
	assert_int_equal (sp_ser_init (&s), 0);
	SpSnapHeader h = { .sequence = 1 };
	assert_ok (sp_ser_begin (&s, &b, &h, &err), &err);
	assert_fails (sp_ser_root (&s, 17, fake_new_object (stream), &err), &err);
	assert_contains (err.msg, "17");
	assert_contains (err.msg, "System.IO.FileStream");
	sp_ser_free (&s);
	sp_buf_free (&b);
}

/* The client failing to bind a LID (out of memory) stops the snapshot with its error. */
static void
test_bind_failure_propagates (void **state)
{
	(void)state;
	SampleGraph g;
	sample_graph_build (&g);
	fake_fail_bind_from (5);
	SpBuf b;
	SpError err = { 0 };
	sp_buf_init (&b);
	assert_fails (fake_serialize (g.ids, g.roots, g.nroots, 1, 1, &b, &err), &err);
	assert_contains (err.msg, "lid 5");
	assert_true (fake_lid_count () < 5);
	sp_buf_free (&b);
}

/*
 * A root id the writer accepts must be one the reader accepts: otherwise
 * the writer produces snapshots that can never be loaded.
 */
static void
test_root_ids_writer_and_reader_agree (void **state)
{
	(void)state;
	FakeClass *c = fake_class_object ("App", "App.Thing");
	fake_class_add_field (c, "v", SP_KIND_I4, NULL);
	void *obj = fake_new_object (c);
	const uint32_t ids [] = { 1, SP_MAX_ROOT_ID, 0, SP_MAX_ROOT_ID + 1u, UINT32_MAX };
	for (size_t i = 0; i < sizeof ids / sizeof ids [0]; i++) {
		SpBuf b;
		SpError err = { 0 };
		sp_buf_init (&b);
		int rc = fake_serialize (&ids [i], &obj, 1, 1, 1, &b, &err);
		if (rc == 0) {
			SpSnapshot snap;
			SpError perr = { 0 };
			if (sp_snapshot_parse (b.data, b.len, &snap, &perr) != 0) {
				print_error ("root id %u: sp_ser_root accepted it, but the snapshot it wrote does not parse: %s\n",
					     ids [i], perr.msg);
				sp_buf_free (&b);
				fail ();
			}
			assert_int_equal (snap.roots [0].id, ids [i]);
			sp_snapshot_free (&snap);
		}
		sp_buf_free (&b);
	}
}

/* ---- class layout checks -------------------------------------------------- */

/* The snapshot's view of class App.Node (fields: value I4, name REF String, next REF App.Node, pos.x R8). */
static void
snapshot_of_node_class (SpSnapshot *snap, SpBuf *b, FakeClass **live)
{
	FakeClass *c = fake_class_object ("App", "App.Node");
	fake_class_add_field (c, "value", SP_KIND_I4, NULL);
	fake_class_add_field (c, "name", SP_KIND_REF, "System.String");
	fake_class_add_field (c, "next", SP_KIND_REF, "App.Node");
	fake_class_add_field (c, "pos.x", SP_KIND_R8, NULL);
	void *n = fake_new_object (c);
	SpError err = { 0 };
	uint32_t id = 1;
	assert_ok (fake_serialize (&id, &n, 1, 1, 1, b, &err), &err);
	parse_ok (b, snap);
	assert_int_equal (snap->trailer.nclasses, 1);
	assert_string_equal (snap->classes [1].name, "App.Node");
	assert_int_equal (snap->classes [1].nfields, 4);
	*live = c;
}

/* A copy of the live class's fields, for mutation. */
static SpClass
class_copy (const FakeClass *c, SpField *fields, uint32_t nfields)
{
	SpClass k = c->sp;
	memcpy (fields, c->sp.fields, (nfields < c->sp.nfields ? nfields : c->sp.nfields) * sizeof *fields);
	k.fields = fields;
	k.nfields = nfields;
	return k;
}

static void
test_class_matches (void **state)
{
	(void)state;
	SpSnapshot snap;
	SpBuf b;
	sp_buf_init (&b);
	FakeClass *live;
	snapshot_of_node_class (&snap, &b, &live);
	const SpSnapClass *sc = &snap.classes [1];
	SpError err = { 0 };
	SpField f [8];

	/* Identical layout (offsets may differ: they are the live class's business). */
	SpClass same = class_copy (live, f, 4);
	f [0].offset += 64;
	assert_ok (sp_snapshot_class_matches (sc, &same, &err), &err);

	/* A renamed field. */
	SpClass renamed = class_copy (live, f, 4);
	f [2].name = "successor";
	assert_fails (sp_snapshot_class_matches (sc, &renamed, &err), &err);
	assert_contains (err.msg, "successor");

	/* A changed kind (int -> long). */
	SpClass retyped = class_copy (live, f, 4);
	f [0].kind = SP_KIND_I8;
	assert_fails (sp_snapshot_class_matches (sc, &retyped, &err), &err);
	assert_contains (err.msg, "value");

	/* A primitive that became a reference, with the same name. */
	SpClass to_ref = class_copy (live, f, 4);
	f [3].kind = SP_KIND_REF;
	f [3].type_name = "System.Object";
	assert_fails (sp_snapshot_class_matches (sc, &to_ref, &err), &err);
	assert_contains (err.msg, "pos.x");

	/* An added field (at the end, and in the middle). */
	SpClass added = class_copy (live, f, 5);
	f [4] = (SpField){ .name = "extra", .kind = SP_KIND_U2, .offset = 200 };
	assert_fails (sp_snapshot_class_matches (sc, &added, &err), &err);
	assert_contains (err.msg, "extra");
	SpClass inserted = class_copy (live, f, 5);
	memmove (&f [2], &f [1], 3 * sizeof *f);
	f [1] = (SpField){ .name = "inserted", .kind = SP_KIND_I4, .offset = 200 };
	assert_fails (sp_snapshot_class_matches (sc, &inserted, &err), &err);
	assert_contains (err.msg, "inserted");

	/* A removed field (the last, and the first). */
	SpClass removed = class_copy (live, f, 3);
	assert_fails (sp_snapshot_class_matches (sc, &removed, &err), &err);
	assert_contains (err.msg, "pos.x");
	SpClass removed_first = class_copy (live, f, 4);
	memmove (&f [0], &f [1], 3 * sizeof *f);
	removed_first.nfields = 3;
	assert_fails (sp_snapshot_class_matches (sc, &removed_first, &err), &err);
	assert_contains (err.msg, "value");

	/* A reference whose declared type changed name. */
	SpClass ref_type = class_copy (live, f, 4);
	f [2].type_name = "App.Vertex";
	assert_fails (sp_snapshot_class_matches (sc, &ref_type, &err), &err);
	assert_contains (err.msg, "App.Vertex");
	assert_contains (err.msg, "next");

	/* No fields at all on one side. */
	SpClass empty = class_copy (live, f, 0);
	assert_fails (sp_snapshot_class_matches (sc, &empty, &err), &err);

	sp_snapshot_free (&snap);
	sp_buf_free (&b);
}

/* Restore refuses a class whose field changed in a way that cannot restore (test_evolve has the rest). */
static void
test_restore_refuses_changed_layout (void **state)
{
	(void)state;
	SpSnapshot snap;
	SpBuf b;
	sp_buf_init (&b);
	FakeClass *live;
	snapshot_of_node_class (&snap, &b, &live);
	/* The application was rebuilt: 'value' (an int) became a short, which cannot hold every int. */
	live->sp.fields [0].kind = SP_KIND_I2;
	void **objects;
	SpError err = { 0 };
	/* Unfit, not damaged: the store must not fall back to an older snapshot over it. */
	assert_int_equal (fake_restore (&snap, &objects, &err), SP_DECODE_UNFIT);
	assert_contains (err.msg, "'value' is int in the snapshot but short in the loaded class");
	free (objects);
	sp_snapshot_free (&snap);
	sp_buf_free (&b);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test_teardown (test_sample_round_trip, fake_teardown),
		cmocka_unit_test_teardown (test_leaf_plans_round_trip, fake_teardown),
		cmocka_unit_test_teardown (test_restored_graph_reserializes_identically, fake_teardown),
		cmocka_unit_test_teardown (test_small_steps_same_bytes, fake_teardown),
		cmocka_unit_test_teardown (test_barrier_keeps_snapshot_at_its_start, fake_teardown),
		cmocka_unit_test_teardown (test_long_objects_in_pieces, fake_teardown),
		cmocka_unit_test_teardown (test_barrier_on_an_array_in_pieces, fake_teardown),
		cmocka_unit_test_teardown (test_barrier_copies_the_rest_of_an_array_in_pieces, fake_teardown),
		cmocka_unit_test_teardown (test_barrier_copies_an_array_not_begun, fake_teardown),
		cmocka_unit_test_teardown (test_barrier_copy_edges, fake_teardown),
		cmocka_unit_test_teardown (test_marking_sets_aside_arrays_not_reached, fake_teardown),
		cmocka_unit_test_teardown (test_marking_sets_aside_arrays_it_reaches, fake_teardown),
		cmocka_unit_test_teardown (test_aside_edges, fake_teardown),
		cmocka_unit_test_teardown (test_many_arrays_set_aside, fake_teardown),
		cmocka_unit_test_teardown (test_marking_in_pieces, fake_teardown),
		cmocka_unit_test_teardown (test_whole_objects_have_no_pieces, fake_teardown),
		cmocka_unit_test_teardown (test_poisoned_while_marking, fake_teardown),
		cmocka_unit_test_teardown (test_unseen_store_fails_what_it_reaches, fake_teardown),
		cmocka_unit_test_teardown (test_unseen_store_into_an_array_in_pieces, fake_teardown),
		cmocka_unit_test_teardown (test_step_one_writes_one_object, fake_teardown),
		cmocka_unit_test_teardown (test_finish_refuses_unfinished, fake_teardown),
		cmocka_unit_test_teardown (test_objects_move_between_steps, fake_teardown),
		cmocka_unit_test_teardown (test_marking_then_writing_same_bytes, fake_teardown),
		cmocka_unit_test_teardown (test_hash_collisions_same_bytes, fake_teardown),
		cmocka_unit_test_teardown (test_serializer_reuse, fake_teardown),
		cmocka_unit_test_teardown (test_clone_is_another_object, fake_teardown),
		cmocka_unit_test_teardown (test_written_hint, fake_teardown),
		cmocka_unit_test_teardown (test_empty_snapshot, fake_teardown),
		cmocka_unit_test_teardown (test_bool_is_normalized, fake_teardown),
		cmocka_unit_test_teardown (test_bool_encoding_is_canonical, fake_teardown),
		cmocka_unit_test_teardown (test_fill_touches_only_leaves, fake_teardown),
		cmocka_unit_test_teardown (test_unpersistable_field_names_owner_and_type, fake_teardown),
		cmocka_unit_test_teardown (test_unpersistable_element_names_array_and_type, fake_teardown),
		cmocka_unit_test_teardown (test_unpersistable_root, fake_teardown),
		cmocka_unit_test_teardown (test_bind_failure_propagates, fake_teardown),
		cmocka_unit_test_teardown (test_root_ids_writer_and_reader_agree, fake_teardown),
		cmocka_unit_test_teardown (test_class_matches, fake_teardown),
		cmocka_unit_test_teardown (test_restore_refuses_changed_layout, fake_teardown),
	};
	/* Identity through the objects' slots (as Mono's [SPersistent] classes), then through the LID map only. */
	fake_set_identity_slots (true);
	int failed = cmocka_run_group_tests_name ("identity slots", tests, NULL, NULL);
	fake_set_identity_slots (false);
	return failed + cmocka_run_group_tests_name ("LID map only", tests, NULL, NULL);
}
