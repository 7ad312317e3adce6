/*
 * test_links.c: a restore stores a full snapshot's references as its walk
 * meets them (links, sp-decode.c), making an object of the declared class
 * where a reference meets it before its record; whenever such a guess turns
 * out wrong, or a reference is not linked, the fix-up stores and checks every
 * reference again.  The restored graph, the counts of references linked and
 * stored by the fix-up, and the errors of ill-typed snapshots are checked in
 * each mode of the fake restorer (fake-objects.h).
 */
#include "unit.h"

#include "class-index.h"
#include "fake-objects.h"
#include "sp-snapshot.h"

/* A binary tree in breadth-first order (as the serializer writes it), parent links, a value a node. */
static FakeClass *
tree_class (void)
{
	FakeClass *c = fake_class_object ("App", "App.Tree");
	fake_class_add_field (c, "key", SP_KIND_I4, NULL);
	fake_class_add_field (c, "left", SP_KIND_REF, "App.Tree");
	fake_class_add_field (c, "right", SP_KIND_REF, "App.Tree");
	fake_class_add_field (c, "parent", SP_KIND_REF, "App.Tree");
	return c;
}

/* n nodes, node i's children 2i+1 and 2i+2; returns the root; *refs: the non-null references. */
static void *
build_tree (FakeClass *c, uint32_t n, uint32_t *refs)
{
	void **nodes = calloc (n, sizeof *nodes);
	assert_non_null (nodes);
	*refs = 0;
	for (uint32_t i = 0; i < n; i++) {
		nodes [i] = fake_new_object (c);
		FAKE_SET (nodes [i], "key", int32_t, (int32_t)(i * 7 + 1));
	}
	for (uint32_t i = 1; i < n; i++) {
		void *parent = nodes [(i - 1) / 2];
		fake_set_ref (parent, i % 2 ? "left" : "right", nodes [i]);
		fake_set_ref (nodes [i], "parent", parent);
		*refs += 2;
	}
	void *root = nodes [0];
	free (nodes);
	return root;
}

static void
serialize (void *root, SpBuf *b)
{
	SpError err = { 0 };
	uint32_t id = 1;
	sp_buf_init (b);
	assert_ok (fake_serialize (&id, &root, 1, SIZE_MAX, 1, b, &err), &err);
}

/* Restore b in the current link mode; the restored root, which must equal `root` deeply. */
static void *
restore_equal (const SpBuf *b, void *root)
{
	SpSnapshot snap;
	void **objects;
	SpError err = { 0 };
	assert_ok (fake_decode (b->data, b->len, &snap, &objects, &err), &err);
	void *restored = fake_restored_root (&snap, objects, 1, NULL);
	char why [512] = "";
	if (!fake_graphs_equal (&root, &restored, 1, why, sizeof why)) {
		print_error ("restored graph differs: %s\n", why);
		fail ();
	}
	sp_snapshot_free (&snap);
	free (objects);
	return restored;
}

/* The restore's error in the current link mode (it must fail as unfit). */
static void
restore_fails (const SpBuf *b, char *msg, size_t cap)
{
	SpSnapshot snap;
	void **objects;
	SpError err = { 0 };
	assert_int_equal (fake_decode (b->data, b->len, &snap, &objects, &err), SP_DECODE_UNFIT);
	snprintf (msg, cap, "%s", err.msg);
	sp_snapshot_free (&snap);
	free (objects);
}

static void
test_tree_links_every_reference (void **state)
{
	(void)state;
	uint32_t refs;
	void *root = build_tree (tree_class (), 1000, &refs);
	SpBuf b;
	serialize (root, &b);

	restore_equal (&b, root);
	assert_int_equal (fake_decode_counts.linked, refs);
	assert_int_equal (fake_decode_counts.fixed, 0);      /* no second pass */
	assert_int_equal (fake_decode_counts.early_unused, 0);

	fake_link_mode = FAKE_NO_LINKS;                       /* a restorer without links: the fix-up stores them all */
	restore_equal (&b, root);
	assert_int_equal (fake_decode_counts.linked, 0);
	assert_int_equal (fake_decode_counts.fixed, refs);
	sp_buf_free (&b);
}

/* Every object made early is of another class than its record's: each is replaced, and the fix-up stores every reference. */
static void
test_wrong_guesses_are_replaced (void **state)
{
	(void)state;
	uint32_t refs;
	FakeClass *c = tree_class ();
	FakeClass *other = fake_class_object ("App", "App.Other");
	fake_class_add_field (other, "key", SP_KIND_I4, NULL);
	void *root = build_tree (c, 300, &refs);
	SpBuf b;
	serialize (root, &b);

	fake_link_mode = FAKE_LINKS_GUESS;
	fake_links_guess = other;
	restore_equal (&b, root);
	assert_int_equal (fake_decode_counts.linked, 0);
	assert_int_equal (fake_decode_counts.fixed, refs);
	assert_true (fake_decode_counts.early_unused >= 1);
	sp_buf_free (&b);
}

/*
 * Linked for a while, then an object made early of the declared class meets
 * a record of another (a subclass, in the runtime): the fix-up stores every
 * reference again, the ones linked before it too.
 */
static void
test_late_miss_stores_everything_again (void **state)
{
	(void)state;
	uint32_t refs;
	FakeClass *c = tree_class ();
	FakeClass *loose = fake_class_object ("App", "App.Loose");
	fake_class_add_field (loose, "key", SP_KIND_I4, NULL);
	fake_class_add_field (loose, "next", SP_KIND_REF, "App.Loose");
	void *root = fake_new_object (loose), *tail = fake_new_object (loose);
	fake_set_ref (root, "next", tail);
	/* Declared App.Loose, which the object made early is; its record says App.Tree. */
	fake_set_ref (tail, "next", build_tree (c, 200, &refs));
	SpBuf b;
	serialize (root, &b);

	char msg [256];
	restore_fails (&b, msg, sizeof msg);                  /* in this model a Tree in a Loose slot is a type error ... */
	assert_non_null (strstr (msg, "which cannot be stored in 'next' of type App.Loose"));
	assert_true (fake_decode_counts.linked >= 1);         /* ... found after links were stored */
	assert_int_equal (fake_decode_counts.early_unused, 1);
	char unlinked [256];
	fake_link_mode = FAKE_NO_LINKS;                       /* the same words as without links */
	restore_fails (&b, unlinked, sizeof unlinked);
	assert_string_equal (msg, unlinked);
	sp_buf_free (&b);
}

/* A reference to an object made before, of another class than declared: left to the fix-up, which says so. */
static void
test_backward_reference_of_another_class (void **state)
{
	(void)state;
	FakeClass *c = tree_class ();
	void *roots [2] = { fake_new_string_ascii ("not a tree"), fake_new_object (c) };
	fake_set_ref (roots [1], "left", roots [0]);   /* the string's record comes first */
	SpBuf b;
	SpError err = { 0 };
	uint32_t ids [2] = { 1, 2 };
	sp_buf_init (&b);
	assert_ok (fake_serialize (ids, roots, 2, SIZE_MAX, 1, &b, &err), &err);

	char msg [256];
	restore_fails (&b, msg, sizeof msg);
	assert_non_null (strstr (msg, "cannot be stored in 'left' of type App.Tree"));
	assert_int_equal (fake_decode_counts.early_unused, 0);
	sp_buf_free (&b);
}

/* A reference met before its record, whose record is a string: the early object is replaced, the fix-up says why. */
static void
test_forward_reference_to_a_string (void **state)
{
	(void)state;
	FakeClass *c = tree_class ();
	void *root = fake_new_object (c), *child = fake_new_object (c);
	fake_set_ref (root, "right", child);
	fake_set_ref (child, "left", fake_new_string_ascii ("not a tree either"));
	SpBuf b;
	serialize (root, &b);

	char msg [256];
	restore_fails (&b, msg, sizeof msg);
	assert_non_null (strstr (msg, "cannot be stored in 'left' of type App.Tree"));
	assert_int_equal (fake_decode_counts.early_unused, 1);
	sp_buf_free (&b);
}

/*
 * References that cannot be linked where they are met (a string not made
 * yet, an array of references) leave only their records to the fix-up: the
 * others stay linked, and the fix-up stores fewer references than there are.
 */
static void
test_unlinked_records_alone_go_to_the_fixup (void **state)
{
	(void)state;
	FakeClass *c = fake_class_object ("App", "App.Named");
	fake_class_add_field (c, "key", SP_KIND_I4, NULL);
	fake_class_add_field (c, "name", SP_KIND_REF, "System.String");
	fake_class_add_field (c, "left", SP_KIND_REF, "App.Named");
	fake_class_add_field (c, "right", SP_KIND_REF, "App.Named");
	fake_class_add_field (c, "kids", SP_KIND_REF, "App.Named[]");
	fake_class_string ();
	FakeClass *kids_class = fake_class_ref_array ("App.Named[]", "App.Named");
	void *name = fake_new_string_ascii ("shared by all");
	void *nodes [255];
	uint32_t refs = 0;
	for (int i = 0; i < 255; i++) {
		nodes [i] = fake_new_object (c);
		FAKE_SET (nodes [i], "key", int32_t, i);
		fake_set_ref (nodes [i], "name", name);
		refs++;
		if (i > 0) {
			fake_set_ref (nodes [(i - 1) / 2], i % 2 ? "left" : "right", nodes [i]);
			refs++;
		}
	}
	void *kids = fake_new_array (kids_class, 3);   /* met late: its record, and the root's, go to the fix-up */
	for (int k = 0; k < 3; k++)
		fake_elem_set_ref (kids, k, nodes [254 - k]);
	fake_set_ref (nodes [0], "kids", kids);
	SpBuf b;
	serialize (nodes [0], &b);

	restore_equal (&b, nodes [0]);
	assert_true (fake_decode_counts.linked > refs / 2);
	assert_true (fake_decode_counts.fixed > 0);           /* the first records met the string before its record */
	assert_true (fake_decode_counts.fixed < refs / 2);    /* and only those, and the array's elements */
	assert_int_equal (fake_decode_counts.early_unused, 0);
	sp_buf_free (&b);
}

/*
 * An array's elements are linked as an object's references are: a forest of
 * trees; only the forest's reference to its array, met before the array's
 * record (an array is not made early), goes to the fix-up.
 */
static void
test_array_elements_are_linked (void **state)
{
	(void)state;
	FakeClass *c = tree_class ();
	FakeClass *forest_class = fake_class_object ("App", "App.Forest");
	fake_class_add_field (forest_class, "trees", SP_KIND_REF, "App.Tree[]");
	FakeClass *trees_class = fake_class_ref_array ("App.Tree[]", "App.Tree");
	void *forest = fake_new_object (forest_class), *trees = fake_new_array (trees_class, 6);
	fake_set_ref (forest, "trees", trees);
	uint32_t refs = 1;
	for (int k = 0; k < 6; k++) {
		if (k == 4)
			continue;                                 /* a null element stays null */
		uint32_t n;
		fake_elem_set_ref (trees, k, build_tree (c, 7, &n));
		refs += 1 + n;
	}
	SpBuf b;
	serialize (forest, &b);

	restore_equal (&b, forest);
	assert_int_equal (fake_decode_counts.linked, refs - 1);
	assert_int_equal (fake_decode_counts.fixed, 1);
	fake_link_mode = FAKE_NO_LINKS;
	restore_equal (&b, forest);
	assert_int_equal (fake_decode_counts.fixed, refs);
	sp_buf_free (&b);
}

/*
 * A full snapshot ends with its class index: the decoder reads every class
 * before the first object, and asks each early class knowing them all, the
 * holder's too, whose record comes before its tree's class.  The same file
 * without the index (as an spmono before it wrote it) restores the same
 * graph with the same links, each early class asked knowing none.
 */
static void
test_class_index_makes_every_class_known (void **state)
{
	(void)state;
	FakeClass *tree = tree_class ();
	FakeClass *holder = fake_class_object ("App", "App.Holder");
	fake_class_add_field (holder, "tree", SP_KIND_REF, "App.Tree");
	uint32_t refs;
	void *root = fake_new_object (holder);
	fake_set_ref (root, "tree", build_tree (tree, 200, &refs));
	refs++;
	SpBuf b;
	serialize (root, &b);
	SpSnapHeader h;
	SpSnapTrailer t;
	SpError err = { 0 };
	assert_ok (sp_snapshot_check (b.data, b.len, &h, &t, &err), &err);
	assert_true (h.optional_flags & SP_OPT_CLASS_INDEX);
	assert_int_equal (t.nclasses, 2);

	restore_equal (&b, root);
	assert_int_equal (fake_decode_counts.linked, refs);
	assert_int_equal (fake_decode_counts.fixed, 0);
	assert_int_equal (fake_decode_counts.early_asked, 4);    /* holder.tree, then the tree's left, right and parent */
	assert_int_equal (fake_decode_counts.early_knowing, 4);

	assert_true (class_index_strip (b.data, &b.len));
	assert_ok (sp_snapshot_check (b.data, b.len, &h, &t, &err), &err);
	assert_false (h.optional_flags & SP_OPT_CLASS_INDEX);
	restore_equal (&b, root);
	assert_int_equal (fake_decode_counts.linked, refs);
	assert_int_equal (fake_decode_counts.fixed, 0);
	assert_int_equal (fake_decode_counts.early_asked, 4);
	assert_int_equal (fake_decode_counts.early_knowing, 0);
	sp_buf_free (&b);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test_teardown (test_tree_links_every_reference, fake_teardown),
		cmocka_unit_test_teardown (test_wrong_guesses_are_replaced, fake_teardown),
		cmocka_unit_test_teardown (test_late_miss_stores_everything_again, fake_teardown),
		cmocka_unit_test_teardown (test_backward_reference_of_another_class, fake_teardown),
		cmocka_unit_test_teardown (test_forward_reference_to_a_string, fake_teardown),
		cmocka_unit_test_teardown (test_unlinked_records_alone_go_to_the_fixup, fake_teardown),
		cmocka_unit_test_teardown (test_array_elements_are_linked, fake_teardown),
		cmocka_unit_test_teardown (test_class_index_makes_every_class_known, fake_teardown),
	};
	return cmocka_run_group_tests_name ("links", tests, NULL, NULL);
}
