/* sp-cattr.c: see sp-cattr.h. */
#include "sp-cattr.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

enum {
	SP_CATTR_BOOL = 0x02, SP_CATTR_CHAR = 0x03, SP_CATTR_I1 = 0x04, SP_CATTR_U1 = 0x05,
	SP_CATTR_I2 = 0x06, SP_CATTR_U2 = 0x07, SP_CATTR_I4 = 0x08, SP_CATTR_U4 = 0x09,
	SP_CATTR_I8 = 0x0a, SP_CATTR_U8 = 0x0b, SP_CATTR_R4 = 0x0c, SP_CATTR_R8 = 0x0d,
	SP_CATTR_STRING = 0x0e, SP_CATTR_SZARRAY = 0x1d, SP_CATTR_TYPE = 0x50, SP_CATTR_BOXED = 0x51,
	SP_CATTR_FIELD = 0x53, SP_CATTR_PROPERTY = 0x54,
};

typedef struct SpCattr {
	const uint8_t *p, *end;
	bool bad;
} SpCattr;

static bool
sp_cattr_take (SpCattr *r, size_t n, const uint8_t **at)
{
	if (r->bad || (size_t)(r->end - r->p) < n)
		return !(r->bad = true);
	*at = r->p;
	r->p += n;
	return true;
}

static uint32_t
sp_cattr_u (SpCattr *r, size_t n)
{
	const uint8_t *at;
	uint32_t v = 0;
	if (sp_cattr_take (r, n, &at))
		for (size_t i = 0; i < n; i++)
			v |= (uint32_t)at [i] << (8 * i);
	return v;
}

/* A SerString: *s and *n, or *s NULL for the null string (0xff). */
static void
sp_cattr_string (SpCattr *r, const uint8_t **s, uint32_t *n)
{
	*s = NULL;
	*n = 0;
	const uint8_t *b;
	if (!sp_cattr_take (r, 1, &b) || b [0] == 0xff)
		return;
	uint32_t len = b [0];
	if ((len & 0xc0) == 0x80) {
		len = (len & 0x3f) << 8 | sp_cattr_u (r, 1);
	} else if ((len & 0xe0) == 0xc0) {
		const uint8_t *more;
		if (sp_cattr_take (r, 3, &more))
			len = (uint32_t)(len & 0x1f) << 24 | (uint32_t)more [0] << 16 | (uint32_t)more [1] << 8 | more [2];
	} else if (len & 0x80) {
		r->bad = true;
	}
	*n = len;
	sp_cattr_take (r, len, s);
}

/* The size of a value of a primitive type, 0 for others. */
static size_t
sp_cattr_prim_size (uint8_t type)
{
	switch (type) {
	case SP_CATTR_BOOL: case SP_CATTR_I1: case SP_CATTR_U1: return 1;
	case SP_CATTR_CHAR: case SP_CATTR_I2: case SP_CATTR_U2: return 2;
	case SP_CATTR_I4: case SP_CATTR_U4: case SP_CATTR_R4: return 4;
	case SP_CATTR_I8: case SP_CATTR_U8: case SP_CATTR_R8: return 8;
	default: return 0;
	}
}

/* One element of `type` (string, type name or primitive): skipped, or kept into `into` (strings only). */
static void
sp_cattr_value (SpCattr *r, uint8_t type, char **into)
{
	const uint8_t *s;
	uint32_t n;
	if (type == SP_CATTR_STRING || type == SP_CATTR_TYPE) {
		sp_cattr_string (r, &s, &n);
		if (into && s && !r->bad && (*into = malloc (n + 1))) {
			memcpy (*into, s, n);
			(*into) [n] = '\0';
		}
	} else if (sp_cattr_prim_size (type)) {
		sp_cattr_take (r, sp_cattr_prim_size (type), &s);
	} else if (type == SP_CATTR_BOXED) {
		uint8_t tag = (uint8_t)sp_cattr_u (r, 1);     /* a boxed string or primitive names its type first */
		if (tag == SP_CATTR_BOXED || !(tag == SP_CATTR_STRING || tag == SP_CATTR_TYPE || sp_cattr_prim_size (tag)))
			r->bad = true;
		else
			sp_cattr_value (r, tag, NULL);
	} else {
		r->bad = true;          /* enums and boxed values name their types: not ours to read */
	}
}

void
sp_cattr_strings_free (char **strings)
{
	for (size_t i = 0; strings && strings [i]; i++)
		free (strings [i]);
	free (strings);
}

/* A named argument's value: kept (strings into *out) when `keep`, else skipped; the count kept. */
static int
sp_cattr_named_value (SpCattr *r, uint8_t type, uint8_t elem, bool keep, char ***out)
{
	uint32_t count = 1;
	if (type == SP_CATTR_SZARRAY) {
		count = sp_cattr_u (r, 4);
		if (count == 0xffffffffu)
			return 0;
		if (count > (size_t)(r->end - r->p))    /* every element takes a byte at least */
			r->bad = true;
		type = elem;
	}
	if (r->bad)
		return 0;
	char **strings = keep ? calloc ((size_t)count + 1, sizeof *strings) : NULL;
	if (keep && !strings)
		return -1;
	int kept = 0;
	for (uint32_t i = 0; i < count && !r->bad; i++) {
		sp_cattr_value (r, type, strings ? &strings [kept] : NULL);
		if (strings && strings [kept])
			kept++;
	}
	if (keep && (r->bad || kept == 0)) {
		sp_cattr_strings_free (strings);
		strings = NULL;
	}
	if (keep)
		*out = strings;
	return kept;
}

/* Read the value of the named argument looked for (its type, its array element type): 0, or -1 with err. */
typedef int (*SpCattrTake) (SpCattr *r, uint8_t type, uint8_t elem, void *ctx, SpError *err);

/*
 * Walk the named arguments of an attribute blob whose constructor takes no
 * arguments; `name`'s value is read by take, every other one skipped.  1:
 * found, 0: absent, -1: err says why (a malformed blob, or take's refusal).
 */
static int
sp_cattr_walk (const uint8_t *blob, size_t len, const char *name, SpCattrTake take, void *ctx, SpError *err)
{
	SpCattr r = { blob, blob + len, false };
	if (sp_cattr_u (&r, 2) != 0x0001 || r.bad)
		return sp_error_set (err, "a custom attribute's blob has no prolog");
	uint32_t nnamed = sp_cattr_u (&r, 2);
	int found = 0;
	for (uint32_t i = 0; i < nnamed && !r.bad; i++) {
		uint32_t what = sp_cattr_u (&r, 1), type = sp_cattr_u (&r, 1), elem = 0;
		if (type == SP_CATTR_SZARRAY)
			elem = sp_cattr_u (&r, 1);
		const uint8_t *arg;
		uint32_t arg_len;
		sp_cattr_string (&r, &arg, &arg_len);
		if (r.bad || (what != SP_CATTR_FIELD && what != SP_CATTR_PROPERTY) || !arg)
			break;
		if (arg_len != strlen (name) || memcmp (arg, name, arg_len) != 0) {
			if (sp_cattr_named_value (&r, (uint8_t)type, (uint8_t)elem, false, NULL) < 0)
				break;
			continue;
		}
		if (found)
			return sp_error_set (err, "a custom attribute gives %s twice", name);
		if (take (&r, (uint8_t)type, (uint8_t)elem, ctx, err) < 0)
			return -1;
		found = 1;
	}
	if (r.bad || r.p != r.end)
		return sp_error_set (err, "a custom attribute's blob is malformed");
	return found;
}

typedef struct SpCattrStrings {
	const char *name;
	char **strings;
	int count;
} SpCattrStrings;

static int
sp_cattr_take_strings (SpCattr *r, uint8_t type, uint8_t elem, void *ctx, SpError *err)
{
	SpCattrStrings *out = ctx;
	if (type != SP_CATTR_STRING && !(type == SP_CATTR_SZARRAY && elem == SP_CATTR_STRING))
		return sp_error_set (err, "a custom attribute's %s is not a string or string[]", out->name);
	out->count = sp_cattr_named_value (r, type, elem, true, &out->strings);
	return out->count < 0 ? sp_error_set (err, "out of memory reading a custom attribute") : 0;
}

int
sp_cattr_strings (const uint8_t *blob, size_t len, const char *name, char ***out, SpError *err)
{
	SpCattrStrings got = { .name = name };
	int rc = sp_cattr_walk (blob, len, name, sp_cattr_take_strings, &got, err);
	*out = rc > 0 ? got.strings : NULL;
	if (rc <= 0)
		sp_cattr_strings_free (got.strings);
	return rc < 0 ? -1 : rc > 0 ? got.count : 0;
}

typedef struct SpCattrBoxed {
	const char *name;
	uint8_t kind;
	uint8_t *value;
} SpCattrBoxed;

static int
sp_cattr_take_bool (SpCattr *r, uint8_t type, uint8_t elem, void *ctx, SpError *err)
{
	(void)elem;
	SpCattrBoxed *out = ctx;
	if (type != SP_CATTR_BOOL)
		return sp_error_set (err, "a custom attribute's %s is not a bool", out->name);
	out->value [0] = (uint8_t)(sp_cattr_u (r, 1) != 0);
	return 0;
}

int
sp_cattr_bool (const uint8_t *blob, size_t len, const char *name, bool *out, SpError *err)
{
	uint8_t v = 0;
	SpCattrBoxed got = { .name = name, .value = &v };
	int rc = sp_cattr_walk (blob, len, name, sp_cattr_take_bool, &got, err);
	*out = rc > 0 && v;
	return rc;
}

static int
sp_cattr_take_boxed (SpCattr *r, uint8_t type, uint8_t elem, void *ctx, SpError *err)
{
	(void)elem;
	SpCattrBoxed *out = ctx;
	uint8_t tag = type == SP_CATTR_BOXED ? (uint8_t)sp_cattr_u (r, 1) : type;
	size_t size = sp_cattr_prim_size (tag);
	if (r->bad)
		return 0;             /* the walk says malformed */
	if (!size)
		return sp_error_set (err, "a custom attribute's %s is not a number, bool or char (an enum's value is given "
				     "as its number: %s = (int)Mode.Auto)", out->name, out->name);
	const uint8_t *at;
	if (sp_cattr_take (r, size, &at)) {
		memset (out->value, 0, 8);
		memcpy (out->value, at, size);      /* little-endian in the blob */
		out->kind = (uint8_t)(tag - 1);     /* ELEMENT_TYPE_BOOLEAN (0x02) ... R8 (0x0d) are SpKind 1 ... 12 */
	}
	return 0;
}

int
sp_cattr_primitive (const uint8_t *blob, size_t len, const char *name, uint8_t *kind, uint8_t value [8], SpError *err)
{
	SpCattrBoxed got = { .name = name, .value = value };
	int rc = sp_cattr_walk (blob, len, name, sp_cattr_take_boxed, &got, err);
	*kind = rc > 0 ? got.kind : 0;
	return rc;
}
