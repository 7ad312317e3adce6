/*
 * test_wset.c: the written set (sp-wset.h).  A barrier trusts a "present"
 * answer without the lock and lets its store land, so the property under test
 * is that the set never answers "present" for an object not added in the
 * running cycle at the current GC epoch: not after the cycle ends, not for
 * an address an object had before a collection, not after the 16-bit stamps
 * have gone round, not while an add runs on another thread.
 */
#include "unit.h"

#include <glib.h>
#include <pthread.h>
#include <sched.h>

#include "sp-wset.h"

#define BASE ((uintptr_t)0x7f1200000000ull)

/* The address of fake object i: objects of 24..88 bytes packed from BASE, as a heap lays them out. */
static uintptr_t *
make_objects (GRand *r, size_t n)
{
	uintptr_t *at = calloc (n, sizeof *at);
	assert_non_null (at);
	uintptr_t next = BASE;
	for (size_t i = 0; i < n; i++) {
		at [i] = next;
		next += 24 + 8 * (uintptr_t)g_rand_int_range (r, 0, 9);
	}
	return at;
}

static const void *
ptr (uintptr_t a)
{
	return (const void *)a;
}

static void
test_added_are_present_others_absent (void **state)
{
	(void)state;
	GRand *r = g_rand_new_with_seed (1);
	uintptr_t *objs = make_objects (r, 20000);
	SpWrittenSet ws;
	assert_int_equal (sp_wset_init (&ws, 16), 0);
	assert_false (sp_wset_has (&ws, ptr (objs [0]), 7));          /* no cycle open */
	sp_wset_open (&ws, 7);
	for (size_t i = 0; i < 20000; i += 2)
		sp_wset_add (&ws, ptr (objs [i]), 7);
	for (size_t i = 0; i < 20000; i++)
		assert_int_equal (sp_wset_has (&ws, ptr (objs [i]), 7), i % 2 == 0);
	assert_false (sp_wset_has (&ws, NULL, 7));
	sp_wset_free (&ws);
	free (objs);
	g_rand_free (r);
}

static void
test_next_cycle_and_moved_objects_start_empty (void **state)
{
	(void)state;
	SpWrittenSet ws;
	assert_int_equal (sp_wset_init (&ws, 12), 0);
	const void *a = ptr (BASE + 64), *b = ptr (BASE + 128);
	sp_wset_open (&ws, 100);
	sp_wset_add (&ws, a, 100);
	assert_true (sp_wset_has (&ws, a, 100));
	/* A collection: a may have moved and another object may be at its address now. */
	assert_false (sp_wset_has (&ws, a, 101));
	sp_wset_add (&ws, b, 101);
	assert_true (sp_wset_has (&ws, b, 101));
	assert_false (sp_wset_has (&ws, b, 102));
	sp_wset_close (&ws, 101);
	assert_false (sp_wset_has (&ws, a, 101));                     /* closed */
	/* The next cycle, in the same GC epoch: nothing of the last one counts. */
	sp_wset_open (&ws, 101);
	assert_false (sp_wset_has (&ws, a, 101));
	assert_false (sp_wset_has (&ws, b, 101));
	sp_wset_add (&ws, b, 101);
	assert_true (sp_wset_has (&ws, b, 101));
	/* Too many collections in one cycle for the stamps: the set stops answering. */
	assert_false (sp_wset_has (&ws, b, 101 + SP_WSET_MAX_EPOCHS + 1));
	sp_wset_add (&ws, a, 101 + SP_WSET_MAX_EPOCHS + 1);
	assert_false (sp_wset_has (&ws, a, 101 + SP_WSET_MAX_EPOCHS + 1));
	sp_wset_free (&ws);
}

/*
 * An entry is added once, then cycles pass (each using the most GC epochs a
 * cycle may) without touching its slot.  In every later cycle, at the GC
 * epoch whose 16-bit stamp equals the entry's, the entry must not be found:
 * the table is cleared before the stamps wrap onto it.
 */
static void
test_stamps_never_wrap_onto_an_entry (void **state)
{
	(void)state;
	SpWrittenSet ws;
	assert_int_equal (sp_wset_init (&ws, 10), 0);
	const void *a = ptr (BASE + 4096);
	uint32_t epoch = 5;
	sp_wset_open (&ws, epoch);
	sp_wset_add (&ws, a, epoch);
	uint16_t stamp = (uint16_t)ws.stamp_base;
	sp_wset_close (&ws, epoch);
	int aliased_checks = 0;
	for (int cycle = 0; cycle < 40; cycle++) {
		sp_wset_open (&ws, epoch);
		uint16_t offset = (uint16_t)(stamp - (uint16_t)ws.stamp_base);
		if (offset <= SP_WSET_MAX_EPOCHS) {
			assert_false (sp_wset_has (&ws, a, epoch + offset));
			aliased_checks++;
		}
		epoch += SP_WSET_MAX_EPOCHS;
		sp_wset_close (&ws, epoch);
	}
	assert_true (aliased_checks >= 5);
	sp_wset_free (&ws);
}

/* A full table drops adds; it never answers "present" wrongly, and never loops. */
static void
test_full_table_drops_adds (void **state)
{
	(void)state;
	GRand *r = g_rand_new_with_seed (2);
	uintptr_t *objs = make_objects (r, 50000);
	SpWrittenSet ws;
	assert_int_equal (sp_wset_init (&ws, 10), 0);               /* 1,024 slots */
	for (int cycle = 0; cycle < 3; cycle++) {
		sp_wset_open (&ws, 9);
		size_t found = 0;
		for (size_t i = 0; i < 50000; i += 3)
			sp_wset_add (&ws, ptr (objs [i]), 9);
		for (size_t i = 0; i < 50000; i++) {
			bool has = sp_wset_has (&ws, ptr (objs [i]), 9);
			assert_true (!has || i % 3 == 0);
			found += has;
		}
		assert_true (found > 100 && found <= 1024);
		sp_wset_close (&ws, 9);
	}
	sp_wset_free (&ws);
	free (objs);
	g_rand_free (r);
}

/* ---- lookups on other threads while adds run ---- */

typedef struct {
	SpWrittenSet *ws;
	uintptr_t *objs;            /* even indices are added in order, odd ones never */
	size_t n;
	size_t adding;              /* atomic: objects [0, adding) may have been added (set before each add) */
	bool done;                  /* atomic */
} Race;

typedef struct {
	Race *race;
	size_t hits, wrong;         /* wrong: present but never added, or before its add began */
} Reader;

static void *
race_reader (void *arg)
{
	Reader *me = arg;
	Race *rc = me->race;
	GRand *r = g_rand_new_with_seed ((guint32)(uintptr_t)arg);
	while (!__atomic_load_n (&rc->done, __ATOMIC_ACQUIRE)) {
		size_t i = (size_t)g_rand_int_range (r, 0, (gint32)rc->n);
		if (!sp_wset_has (rc->ws, ptr (rc->objs [i]), 3))
			continue;
		me->hits++;
		if (i % 2 != 0 || i >= __atomic_load_n (&rc->adding, __ATOMIC_ACQUIRE))
			me->wrong++;
	}
	g_rand_free (r);
	return NULL;
}

static void
test_lookups_during_adds (void **state)
{
	(void)state;
	GRand *r = g_rand_new_with_seed (3);
	SpWrittenSet ws;
	assert_int_equal (sp_wset_init (&ws, 17), 0);
	Race rc = { .ws = &ws, .objs = make_objects (r, 200000), .n = 200000 };
	sp_wset_open (&ws, 3);
	pthread_t threads [2];
	Reader readers [2] = { { .race = &rc }, { .race = &rc } };
	for (int t = 0; t < 2; t++)
		assert_int_equal (pthread_create (&threads [t], NULL, race_reader, &readers [t]), 0);
	for (size_t i = 0; i < rc.n; i += 2) {
		__atomic_store_n (&rc.adding, i + 1, __ATOMIC_RELEASE);
		sp_wset_add (&ws, ptr (rc.objs [i]), 3);
		if (i % 1024 == 0)
			sched_yield ();        /* let the readers run in the middle of the adds, also on one CPU */
	}
	g_usleep (20000);
	__atomic_store_n (&rc.done, true, __ATOMIC_RELEASE);
	for (int t = 0; t < 2; t++)
		assert_int_equal (pthread_join (threads [t], NULL), 0);
	assert_int_equal (readers [0].wrong + readers [1].wrong, 0);
	assert_true (readers [0].hits + readers [1].hits > 0);
	sp_wset_free (&ws);
	free (rc.objs);
	g_rand_free (r);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_added_are_present_others_absent),
		cmocka_unit_test (test_next_cycle_and_moved_objects_start_empty),
		cmocka_unit_test (test_stamps_never_wrap_onto_an_entry),
		cmocka_unit_test (test_full_table_drops_adds),
		cmocka_unit_test (test_lookups_during_adds),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
