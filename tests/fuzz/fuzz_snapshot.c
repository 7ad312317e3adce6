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
 * trailer counts.
 */
#include "sp-crc32c.h"
#include "sp-snapshot.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct Restore {
	void **objects;          /* [1..nobjects] */
	uint32_t nobjects;
	uint32_t created;
	SpClass *live;           /* [1..nclasses]: made from the snapshot's classes */
	uint32_t nlive;
	uint32_t resolved;
} Restore;

static int
fuzz_begin (void *ctx, const SpSnapTrailer *t, SpError *err)
{
	Restore *r = ctx;
	r->objects = calloc ((size_t)t->nobjects + 1, sizeof *r->objects);
	r->live = calloc ((size_t)t->nclasses + 1, sizeof *r->live);
	if (!r->objects || !r->live)
		return sp_error_set (err, "out of memory");
	r->nobjects = t->nobjects;
	r->nlive = t->nclasses;
	return 0;
}

static int
fuzz_resolve (void *ctx, SpSnapClass *c, SpError *err)
{
	Restore *r = ctx;
	if (r->resolved >= r->nlive)
		return sp_error_set (err, "more classes than the trailer said");
	SpClass *live = &r->live [++r->resolved];
	live->kind = c->kind;
	live->name = c->name;
	live->nfields = c->nfields;
	live->fields = calloc (c->nfields ? c->nfields : 1, sizeof *live->fields);
	if (!live->fields)
		return sp_error_set (err, "out of memory");
	for (uint32_t i = 0; i < c->nfields; i++) {
		live->fields [i] = c->fields [i];
		live->fields [i].offset = 8 * i;
	}
	live->elem_size = 8 * (c->nfields ? c->nfields : 1);
	c->resolved = live;
	return 0;
}

static void *
fuzz_create (void *ctx, uint32_t lid, const SpSnapClass *c, uint64_t length, SpError *err)
{
	Restore *r = ctx;
	if (lid == 0 || lid > r->nobjects || r->objects [lid])
		return sp_error_set (err, "object %u created twice or out of range", lid), NULL;
	size_t unit = c ? ((SpClass *)c->resolved)->elem_size : 2;
	size_t n = c && c->kind == SP_CLASS_OBJECT ? 1 : (size_t)length;
	if (n > (64u << 20) / unit)                     /* the walk bounds lengths by the input: a big one is a finding */
		abort ();
	r->objects [lid] = calloc (n ? n : 1, unit);
	if (!r->objects [lid])
		return sp_error_set (err, "out of memory"), NULL;
	r->created++;
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
	void *target = lid ? r->objects [lid] : NULL;
	memcpy (slot, &target, sizeof target);
	return 0;
}

static const SpDecodeOps fuzz_ops = {
	.begin = fuzz_begin,
	.resolve = fuzz_resolve,
	.create = fuzz_create,
	.base = fuzz_base,
	.store_ref = fuzz_store_ref,
};

static void
restore_free (Restore *r)
{
	for (uint32_t i = 1; r->objects && i <= r->nobjects; i++)
		free (r->objects [i]);
	for (uint32_t i = 1; r->live && i <= r->nlive; i++)
		free (r->live [i].fields);
	free (r->objects);
	free (r->live);
}

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
	/* A valid snapshot decodes (every class is live here); an invalid one never does. */
	if ((parsed == 0) != (decoded == 0))
		abort ();
	if (decoded == 0 && r.created != r.nobjects)
		abort ();
	restore_free (&r);
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
		free (fixed);
	}
	return 0;
}
