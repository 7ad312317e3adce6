/* test_buf.c: SpBuf writing and the bounds-checked SpReader over untrusted bytes. */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* MAP_ANONYMOUS */
#endif
#include "unit.h"

#include <sys/mman.h>
#include <unistd.h>

#include "sp-buf.h"

static const uint64_t edge_values [] = {
	0, 1, 127, 128, 255, 16383, 16384,
	0x1fffff, 0x200000, 0xfffffff, 0x10000000,   /* the short path's last three- and four-byte values, and past it */
	0xffffffffull, 0x100000000ull,
	0x7fffffffffffffffull, 0x8000000000000000ull, 0xfffffffffffffffeull, UINT64_MAX,
};
#define NEDGE (sizeof edge_values / sizeof edge_values [0])

/* LEB128 length from the definition: 7 bits a byte, at least one byte. */
static size_t
leb128_len (uint64_t v)
{
	size_t n = 1;
	while (v >>= 7)
		n++;
	return n;
}

/* A region whose last byte is followed by an inaccessible page: reading past it crashes. */
typedef struct Guarded {
	uint8_t *map;
	size_t page;
} Guarded;

static uint8_t *
guarded_place (Guarded *g, const void *data, size_t n)
{
	g->page = (size_t)sysconf (_SC_PAGESIZE);
	g->map = mmap (NULL, 2 * g->page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	assert_true (g->map != MAP_FAILED);
	assert_int_equal (mprotect (g->map + g->page, g->page, PROT_NONE), 0);
	uint8_t *at = g->map + g->page - n;
	memcpy (at, data, n);
	return at;
}

static void
guarded_free (Guarded *g)
{
	munmap (g->map, 2 * g->page);
}

static void
test_varint_round_trip_edges (void **state)
{
	(void)state;
	SpBuf b;
	sp_buf_init (&b);
	size_t expected_len = 0;
	for (size_t i = 0; i < NEDGE; i++) {
		size_t before = b.len;
		sp_buf_put_varint (&b, edge_values [i]);
		assert_int_equal (b.len - before, leb128_len (edge_values [i]));
		expected_len += leb128_len (edge_values [i]);
	}
	assert_false (b.oom);
	assert_int_equal (b.len, expected_len);
	SpReader r;
	sp_reader_init (&r, b.data, b.len);
	for (size_t i = 0; i < NEDGE; i++) {
		uint64_t v = sp_reader_varint (&r);
		assert_false (r.bad);
		assert_true (v == edge_values [i]);
	}
	assert_int_equal (sp_reader_left (&r), 0);
	sp_buf_free (&b);
}

static void
test_varint_known_encodings (void **state)
{
	(void)state;
	/* The textbook LEB128 example: 624485 = E5 8E 26. */
	SpBuf b;
	sp_buf_init (&b);
	sp_buf_put_varint (&b, 624485);
	assert_int_equal (b.len, 3);
	assert_memory_equal (b.data, "\xe5\x8e\x26", 3);
	sp_buf_reset (&b);
	sp_buf_put_varint (&b, UINT64_MAX);   /* nine 0xFF then 0x01 */
	assert_int_equal (b.len, 10);
	assert_memory_equal (b.data, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x01", 10);
	sp_buf_reset (&b);
	sp_buf_put_varint (&b, 0x8000000000000000ull);   /* nine 0x80 then 0x01 */
	assert_memory_equal (b.data, "\x80\x80\x80\x80\x80\x80\x80\x80\x80\x01", 10);
	sp_buf_free (&b);
}

static void
test_varint_truncated_is_refused (void **state)
{
	(void)state;
	for (size_t i = 0; i < NEDGE; i++) {
		SpBuf b;
		sp_buf_init (&b);
		sp_buf_put_varint (&b, edge_values [i]);
		for (size_t cut = 0; cut < b.len; cut++) {
			Guarded g;
			const uint8_t *p = guarded_place (&g, b.data, cut);
			SpReader r;
			sp_reader_init (&r, p, cut);
			assert_true (sp_reader_varint (&r) == 0);
			assert_true (r.bad);
			/* Sticky: later reads fail too, and still never cross the end. */
			assert_int_equal (sp_reader_u8 (&r), 0);
			assert_null (sp_reader_take (&r, 0));
			assert_true (r.bad);
			guarded_free (&g);
		}
		sp_buf_free (&b);
	}
}

static void
test_varint_overlong_is_refused (void **state)
{
	(void)state;
	/* 11 bytes: ten with the continuation bit, then a terminator. */
	const uint8_t eleven [11] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00 };
	/* 10 bytes whose 10th carries more than bit 63. */
	const uint8_t tenth2 [10] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02 };
	const uint8_t tenth7f [10] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f };
	/* 10 bytes whose 10th still has the continuation bit (an 11th is promised). */
	const uint8_t tenth81 [11] = { 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x81, 0x00 };
	const struct { const uint8_t *p; size_t n; } bad [] = {
		{ eleven, sizeof eleven }, { tenth2, sizeof tenth2 }, { tenth7f, sizeof tenth7f }, { tenth81, sizeof tenth81 },
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad [0]; i++) {
		Guarded g;
		const uint8_t *p = guarded_place (&g, bad [i].p, bad [i].n);
		SpReader r;
		sp_reader_init (&r, p, bad [i].n);
		assert_true (sp_reader_varint (&r) == 0);
		assert_true (r.bad);
		guarded_free (&g);
	}
	/* The largest legal 10-byte form is accepted: the 10th byte may be 1. */
	const uint8_t max10 [10] = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01 };
	SpReader r;
	sp_reader_init (&r, max10, sizeof max10);
	assert_true (sp_reader_varint (&r) == UINT64_MAX);
	assert_false (r.bad);
	/* A run of continuation bytes up to the end of the input never reads past it. */
	for (size_t n = 1; n <= 12; n++) {
		uint8_t run [12];
		memset (run, 0xff, sizeof run);
		Guarded g;
		const uint8_t *p = guarded_place (&g, run, n);
		sp_reader_init (&r, p, n);
		sp_reader_varint (&r);
		assert_true (r.bad);
		guarded_free (&g);
	}
}

static void
test_fixed_reads_stay_inside (void **state)
{
	(void)state;
	const uint8_t bytes [8] = { 1, 2, 3, 4, 5, 6, 7, 8 };
	Guarded g;
	const uint8_t *p = guarded_place (&g, bytes, sizeof bytes);
	SpReader r;
	sp_reader_init (&r, p, sizeof bytes);
	/* Little-endian whatever the host. */
	assert_true (sp_reader_le (&r, 2) == 0x0201);
	assert_true (sp_reader_le (&r, 4) == 0x06050403);
	assert_int_equal (sp_reader_left (&r), 2);
	assert_int_equal (sp_reader_offset (&r), 6);
	/* 4 bytes wanted, 2 left: refused, nothing consumed past the end. */
	assert_true (sp_reader_le (&r, 4) == 0);
	assert_true (r.bad);
	assert_null (sp_reader_take (&r, 1));
	sp_reader_init (&r, p, sizeof bytes);
	assert_true (sp_reader_le (&r, 8) == 0x0807060504030201ull);
	assert_int_equal (sp_reader_left (&r), 0);
	assert_false (r.bad);
	assert_int_equal (sp_reader_u8 (&r), 0);
	assert_true (r.bad);
	/* A huge take must not wrap around. */
	sp_reader_init (&r, p, sizeof bytes);
	assert_null (sp_reader_take (&r, SIZE_MAX));
	assert_true (r.bad);
	guarded_free (&g);
}

static void
read_str (const uint8_t *in, size_t n, char *dst, size_t cap, bool *bad)
{
	Guarded g;
	const uint8_t *p = guarded_place (&g, in, n);
	SpReader r;
	sp_reader_init (&r, p, n);
	sp_reader_str (&r, dst, cap);
	*bad = r.bad;
	guarded_free (&g);
}

static void
test_reader_str (void **state)
{
	(void)state;
	SpBuf b;
	sp_buf_init (&b);
	sp_buf_put_str (&b, "Plant.Valve");
	sp_buf_put_str (&b, "");
	char dst [12];
	bool bad;
	/* Fits exactly (11 bytes + NUL in 12). */
	read_str (b.data, b.len, dst, sizeof dst, &bad);
	assert_false (bad);
	assert_string_equal (dst, "Plant.Valve");
	SpReader r;
	sp_reader_init (&r, b.data, b.len);
	sp_reader_str (&r, dst, sizeof dst);
	sp_reader_str (&r, dst, sizeof dst);
	assert_false (r.bad);
	assert_string_equal (dst, "");
	/* One byte too long for the capacity. */
	memset (dst, 'x', sizeof dst);
	read_str (b.data, b.len, dst, 11, &bad);
	assert_true (bad);
	assert_string_equal (dst, "");
	/* Embedded NUL. */
	const uint8_t nul [] = { 3, 'a', 0, 'b' };
	memset (dst, 'x', sizeof dst);
	read_str (nul, sizeof nul, dst, sizeof dst, &bad);
	assert_true (bad);
	assert_string_equal (dst, "");
	/* Length beyond the input. */
	const uint8_t short_in [] = { 5, 'a', 'b' };
	read_str (short_in, sizeof short_in, dst, sizeof dst, &bad);
	assert_true (bad);
	/* A gigantic length prefix. */
	const uint8_t huge [] = { 0xff, 0xff, 0xff, 0xff, 0x0f, 'a' };
	read_str (huge, sizeof huge, dst, sizeof dst, &bad);
	assert_true (bad);
	sp_buf_free (&b);
}

static void
test_buf_growth_keeps_contents (void **state)
{
	(void)state;
	SpBuf b;
	sp_buf_init (&b);
	for (uint32_t i = 0; i < 100000; i++)
		sp_buf_put_le (&b, i * 2654435761u, 4);
	assert_false (b.oom);
	assert_int_equal (b.len, 400000);
	assert_true (b.cap >= b.len);
	for (uint32_t i = 0; i < 100000; i++)
		assert_true (sp_get_le (b.data + 4 * i, 4) == (uint32_t)(i * 2654435761u));
	sp_buf_reset (&b);
	assert_int_equal (b.len, 0);
	sp_buf_put_u8 (&b, 0xab);
	assert_int_equal (b.data [0], 0xab);
	/* An impossible reservation sets oom instead of wrapping the size. */
	assert_null (sp_buf_reserve (&b, SIZE_MAX - 8));
	assert_true (b.oom);
	sp_buf_free (&b);
}

/* sp_buf_prepare: room for the size asked, contents kept, no reallocation while filling it. */
static void
test_buf_prepare (void **state)
{
	(void)state;
	SpBuf b;
	sp_buf_init (&b);
	sp_buf_put_le (&b, 0x01020304u, 4);
	assert_int_equal (sp_buf_prepare (&b, 1 << 20), 0);
	assert_true (b.cap >= 1 << 20);
	assert_int_equal (b.len, 4);
	assert_true (sp_get_le (b.data, 4) == 0x01020304u);
	uint8_t *before = b.data;
	for (uint32_t i = 1; i < (1 << 18); i++)
		sp_buf_put_le (&b, i, 4);
	assert_ptr_equal (b.data, before);
	assert_false (b.oom);
	/* Smaller than the capacity: nothing moves. */
	assert_int_equal (sp_buf_prepare (&b, 100), 0);
	assert_ptr_equal (b.data, before);
	sp_buf_free (&b);
}

/*
 * sp_buf_prepare faults each fresh page in once, by a write: reading it first
 * would map the zero page and make the write a second fault, one that flushes
 * the page from the other CPUs (an interrupt to each running the process).
 */
static void
test_buf_prepare_faults_each_page_once (void **state)
{
	(void)state;
	const size_t size = 8u << 20, pages = size / 4096;
	SpBuf b;
	sp_buf_init (&b);
	long before = unit_minor_faults ();
	assert_int_equal (sp_buf_prepare (&b, size), 0);
	long faults = unit_minor_faults () - before;
	assert_true (faults >= (long)pages / 2);        /* fresh pages were faulted in (no huge pages here) */
	/*
	 * A fault a page: read first, two.  Under AddressSanitizer its shadow
	 * memory faults too, a quarter more here (2,564 for 2,048 pages).
	 */
	if (faults > (long)pages + (long)pages / 2)
		fail_msg ("%ld faults preparing %zu pages", faults, pages);
	before = unit_minor_faults ();
	memset (b.data, 0x5a, size);
	assert_true (unit_minor_faults () - before <= 64);   /* and filling them takes none */
	sp_buf_free (&b);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test (test_varint_round_trip_edges),
		cmocka_unit_test (test_varint_known_encodings),
		cmocka_unit_test (test_varint_truncated_is_refused),
		cmocka_unit_test (test_varint_overlong_is_refused),
		cmocka_unit_test (test_fixed_reads_stay_inside),
		cmocka_unit_test (test_reader_str),
		cmocka_unit_test (test_buf_growth_keeps_contents),
		cmocka_unit_test (test_buf_prepare),
		cmocka_unit_test (test_buf_prepare_faults_each_page_once),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
