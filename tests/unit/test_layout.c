/*
 * test_layout.c: the serializer's primitive windows (sp_prim_windows_build,
 * sp_prim_windows_to_wire) write the same wire block as the copies per width
 * (sp_prims_to_wire), for any layout of an instance's leaves, and never read
 * outside the instance; the decoder's fills (sp_prim_fills_build,
 * sp_prim_fills_from_wire) leave a new instance as the copies per width
 * (sp_prims_from_wire) do.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* MAP_ANONYMOUS */
#endif
#include "unit.h"

#include <sys/mman.h>
#include <unistd.h>

#include "sp-layout.h"

#define HEADER 16           /* an object's header, before its first leaf */
#define MAX_INSTANCE 256

/* A random layout: up to SP_PLAN_LEAVES leaves of random kinds, each at an offset aligned to its size, not overlapping. */
static uint32_t
random_layout (SpField *fields, uint32_t first_offset, unsigned *seed)
{
	uint32_t n = 1 + (uint32_t)rand_r (seed) % SP_PLAN_LEAVES;
	uint8_t used [MAX_INSTANCE] = { 0 };
	uint32_t placed = 0;
	for (uint32_t i = 0; i < n; i++) {
		unsigned kind = SP_KIND_BOOL + (unsigned)rand_r (seed) % (SP_KIND_R8 - SP_KIND_BOOL + 1);
		unsigned size = sp_kind_size (kind);
		for (int tries = 0; tries < 64; tries++) {
			uint32_t slots = (MAX_INSTANCE - first_offset) / size;
			uint32_t offset = first_offset + (uint32_t)rand_r (seed) % slots * size;
			offset -= offset % size;
			if (offset < first_offset || memchr (used + offset, 1, size))
				continue;
			memset (used + offset, 1, size);
			fields [placed++] = (SpField){ .name = "f", .offset = offset, .kind = (uint8_t)kind };
			break;
		}
	}
	return placed;
}

/* A class's primitive copies and windows, as the serializer's plan holds them (sp_ser_plan). */
typedef struct Plan {
	SpPrimCopy copy [SP_PLAN_LEAVES];
	uint32_t end [SP_COPY_GROUPS];
	SpPrimWindow windows [SP_PLAN_LEAVES + 3];
	uint32_t bytes, nwindows;
} Plan;

static void
plan_build (Plan *p, const SpField *fields, uint32_t nfields)
{
	p->bytes = sp_prim_copies_build (p->copy, p->end, fields, nfields);
	p->nwindows = sp_prim_windows_build (p->windows, p->copy, p->end, p->bytes);
}

static void
plan_windows_to_wire (const Plan *p, const uint8_t *instance, uint8_t *wire)
{
	sp_prim_windows_to_wire (p->windows, p->nwindows, p->copy + p->end [SP_COPY_1], p->copy + p->end [SP_COPY_BOOL], instance, wire);
}

/* Both ways of writing the block of `fields` from `instance` agree, up to its size; the windows' count is a multiple of 4. */
static void
assert_windows_agree (const SpField *fields, uint32_t nfields, const uint8_t *instance)
{
	Plan p;
	plan_build (&p, fields, nfields);
	if (p.end [SP_COPY_1] == 0) {
		assert_int_equal (p.nwindows, 0);        /* booleans only: the copies do it */
		return;
	}
	assert_int_not_equal (p.nwindows, 0);
	assert_int_equal (p.nwindows % 4, 0);
	uint8_t by_width [SP_PLAN_LEAVES * 8], by_window [SP_PLAN_LEAVES * 8 + SP_PRIM_WINDOW_SLACK];
	memset (by_width, 0xa5, sizeof by_width);
	memset (by_window, 0x5a, sizeof by_window);
	sp_prims_to_wire (p.copy, p.end, instance, by_width);
	plan_windows_to_wire (&p, instance, by_window);
	assert_memory_equal (by_width, by_window, p.bytes);
}

static void
test_windows_write_what_the_copies_write (void **state)
{
	(void)state;
	unsigned seed = 20261129;
	for (int round = 0; round < 2000; round++) {
		SpField fields [SP_PLAN_LEAVES];
		uint32_t n = random_layout (fields, HEADER, &seed);
		uint8_t instance [MAX_INSTANCE];
		for (size_t i = 0; i < sizeof instance; i++)
			instance [i] = (uint8_t)rand_r (&seed);   /* booleans too: any byte, written 0 or 1 */
		assert_windows_agree (fields, n, instance);
	}
}

/* The tree node of bench/run-tree.sh as Mono lays it out: declaration order is not memory order. */
static void
test_windows_of_a_tree_node (void **state)
{
	(void)state;
	const SpField fields [] = {
		{ .name = "Key", .offset = 56, .kind = SP_KIND_I4 },
		{ .name = "Stamp", .offset = 40, .kind = SP_KIND_I8 },
		{ .name = "Weight", .offset = 48, .kind = SP_KIND_R8 },
		{ .name = "Red", .offset = 62, .kind = SP_KIND_BOOL },
		{ .name = "Depth", .offset = 60, .kind = SP_KIND_I2 },
	};
	uint8_t instance [64];
	for (size_t i = 0; i < sizeof instance; i++)
		instance [i] = (uint8_t)(i * 37 + 11);
	assert_windows_agree (fields, 5, instance);
	/* The wire block by hand: Key, Stamp, Weight, Red (normalized), Depth, little-endian, packed. */
	Plan p;
	plan_build (&p, fields, 5);
	assert_int_equal (p.bytes, 4 + 8 + 8 + 1 + 2);
	uint8_t wire [64] = { 0 }, expected [23];
	plan_windows_to_wire (&p, instance, wire);
	memcpy (expected, instance + 56, 4);
	memcpy (expected + 4, instance + 40, 8);
	memcpy (expected + 12, instance + 48, 8);
	expected [20] = 1;
	memcpy (expected + 21, instance + 60, 2);
	assert_memory_equal (wire, expected, sizeof expected);
}

/* A leaf in an instance's first 8 bytes has no window ending at its end inside the instance: none are built. */
static void
test_no_windows_for_a_leaf_at_the_start (void **state)
{
	(void)state;
	const SpField fields [] = {
		{ .name = "a", .offset = 2, .kind = SP_KIND_I2 },
		{ .name = "b", .offset = 8, .kind = SP_KIND_I8 },
	};
	Plan p;
	plan_build (&p, fields, 2);
	assert_int_equal (p.nwindows, 0);
}

/*
 * An instance whose last leaf ends at the end of the mapped memory (an
 * inaccessible page after it): the windows read nothing past a leaf's end,
 * or the test crashes.
 */
static void
test_windows_read_inside_the_instance (void **state)
{
	(void)state;
	size_t page = (size_t)sysconf (_SC_PAGESIZE);
	uint8_t *map = mmap (NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true (map != MAP_FAILED);
	assert_int_equal (mprotect (map + page, page, PROT_NONE), 0);
	for (unsigned kind = SP_KIND_CHAR; kind <= SP_KIND_R8; kind++) {
		unsigned size = sp_kind_size (kind);
		uint8_t *instance = map + page - HEADER - size;
		const SpField fields [] = { { .name = "last", .offset = HEADER, .kind = (uint8_t)kind } };
		for (unsigned i = 0; i < HEADER + size; i++)
			instance [i] = (uint8_t)(i + kind);
		assert_windows_agree (fields, 1, instance);
	}
	munmap (map, 2 * page);
}

/*
 * The decoder's fills (sp_prim_fills_build, sp_prim_fills_from_wire) leave a
 * new instance exactly as the copies per width do: the leaves set, every
 * other byte (header, references, what follows) as it was.  Leaves and
 * references at random offsets after the header; the wire block inside a
 * buffer of random bytes (the fills read up to 7 bytes before a leaf).
 */
static void
test_fills_set_what_the_copies_set (void **state)
{
	(void)state;
	unsigned seed = 112926;
	int filled = 0;
	for (int round = 0; round < 2000; round++) {
		SpField fields [SP_PLAN_LEAVES];
		uint32_t n = random_layout (fields, HEADER, &seed);
		/* Some leaves become references (zero in a new instance, set by the fix-up). */
		for (uint32_t i = 0; i < n; i++)
			if (sp_kind_size (fields [i].kind) == 8 && rand_r (&seed) % 3 == 0)
				fields [i].kind = SP_KIND_REF;
		SpPrimCopy copy [SP_PLAN_LEAVES];
		uint32_t end [SP_COPY_GROUPS];
		SpPrimFill fills [SP_PLAN_LEAVES + 3];
		uint32_t bytes = sp_prim_copies_build (copy, end, fields, n);
		uint32_t nfills = sp_prim_fills_build (fills, copy, end, fields, n);
		if (!nfills)
			continue;
		filled++;
		assert_int_equal (nfills % 4, 0);
		uint8_t buffer [8 + SP_PLAN_LEAVES * 8 + 8];
		for (size_t i = 0; i < sizeof buffer; i++)
			buffer [i] = (uint8_t)rand_r (&seed);
		const uint8_t *wire = buffer + 8;
		(void)bytes;
		uint8_t by_width [MAX_INSTANCE + 16], by_fill [MAX_INSTANCE + 16];
		memset (by_width, 0, sizeof by_width);
		memset (by_width, 0xee, HEADER);          /* the header: never written */
		memcpy (by_fill, by_width, sizeof by_fill);
		sp_prims_from_wire (copy, end, wire, by_width);
		sp_prim_fills_from_wire (fills, nfills, copy + end [SP_COPY_1], copy + end [SP_COPY_BOOL], wire, by_fill);
		assert_memory_equal (by_width, by_fill, sizeof by_width);
	}
	assert_true (filled > 100);
}

/* A leaf whose fill would reach below the class's lowest leaf (into the header) gets none: the copies per width do it. */
static void
test_no_fills_below_the_lowest_leaf (void **state)
{
	(void)state;
	const SpField fields [] = {
		{ .name = "flag", .offset = HEADER, .kind = SP_KIND_U1 },
		{ .name = "big", .offset = HEADER + 8, .kind = SP_KIND_I8 },
	};
	SpPrimCopy copy [SP_PLAN_LEAVES];
	uint32_t end [SP_COPY_GROUPS];
	SpPrimFill fills [SP_PLAN_LEAVES + 3];
	(void)sp_prim_copies_build (copy, end, fields, 2);
	assert_int_equal (sp_prim_fills_build (fills, copy, end, fields, 2), 0);
	/* With a reference below it, the byte's fill lands on the reference's slot (zero until the fix-up): built. */
	const SpField with_ref [] = {
		{ .name = "next", .offset = HEADER, .kind = SP_KIND_REF },
		{ .name = "flag", .offset = HEADER + 8, .kind = SP_KIND_U1 },
	};
	(void)sp_prim_copies_build (copy, end, with_ref, 2);
	assert_int_equal (sp_prim_fills_build (fills, copy, end, with_ref, 2), 4);
}

/* Leaves that overlap, as System.Decimal's do: the windows agree with the copies per width; no fills are built. */
static void
test_overlapping_leaves (void **state)
{
	(void)state;
	const SpField fields [] = {
		{ .name = "flags", .offset = HEADER, .kind = SP_KIND_I4 },
		{ .name = "hi", .offset = HEADER + 4, .kind = SP_KIND_I4 },
		{ .name = "lo", .offset = HEADER + 8, .kind = SP_KIND_I4 },
		{ .name = "mid", .offset = HEADER + 12, .kind = SP_KIND_I4 },
		{ .name = "ulomidLE", .offset = HEADER + 8, .kind = SP_KIND_U8 },
	};
	uint8_t instance [HEADER + 16];
	for (size_t i = 0; i < sizeof instance; i++)
		instance [i] = (uint8_t)(0x80 + i);
	assert_windows_agree (fields, 5, instance);
	SpPrimCopy copy [SP_PLAN_LEAVES];
	uint32_t end [SP_COPY_GROUPS];
	SpPrimFill fills [SP_PLAN_LEAVES + 3];
	(void)sp_prim_copies_build (copy, end, fields, 5);
	assert_int_equal (sp_prim_fills_build (fills, copy, end, fields, 5), 0);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_windows_write_what_the_copies_write),
		cmocka_unit_test (test_windows_of_a_tree_node),
		cmocka_unit_test (test_no_windows_for_a_leaf_at_the_start),
		cmocka_unit_test (test_windows_read_inside_the_instance),
		cmocka_unit_test (test_fills_set_what_the_copies_set),
		cmocka_unit_test (test_no_fills_below_the_lowest_leaf),
		cmocka_unit_test (test_overlapping_leaves),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
