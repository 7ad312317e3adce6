/*
 * test_storelog.c: the log of stores no barrier saw, against a model that
 * keeps every store.  Memory is laid out like a heap: objects with a 16-byte
 * header, stores only into their bodies, never across two.
 */
#include "unit.h"

#include <glib.h>

#include "sp-storelog.h"

#define HEADER 16u

typedef struct {
	uintptr_t lo, hi;          /* the object, header included */
} Obj;

typedef struct {
	uintptr_t lo, len;         /* len SP_STORELOG_REST: to the end of the object */
} Store;

/* n objects of sizes 24..(24 + 8 * spread) bytes from a fake base address, packed. */
static Obj *
make_heap (GRand *r, uint32_t n, uint32_t spread, uintptr_t base)
{
	Obj *objs = calloc (n, sizeof *objs);
	assert_non_null (objs);
	uintptr_t at = base;
	for (uint32_t i = 0; i < n; i++) {
		uintptr_t size = HEADER + 8 + 8 * (uintptr_t)g_rand_int_range (r, 0, (gint32)spread + 1);
		objs [i] = (Obj) { at, at + size };
		at += size;
	}
	return objs;
}

/* The model's answer: did a store touch [from, to) of o? */
static bool
model_touches (const GArray *stores, const Obj *o, uintptr_t from, uintptr_t to)
{
	for (guint i = 0; i < stores->len; i++) {
		const Store *s = &g_array_index (stores, Store, i);
		if (s->len == SP_STORELOG_REST) {
			if (s->lo >= o->lo && s->lo < o->hi && s->lo < to)
				return true;
		} else if (s->lo < to && s->lo + s->len > from) {
			return true;
		}
	}
	return false;
}

static void
log_store (SpStoreLog *log, GArray *stores, uintptr_t lo, uintptr_t len)
{
	assert_true (sp_storelog_add (log, lo, len));
	Store s = { lo, len };
	g_array_append_val (stores, s);
}

/* A store of 1, 2, 4 or 8 bytes somewhere in o's body. */
static void
random_store (GRand *r, SpStoreLog *log, GArray *stores, const Obj *o)
{
	uintptr_t body = o->lo + HEADER, size = 1u << g_rand_int_range (r, 0, 4);
	uintptr_t room = o->hi - body - size;
	log_store (log, stores, body + (uintptr_t)g_rand_int_range (r, 0, (gint32)room + 1), size);
}

/* Sequential stores of `step` bytes through all of o's body, as a span loop does. */
static void
sweep_stores (SpStoreLog *log, GArray *stores, const Obj *o, uintptr_t step)
{
	for (uintptr_t p = o->lo + HEADER; p + step <= o->hi; p += step)
		log_store (log, stores, p, step);
}

/*
 * Every object asked whole: exactly the model (ranges never cross objects);
 * pieces of 64 bytes and more: never a store missed.
 */
static void
check_against_model (GRand *r, const SpStoreLog *log, const GArray *stores, const Obj *objs, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		const Obj *o = &objs [i];
		bool want = model_touches (stores, o, o->lo, o->hi);
		if (sp_storelog_touches (log, o->lo, o->hi, o->lo, o->hi) != want) {
			print_error ("object %u [%#lx, %#lx): log says %d, model %d\n", i, (unsigned long)o->lo, (unsigned long)o->hi, !want, want);
			fail ();
		}
		if (o->hi - o->lo < 64 + HEADER)
			continue;
		uintptr_t from = o->lo + HEADER + 8 * (uintptr_t)g_rand_int_range (r, 0, (gint32)((o->hi - o->lo - HEADER - 64) / 8) + 1);
		if (model_touches (stores, o, from, from + 64))
			assert_true (sp_storelog_touches (log, o->lo, o->hi, from, from + 64));
	}
}

static void
test_random_stores_match_the_model (void **state)
{
	(void)state;
	GRand *r = g_rand_new_with_seed (11);
	for (int round = 0; round < 20; round++) {
		const uint32_t n = 3000;
		/* Near the top of the address space in some rounds: no page arithmetic may wrap. */
		uintptr_t base = round % 4 == 3 ? UINTPTR_MAX - 64 * 1024 * 1024 : 0x7f0000001000u + (uintptr_t)round * 4096;
		Obj *objs = make_heap (r, n, round % 2 ? 4 : 600, base);
		SpStoreLog log;
		assert_int_equal (sp_storelog_init (&log, 100000), 0);
		GArray *stores = g_array_new (FALSE, FALSE, sizeof (Store));
		for (int k = 0; k < 400; k++) {
			const Obj *o = &objs [g_rand_int_range (r, 0, (gint32)n)];
			switch (g_rand_int_range (r, 0, 8)) {
			case 0: sweep_stores (&log, stores, o, 4); break;
			case 1: sweep_stores (&log, stores, o, 8); break;
			case 2: log_store (&log, stores, o->lo + HEADER + (uintptr_t)g_rand_int_range (r, 0, (gint32)(o->hi - o->lo - HEADER)), SP_STORELOG_REST); break;
			default: random_store (r, &log, stores, o); break;
			}
		}
		check_against_model (r, &log, stores, objs, n);
		sp_storelog_clear (&log);
		for (uint32_t i = 0; i < n; i++)
			assert_false (sp_storelog_touches (&log, objs [i].lo, objs [i].hi, objs [i].lo, objs [i].hi));
		g_array_free (stores, TRUE);
		sp_storelog_destroy (&log);
		free (objs);
	}
	g_rand_free (r);
}

/* A span loop over a 40 MB array is one range, found from any piece it reached and from none it did not. */
static void
test_long_sweep_is_one_range (void **state)
{
	(void)state;
	SpStoreLog log;
	assert_int_equal (sp_storelog_init (&log, 16), 0);
	Obj big = { 0x7f0000000000u, 0x7f0000000000u + HEADER + 16 + 40u * 1024 * 1024 };
	uintptr_t data = big.lo + HEADER + 16, half = data + 20u * 1024 * 1024;
	for (uintptr_t p = data; p < half; p += 4)
		assert_true (sp_storelog_add (&log, p, 4));
	assert_int_equal (log.count, 1);
	assert_int_equal (log.nlong, 1);
	for (uintptr_t piece = data; piece < big.hi; piece += 32768) {
		bool reached = piece < half;
		assert_int_equal (sp_storelog_touches (&log, big.lo, big.hi, piece, piece + 32768), reached);
	}
	sp_storelog_destroy (&log);
}

/* REST (a pointer handed to native code): every piece from the store on, none before, no other object. */
static void
test_rest_of_object (void **state)
{
	(void)state;
	SpStoreLog log;
	assert_int_equal (sp_storelog_init (&log, 16), 0);
	Obj a = { 0x10000, 0x10000 + 100000 }, b = { a.hi, a.hi + 64 };
	uintptr_t at = a.lo + 50000;
	assert_true (sp_storelog_add (&log, at, SP_STORELOG_REST));
	assert_true (sp_storelog_add (&log, at, SP_STORELOG_REST));   /* the same again: no second range */
	assert_int_equal (log.count, 1);
	assert_false (sp_storelog_touches (&log, a.lo, a.hi, a.lo + HEADER, at));
	assert_true (sp_storelog_touches (&log, a.lo, a.hi, at, at + 8));
	assert_true (sp_storelog_touches (&log, a.lo, a.hi, a.hi - 8, a.hi));
	assert_false (sp_storelog_touches (&log, b.lo, b.hi, b.lo, b.hi));
	sp_storelog_destroy (&log);
}

/* Full: the store that does not fit is refused, and every check after says "may have changed" until cleared. */
static void
test_overflow_answers_yes_until_cleared (void **state)
{
	(void)state;
	SpStoreLog log;
	assert_int_equal (sp_storelog_init (&log, 8), 0);
	for (uintptr_t i = 0; i < 8; i++)
		assert_true (sp_storelog_add (&log, 0x100000 + i * 4096, 4));
	assert_false (sp_storelog_add (&log, 0x900000, 4));
	assert_true (log.overflowed);
	assert_true (sp_storelog_touches (&log, 0x500000, 0x500040, 0x500000, 0x500040));
	sp_storelog_clear (&log);
	assert_false (sp_storelog_touches (&log, 0x100000, 0x100040, 0x100000, 0x100040));
	assert_true (sp_storelog_add (&log, 0x900000, 4));
	sp_storelog_destroy (&log);
	/* Long ranges are scanned by every check: past SP_STORELOG_LONG_MAX of them the log overflows too. */
	assert_int_equal (sp_storelog_init (&log, 4 * SP_STORELOG_LONG_MAX), 0);
	for (uintptr_t i = 0; i < SP_STORELOG_LONG_MAX; i++)
		assert_true (sp_storelog_add (&log, 0x100000 + i * 65536, 2 * SP_STORELOG_PAGE));
	assert_false (log.overflowed);
	/* ... also when a range grows long by merging. */
	for (uintptr_t p = 0x90000000; p < 0x90000000 + SP_STORELOG_PAGE; p += 8)
		assert_true (sp_storelog_add (&log, p, 8));
	assert_false (sp_storelog_add (&log, 0x90000000 + SP_STORELOG_PAGE, 8));
	assert_true (log.overflowed);
	assert_true (sp_storelog_touches (&log, 0x500000, 0x500040, 0x500000, 0x500040));
	sp_storelog_destroy (&log);
}

/* Clearing by generation: when the generation wraps, no slot of long ago may look current. */
static void
test_generation_wrap (void **state)
{
	(void)state;
	SpStoreLog log;
	assert_int_equal (sp_storelog_init (&log, 8), 0);
	log.gen = UINT32_MAX;
	assert_true (sp_storelog_add (&log, 0x200010, 4));
	assert_true (sp_storelog_touches (&log, 0x200000, 0x200040, 0x200000, 0x200040));
	sp_storelog_clear (&log);                 /* gen wraps to 0: slots zeroed, gen 1 */
	assert_int_equal (log.gen, 1);
	assert_false (sp_storelog_touches (&log, 0x200000, 0x200040, 0x200000, 0x200040));
	for (uint32_t g = 1; g < 5; g++)
		sp_storelog_clear (&log);
	assert_false (sp_storelog_touches (&log, 0x200000, 0x200040, 0x200000, 0x200040));
	sp_storelog_destroy (&log);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_random_stores_match_the_model),
		cmocka_unit_test (test_long_sweep_is_one_range),
		cmocka_unit_test (test_rest_of_object),
		cmocka_unit_test (test_overflow_answers_yes_until_cleared),
		cmocka_unit_test (test_generation_wrap),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
