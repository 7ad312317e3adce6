/* test_cards.c: sp-cards.h, the card hashes of long arrays that deltas patch by. */
#include "unit.h"

#include "sp-cards.h"

#define BYTES (10 * SP_CARD_BYTES + 100)   /* a short last card */

static uint8_t *
filled (unsigned seed)
{
	uint8_t *d = malloc (BYTES);
	for (size_t i = 0; i < BYTES; i++)
		d [i] = (uint8_t)(i * 31 + seed);
	return d;
}

/* Which cards of data (the array's bytes now) differ from what c was fed: a bit each, card 0 lowest. */
static uint64_t
differing (const SpCards *c, const uint8_t *data)
{
	uint64_t bits = 0;
	for (uint32_t k = 0; k < c->ncards; k++)
		if (sp_cards_card_differs (c, k, data + (uint64_t)k * SP_CARD_BYTES))
			bits |= 1ull << k;
	return bits;
}

/* Fed whole, or in pieces of any size in order: the same hashes; nothing differs from what was fed. */
static void
test_pieces_hash_as_whole (void **state)
{
	(void)state;
	uint8_t *d = filled (1);
	SpCards *whole = sp_cards_new (BYTES), *pieces = sp_cards_new (BYTES);
	assert_int_equal (whole->ncards, 11);
	sp_cards_feed (whole, 0, d, BYTES);
	static const size_t cuts [] = { 1, 7, 4095, 4096, 4097, 1000, 3 };
	for (size_t at = 0, i = 0; at < BYTES; i++) {
		size_t n = cuts [i % 7] < BYTES - at ? cuts [i % 7] : BYTES - at;
		sp_cards_feed (pieces, at, d + at, n);
		at += n;
	}
	assert_memory_equal (whole->crc, pieces->crc, whole->ncards * sizeof whole->crc [0]);
	assert_int_equal (differing (whole, d), 0);
	free (whole);
	free (pieces);
	free (d);
}

/* One byte changed in cards 3 and 4 and the last: exactly those differ. */
static void
test_changed_cards_are_found (void **state)
{
	(void)state;
	uint8_t *d = filled (2);
	SpCards *c = sp_cards_new (BYTES);
	sp_cards_feed (c, 0, d, BYTES);
	d [3 * SP_CARD_BYTES + 17] ^= 1;
	d [5 * SP_CARD_BYTES - 1] ^= 0x80;
	d [BYTES - 1] ^= 4;
	assert_int_equal (differing (c, d), 1u << 3 | 1u << 4 | 1u << 10);
	/* Fed again from the changed bytes, they match again. */
	sp_cards_feed (c, 3 * SP_CARD_BYTES, d + 3 * SP_CARD_BYTES, 2 * SP_CARD_BYTES);
	sp_cards_feed (c, 10 * SP_CARD_BYTES, d + 10 * SP_CARD_BYTES, 100);
	assert_int_equal (differing (c, d), 0);
	free (c);
	free (d);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_pieces_hash_as_whole),
		cmocka_unit_test (test_changed_cards_are_found),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
