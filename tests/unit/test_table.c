/*
 * test_table.c: a restore's tables (sp-table.h): zeroed and writable to
 * their last byte at every size, big ones mapped on a huge page's boundary
 * and not faulted in a page at a time as they are filled.
 */
#include "unit.h"
#include "sp-table.h"

#include <stdint.h>

/* Every byte zero (a page's first, and the last), then each writable. */
static void
check_zeroed_and_writable (uint8_t *t, size_t bytes)
{
	for (size_t i = 0; i < bytes; i += 4096)
		assert_int_equal (t [i], 0);
	assert_int_equal (t [bytes - 1], 0);
	memset (t, 0x5a, bytes);
	assert_int_equal (t [bytes - 1], 0x5a);
}

static void
test_table_sizes_around_the_huge_page (void **state)
{
	(void)state;
	const size_t sizes [] = { 1, 4095, 4097, SP_TABLE_HUGE - 1, SP_TABLE_HUGE, SP_TABLE_HUGE + 1, 3 * SP_TABLE_HUGE + 12345 };
	for (size_t k = 0; k < sizeof sizes / sizeof *sizes; k++) {
		uint8_t *t = sp_table_alloc (sizes [k]);
		assert_non_null (t);
		check_zeroed_and_writable (t, sizes [k]);
		sp_table_free (t, sizes [k]);
	}
	/* Again, where the last ones were freed: still zero. */
	uint8_t *t = sp_table_alloc (SP_TABLE_HUGE + 1);
	check_zeroed_and_writable (t, SP_TABLE_HUGE + 1);
	sp_table_free (t, SP_TABLE_HUGE + 1);
	sp_table_free (NULL, SP_TABLE_HUGE);
	sp_table_free (NULL, 16);
}

/* A big table starts on a huge page (else THP could give its first and last 2 MB no huge page). */
static void
test_table_big_is_aligned (void **state)
{
	(void)state;
#ifdef __linux__
	for (int i = 0; i < 4; i++) {
		size_t bytes = SP_TABLE_HUGE + (size_t)i * 4096 * 3;
		uint8_t *t = sp_table_alloc (bytes);
		assert_non_null (t);
		assert_int_equal ((uintptr_t)t % SP_TABLE_HUGE, 0);
		sp_table_free (t, bytes);
	}
#else
	skip ();
#endif
}

/* Filling a big table faults far less than once a page: it came populated, or in huge pages. */
static void
test_table_big_does_not_fault_page_by_page (void **state)
{
	(void)state;
#ifdef __linux__
	size_t bytes = 8u << 20;   /* 2,048 pages */
	uint8_t *t = sp_table_alloc (bytes);
	assert_non_null (t);
	long before = unit_minor_faults ();
	for (size_t i = 0; i < bytes; i += 4096)
		t [i] = 1;
	long faults = unit_minor_faults () - before;
	/* AddressSanitizer's shadow of it (256 pages) may fault; the table's own pages must not. */
	if (faults >= 2048 / 4)
		fail_msg ("%ld faults filling 2,048 pages", faults);
	sp_table_free (t, bytes);
#else
	skip ();
#endif
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_table_sizes_around_the_huge_page),
		cmocka_unit_test (test_table_big_is_aligned),
		cmocka_unit_test (test_table_big_does_not_fault_page_by_page),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
