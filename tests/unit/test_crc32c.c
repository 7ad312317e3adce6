/* test_crc32c.c: CRC-32C against the published check values and a bit-at-a-time reference. */
#include "unit.h"

#include <limits.h>

#include "sp-crc32c.h"

/* Bit-at-a-time reference, straight from the definition (reflected polynomial 0x82F63B78). */
static uint32_t
crc32c_reference (uint32_t crc, const uint8_t *p, size_t n)
{
	crc = ~crc;
	while (n--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = (crc & 1) ? (crc >> 1) ^ 0x82F63B78u : crc >> 1;
	}
	return ~crc;
}

static uint64_t rng_state = 0x243F6A8885A308D3ull;

static uint8_t
rng_byte (void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (uint8_t)(rng_state >> 24);
}

static void
test_check_value (void **state)
{
	(void)state;
	/* The published check value of CRC-32C (iSCSI, RFC 3720). */
	assert_int_equal (sp_crc32c (0, "123456789", 9), 0xE3069283u);
	/* RFC 3720 B.4 test vectors: 32 bytes of zeros, of 0xFF, ascending, descending. */
	uint8_t buf [32];
	memset (buf, 0, sizeof buf);
	assert_int_equal (sp_crc32c (0, buf, 32), 0x8A9136AAu);
	memset (buf, 0xff, sizeof buf);
	assert_int_equal (sp_crc32c (0, buf, 32), 0x62A8AB43u);
	for (int i = 0; i < 32; i++)
		buf [i] = (uint8_t)i;
	assert_int_equal (sp_crc32c (0, buf, 32), 0x46DD794Eu);
	for (int i = 0; i < 32; i++)
		buf [i] = (uint8_t)(31 - i);
	assert_int_equal (sp_crc32c (0, buf, 32), 0x113FDB5Cu);
	/* Nothing: the initial value comes back. */
	assert_int_equal (sp_crc32c (0, buf, 0), 0);
	assert_int_equal (sp_crc32c (0x12345678u, buf, 0), 0x12345678u);
}

static void
test_reference_every_length_and_alignment (void **state)
{
	(void)state;
	static uint8_t storage [300 + 8 + 16];
	for (size_t i = 0; i < sizeof storage; i++)
		storage [i] = rng_byte ();
	for (size_t align = 0; align < 8; align++) {
		/* An 8-aligned base, then the wanted misalignment. */
		uint8_t *base = (uint8_t *)(((uintptr_t)storage + 7) & ~(uintptr_t)7) + align;
		for (size_t len = 0; len <= 300; len++) {
			uint32_t want = crc32c_reference (0, base, len);
			uint32_t got = sp_crc32c (0, base, len);
			if (got != want) {
				print_error ("len %zu align %zu: reference %08x, sp_crc32c %08x\n", len, align, want, got);
				fail ();
			}
			/* And from a non-zero running value. */
			assert_int_equal (sp_crc32c (0xdeadbeefu, base, len), crc32c_reference (0xdeadbeefu, base, len));
		}
	}
}

static void
test_two_parts_equal_one_pass (void **state)
{
	(void)state;
	uint8_t buf [300];
	for (size_t i = 0; i < sizeof buf; i++)
		buf [i] = rng_byte ();
	uint32_t whole = sp_crc32c (0, buf, sizeof buf);
	assert_int_equal (whole, crc32c_reference (0, buf, sizeof buf));
	for (size_t split = 0; split <= sizeof buf; split++) {
		uint32_t first = sp_crc32c (0, buf, split);
		assert_int_equal (sp_crc32c (first, buf + split, sizeof buf - split), whole);
	}
}

/* Past 2 GiB (ISA-L takes an int length): the same as two calls split below it. */
static void
test_longer_than_an_int (void **state)
{
	(void)state;
	size_t n = (size_t)INT_MAX + 4097;
	uint8_t *big = calloc (n, 1);   /* untouched zero pages: no memory is really used */
	assert_non_null (big);
	big [n - 1] = 1;
	uint32_t whole = sp_crc32c (0, big, n);
	size_t k = 1u << 20;
	assert_int_equal (sp_crc32c (sp_crc32c (0, big, k), big + k, n - k), whole);
	assert_int_not_equal (whole, sp_crc32c (0, big, n - 1));
	free (big);
}

static void
test_detects_every_single_bit_flip (void **state)
{
	(void)state;
	uint8_t buf [64];
	for (size_t i = 0; i < sizeof buf; i++)
		buf [i] = rng_byte ();
	uint32_t good = sp_crc32c (0, buf, sizeof buf);
	for (size_t bit = 0; bit < 8 * sizeof buf; bit++) {
		buf [bit / 8] ^= (uint8_t)(1u << (bit % 8));
		assert_int_not_equal (sp_crc32c (0, buf, sizeof buf), good);
		buf [bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_check_value),
		cmocka_unit_test (test_reference_every_length_and_alignment),
		cmocka_unit_test (test_two_parts_equal_one_pass),
		cmocka_unit_test (test_longer_than_an_int),
		cmocka_unit_test (test_detects_every_single_bit_flip),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
