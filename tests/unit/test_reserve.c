/*
 * test_reserve.c: SpReserve, the array that grows in place (sp-reserve.h):
 * nothing moves, contents stay, new bytes read zero, growth touches no page,
 * the reservation's limit is refused.
 */
#include "unit.h"
#include "sp-reserve.h"

static void
test_reserve_grows_in_place (void **state)
{
	(void)state;
	SpReserve r = { 0 };
	assert_int_equal (sp_reserve_grow (&r, 100, 64u << 20), 0);
	assert_non_null (r.base);
	assert_true (r.cap >= 100);
	uint8_t *base = r.base;
	memset (r.base, 0xa5, r.cap);
	size_t old_cap = r.cap;
	assert_int_equal (sp_reserve_grow (&r, 10u << 20, 64u << 20), 0);
	assert_ptr_equal (r.base, base);                 /* nothing moved */
	assert_true (r.cap >= 10u << 20);
	for (size_t i = 0; i < old_cap; i++)
		assert_int_equal (r.base [i], 0xa5);      /* contents kept */
	for (size_t i = old_cap; i < r.cap; i += 4096)
		assert_int_equal (r.base [i], 0);         /* new bytes zero */
	/* Asking for no more than the capacity changes nothing. */
	size_t cap = r.cap;
	assert_int_equal (sp_reserve_grow (&r, 5, 64u << 20), 0);
	assert_int_equal (r.cap, cap);
	sp_reserve_free (&r);
	assert_null (r.base);
}

/* Growing costs a system call, not a fault per page: pages come as they are touched. */
static void
test_reserve_growth_touches_no_page (void **state)
{
	(void)state;
	SpReserve r = { 0 };
	assert_int_equal (sp_reserve_grow (&r, 1, 256u << 20), 0);
	long before = unit_minor_faults ();
	assert_int_equal (sp_reserve_grow (&r, 128u << 20, 256u << 20), 0);
	assert_true (unit_minor_faults () - before < 16);
	before = unit_minor_faults ();
	for (size_t i = 0; i < (8u << 20); i += 4096)
		r.base [i] = 1;
	long faults = unit_minor_faults () - before;
	/* 2,048 pages touched: one fault each (and some for AddressSanitizer's shadow, when built with it). */
	if (faults < 1024 || faults > 2048 + 2048 / 2)
		fail_msg ("%ld faults touching 2,048 pages", faults);
	sp_reserve_free (&r);
}

static void
test_reserve_refuses_beyond_its_limit (void **state)
{
	(void)state;
	SpReserve r = { 0 };
	assert_int_equal (sp_reserve_grow (&r, 4096, 1u << 20), 0);
	assert_int_equal (sp_reserve_grow (&r, 1u << 20, 1u << 20), 0);
	assert_int_equal (r.cap, 1u << 20);
	size_t cap = r.cap;
	assert_int_equal (sp_reserve_grow (&r, (1u << 20) + 1, 1u << 20), -1);
	assert_int_equal (r.cap, cap);                    /* refused: as it was */
	r.base [cap - 1] = 7;
	sp_reserve_free (&r);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_reserve_grows_in_place),
		cmocka_unit_test (test_reserve_growth_touches_no_page),
		cmocka_unit_test (test_reserve_refuses_beyond_its_limit),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
