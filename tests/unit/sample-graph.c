/* sample-graph.c: see sample-graph.h. */
#include "sample-graph.h"

#include "unit.h"

#include <math.h>

#include "fake-objects.h"

static double
double_from_bits (uint64_t bits)
{
	double d;
	memcpy (&d, &bits, sizeof d);
	return d;
}

static float
float_from_bits (uint32_t bits)
{
	float f;
	memcpy (&f, &bits, sizeof f);
	return f;
}

static FakeClass *
node_class (void)
{
	FakeClass *c = fake_class_object ("App, Version=1.0.0.0", "App.Node");
	fake_class_add_field (c, "value", SP_KIND_I4, NULL);
	fake_class_add_field (c, "name", SP_KIND_REF, "System.String");
	fake_class_add_field (c, "next", SP_KIND_REF, "App.Node");
	fake_class_add_field (c, "other", SP_KIND_REF, "App.Node");
	fake_class_add_field (c, "data", SP_KIND_REF, "System.Object");
	/* An embedded struct, flattened into its leaves. */
	fake_class_add_field (c, "pos.x", SP_KIND_R8, NULL);
	fake_class_add_field (c, "pos.y", SP_KIND_R8, NULL);
	fake_class_add_field (c, "pos.tag", SP_KIND_REF, "System.String");
	fake_class_add_field (c, "alive", SP_KIND_BOOL, NULL);
	return c;
}

static FakeClass *
prims_class (void)
{
	FakeClass *c = fake_class_object ("App, Version=1.0.0.0", "App.Prims");
	fake_class_add_field (c, "flag", SP_KIND_BOOL, NULL);
	fake_class_add_field (c, "letter", SP_KIND_CHAR, NULL);
	fake_class_add_field (c, "sb", SP_KIND_I1, NULL);
	fake_class_add_field (c, "ub", SP_KIND_U1, NULL);
	fake_class_add_field (c, "s", SP_KIND_I2, NULL);
	fake_class_add_field (c, "us", SP_KIND_U2, NULL);
	fake_class_add_field (c, "i", SP_KIND_I4, NULL);
	fake_class_add_field (c, "ui", SP_KIND_U4, NULL);
	fake_class_add_field (c, "l_min", SP_KIND_I8, NULL);
	fake_class_add_field (c, "l_max", SP_KIND_I8, NULL);
	fake_class_add_field (c, "ul", SP_KIND_U8, NULL);
	fake_class_add_field (c, "f_nan", SP_KIND_R4, NULL);
	fake_class_add_field (c, "f_neg0", SP_KIND_R4, NULL);
	fake_class_add_field (c, "d_nan", SP_KIND_R8, NULL);
	fake_class_add_field (c, "d_neg0", SP_KIND_R8, NULL);
	fake_class_add_field (c, "d_inf", SP_KIND_R8, NULL);
	fake_class_add_field (c, "d_denormal", SP_KIND_R8, NULL);
	fake_class_add_field (c, "flag_false", SP_KIND_BOOL, NULL);
	fake_class_add_field (c, "surrogate", SP_KIND_CHAR, NULL);
	fake_class_add_field (c, "owner", SP_KIND_REF, "App.Node");
	return c;
}

static const SpKind prim_kinds [] = {
	SP_KIND_BOOL, SP_KIND_CHAR, SP_KIND_I1, SP_KIND_U1, SP_KIND_I2, SP_KIND_U2,
	SP_KIND_I4, SP_KIND_U4, SP_KIND_I8, SP_KIND_U8, SP_KIND_R4, SP_KIND_R8,
};
#define NPRIM (sizeof prim_kinds / sizeof prim_kinds [0])

/* A deterministic, value-rich pattern: element i of a `kind` array. */
static void
prim_pattern (SpKind kind, uint64_t i, uint8_t *dst)
{
	uint64_t x = (i + 1) * 0x9E3779B97F4A7C15ull ^ (uint64_t)kind << 56;
	switch (kind) {
	case SP_KIND_BOOL: dst [0] = (uint8_t)(i % 3 == 0); return;
	case SP_KIND_R4: {
		static const uint32_t special [] = { 0x7fc00001u, 0x80000000u, 0x7f800000u, 0xff800000u, 0x00000001u };
		float f = i < 5 ? float_from_bits (special [i]) : (float)(int64_t)x / 3.0f;
		memcpy (dst, &f, 4);
		return;
	}
	case SP_KIND_R8: {
		static const uint64_t special [] = { 0x7ff8000000000abcull, 0x8000000000000000ull, 0x7ff0000000000000ull,
						     0xfff0000000000000ull, 0x0000000000000001ull };
		double d = i < 5 ? double_from_bits (special [i]) : (double)(int64_t)x / 7.0;
		memcpy (dst, &d, 8);
		return;
	}
	default:
		if (i == 0)
			x = 0;
		else if (i == 1)
			x = UINT64_MAX;
		else if (i == 2)
			x = 1ull << (8 * sp_kind_size (kind) - 1);
		memcpy (dst, &x, sp_kind_size (kind));   /* little-endian host: the low bytes */
		return;
	}
}

void
sample_graph_build (SampleGraph *g)
{
	memset (g, 0, sizeof *g);
	FakeClass *node = node_class ();
	/* Non-persistent state: no leaf describes it, so it must never be followed. */
	uint32_t hidden = fake_class_reserve (node, sizeof (void *));
	FakeClass *prims = prims_class ();
	FakeClass *file_stream = fake_class_unpersistable ("System.IO.FileStream");
	FakeClass *int_array = NULL;
	FakeClass *prim_arrays [NPRIM];
	for (size_t k = 0; k < NPRIM; k++) {
		prim_arrays [k] = fake_class_prim_array (prim_kinds [k]);
		if (prim_kinds [k] == SP_KIND_I4)
			int_array = prim_arrays [k];
	}
	FakeClass *jagged_class = fake_class_ref_array ("System.Int32[][]", "System.Int32[]");
	FakeClass *nodes_class = fake_class_ref_array ("App.Node[]", "App.Node");
	FakeClass *point_class = fake_class_struct_array ("App.Point[]", SAMPLE_POINT_SIZE);
	fake_class_add_field_at (point_class, "x", SP_KIND_R8, NULL, SAMPLE_POINT_X);
	fake_class_add_field_at (point_class, "tag", SP_KIND_REF, "System.String", SAMPLE_POINT_TAG);
	fake_class_add_field_at (point_class, "k", SP_KIND_U2, NULL, SAMPLE_POINT_K);
	fake_class_add_field_at (point_class, "flag", SP_KIND_BOOL, NULL, SAMPLE_POINT_FLAG);
	FakeClass *bag = fake_class_object ("App, Version=1.0.0.0", "App.Bag");
	for (size_t k = 0; k < NPRIM; k++) {
		char field [32];
		snprintf (field, sizeof field, "arr%u", (unsigned)prim_kinds [k]);
		fake_class_add_field (bag, field, SP_KIND_REF, prim_arrays [k]->sp.name);
	}
	fake_class_add_field (bag, "empty", SP_KIND_REF, "System.Int32[]");
	fake_class_add_field (bag, "big", SP_KIND_REF, "System.Int32[]");
	fake_class_add_field (bag, "long_string", SP_KIND_REF, "System.String");
	fake_class_add_field (bag, "nodes", SP_KIND_REF, "App.Node[]");

	/* Strings. */
	void *empty = fake_new_string_ascii ("");
	void *latin1 = fake_new_string_ascii ("caf\xe9 na\xefve \xff\x01");
	static const uint16_t utf16 [] = { 'h', 0x00e9, 0xd83d, 0xde00, 0x03a9, 0x4e2d, 0xdbff, 0xdfff, 0xfffe, 0x0100, 0 };
	void *wide = fake_new_string_utf16 (utf16, sizeof utf16 / sizeof utf16 [0]);
	uint16_t long_units [5000];
	for (size_t i = 0; i < 5000; i++)
		long_units [i] = (uint16_t)('a' + i % 26);
	long_units [4999] = 0x263a;   /* one wide unit at the very end */
	void *long_string = fake_new_string_utf16 (long_units, 5000);

	/* Nodes: a <-> b, a.other = a, b.other = c, d.other = c. */
	void *a = fake_new_object (node), *b = fake_new_object (node);
	void *c = fake_new_object (node), *d = fake_new_object (node);
	void *nodes [] = { a, b, c, d };
	for (int i = 0; i < 4; i++) {
		FAKE_SET (nodes [i], "value", int32_t, (i + 1) * -1000003);
		FAKE_SET (nodes [i], "pos.x", double, i * 0.25);
		FAKE_SET (nodes [i], "pos.y", double, -1.0 / (i + 3));
		FAKE_SET (nodes [i], "alive", uint8_t, i % 2);
	}
	fake_set_ref (a, "name", empty);
	fake_set_ref (b, "name", latin1);
	fake_set_ref (c, "name", wide);
	fake_set_ref (d, "name", latin1);
	fake_set_ref (a, "next", b);
	fake_set_ref (b, "next", a);
	fake_set_ref (a, "other", a);
	fake_set_ref (b, "other", c);
	fake_set_ref (d, "other", c);
	fake_set_ref (c, "pos.tag", fake_new_string_ascii ("tag of c"));
	/* Wider than Latin-1 by little: every unit < 0x200. */
	static const uint16_t just_wide [] = { 'x', 0x0100, 0x017f, 0x00ff };
	fake_set_ref (d, "pos.tag", fake_new_string_utf16 (just_wide, 4));
	void *stream = fake_new_object (file_stream);
	memcpy ((uint8_t *)a + hidden, &stream, sizeof stream);

	/* a.data: jagged { x, [], null, x }. */
	void *x = fake_new_array (int_array, 3);
	for (int32_t i = 0; i < 3; i++)
		memcpy (fake_elem (x, i), &(int32_t){ (i + 1) * 11 }, 4);
	void *empty_ints = fake_new_array (int_array, 0);
	void *jagged = fake_new_array (jagged_class, 4);
	fake_elem_set_ref (jagged, 0, x);
	fake_elem_set_ref (jagged, 1, empty_ints);
	fake_elem_set_ref (jagged, 3, x);
	fake_set_ref (a, "data", jagged);

	/* b.data: App.Node[] { a, null, b, c, a }. */
	void *node_array = fake_new_array (nodes_class, 5);
	fake_elem_set_ref (node_array, 0, a);
	fake_elem_set_ref (node_array, 2, b);
	fake_elem_set_ref (node_array, 3, c);
	fake_elem_set_ref (node_array, 4, a);
	fake_set_ref (b, "data", node_array);

	/* c.data: App.Point[] with padding filled with a pattern that must not matter. */
	void *points = fake_new_array (point_class, 3);
	memset (fake_elem (points, 0), 0xee, 3 * SAMPLE_POINT_SIZE);
	const double xs [] = { 1.5, double_from_bits (0x7ff800000000beefull), -0.0 };
	void *const tags [] = { fake_new_string_ascii ("p0"), NULL, empty };
	const uint16_t ks [] = { 7, 0xffff, 0 };
	const uint8_t flags [] = { 1, 0, 1 };
	for (int i = 0; i < 3; i++) {
		uint8_t *e = fake_elem (points, i);
		memcpy (e + SAMPLE_POINT_X, &xs [i], 8);
		memcpy (e + SAMPLE_POINT_TAG, &tags [i], sizeof (void *));
		memcpy (e + SAMPLE_POINT_K, &ks [i], 2);
		e [SAMPLE_POINT_FLAG] = flags [i];
	}
	fake_set_ref (c, "data", points);

	/* Every primitive kind, at its edges. */
	void *p = fake_new_object (prims);
	FAKE_SET (p, "flag", uint8_t, 1);
	FAKE_SET (p, "letter", uint16_t, 0x20ac);
	FAKE_SET (p, "sb", int8_t, INT8_MIN);
	FAKE_SET (p, "ub", uint8_t, UINT8_MAX);
	FAKE_SET (p, "s", int16_t, INT16_MIN);
	FAKE_SET (p, "us", uint16_t, UINT16_MAX);
	FAKE_SET (p, "i", int32_t, INT32_MIN);
	FAKE_SET (p, "ui", uint32_t, UINT32_MAX);
	FAKE_SET (p, "l_min", int64_t, INT64_MIN);
	FAKE_SET (p, "l_max", int64_t, INT64_MAX);
	FAKE_SET (p, "ul", uint64_t, UINT64_MAX - 1);
	FAKE_SET (p, "f_nan", float, float_from_bits (0x7fc12345u));
	FAKE_SET (p, "f_neg0", float, -0.0f);
	FAKE_SET (p, "d_nan", double, double_from_bits (0x7ff8deadbeef0001ull));
	FAKE_SET (p, "d_neg0", double, -0.0);
	FAKE_SET (p, "d_inf", double, -INFINITY);
	FAKE_SET (p, "d_denormal", double, double_from_bits (1));
	FAKE_SET (p, "flag_false", uint8_t, 0);
	FAKE_SET (p, "surrogate", uint16_t, 0xdc00);
	fake_set_ref (p, "owner", c);

	/* Bag: an array of every primitive kind, empty, big, a long string, the node array again. */
	void *bg = fake_new_object (bag);
	for (size_t k = 0; k < NPRIM; k++) {
		uint64_t n = 37 + k;
		void *arr = fake_new_array (prim_arrays [k], n);
		for (uint64_t i = 0; i < n; i++)
			prim_pattern (prim_kinds [k], i, fake_elem (arr, i));
		char field [32];
		snprintf (field, sizeof field, "arr%u", (unsigned)prim_kinds [k]);
		fake_set_ref (bg, field, arr);
	}
	fake_set_ref (bg, "empty", empty_ints);
	void *big = fake_new_array (int_array, 10000);
	for (int32_t i = 0; i < 10000; i++)
		memcpy (fake_elem (big, i), &(int32_t){ i * 7919 - 5000000 }, 4);
	fake_set_ref (bg, "big", big);
	fake_set_ref (bg, "long_string", long_string);
	fake_set_ref (bg, "nodes", node_array);

	/* An object nobody refers to: it must not be in the snapshot. */
	fake_set_ref (fake_new_object (node), "next", a);

	const uint32_t ids [] = { SAMPLE_ROOT_A, SAMPLE_ROOT_D, SAMPLE_ROOT_PRIMS, SAMPLE_ROOT_BAG, SAMPLE_ROOT_NULL, SAMPLE_ROOT_A2 };
	void *const roots [] = { a, d, p, bg, NULL, a };
	g->nroots = sizeof ids / sizeof ids [0];
	memcpy (g->ids, ids, sizeof ids);
	memcpy (g->roots, roots, sizeof roots);
	g->a = a;
	g->b = b;
	g->c = c;
	g->d = d;
	g->prims = p;
	g->bag = bg;
	g->jagged = jagged;
	g->points = points;
	g->utf16 = wide;
}

void
sample_graph_serialize (SampleGraph *g, size_t step, SpBuf *out)
{
	SpError err = { 0 };
	assert_ok (fake_serialize (g->ids, g->roots, g->nroots, step, 42, out, &err), &err);
}
