/* test_lidmap.c: the object -> LID map, keyed by identity hash and confirmed through the LID table. */
#include "unit.h"

#include "fake-objects.h"
#include "sp-lidmap.h"

/* n fresh objects bound to LIDs 1..n in the client's table (objs [lid]). */
static void **
make_bound_objects (uint32_t n)
{
	FakeClass *c = fake_class_object ("App", "App.Thing");
	fake_class_add_field (c, "v", SP_KIND_I4, NULL);
	void **objs = calloc ((size_t)n + 1, sizeof *objs);
	assert_non_null (objs);
	SpError err = { 0 };
	for (uint32_t lid = 1; lid <= n; lid++) {
		objs [lid] = fake_new_object (c);
		assert_ok (sp_client_lid_bind (lid, objs [lid], &err), &err);
	}
	return objs;
}

/* Look obj up as the serializer does: its hash, the current GC epoch. */
static SpLidEntry *
find (SpLidMap *m, void *obj)
{
	return sp_lidmap_find (m, sp_client_identity_hash (obj), obj, sp_client_gc_epoch ());
}

static void
add_all (SpLidMap *m, void **objs, uint32_t n)
{
	for (uint32_t lid = 1; lid <= n; lid++) {
		SpLidEntry *e = sp_lidmap_add (m, sp_client_identity_hash (objs [lid]), lid, objs [lid], sp_client_gc_epoch ());
		assert_non_null (e);
		assert_int_equal (sp_lid_of (e), lid);
		assert_false (sp_lid_is_serialized (e));
	}
}

static void
check_all_found (SpLidMap *m, void **objs, uint32_t n)
{
	for (uint32_t lid = 1; lid <= n; lid++) {
		SpLidEntry *e = find (m, objs [lid]);
		if (!e || sp_lid_of (e) != lid) {
			print_error ("object of lid %u: %s %u\n", lid, e ? "found as lid" : "not found", e ? sp_lid_of (e) : 0);
			fail ();
		}
	}
}

static void
test_200k_objects (void **state)
{
	(void)state;
	const uint32_t n = 200000;
	void **objs = make_bound_objects (n);
	SpLidMap m;
	assert_int_equal (sp_lidmap_init (&m, 16), 0);   /* small on purpose: many growths */
	add_all (&m, objs, n);
	assert_int_equal (m.count, n);
	/* Capacity is a power of two, at most half full. */
	assert_int_equal ((m.mask + 1) & m.mask, 0);
	assert_true (m.count * 2 <= m.mask + 1);
	check_all_found (&m, objs, n);
	/* Objects never added are not found (some bound to a LID, some not bound at all). */
	FakeClass *other = fake_class_object ("App", "App.Other");
	SpError err = { 0 };
	for (uint32_t i = 0; i < 1000; i++) {
		void *stranger = fake_new_object (other);
		if (i % 2)
			assert_ok (sp_client_lid_bind (n + 1 + i / 2, stranger, &err), &err);
		assert_null (find (&m, stranger));
	}
	/* The right hash with the wrong object is no match either. */
	assert_null (sp_lidmap_find (&m, sp_client_identity_hash (objs [1]), objs [2], sp_client_gc_epoch ()));
	sp_lidmap_free (&m);
	free (objs);
}

static void
test_forced_collisions (void **state)
{
	(void)state;
	for (uint32_t buckets = 1; buckets <= 3; buckets += 2) {
		fake_reset ();
		fake_set_hash_buckets (buckets);   /* 1: every object hashes to 0 */
		const uint32_t n = 400;
		void **objs = make_bound_objects (n + 1);   /* lid n+1 is bound but never added */
		if (buckets == 1)
			assert_int_equal (sp_client_identity_hash (objs [1]), sp_client_identity_hash (objs [n]));
		SpLidMap m;
		assert_int_equal (sp_lidmap_init (&m, 0), 0);
		add_all (&m, objs, n);
		check_all_found (&m, objs, n);
		assert_null (find (&m, objs [n + 1]));
		void *unbound = fake_new_object (fake_class_find ("App.Thing"));
		assert_null (find (&m, unbound));
		sp_lidmap_free (&m);
		free (objs);
	}
}

/*
 * A forgotten entry no longer matches its object, and the objects after it
 * on the same probe sequence (every object hashes to 0) are still found;
 * an add then gives the object a new entry.  Forgetting again, or an
 * object never added, finds nothing.
 */
static void
test_forget (void **state)
{
	(void)state;
	fake_set_hash_buckets (1);
	const uint32_t n = 64;
	void **objs = make_bound_objects (n);
	SpLidMap m;
	assert_int_equal (sp_lidmap_init (&m, 0), 0);
	add_all (&m, objs, n);
	for (uint32_t lid = 1; lid <= n; lid += 3)
		assert_true (sp_lidmap_forget (&m, sp_client_identity_hash (objs [lid]), objs [lid], sp_client_gc_epoch ()));
	for (uint32_t lid = 1; lid <= n; lid++) {
		SpLidEntry *e = find (&m, objs [lid]);
		if (lid % 3 == 1) {
			assert_null (e);
		} else {
			assert_non_null (e);
			assert_int_equal (sp_lid_of (e), lid);
		}
	}
	assert_false (sp_lidmap_forget (&m, sp_client_identity_hash (objs [1]), objs [1], sp_client_gc_epoch ()));
	SpLidEntry *again = sp_lidmap_add (&m, sp_client_identity_hash (objs [1]), n + 7, objs [1], sp_client_gc_epoch ());
	assert_non_null (again);
	assert_int_equal (sp_lid_of (find (&m, objs [1])), n + 7);
	sp_lidmap_free (&m);
	free (objs);
}

/* Entries in the map: the current table's, and those of the old one not moved yet. */
static size_t
entries_in_both_tables (const SpLidMap *m)
{
	size_t n = m->count;
	for (size_t i = 0; m->old && i <= m->old_mask; i++)
		if (m->old [i].lid != 0 && m->old [i].mid != UINT64_MAX)
			n++;
	return n;
}

static void
test_growth_keeps_entries_and_bits (void **state)
{
	(void)state;
	const uint32_t n = 5000;
	void **objs = make_bound_objects (n);
	SpLidMap m;
	assert_int_equal (sp_lidmap_init (&m, 1), 0);
	size_t growths = 0, cap = m.mask + 1, checked_while_moving = 0;
	for (uint32_t lid = 1; lid <= n; lid++) {
		SpLidEntry *e = sp_lidmap_add (&m, sp_client_identity_hash (objs [lid]), lid, objs [lid], sp_client_gc_epoch ());
		assert_non_null (e);
		assert_int_equal (sp_lid_of (e), lid);
		if (lid % 3 == 0)
			sp_lid_set_serialized (e);
		if (m.mask + 1 != cap) {
			growths++;
			cap = m.mask + 1;
		}
		/* Right after a doubling and while the old table empties: every entry once, with its bit. */
		if (m.old && (lid % 7 == 0 || m.old_next < 8)) {
			checked_while_moving++;
			assert_int_equal (entries_in_both_tables (&m), lid);
			for (uint32_t k = 1; k <= lid; k++) {
				SpLidEntry *f = find (&m, objs [k]);
				assert_non_null (f);
				assert_int_equal (sp_lid_of (f), k);
				assert_int_equal (sp_lid_is_serialized (f), k % 3 == 0);
			}
		}
	}
	assert_true (growths >= 5);
	assert_true (checked_while_moving > 100);
	assert_int_equal (entries_in_both_tables (&m), n);
	sp_lidmap_free (&m);
	free (objs);
}

static void
test_serialized_bit (void **state)
{
	(void)state;
	void **objs = make_bound_objects (3);
	SpLidMap m;
	assert_int_equal (sp_lidmap_init (&m, 4), 0);
	add_all (&m, objs, 3);
	SpLidEntry *e = find (&m, objs [2]);
	assert_non_null (e);
	sp_lid_set_serialized (e);
	assert_true (sp_lid_is_serialized (e));
	assert_int_equal (sp_lid_of (e), 2);
	/* Still found, with the bit, after the bit is set; the others are untouched. */
	SpLidEntry *again = find (&m, objs [2]);
	assert_ptr_equal (again, e);
	assert_true (sp_lid_is_serialized (again));
	assert_false (sp_lid_is_serialized (find (&m, objs [1])));
	assert_false (sp_lid_is_serialized (find (&m, objs [3])));
	/* The bit and the largest LID do not overlap. */
	SpLidEntry big = { .hash = 7, .lid = SP_LID_MAX };
	assert_false (sp_lid_is_serialized (&big));
	sp_lid_set_serialized (&big);
	assert_true (sp_lid_is_serialized (&big));
	assert_int_equal (sp_lid_of (&big), SP_LID_MAX);
	sp_lid_set_serialized (&big);   /* idempotent */
	assert_int_equal (sp_lid_of (&big), SP_LID_MAX);
	sp_lidmap_free (&m);
	free (objs);
}

static void
test_clear_forgets (void **state)
{
	(void)state;
	void **objs = make_bound_objects (100);
	SpLidMap m;
	assert_int_equal (sp_lidmap_init (&m, 0), 0);
	add_all (&m, objs, 100);
	sp_lidmap_clear (&m);
	assert_int_equal (m.count, 0);
	for (uint32_t lid = 1; lid <= 100; lid++)
		assert_null (find (&m, objs [lid]));
	add_all (&m, objs, 100);
	check_all_found (&m, objs, 100);
	sp_lidmap_free (&m);
	free (objs);
}

/* Objects move (the epoch changes): found at their new addresses, not at the old ones. */
/*
 * The next doubling's table is prepared (sp_lidmap_ahead) only while the map
 * holds more than the last cycle's state: a steady state, which the table
 * was sized for, never doubles it, and preparing a table each cycle cost the
 * adding thread (a program's, in a barrier) page faults and an unmapping.
 */
static void
test_steady_state_prepares_no_next_table (void **state)
{
	(void)state;
	const uint32_t n = 100000;
	void **objs = make_bound_objects (n + 1);
	SpLidMap m;
	assert_int_equal (sp_lidmap_init (&m, 16), 0);
	add_all (&m, objs, n);                               /* the first cycle: grows, and prepares ahead */
	size_t capacity = m.mask + 1;
	assert_true ((size_t)n * 4 >= capacity);             /* a quarter full at least: where preparing starts */
	sp_lidmap_clear (&m);
	assert_null (m.next);
	add_all (&m, objs, n);                               /* the same state again */
	assert_null (m.next);
	assert_int_equal (m.mask + 1, capacity);
	check_all_found (&m, objs, n);
	/* One object more than the last cycle's: the state grows, the next table is prepared. */
	assert_non_null (sp_lidmap_add (&m, sp_client_identity_hash (objs [n + 1]), n + 1, objs [n + 1], sp_client_gc_epoch ()));
	assert_non_null (m.next);
	assert_int_equal (m.next_capacity, 2 * capacity);
	sp_lidmap_free (&m);
	free (objs);
}

static void
test_entries_follow_moved_objects (void **state)
{
	(void)state;
	for (uint32_t buckets = 0; buckets <= 1; buckets++) {
		fake_reset ();
		fake_set_hash_buckets (buckets);   /* 1: all collide, so only addresses tell them apart */
		const uint32_t n = 300;
		void **objs = make_bound_objects (n);
		SpLidMap m;
		assert_int_equal (sp_lidmap_init (&m, 0), 0);
		add_all (&m, objs, n);
		check_all_found (&m, objs, n);   /* caches every address in this epoch */
		void **old = malloc (((size_t)n + 1) * sizeof *old);
		memcpy (old, objs, ((size_t)n + 1) * sizeof *old);
		uint32_t epoch = sp_client_gc_epoch ();
		fake_gc_move_all (objs + 1, n);
		assert_int_not_equal (sp_client_gc_epoch (), epoch);
		for (uint32_t lid = 1; lid <= n; lid++) {
			assert_ptr_not_equal (objs [lid], old [lid]);
			assert_ptr_equal (sp_client_lid_object (lid), objs [lid]);
		}
		/* Old addresses first (they refresh the cache), then the new ones. */
		for (uint32_t lid = 1; lid <= n; lid++)
			assert_null (sp_lidmap_find (&m, sp_client_identity_hash (objs [lid]), old [lid], sp_client_gc_epoch ()));
		check_all_found (&m, objs, n);
		/* Moved twice, with entries added in between. */
		FakeClass *c = fake_class_find ("App.Thing");
		void *late = fake_new_object (c);
		SpError err = { 0 };
		assert_ok (sp_client_lid_bind (n + 1, late, &err), &err);
		assert_non_null (sp_lidmap_add (&m, sp_client_identity_hash (late), n + 1, late, sp_client_gc_epoch ()));
		void *slots [2] = { late, objs [7] };
		fake_gc_move_all (slots, 2);
		fake_gc_move_all (slots, 2);
		SpLidEntry *e = find (&m, slots [0]);
		assert_non_null (e);
		assert_int_equal (sp_lid_of (e), n + 1);
		e = find (&m, slots [1]);
		assert_non_null (e);
		assert_int_equal (sp_lid_of (e), 7);
		free (old);
		sp_lidmap_free (&m);
		free (objs);
	}
}

/*
 * An entry caches its object's address with the low 16 bits of the epoch:
 * after a move and 65,535 more collections the tag matches again, and only the
 * map's periodic refresh keeps the stale address from being trusted (the
 * moved objects would not be found, and would get a second LID).
 */
static void
test_epoch_tags_that_wrap_are_refreshed (void **state)
{
	(void)state;
	fake_set_hash_buckets (1);   /* all collide: only addresses tell them apart */
	const uint32_t n = 50;
	void **objs = make_bound_objects (n);
	SpLidMap m;
	assert_int_equal (sp_lidmap_init (&m, 0), 0);
	add_all (&m, objs, n);
	check_all_found (&m, objs, n);
	void **old = malloc (((size_t)n + 1) * sizeof *old);
	memcpy (old, objs, ((size_t)n + 1) * sizeof *old);
	fake_gc_move_all (objs + 1, n);
	fake_gc_advance_epoch (65535);
	check_all_found (&m, objs, n);
	for (uint32_t lid = 1; lid <= n; lid++)
		assert_null (sp_lidmap_find (&m, sp_client_identity_hash (objs [lid]), old [lid], sp_client_gc_epoch ()));
	free (old);
	sp_lidmap_free (&m);
	free (objs);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test_teardown (test_200k_objects, fake_teardown),
		cmocka_unit_test_teardown (test_forced_collisions, fake_teardown),
		cmocka_unit_test_teardown (test_forget, fake_teardown),
		cmocka_unit_test_teardown (test_growth_keeps_entries_and_bits, fake_teardown),
		cmocka_unit_test_teardown (test_serialized_bit, fake_teardown),
		cmocka_unit_test_teardown (test_clear_forgets, fake_teardown),
		cmocka_unit_test_teardown (test_steady_state_prepares_no_next_table, fake_teardown),
		cmocka_unit_test_teardown (test_entries_follow_moved_objects, fake_teardown),
		cmocka_unit_test_teardown (test_epoch_tags_that_wrap_are_refreshed, fake_teardown),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
