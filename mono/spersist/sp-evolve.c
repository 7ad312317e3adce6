/* sp-evolve.c: see sp-evolve.h. */
#include "sp-evolve.h"
#include "sp-walk.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the rules ----------------------------------------------------------------- */

#define K(k) (1u << SP_KIND_##k)

/* [from]: the kinds that hold every value of it (C#'s lossless implicit conversions; not long -> double). */
static const uint16_t sp_evolve_wider [SP_KIND_LAST + 1] = {
	[SP_KIND_CHAR] = K (U2) | K (I4) | K (U4) | K (I8) | K (U8) | K (R4) | K (R8),
	[SP_KIND_I1] = K (I2) | K (I4) | K (I8) | K (R4) | K (R8),
	[SP_KIND_U1] = K (I2) | K (U2) | K (I4) | K (U4) | K (I8) | K (U8) | K (R4) | K (R8),
	[SP_KIND_I2] = K (I4) | K (I8) | K (R4) | K (R8),
	[SP_KIND_U2] = K (I4) | K (U4) | K (I8) | K (U8) | K (R4) | K (R8),
	[SP_KIND_I4] = K (I8) | K (R8),
	[SP_KIND_U4] = K (I8) | K (U8) | K (R8),
	[SP_KIND_R4] = K (R8),
};

#undef K

bool
sp_evolve_widens (unsigned from, unsigned to)
{
	if (!sp_kind_valid (from) || !sp_kind_valid (to))
		return false;
	return from == to || (sp_evolve_wider [from] >> to & 1);
}

static bool
sp_kind_is_signed (unsigned k)
{
	return k == SP_KIND_I1 || k == SP_KIND_I2 || k == SP_KIND_I4 || k == SP_KIND_I8;
}

/* One value of kind `from` (wire order) stored as kind `to` (host order); sp_evolve_widens (from, to) holds. */
static void
sp_evolve_convert (uint8_t *dst, unsigned to, const uint8_t *src, unsigned from)
{
	uint8_t host [8] = { 0 };
	sp_kind_copy (host, src, from);
	double d = 0;
	int64_t s = 0;
	uint64_t u = 0;
	switch (from) {
	case SP_KIND_I1: { int8_t v; memcpy (&v, host, 1); s = v; break; }
	case SP_KIND_I2: { int16_t v; memcpy (&v, host, 2); s = v; break; }
	case SP_KIND_I4: { int32_t v; memcpy (&v, host, 4); s = v; break; }
	case SP_KIND_U1: { uint8_t v; memcpy (&v, host, 1); u = v; break; }
	case SP_KIND_CHAR:
	case SP_KIND_U2: { uint16_t v; memcpy (&v, host, 2); u = v; break; }
	case SP_KIND_U4: { uint32_t v; memcpy (&v, host, 4); u = v; break; }
	case SP_KIND_R4: { float v; memcpy (&v, host, 4); d = v; break; }
	default: return;        /* nothing wider than the rest (sp_evolve_wider) */
	}
	bool is_float = from == SP_KIND_R4;
	if (!is_float && !sp_kind_is_signed (from))
		s = (int64_t)u;     /* unsigned sources fit int64 (at most 32 bits) */
	double as_double = is_float ? d : (double)s;
	switch (to) {
	case SP_KIND_R4: { float v = (float)as_double; memcpy (dst, &v, 4); break; }
	case SP_KIND_R8: memcpy (dst, &as_double, 8); break;
	case SP_KIND_I2: case SP_KIND_U2: case SP_KIND_CHAR: { uint16_t v = (uint16_t)s; memcpy (dst, &v, 2); break; }
	case SP_KIND_I4: case SP_KIND_U4: { uint32_t v = (uint32_t)s; memcpy (dst, &v, 4); break; }
	case SP_KIND_I8: case SP_KIND_U8: memcpy (dst, &s, 8); break;
	default: break;
	}
}

void
sp_evolved_primitives (const SpSnapClass *c, const uint8_t *src, uint8_t *dst)
{
	for (uint32_t i = 0; i < c->nprims; i++) {
		unsigned from = c->prim_kinds [i], to = c->prim_live_kinds [i];
		if (to == from)
			sp_kind_copy (dst + c->prim_offsets [i], src, from);
		else if (to)
			sp_evolve_convert (dst + c->prim_offsets [i], to, src, from);
		src += sp_kind_size (from);
	}
	for (uint32_t i = 0; i < c->ndefaults; i++)
		memcpy (dst + c->defaults [i]->offset, c->defaults [i]->default_value, sp_kind_size (c->defaults [i]->kind));
}

void
sp_evolve_old_leaves (const SpSnapClass *c, const uint8_t *values, SpOldLeafFn fn, void *ctx)
{
	const uint8_t *p = values, *refs = values + c->prim_bytes;
	for (uint32_t i = 0; c->leaf_changed && i < c->nfields; i++) {
		const SpField *f = &c->fields [i];
		if (f->kind == SP_KIND_REF) {
			uint32_t lid = (uint32_t)sp_trusted_varint (&refs);
			if (c->leaf_changed [i])
				fn (ctx, f, NULL, lid);
			continue;
		}
		if (c->leaf_changed [i])
			fn (ctx, f, p, 0);
		p += sp_kind_size (f->kind);
	}
}

void
sp_evolve_dropped_values (const SpSnapClass *c, const uint8_t *values, uint8_t *prims, uint32_t *lids)
{
	const uint8_t *p = values, *refs = values + c->prim_bytes;
	for (uint32_t i = 0; c->leaf_changed && i < c->nfields; i++) {
		const SpField *f = &c->fields [i];
		bool dropped = c->leaf_changed [i] == SP_LEAF_DROPPED;
		if (f->kind == SP_KIND_REF) {
			uint32_t lid = (uint32_t)sp_trusted_varint (&refs);
			if (dropped)
				*lids++ = lid;
			continue;
		}
		if (dropped) {
			memcpy (prims, p, sp_kind_size (f->kind));
			prims += sp_kind_size (f->kind);
		}
		p += sp_kind_size (f->kind);
	}
}

/* ---- the plan ------------------------------------------------------------------ */

/* The same leaves in the same order, each of the same kind (and declared type): the plain plan. */
static bool
sp_evolve_exact (const SpSnapClass *sc, const SpClass *live)
{
	SpError unused = { 0 };
	return sp_snapshot_class_matches (sc, live, &unused) == 0;
}

static const SpField *
sp_evolve_find (const SpField *fields, uint32_t n, const char *name)
{
	for (uint32_t i = 0; i < n; i++)
		if (strcmp (fields [i].name, name) == 0)
			return &fields [i];
	return NULL;
}

/* Is `name` one of f's former names (a '\n'-separated list)? */
static bool
sp_evolve_was_named (const SpField *f, const char *name)
{
	size_t n = strlen (name);
	for (const char *p = f->former_names; p && *p; p += strcspn (p, "\n") + (p [strcspn (p, "\n")] != 0))
		if (strcspn (p, "\n") == n && strncmp (p, name, n) == 0)
			return true;
	return false;
}

/*
 * The live leaf a snapshot leaf restores into: the one of its name, else one
 * that declares it a former name, unless the snapshot also has a leaf of
 * that one's present name (which then restores into it).
 */
static const SpField *
sp_evolve_match (const SpSnapClass *sc, const SpClass *live, const char *name)
{
	const SpField *b = sp_evolve_find (live->fields, live->nfields, name);
	for (uint32_t i = 0; !b && i < live->nfields; i++)
		if (sp_evolve_was_named (&live->fields [i], name) && !sp_evolve_find (sc->fields, sc->nfields, live->fields [i].name))
			b = &live->fields [i];
	return b;
}

/* Does some leaf of the snapshot restore into live leaf b? */
static bool
sp_evolve_matched (const SpSnapClass *sc, const SpClass *live, const SpField *b)
{
	for (uint32_t i = 0; i < sc->nfields; i++)
		if (sp_evolve_match (sc, live, sc->fields [i].name) == b)
			return true;
	return false;
}

/* What the plan says changed, for the program's log and spdump (a growing string; NULL once out of memory). */
typedef struct SpEvolveLog {
	char *text;
	size_t len;
	bool oom;
} SpEvolveLog;

static void
sp_evolve_note (SpEvolveLog *log, const char *fmt, ...)
{
	char line [512];
	va_list ap;
	va_start (ap, fmt);
	int n = vsnprintf (line, sizeof line, fmt, ap);
	va_end (ap);
	if (n < 0 || log->oom)
		return;
	size_t add = strlen (line) + (log->len ? 2 : 0);
	char *grown = realloc (log->text, log->len + add + 1);
	if (!grown) {
		log->oom = true;
		return;
	}
	snprintf (grown + log->len, add + 1, "%s%s", log->len ? "; " : "", line);
	log->text = grown;
	log->len += add;
}

static const char *
sp_evolve_kind_name (const SpField *f)
{
	return f->kind == SP_KIND_REF ? (f->type_name ? f->type_name : "a reference") : sp_kind_name (f->kind);
}

/* Leaf a of the snapshot against b, the live leaf of the same name: refused unless the rules allow. */
static int
sp_evolve_check_leaf (const SpSnapClass *sc, const SpField *a, const SpField *b, SpError *err)
{
	const char *was = sp_evolve_kind_name (a), *is = sp_evolve_kind_name (b);
	if (a->kind == SP_KIND_REF && b->kind == SP_KIND_REF) {
		if (strcmp (a->type_name, b->type_name ? b->type_name : "") == 0)
			return 0;
		return sp_error_set (err, "class %s: field '%s' refers to %s in the snapshot but to %s in the loaded class: "
				     "a reference field keeps its declared type from version to version; declare it %s again, "
				     "or give the new field another name (it then starts null)", sc->name, a->name, was, is, was);
	}
	if ((a->kind == SP_KIND_REF) != (b->kind == SP_KIND_REF))
		return sp_error_set (err, "class %s: field '%s' is %s in the snapshot but %s in the loaded class: "
				     "a field cannot change between a value and a reference; declare it %s again, "
				     "or give the new field another name (it then starts at its default)", sc->name, a->name,
				     was, is, was);
	if (sp_evolve_widens (a->kind, b->kind))
		return 0;
	return sp_error_set (err, "class %s: field '%s' is %s in the snapshot but %s in the loaded class: "
			     "%s cannot hold every %s value (only widening restores: sbyte -> short -> int -> long, "
			     "byte -> ushort -> uint -> ulong, float -> double, and the like); declare it %s again, "
			     "or give the new field another name (it then starts at its default)",
			     sc->name, a->name, was, is, is, was, was);
}

/* A snapshot class naming one leaf twice is not one this program wrote (the class map has unique names). */
static int
sp_evolve_unique (const SpSnapClass *sc, SpError *err)
{
	for (uint32_t i = 0; i < sc->nfields; i++)
		if (sp_evolve_find (sc->fields, i, sc->fields [i].name))
			return sp_error_set (err, "the snapshot's class %s names field '%s' twice", sc->name, sc->fields [i].name);
	return 0;
}

/* A primitive's value (host order) as C# would write it, for the log. */
static void
sp_evolve_format_value (char *out, size_t size, unsigned kind, const uint8_t *v)
{
	union { int8_t i1; uint8_t u1; int16_t i2; uint16_t u2; int32_t i4; uint32_t u4; int64_t i8; uint64_t u8; float r4; double r8; } x;
	memcpy (&x, v, sp_kind_size (kind));
	switch (kind) {
	case SP_KIND_BOOL: snprintf (out, size, "%s", x.u1 ? "true" : "false"); break;
	case SP_KIND_CHAR: snprintf (out, size, "U+%04X", x.u2); break;
	case SP_KIND_I1: snprintf (out, size, "%d", x.i1); break;
	case SP_KIND_U1: snprintf (out, size, "%u", x.u1); break;
	case SP_KIND_I2: snprintf (out, size, "%d", x.i2); break;
	case SP_KIND_U2: snprintf (out, size, "%u", x.u2); break;
	case SP_KIND_I4: snprintf (out, size, "%d", x.i4); break;
	case SP_KIND_U4: snprintf (out, size, "%u", x.u4); break;
	case SP_KIND_I8: snprintf (out, size, "%lld", (long long)x.i8); break;
	case SP_KIND_U8: snprintf (out, size, "%llu", (unsigned long long)x.u8); break;
	case SP_KIND_R4: snprintf (out, size, "%.9g", x.r4); break;
	default: snprintf (out, size, "%.17g", x.r8); break;
	}
}

/* The live leaves no snapshot leaf restores into: they start at their Default, or 0 / null. */
static int
sp_evolve_plan_added (SpSnapClass *c, const SpClass *live, SpEvolveLog *log, SpError *err)
{
	c->ndefaults = 0;
	c->defaults = malloc ((live->nfields + 1) * sizeof *c->defaults);
	if (!c->defaults)
		return sp_error_set (err, "out of memory planning class %s", c->name);
	for (uint32_t i = 0; i < live->nfields; i++) {
		const SpField *f = &live->fields [i];
		if (sp_evolve_matched (c, live, f))
			continue;
		char value [64] = "0";
		if (f->kind == SP_KIND_REF)
			snprintf (value, sizeof value, "null");
		else if (f->default_value)
			sp_evolve_format_value (value, sizeof value, f->kind, f->default_value);
		if (f->kind != SP_KIND_REF && f->default_value)
			c->defaults [c->ndefaults++] = f;
		sp_evolve_note (log, "field '%s' (%s) is new: %s%s", f->name, sp_evolve_kind_name (f), value,
				f->default_value ? " (its Default)" : "");
	}
	return 0;
}

/* The plan by name: every snapshot leaf in wire order (its primitives, then its references), each kept or dropped. */
static int
sp_evolve_plan_leaves (SpSnapClass *c, const SpClass *live, SpEvolveLog *log, SpError *err)
{
	c->prim_kinds = malloc (c->nfields + 1);
	c->prim_live_kinds = malloc (c->nfields + 1);
	c->prim_offsets = malloc ((c->nfields + 1) * sizeof *c->prim_offsets);
	c->ref_fields = malloc ((c->nfields + 1) * sizeof *c->ref_fields);
	c->leaf_changed = calloc (c->nfields + 1, 1);
	if (!c->prim_kinds || !c->prim_live_kinds || !c->prim_offsets || !c->ref_fields || !c->leaf_changed)
		return sp_error_set (err, "out of memory planning class %s", c->name);
	c->nprims = c->nrefs = 0;
	for (uint32_t i = 0; i < c->nfields; i++) {
		const SpField *a = &c->fields [i];
		const SpField *b = sp_evolve_match (c, live, a->name);
		if (b && sp_evolve_check_leaf (c, a, b, err) < 0)
			return -1;
		if (!b && c->keep_unknown)
			sp_evolve_note (log, "field '%s' (%s) is not in the loaded class: kept as unknown data "
					"(a version that has it gets it back)", a->name, sp_evolve_kind_name (a));
		else if (!b)
			sp_evolve_note (log, "field '%s' (%s) is gone: its value is dropped", a->name, sp_evolve_kind_name (a));
		if (!b && c->keep_unknown)
			c->keep_old = true;
		if (b && strcmp (a->name, b->name) != 0)
			sp_evolve_note (log, "field '%s' is now '%s'", a->name, b->name);
		if (b && a->kind != b->kind)
			sp_evolve_note (log, "field '%s' %s -> %s", b->name, sp_kind_name (a->kind), sp_kind_name (b->kind));
		c->leaf_changed [i] = !b ? SP_LEAF_DROPPED : a->kind != b->kind || strcmp (a->name, b->name) != 0;
		if (a->kind == SP_KIND_REF) {
			c->ref_fields [c->nrefs++] = b;
			continue;
		}
		c->prim_kinds [c->nprims] = a->kind;
		c->prim_live_kinds [c->nprims] = b ? b->kind : 0;
		c->prim_offsets [c->nprims++] = b ? b->offset : 0;
	}
	return sp_evolve_plan_added (c, live, log, err);
}

int
sp_snapshot_plan (SpSnapClass *c, const SpClass *live, SpError *err)
{
	if (sp_evolve_exact (c, live))
		return sp_snapshot_plan_primitives (c, live, err);
	if (sp_evolve_unique (c, err) < 0)
		return -1;
	SpEvolveLog log = { 0 };
	if (sp_evolve_plan_leaves (c, live, &log, err) < 0) {
		free (log.text);
		return -1;
	}
	if (log.oom || !log.text) {
		free (log.text);
		/* Reordered leaves only, or no memory for the words: the plan stands either way. */
		log.text = strdup (log.oom ? "changed" : "fields reordered");
		if (!log.text)
			return sp_error_set (err, "out of memory planning class %s", c->name);
	}
	c->evolution = log.text;
	return 0;
}

/* ---- unknown data -------------------------------------------------------------- */

void
sp_evolve_unknown_free (SpUnknown *u)
{
	if (!u)
		return;
	for (uint32_t i = 0; u->leaves && i < u->nleaves; i++) {
		free ((char *)u->leaves [i].name);
		free ((char *)u->leaves [i].type_name);
	}
	free (u->leaves);
	free (u);
}

static int
sp_evolve_unknown_add (SpUnknown *u, const SpField *leaf)
{
	SpField *grown = realloc (u->leaves, (u->nleaves + 1) * sizeof *grown);
	if (!grown)
		return -1;
	u->leaves = grown;
	SpField *f = &u->leaves [u->nleaves];
	*f = (SpField){ .name = strdup (leaf->name), .kind = leaf->kind,
			.type_name = leaf->type_name ? strdup (leaf->type_name) : NULL };
	if (!f->name || (leaf->type_name && !f->type_name)) {
		free ((char *)f->name);
		free ((char *)f->type_name);
		return -1;
	}
	u->nleaves++;
	if (leaf->kind == SP_KIND_REF)
		u->nrefs++;
	else
		u->prim_bytes += sp_kind_size (leaf->kind), u->nprims++;
	return 0;
}

/* A fresh SpUnknown holding live's own leaves (names and kinds; offsets do not matter in a class record). */
static SpUnknown *
sp_evolve_unknown_new (const SpClass *live)
{
	SpUnknown *u = calloc (1, sizeof *u);
	for (uint32_t i = 0; u && i < live->nfields; i++) {
		if (sp_evolve_unknown_add (u, &live->fields [i]) < 0) {
			sp_evolve_unknown_free (u);
			return NULL;
		}
	}
	if (u)
		u->nrefs = u->nprims = u->prim_bytes = 0;     /* they count the unknown leaves only */
	return u;
}

int
sp_evolve_unknown_merge (SpUnknown **into, const SpSnapClass *c, const SpClass *live, SpError *err)
{
	if (!*into && !(*into = sp_evolve_unknown_new (live)))
		return sp_error_set (err, "out of memory keeping the unknown data of class %s", c->name);
	SpUnknown *u = *into;
	for (uint32_t i = 0; i < c->nfields; i++) {
		const SpField *a = &c->fields [i];
		if (sp_evolve_match (c, live, a->name) || sp_evolve_find (u->leaves, u->nleaves, a->name))
			continue;
		if (u->nleaves >= SP_MAX_FIELDS)
			return sp_error_set (err, "class %s would carry more than %u leaves of unknown data", c->name, SP_MAX_FIELDS);
		if (sp_evolve_unknown_add (u, a) < 0)
			return sp_error_set (err, "out of memory keeping the unknown data of class %s", c->name);
	}
	return 0;
}

const SpField *
sp_evolve_unknown_leaf (const SpUnknown *u, const SpClass *live, const char *name, uint32_t *index)
{
	for (uint32_t i = live->nfields; i < u->nleaves; i++)
		if (strcmp (u->leaves [i].name, name) == 0) {
			*index = i;
			return &u->leaves [i];
		}
	return NULL;
}

/* ---- explicit defaults ----------------------------------------------------------- */

static bool
sp_kind_is_integral (unsigned k)
{
	return k >= SP_KIND_CHAR && k <= SP_KIND_U8;
}

/* The range of integral kind k. */
static void
sp_kind_range (unsigned k, long double *lo, long double *hi)
{
	static const long double ranges [SP_KIND_LAST + 1][2] = {
		[SP_KIND_CHAR] = { 0, 65535 }, [SP_KIND_I1] = { -128, 127 }, [SP_KIND_U1] = { 0, 255 },
		[SP_KIND_I2] = { -32768, 32767 }, [SP_KIND_U2] = { 0, 65535 },
		[SP_KIND_I4] = { -2147483648.0L, 2147483647.0L }, [SP_KIND_U4] = { 0, 4294967295.0L },
		[SP_KIND_I8] = { -9223372036854775808.0L, 9223372036854775807.0L }, [SP_KIND_U8] = { 0, 18446744073709551615.0L },
	};
	*lo = ranges [k][0];
	*hi = ranges [k][1];
}

/* A numeric value of kind k (host order), exactly (long double holds every int64 and uint64). */
static long double
sp_kind_number (unsigned k, const uint8_t *host)
{
	switch (k) {
	case SP_KIND_I1: { int8_t x; memcpy (&x, host, 1); return x; }
	case SP_KIND_I2: { int16_t x; memcpy (&x, host, 2); return x; }
	case SP_KIND_I4: { int32_t x; memcpy (&x, host, 4); return x; }
	case SP_KIND_I8: { int64_t x; memcpy (&x, host, 8); return x; }
	case SP_KIND_U1: { uint8_t x; memcpy (&x, host, 1); return x; }
	case SP_KIND_CHAR:
	case SP_KIND_U2: { uint16_t x; memcpy (&x, host, 2); return x; }
	case SP_KIND_U4: { uint32_t x; memcpy (&x, host, 4); return x; }
	case SP_KIND_U8: { uint64_t x; memcpy (&x, host, 8); return x; }
	case SP_KIND_R4: { float x; memcpy (&x, host, 4); return x; }
	default: { double x; memcpy (&x, host, 8); return x; }
	}
}

int
sp_evolve_default_value (const SpField *f, unsigned from, const uint8_t value [8], uint8_t out [8], SpError *err)
{
	unsigned to = f->kind;
	memset (out, 0, 8);
	if (!sp_kind_valid (from) || from == SP_KIND_REF)
		return sp_error_set (err, "field %s: its Default is not a number, bool or char", f->name);
	uint8_t host [8] = { 0 };
	sp_kind_copy (host, value, from);
	if (from == to) {
		memcpy (out, host, sp_kind_size (to));
		return 0;
	}
	bool fits_kind = to != SP_KIND_REF && to != SP_KIND_BOOL && from != SP_KIND_BOOL &&
		(sp_kind_is_integral (from) || !sp_kind_is_integral (to));
	if (!fits_kind)
		return sp_error_set (err, "field %s (%s): its Default is a %s, which it cannot hold (give a value of its type)",
				     f->name, to == SP_KIND_REF ? "a reference" : sp_kind_name (to), sp_kind_name (from));
	long double v = sp_kind_number (from, host);
	if (to == SP_KIND_R4) {
		float x = (float)v;
		memcpy (out, &x, 4);
		return 0;
	}
	if (to == SP_KIND_R8) {
		double x = (double)v;
		memcpy (out, &x, 8);
		return 0;
	}
	long double lo, hi;
	sp_kind_range (to, &lo, &hi);
	if (v < lo || v > hi)
		return sp_error_set (err, "field %s (%s): its Default %.0Lf is out of its range", f->name, sp_kind_name (to), v);
	/* In range: the two's-complement low bytes are the value, whatever the kind's sign. */
	uint64_t bits = v < 0 ? (uint64_t)(int64_t)v : (uint64_t)v;
	uint8_t le [8];
	for (int i = 0; i < 8; i++)
		le [i] = (uint8_t)(bits >> (8 * i));
	sp_kind_copy (out, le, to);
	return 0;
}
