/*
 * test_cattr.c: reading FormerNames, DropUnknown and Default out of custom attribute blobs
 * (sp-cattr.h): what mcs writes, other named arguments around it, and
 * malformed blobs (truncated anywhere, lying counts, wrong types).
 */
#include "unit.h"

#include "sp-cattr.h"
#include "sp-layout.h"

/* A blob being written: prolog, then named arguments appended. */
typedef struct Blob {
	uint8_t b [512];
	size_t n;
	uint8_t *count;          /* the named arguments' u16 count */
} Blob;

static void
put (Blob *x, const void *p, size_t n)
{
	memcpy (x->b + x->n, p, n);
	x->n += n;
}

static void
put_u8 (Blob *x, uint8_t v)
{
	put (x, &v, 1);
}

static void
put_str (Blob *x, const char *s)
{
	size_t n = strlen (s);
	if (n < 0x80) {
		put_u8 (x, (uint8_t)n);
	} else {
		put_u8 (x, (uint8_t)(0x80 | n >> 8));
		put_u8 (x, (uint8_t)n);
	}
	put (x, s, n);
}

static void
blob_begin (Blob *x)
{
	x->n = 0;
	put_u8 (x, 1), put_u8 (x, 0);
	x->count = x->b + x->n;
	put_u8 (x, 0), put_u8 (x, 0);
}

static void
named (Blob *x, uint8_t type, uint8_t elem, const char *name)
{
	x->count [0]++;
	put_u8 (x, 0x54);       /* a property */
	put_u8 (x, type);
	if (type == 0x1d)
		put_u8 (x, elem);
	put_str (x, name);
}

static void
string_array (Blob *x, const char *name, const char *const *strings, uint32_t n)
{
	named (x, 0x1d, 0x0e, name);
	put (x, &n, 4);
	for (uint32_t i = 0; i < n; i++)
		strings [i] ? put_str (x, strings [i]) : put_u8 (x, 0xff);
}

static void
test_former_names_as_mcs_writes_them (void **state)
{
	(void)state;
	Blob x;
	blob_begin (&x);
	string_array (&x, "FormerNames", (const char *[]){ "Level", "Old.Plant+Inner" }, 2);
	char **out;
	SpError err = { 0 };
	assert_int_equal (sp_cattr_strings (x.b, x.n, "FormerNames", &out, &err), 2);
	assert_string_equal (out [0], "Level");
	assert_string_equal (out [1], "Old.Plant+Inner");
	assert_null (out [2]);
	sp_cattr_strings_free (out);

	/* No named arguments at all ([SPersistentField] alone), and another one only. */
	blob_begin (&x);
	assert_int_equal (sp_cattr_strings (x.b, x.n, "FormerNames", &out, &err), 0);
	assert_null (out);
	named (&x, 0x08, 0, "Version");
	put (&x, &(int32_t){ 3 }, 4);
	assert_int_equal (sp_cattr_strings (x.b, x.n, "FormerNames", &out, &err), 0);
	assert_null (out);
}

static void
test_other_arguments_around_it (void **state)
{
	(void)state;
	Blob x;
	blob_begin (&x);
	named (&x, 0x02, 0, "Drop");
	put_u8 (&x, 1);
	named (&x, 0x0e, 0, "Note");
	put_str (&x, "a note long enough to need two bytes of length: .............................................................................................");
	string_array (&x, "FormerNames", (const char *[]){ "A", NULL, "B" }, 3);    /* a null element is skipped */
	named (&x, 0x0d, 0, "Gain");
	put (&x, &(double){ 1.5 }, 8);
	char **out;
	SpError err = { 0 };
	assert_int_equal (sp_cattr_strings (x.b, x.n, "FormerNames", &out, &err), 2);
	assert_string_equal (out [0], "A");
	assert_string_equal (out [1], "B");
	sp_cattr_strings_free (out);

	/* One string rather than an array; a null array. */
	blob_begin (&x);
	named (&x, 0x0e, 0, "FormerNames");
	put_str (&x, "Only");
	assert_int_equal (sp_cattr_strings (x.b, x.n, "FormerNames", &out, &err), 1);
	assert_string_equal (out [0], "Only");
	sp_cattr_strings_free (out);
	blob_begin (&x);
	named (&x, 0x1d, 0x0e, "FormerNames");
	put (&x, &(uint32_t){ 0xffffffffu }, 4);
	assert_int_equal (sp_cattr_strings (x.b, x.n, "FormerNames", &out, &err), 0);
	assert_null (out);
}

static void
test_malformed_blobs (void **state)
{
	(void)state;
	Blob x;
	blob_begin (&x);
	named (&x, 0x08, 0, "Version");
	put (&x, &(int32_t){ 3 }, 4);
	string_array (&x, "FormerNames", (const char *[]){ "Level", "Lvl" }, 2);
	char **out;
	SpError err = { 0 };
	/* Cut anywhere: refused, nothing handed out (ASan checks no byte past the cut is read). */
	for (size_t cut = 0; cut < x.n; cut++) {
		uint8_t *copy = malloc (cut ? cut : 1);
		memcpy (copy, x.b, cut);
		assert_int_equal (sp_cattr_strings (copy, cut, "FormerNames", &out, &err), -1);
		assert_null (out);
		free (copy);
	}
	/* Bytes after the last argument. */
	x.b [x.n++] = 0;
	assert_int_equal (sp_cattr_strings (x.b, x.n, "FormerNames", &out, &err), -1);
	assert_contains (err.msg, "malformed");

	/* An array count far beyond the blob. */
	blob_begin (&x);
	named (&x, 0x1d, 0x0e, "FormerNames");
	put (&x, &(uint32_t){ 0x7fffffffu }, 4);
	put_str (&x, "A");
	assert_int_equal (sp_cattr_strings (x.b, x.n, "FormerNames", &out, &err), -1);
	assert_null (out);

	/* FormerNames of another type; a string length past the end; no prolog. */
	blob_begin (&x);
	named (&x, 0x08, 0, "FormerNames");
	put (&x, &(int32_t){ 1 }, 4);
	assert_int_equal (sp_cattr_strings (x.b, x.n, "FormerNames", &out, &err), -1);
	assert_contains (err.msg, "not a string");
	blob_begin (&x);
	named (&x, 0x0e, 0, "FormerNames");
	put_u8 (&x, 0x7f);
	put (&x, "short", 5);
	assert_int_equal (sp_cattr_strings (x.b, x.n, "FormerNames", &out, &err), -1);
	assert_int_equal (sp_cattr_strings ((const uint8_t *)"\x02\x00\x00\x00", 4, "FormerNames", &out, &err), -1);
	assert_contains (err.msg, "prolog");
}

/* DropUnknown (a bool) and Default (an object holding a number), beside FormerNames. */
static void
test_bool_and_boxed_arguments (void **state)
{
	(void)state;
	Blob x;
	blob_begin (&x);
	named (&x, 0x51, 0, "Default");
	put_u8 (&x, 0x08);              /* a boxed int */
	put (&x, &(int32_t){ -7 }, 4);
	named (&x, 0x02, 0, "DropUnknown");
	put_u8 (&x, 1);
	string_array (&x, "FormerNames", (const char *[]){ "Old" }, 1);
	SpError err = { 0 };
	bool drop = false;
	assert_int_equal (sp_cattr_bool (x.b, x.n, "DropUnknown", &drop, &err), 1);
	assert_true (drop);
	uint8_t kind, value [8];
	assert_int_equal (sp_cattr_primitive (x.b, x.n, "Default", &kind, value, &err), 1);
	assert_int_equal (kind, SP_KIND_I4);
	int32_t v;
	memcpy (&v, value, 4);
	assert_int_equal (v, -7);
	char **out;
	assert_int_equal (sp_cattr_strings (x.b, x.n, "FormerNames", &out, &err), 1);     /* the boxed value is skipped */
	sp_cattr_strings_free (out);
	/* Absent; of the wrong type; a boxed string or enum as a Default. */
	assert_int_equal (sp_cattr_bool (x.b, x.n, "Other", &drop, &err), 0);
	assert_false (drop);
	assert_int_equal (sp_cattr_bool (x.b, x.n, "Default", &drop, &err), -1);
	assert_contains (err.msg, "not a bool");
	blob_begin (&x);
	named (&x, 0x51, 0, "Default");
	put_u8 (&x, 0x0e);
	put_str (&x, "text");
	assert_int_equal (sp_cattr_primitive (x.b, x.n, "Default", &kind, value, &err), -1);
	assert_contains (err.msg, "not a number, bool or char");
	blob_begin (&x);
	named (&x, 0x51, 0, "Default");
	put_u8 (&x, 0x55);              /* an enum: its type's name, then a value of a size only its type knows */
	put_str (&x, "App.Mode, App");
	put (&x, &(int32_t){ 1 }, 4);
	assert_int_equal (sp_cattr_primitive (x.b, x.n, "Default", &kind, value, &err), -1);
	/* Cut anywhere: refused. */
	blob_begin (&x);
	named (&x, 0x51, 0, "Default");
	put_u8 (&x, 0x0d);
	put (&x, &(double){ 2.5 }, 8);
	for (size_t cut = 0; cut < x.n; cut++)
		assert_int_equal (sp_cattr_primitive (x.b, cut, "Default", &kind, value, &err), -1);
	assert_int_equal (sp_cattr_primitive (x.b, x.n, "Default", &kind, value, &err), 1);
	assert_int_equal (kind, SP_KIND_R8);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_former_names_as_mcs_writes_them),
		cmocka_unit_test (test_other_arguments_around_it),
		cmocka_unit_test (test_malformed_blobs),
		cmocka_unit_test (test_bool_and_boxed_arguments),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
