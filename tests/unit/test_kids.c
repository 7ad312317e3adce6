/*
 * test_kids.c: the children's LIDs marking records (sp-kids.h).  The writer
 * trusts a record instead of looking the children up, so the properties
 * under test are that a record reads back exactly as committed, whatever the
 * LIDs and sizes (chunk edges included); that a reservation is nobody's until
 * committed; that nothing survives a reset; and that what cannot be recorded
 * is refused rather than recorded wrongly.
 */
#include "unit.h"

#include <glib.h>

#include "sp-kids.h"

#define LOG_CHUNK (1u << SP_KIDS_LOG_BITS)

/* Record object lid with n children whose LIDs are lid * 1000 + j; true if recorded. */
static bool
record (SpKids *k, uint32_t lid, uint32_t n)
{
	uint32_t *slots = sp_kids_reserve (k, n);
	if (!slots)
		return false;
	for (uint32_t j = 0; j < n; j++)
		slots [j] = lid * 1000 + j;
	return sp_kids_commit (k, lid, n) == 0;
}

static void
assert_record (const SpKids *k, uint32_t lid, uint32_t n)
{
	const uint32_t *kids = sp_kids_of (k, lid);
	assert_non_null (kids);
	for (uint32_t j = 0; j < n; j++)
		assert_int_equal (kids [j], lid * 1000 + j);
}

static void
test_records_read_back (void **state)
{
	(void)state;
	GRand *r = g_rand_new_with_seed (7);
	SpKids k;
	sp_kids_init (&k);
	/* Enough records of 1..40 children to fill several chunks of both tables, LIDs with gaps. */
	enum { N = 20000 };
	uint32_t *lids = calloc (N, sizeof *lids), *sizes = calloc (N, sizeof *sizes);
	assert_non_null (lids);
	assert_non_null (sizes);
	uint32_t lid = 1;
	for (int i = 0; i < N; i++) {
		lids [i] = lid;
		sizes [i] = (uint32_t)g_rand_int_range (r, 1, 41);
		assert_true (record (&k, lid, sizes [i]));
		lid += (uint32_t)g_rand_int_range (r, 1, 4);
	}
	assert_true (k.nlog > 3);
	assert_true (k.nat > 3);
	for (int i = 0; i < N; i++)
		assert_record (&k, lids [i], sizes [i]);
	/* The LIDs in the gaps have no record. */
	for (int i = 0; i + 1 < N; i++)
		for (uint32_t between = lids [i] + 1; between < lids [i + 1]; between++)
			assert_null (sp_kids_of (&k, between));
	assert_null (sp_kids_of (&k, lid + (1u << 20)));
	sp_kids_free (&k);
	free (lids);
	free (sizes);
	g_rand_free (r);
}

static void
test_record_never_straddles_chunks (void **state)
{
	(void)state;
	SpKids k;
	sp_kids_init (&k);
	/* Fill the first chunk but for 3 slots, then ask for 5: they start the next chunk. */
	assert_true (record (&k, 1, LOG_CHUNK - 3));
	uint32_t *slots = sp_kids_reserve (&k, 5);
	assert_non_null (slots);
	assert_ptr_equal (slots, k.log [1]);
	for (uint32_t j = 0; j < 5; j++)
		slots [j] = 2000 + j;
	assert_int_equal (sp_kids_commit (&k, 2, 5), 0);
	assert_record (&k, 1, LOG_CHUNK - 3);
	assert_record (&k, 2, 5);
	/* A record as long as a chunk fits; longer is refused, and so is an empty one. */
	assert_true (record (&k, 3, LOG_CHUNK));
	assert_record (&k, 3, LOG_CHUNK);
	assert_null (sp_kids_reserve (&k, LOG_CHUNK + 1));
	assert_null (sp_kids_reserve (&k, 0));
	sp_kids_free (&k);
}

static void
test_uncommitted_is_nobodys (void **state)
{
	(void)state;
	SpKids k;
	sp_kids_init (&k);
	assert_true (record (&k, 1, 3));
	/* A marking step that failed half-way: slots reserved and filled, never committed. */
	uint32_t *slots = sp_kids_reserve (&k, 4);
	assert_non_null (slots);
	slots [0] = slots [1] = 0xdead;
	assert_null (sp_kids_of (&k, 2));
	/* The next record takes the same room, and the first is untouched. */
	assert_true (record (&k, 3, 4));
	assert_ptr_equal (sp_kids_of (&k, 3), slots);
	assert_record (&k, 1, 3);
	assert_record (&k, 3, 4);
	assert_null (sp_kids_of (&k, 2));
	sp_kids_free (&k);
}

static void
test_reset_forgets_everything (void **state)
{
	(void)state;
	SpKids k;
	sp_kids_init (&k);
	for (uint32_t lid = 1; lid <= 10000; lid++)
		assert_true (record (&k, lid, 2));
	size_t nat = k.nat, nlog = k.nlog;
	sp_kids_reset (&k);
	for (uint32_t lid = 0; lid <= 10001; lid++)
		assert_null (sp_kids_of (&k, lid));
	/* The next snapshot reuses the chunks, from the start. */
	assert_true (record (&k, 5, 3));
	assert_ptr_equal (sp_kids_of (&k, 5), k.log [0]);
	assert_record (&k, 5, 3);
	assert_int_equal (k.nat, nat);
	assert_int_equal (k.nlog, nlog);
	sp_kids_free (&k);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_records_read_back),
		cmocka_unit_test (test_record_never_straddles_chunks),
		cmocka_unit_test (test_uncommitted_is_nobodys),
		cmocka_unit_test (test_reset_forgets_everything),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
