/*
 * test_evolve.c: restoring into changed classes (sp-evolve.h): the widening
 * rules, a class restored across added, removed, reordered and widened
 * leaves, the refusals, and a hostile class record that claims a widening.
 */
#include "unit.h"

#include "fake-objects.h"
#include "sp-evolve.h"

static void
test_widening_rules (void **state)
{
	(void)state;
	assert_true (sp_evolve_widens (SP_KIND_I1, SP_KIND_I8));
	assert_true (sp_evolve_widens (SP_KIND_I2, SP_KIND_I4));
	assert_true (sp_evolve_widens (SP_KIND_U1, SP_KIND_U4));
	assert_true (sp_evolve_widens (SP_KIND_I4, SP_KIND_R8));
	assert_true (sp_evolve_widens (SP_KIND_R4, SP_KIND_R8));
	assert_true (sp_evolve_widens (SP_KIND_CHAR, SP_KIND_I4));
	assert_true (sp_evolve_widens (SP_KIND_I4, SP_KIND_I4));
	/* Narrowing, sign changes and lossy conversions (int -> float, long -> double) are not widenings. */
	assert_false (sp_evolve_widens (SP_KIND_I8, SP_KIND_I4));
	assert_false (sp_evolve_widens (SP_KIND_R8, SP_KIND_R4));
	assert_false (sp_evolve_widens (SP_KIND_I4, SP_KIND_U4));
	assert_false (sp_evolve_widens (SP_KIND_U4, SP_KIND_I4));
	assert_false (sp_evolve_widens (SP_KIND_I1, SP_KIND_U8));
	assert_false (sp_evolve_widens (SP_KIND_I4, SP_KIND_R4));
	assert_false (sp_evolve_widens (SP_KIND_I8, SP_KIND_R8));
	assert_false (sp_evolve_widens (SP_KIND_BOOL, SP_KIND_I4));
	assert_false (sp_evolve_widens (SP_KIND_I4, SP_KIND_REF));
	assert_false (sp_evolve_widens (0, SP_KIND_I4));
}

/* Version 1 of App.Tank: a node with a count, a level, a gain, a flag, a leaf that goes, and a link. */
static FakeClass *
tank_v1 (void)
{
	FakeClass *c = fake_class_object ("App", "App.Tank");
	fake_class_add_field (c, "count", SP_KIND_I2, NULL);
	fake_class_add_field (c, "level", SP_KIND_I4, NULL);
	fake_class_add_field (c, "gain", SP_KIND_R4, NULL);
	fake_class_add_field (c, "removed", SP_KIND_I4, NULL);
	fake_class_add_field (c, "flag", SP_KIND_BOOL, NULL);
	fake_class_add_field (c, "next", SP_KIND_REF, "App.Tank");
	fake_class_add_field (c, "gone", SP_KIND_REF, "App.Tank");
	return c;
}

/* Serialize two linked v1 tanks (negative values: widening must sign-extend), then hide v1 from restore. */
static void
write_v1_tanks (SpBuf *b)
{
	FakeClass *v1 = tank_v1 ();
	void *t [2];
	for (int i = 0; i < 2; i++) {
		t [i] = fake_new_object (v1);
		FAKE_SET (t [i], "count", int16_t, (int16_t)(-5 - i));
		FAKE_SET (t [i], "level", int32_t, -123456 - i);
		FAKE_SET (t [i], "gain", float, 1.5f + (float)i);
		FAKE_SET (t [i], "removed", int32_t, 77);
		FAKE_SET (t [i], "flag", uint8_t, 1);
	}
	fake_set_ref (t [0], "next", t [1]);
	fake_set_ref (t [0], "gone", t [0]);
	SpError err = { 0 };
	sp_buf_init (b);
	uint32_t id = 1;
	assert_ok (fake_serialize (&id, &t [0], 1, 1, 1, b, &err), &err);
	fake_class_rename (v1, "App.Tank (v1, no longer loaded)");
}

static void
test_restore_across_compatible_changes (void **state)
{
	(void)state;
	SpBuf b;
	write_v1_tanks (&b);
	/* Version 2: another order, count and level widened, gain to double, removed and gone dropped, two leaves new. */
	FakeClass *v2 = fake_class_object ("App", "App.Tank");
	fake_class_add_field (v2, "next", SP_KIND_REF, "App.Tank");
	fake_class_add_field (v2, "added", SP_KIND_I4, NULL);
	fake_class_add_field (v2, "level", SP_KIND_I8, NULL);
	fake_class_add_field (v2, "gain", SP_KIND_R8, NULL);
	fake_class_add_field (v2, "flag", SP_KIND_BOOL, NULL);
	fake_class_add_field (v2, "count", SP_KIND_I4, NULL);
	fake_class_add_field (v2, "spare", SP_KIND_REF, "App.Tank");
	SpSnapshot snap;
	void **objs = NULL;
	SpError err = { 0 };
	assert_int_equal (fake_decode (b.data, b.len, &snap, &objs, &err), 0);
	const char *what = snap.classes [1].evolution;
	assert_contains (what, "'level' int -> long");
	assert_contains (what, "'gain' float -> double");
	assert_contains (what, "'count' short -> int");
	assert_contains (what, "'removed' (int) is gone");
	assert_contains (what, "'gone' (App.Tank) is gone");
	assert_contains (what, "'added' (int) is new: 0");
	assert_contains (what, "'spare' (App.Tank) is new: null");
	for (int i = 0; i < 2; i++) {
		void *t = objs [1 + i];
		int64_t level;
		int32_t count, added;
		double gain;
		uint8_t flag;
		fake_get (t, "level", &level, sizeof level);
		fake_get (t, "count", &count, sizeof count);
		fake_get (t, "added", &added, sizeof added);
		fake_get (t, "gain", &gain, sizeof gain);
		fake_get (t, "flag", &flag, sizeof flag);
		assert_true (level == -123456 - i);
		assert_int_equal (count, -5 - i);
		assert_int_equal (added, 0);
		assert_true (gain == 1.5 + i);
		assert_int_equal (flag, 1);
		assert_null (fake_get_ref (t, "spare"));
	}
	assert_ptr_equal (fake_get_ref (objs [1], "next"), objs [2]);
	assert_null (fake_get_ref (objs [2], "next"));
	sp_snapshot_free (&snap);
	free (objs);
	sp_buf_free (&b);
}

/* The v1 tanks into a v2 whose one leaf breaks a rule: refused (the program's misfit), naming the rule. */
static void
refused_into (SpKind kind, const char *type_name, const char *name, const char *says)
{
	SpBuf b;
	write_v1_tanks (&b);
	FakeClass *v2 = fake_class_object ("App", "App.Tank");
	fake_class_add_field (v2, name, kind, type_name);
	SpSnapshot snap;
	void **objs = NULL;
	SpError err = { 0 };
	assert_int_equal (fake_decode (b.data, b.len, &snap, &objs, &err), SP_DECODE_UNFIT);
	assert_contains (err.msg, says);
	sp_snapshot_free (&snap);
	free (objs);
	sp_buf_free (&b);
	fake_reset ();
}

static void
test_incompatible_changes_are_refused (void **state)
{
	(void)state;
	refused_into (SP_KIND_I2, NULL, "level", "field 'level' is int in the snapshot but short in the loaded class: short cannot hold every int value");
	refused_into (SP_KIND_U4, NULL, "level", "uint cannot hold every int value");
	refused_into (SP_KIND_R4, NULL, "level", "float cannot hold every int value");
	refused_into (SP_KIND_REF, "App.Tank", "level", "a field cannot change between a value and a reference");
	refused_into (SP_KIND_I4, NULL, "next", "a field cannot change between a value and a reference");
	refused_into (SP_KIND_REF, "App.Pump", "next", "field 'next' refers to App.Tank in the snapshot but to App.Pump in the loaded class");
}

/*
 * A hostile class record: "System.Int32[]" claiming 2-byte elements, a
 * widening the rules allow.  The elements must be read as the record says
 * (2 bytes each, sign-extended), never bulk-copied as the live array's
 * 4-byte elements: that would read past the piece and restore garbage.
 */
static void
test_hostile_widening_of_a_primitive_array (void **state)
{
	(void)state;
	FakeClass *liar = fake_class_prim_array (SP_KIND_I2);
	fake_class_rename (liar, "System.Int32[]");
	void *arr = fake_new_array (liar, 6);
	for (int16_t i = 0; i < 6; i++)
		memcpy (fake_elem (arr, (uint64_t)i), &(int16_t){ (int16_t)(-1000 * i - 1) }, 2);
	SpBuf b;
	SpError err = { 0 };
	sp_buf_init (&b);
	uint32_t id = 1;
	assert_ok (fake_serialize (&id, &arr, 1, 1, 1, &b, &err), &err);
	fake_class_rename (liar, "System.Int16[] (the liar)");
	fake_class_prim_array (SP_KIND_I4);
	SpSnapshot snap;
	void **objs = NULL;
	assert_int_equal (fake_decode (b.data, b.len, &snap, &objs, &err), 0);
	assert_int_equal (fake_length (objs [1]), 6);
	for (int i = 0; i < 6; i++) {
		int32_t v;
		memcpy (&v, fake_elem (objs [1], (uint64_t)i), 4);
		assert_int_equal (v, -1000 * i - 1);
	}
	sp_snapshot_free (&snap);
	free (objs);
	sp_buf_free (&b);
}

/* A leaf under a former name: restored into the leaf that declares it, unless the snapshot has that leaf's own name too. */
static void
test_former_names (void **state)
{
	(void)state;
	SpBuf b;
	write_v1_tanks (&b);
	FakeClass *v2 = fake_class_object ("App", "App.Tank");
	fake_class_add_field (v2, "height", SP_KIND_I8, NULL);
	fake_class_add_field (v2, "flag", SP_KIND_BOOL, NULL);
	fake_class_add_field (v2, "count", SP_KIND_I4, NULL);
	v2->sp.fields [0].former_names = "lvl\nlevel";
	/* "flag" was once named "removed": but the snapshot has a "flag" of its own, which wins; its "removed" goes. */
	v2->sp.fields [1].former_names = "removed";
	SpSnapshot snap;
	void **objs = NULL;
	SpError err = { 0 };
	assert_int_equal (fake_decode (b.data, b.len, &snap, &objs, &err), 0);
	assert_contains (snap.classes [1].evolution, "field 'level' is now 'height'");
	assert_contains (snap.classes [1].evolution, "field 'height' int -> long");
	assert_contains (snap.classes [1].evolution, "field 'removed' (int) is gone");
	int64_t height;
	int32_t count;
	uint8_t flag;
	fake_get (objs [1], "height", &height, sizeof height);
	fake_get (objs [1], "count", &count, sizeof count);
	fake_get (objs [1], "flag", &flag, sizeof flag);
	assert_true (height == -123456);
	assert_int_equal (count, -5);
	assert_int_equal (flag, 1);
	v2->sp.fields [0].former_names = v2->sp.fields [1].former_names = NULL;   /* literals: not the class's to free */
	sp_snapshot_free (&snap);
	free (objs);
	sp_buf_free (&b);
}

/* A class record naming one leaf twice is refused, not planned (either copy could win). */
static void
test_a_leaf_named_twice_is_refused (void **state)
{
	(void)state;
	FakeClass *twice = fake_class_object ("App", "App.Twice");
	fake_class_add_field (twice, "x", SP_KIND_I4, NULL);
	fake_class_add_field (twice, "x", SP_KIND_I2, NULL);
	void *o = fake_new_object (twice);
	SpBuf b;
	SpError err = { 0 };
	sp_buf_init (&b);
	uint32_t id = 1;
	assert_ok (fake_serialize (&id, &o, 1, 1, 1, &b, &err), &err);
	fake_class_rename (twice, "App.Twice (as written)");
	FakeClass *live = fake_class_object ("App", "App.Twice");
	fake_class_add_field (live, "x", SP_KIND_I8, NULL);
	SpSnapshot snap;
	void **objs = NULL;
	assert_int_equal (fake_decode (b.data, b.len, &snap, &objs, &err), SP_DECODE_UNFIT);
	assert_contains (err.msg, "names field 'x' twice");
	sp_snapshot_free (&snap);
	free (objs);
	sp_buf_free (&b);
}

/* Version 2 of App.Tank: removed and gone are gone, added is new with Default 42. */
static FakeClass *
tank_v2 (void)
{
	static const int32_t forty_two = 42;
	FakeClass *v2 = fake_class_object ("App", "App.Tank");
	fake_class_add_field (v2, "next", SP_KIND_REF, "App.Tank");
	fake_class_add_field (v2, "added", SP_KIND_I4, NULL);
	fake_class_add_field (v2, "level", SP_KIND_I4, NULL);
	fake_class_add_field (v2, "gain", SP_KIND_R4, NULL);
	fake_class_add_field (v2, "flag", SP_KIND_BOOL, NULL);
	fake_class_add_field (v2, "count", SP_KIND_I2, NULL);
	((SpField *)fake_class_field (v2, "added"))->default_value = (const uint8_t *)&forty_two;
	return v2;
}

/*
 * A downgrade and back: v1's tanks restore into v2, which keeps the leaves
 * it does not know (removed, gone) as unknown data and writes them into its
 * own snapshot (its class record lists them after its own leaves); v1 then
 * gets them back.  The tank v2 made itself (no unknown values) writes zeros
 * and nulls.  A new leaf with a Default gets it.
 */
static void
test_unknown_data_is_carried (void **state)
{
	(void)state;
	SpBuf b;
	write_v1_tanks (&b);
	FakeClass *v2 = tank_v2 ();
	fake_keep_unknown = true;
	SpSnapshot snap;
	void **objs = NULL;
	SpError err = { 0 };
	assert_ok (fake_decode (b.data, b.len, &snap, &objs, &err), &err);
	SpSnapClass *sc = &snap.classes [1];
	assert_contains (sc->evolution, "'removed' (int) is not in the loaded class: kept as unknown data");
	assert_contains (sc->evolution, "'added' (int) is new: 42 (its Default)");
	assert_true (sc->keep_old);
	int32_t added;
	fake_get (objs [1], "added", &added, sizeof added);
	assert_int_equal (added, 42);
	SpUnknown *u = NULL;
	assert_ok (sp_evolve_unknown_merge (&u, sc, &v2->sp, &err), &err);
	assert_ok (sp_evolve_unknown_merge (&u, sc, &v2->sp, &err), &err);    /* each name once */
	assert_int_equal (u->nleaves, v2->sp.nfields + 2);
	assert_int_equal (u->nprims, 1);
	assert_int_equal (u->nrefs, 1);
	assert_int_equal (u->prim_bytes, 4);
	uint32_t at;
	assert_non_null (sp_evolve_unknown_leaf (u, &v2->sp, "gone", &at));
	assert_string_equal (u->leaves [at].type_name, "App.Tank");
	assert_null (sp_evolve_unknown_leaf (u, &v2->sp, "level", &at));
	v2->sp.unknown = u;
	/* The first tank carries removed = 77 (wire order) and gone = itself. */
	static const uint8_t removed [4] = { 77, 0, 0, 0 };
	void *gone [1] = { objs [1] };
	fake_set_unknown_values (objs [1], removed, gone);
	void *fresh = fake_new_object (v2);
	fake_set_ref (objs [2], "next", fresh);
	SpBuf b2;
	sp_buf_init (&b2);
	uint32_t id = 1;
	assert_ok (fake_serialize (&id, &objs [1], 1, 1, 2, &b2, &err), &err);
	sp_snapshot_free (&snap);
	free (objs);
	/* Back to v1. */
	fake_class_rename (v2, "App.Tank (v2, no longer loaded)");
	fake_keep_unknown = false;
	tank_v1 ();
	assert_ok (fake_decode (b2.data, b2.len, &snap, &objs, &err), &err);
	assert_contains (snap.classes [1].evolution, "'added' (int) is gone: its value is dropped");
	int32_t got;
	fake_get (objs [1], "removed", &got, sizeof got);
	assert_int_equal (got, 77);
	assert_ptr_equal (fake_get_ref (objs [1], "gone"), objs [1]);
	for (int i = 2; i <= 3; i++) {
		fake_get (objs [i], "removed", &got, sizeof got);
		assert_int_equal (got, 0);
		assert_null (fake_get_ref (objs [i], "gone"));
	}
	sp_snapshot_free (&snap);
	free (objs);
	sp_buf_free (&b);
	sp_buf_free (&b2);
}

/* Default = v (kind `from`, as the blob has it) for a field of kind `to`: 0 and the value, or -1. */
static int
default_into (SpKind to, SpKind from, uint64_t le_bits, uint8_t out [8], SpError *err)
{
	SpField f = { .name = "f", .kind = (uint8_t)to };
	uint8_t value [8];
	for (int i = 0; i < 8; i++)
		value [i] = (uint8_t)(le_bits >> (8 * i));
	return sp_evolve_default_value (&f, from, value, out, err);
}

static void
test_default_values (void **state)
{
	(void)state;
	uint8_t out [8];
	SpError err = { 0 };
	/* An int literal into every integer kind it fits. */
	assert_ok (default_into (SP_KIND_U1, SP_KIND_I4, 200, out, &err), &err);
	assert_int_equal (out [0], 200);
	assert_ok (default_into (SP_KIND_I2, SP_KIND_I4, (uint32_t)-300, out, &err), &err);
	int16_t s16;
	memcpy (&s16, out, 2);
	assert_int_equal (s16, -300);
	assert_ok (default_into (SP_KIND_I8, SP_KIND_I4, (uint32_t)-5, out, &err), &err);
	int64_t s64;
	memcpy (&s64, out, 8);
	assert_true (s64 == -5);
	assert_ok (default_into (SP_KIND_U8, SP_KIND_U8, UINT64_MAX, out, &err), &err);
	uint64_t u64;
	memcpy (&u64, out, 8);
	assert_true (u64 == UINT64_MAX);
	/* Numbers into float and double. */
	assert_ok (default_into (SP_KIND_R8, SP_KIND_I4, 3, out, &err), &err);
	double d;
	memcpy (&d, out, 8);
	assert_true (d == 3.0);
	float two_and_a_half = 2.5f;
	uint32_t fbits;
	memcpy (&fbits, &two_and_a_half, 4);
	assert_ok (default_into (SP_KIND_R8, SP_KIND_R4, fbits, out, &err), &err);
	memcpy (&d, out, 8);
	assert_true (d == 2.5);
	/* Refused: out of range, a fraction into an integer, a number into a bool, a Default on a reference. */
	assert_int_equal (default_into (SP_KIND_U1, SP_KIND_I4, 300, out, &err), -1);
	assert_contains (err.msg, "out of its range");
	assert_int_equal (default_into (SP_KIND_U4, SP_KIND_I4, (uint32_t)-1, out, &err), -1);
	assert_int_equal (default_into (SP_KIND_I4, SP_KIND_R8, 0, out, &err), -1);
	assert_contains (err.msg, "cannot hold");
	assert_int_equal (default_into (SP_KIND_BOOL, SP_KIND_I4, 1, out, &err), -1);
	assert_int_equal (default_into (SP_KIND_REF, SP_KIND_I4, 1, out, &err), -1);
	assert_ok (default_into (SP_KIND_BOOL, SP_KIND_BOOL, 1, out, &err), &err);
	assert_int_equal (out [0], 1);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_widening_rules),
		cmocka_unit_test_teardown (test_restore_across_compatible_changes, fake_teardown),
		cmocka_unit_test_teardown (test_incompatible_changes_are_refused, fake_teardown),
		cmocka_unit_test_teardown (test_hostile_widening_of_a_primitive_array, fake_teardown),
		cmocka_unit_test_teardown (test_a_leaf_named_twice_is_refused, fake_teardown),
		cmocka_unit_test_teardown (test_former_names, fake_teardown),
		cmocka_unit_test_teardown (test_unknown_data_is_carried, fake_teardown),
		cmocka_unit_test (test_default_values),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
