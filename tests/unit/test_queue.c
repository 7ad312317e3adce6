/* test_queue.c: the LID FIFO, across growth and ring wrap-around. */
#include "unit.h"

#include "sp-queue.h"

static void
test_empty (void **state)
{
	(void)state;
	SpQueue q;
	sp_queue_init (&q);
	uint32_t item = 12345;
	assert_false (sp_queue_pop (&q, &item));
	assert_int_equal (item, 12345);
	assert_int_equal (sp_queue_count (&q), 0);
	assert_int_equal (sp_queue_push (&q, 7), 0);
	assert_true (sp_queue_pop (&q, &item));
	assert_int_equal (item, 7);
	assert_false (sp_queue_pop (&q, &item));
	sp_queue_free (&q);
}

static void
test_fifo_across_growth (void **state)
{
	(void)state;
	SpQueue q;
	sp_queue_init (&q);
	const uint32_t n = 100000;
	for (uint32_t i = 1; i <= n; i++) {
		assert_int_equal (sp_queue_push (&q, i * 3u), 0);
		assert_int_equal (sp_queue_count (&q), i);
	}
	for (uint32_t i = 1; i <= n; i++) {
		uint32_t item;
		assert_true (sp_queue_pop (&q, &item));
		assert_int_equal (item, i * 3u);
	}
	assert_int_equal (sp_queue_count (&q), 0);
	sp_queue_free (&q);
}

/* Grow while the ring is wrapped: head near the end of the array, tail at its start. */
static void
test_growth_while_wrapped (void **state)
{
	(void)state;
	for (uint32_t popped = 1; popped < 300; popped += 37) {
		SpQueue q;
		sp_queue_init (&q);
		uint32_t next_in = 0, next_out = 0, item;
		for (uint32_t i = 0; i < 300; i++)
			assert_int_equal (sp_queue_push (&q, next_in++), 0);
		for (uint32_t i = 0; i < popped; i++) {
			assert_true (sp_queue_pop (&q, &item));
			assert_int_equal (item, next_out++);
		}
		/* Refill far past the capacity: wraps, then grows with a wrapped ring. */
		for (uint32_t i = 0; i < 1000; i++)
			assert_int_equal (sp_queue_push (&q, next_in++), 0);
		while (sp_queue_pop (&q, &item))
			assert_int_equal (item, next_out++);
		assert_int_equal (next_out, next_in);
		sp_queue_free (&q);
	}
}

/*
 * The ring of chunks grows with the queue spread over chunks and wrapped in
 * the ring, the head in the middle of a chunk (the chunk the tail reaches
 * then maps to the head's slot): order kept, chunks reused after a clear.
 */
static void
test_growth_across_chunks (void **state)
{
	(void)state;
	const uint32_t ch = SP_QUEUE_CHUNK;
	const uint32_t offsets [] = { 0, 7, ch - 1 };
	for (size_t o = 0; o < sizeof offsets / sizeof offsets [0]; o++) {
		SpQueue q;
		sp_queue_init (&q);
		for (int round = 0; round < 2; round++) {
			uint32_t next_in = 0, next_out = 0, item;
			for (uint32_t i = 0; i < 3 * ch; i++)
				assert_int_equal (sp_queue_push (&q, next_in++), 0);
			for (uint32_t i = 0; i < 2 * ch + offsets [o]; i++) {
				assert_true (sp_queue_pop (&q, &item));
				assert_int_equal (item, next_out++);
			}
			for (uint32_t i = 0; i < 20 * ch + 5; i++)
				assert_int_equal (sp_queue_push (&q, next_in++), 0);
			assert_int_equal (sp_queue_count (&q), next_in - next_out);
			for (uint32_t k = 0; k < 3; k++) {
				uint32_t peeked;
				assert_true (sp_queue_peek (&q, k * ch + 1, &peeked));
				assert_int_equal (peeked, next_out + k * ch + 1);
			}
			while (sp_queue_pop (&q, &item))
				assert_int_equal (item, next_out++);
			assert_int_equal (next_out, next_in);
			sp_queue_clear (&q);
		}
		sp_queue_free (&q);
	}
}

static void
test_interleaved_push_pop (void **state)
{
	(void)state;
	SpQueue q;
	sp_queue_init (&q);
	uint32_t next_in = 0, next_out = 0, item;
	uint64_t rng = 0x9E3779B97F4A7C15ull;
	size_t max_count = 0;
	for (int round = 0; round < 200000; round++) {
		rng ^= rng << 13;
		rng ^= rng >> 7;
		rng ^= rng << 17;
		/* Slightly more pushes than pops, so the queue grows through several sizes. */
		if (rng % 100 < 55) {
			assert_int_equal (sp_queue_push (&q, next_in++), 0);
		} else if (sp_queue_pop (&q, &item)) {
			assert_int_equal (item, next_out++);
		} else {
			assert_int_equal (next_out, next_in);
		}
		assert_int_equal (sp_queue_count (&q), next_in - next_out);
		if (sp_queue_count (&q) > max_count)
			max_count = sp_queue_count (&q);
	}
	assert_true (max_count > 1024);   /* it did grow past the first few capacities */
	while (sp_queue_pop (&q, &item))
		assert_int_equal (item, next_out++);
	assert_int_equal (next_out, next_in);
	sp_queue_free (&q);
}

static void
test_clear (void **state)
{
	(void)state;
	SpQueue q;
	sp_queue_init (&q);
	for (uint32_t i = 0; i < 500; i++)
		sp_queue_push (&q, i);
	uint32_t item;
	for (uint32_t i = 0; i < 200; i++)
		sp_queue_pop (&q, &item);
	sp_queue_clear (&q);
	assert_int_equal (sp_queue_count (&q), 0);
	assert_false (sp_queue_pop (&q, &item));
	for (uint32_t i = 0; i < 1000; i++)
		assert_int_equal (sp_queue_push (&q, i + 10), 0);
	for (uint32_t i = 0; i < 1000; i++) {
		assert_true (sp_queue_pop (&q, &item));
		assert_int_equal (item, i + 10);
	}
	sp_queue_free (&q);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_empty),
		cmocka_unit_test (test_fifo_across_growth),
		cmocka_unit_test (test_growth_while_wrapped),
		cmocka_unit_test (test_growth_across_chunks),
		cmocka_unit_test (test_interleaved_push_pop),
		cmocka_unit_test (test_clear),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
