/*
 * test_hostile.c: the decoder against damaged and crafted input.  It must fail
 * cleanly (an error, no crash, no hang), and never allocate more than a small
 * multiple of the input's size, whatever the input says.
 *
 * malloc, calloc and realloc are interposed here (forwarding to glibc's) to
 * record the largest single request made while a parse runs.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE   /* clock_gettime, kill */
#endif
#include "unit.h"

#include <signal.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "class-index.h"
#include "craft-chain.h"
#include "fake-objects.h"
#include "sample-graph.h"
#include "sp-crc32c.h"
#include "sp-format.h"
#include "sp-snapshot.h"

/* ---- allocation tracking ---------------------------------------------------- */

static bool tracking;
static size_t largest_request;

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
/* Sanitizers own malloc: no interposition, and the allocation bounds go unchecked. */
#define ALLOCATIONS_TRACKED 0
#else
#define ALLOCATIONS_TRACKED 1
extern void *__libc_malloc (size_t n);
extern void *__libc_calloc (size_t n, size_t size);
extern void *__libc_realloc (void *p, size_t n);

static void
note_request (size_t n)
{
	if (tracking && n > largest_request)
		largest_request = n;
}

void *
malloc (size_t n)
{
	note_request (n);
	return __libc_malloc (n);
}

void *
calloc (size_t n, size_t size)
{
	note_request (size && n > SIZE_MAX / size ? SIZE_MAX : n * size);
	return __libc_calloc (n, size);
}

void *
realloc (void *p, size_t n)
{
	note_request (n);
	return __libc_realloc (p, n);
}
#endif

/* What a parse may allocate at most for `size` bytes of input. */
static size_t
allocation_bound (size_t size)
{
	return 32 * size + 65536;
}

/* Parse, recording the largest allocation; the snapshot is freed either way. */
static int
parse_tracked (const uint8_t *data, size_t size, SpError *err)
{
	SpSnapshot snap;
	largest_request = 0;
	tracking = true;
	int rc = sp_snapshot_parse (data, size, &snap, err);
	tracking = false;
	if (ALLOCATIONS_TRACKED && largest_request > allocation_bound (size)) {
		print_error ("parsing %zu bytes asked for %zu bytes at once\n", size, largest_request);
		fail ();
	}
	if (rc == 0)
		sp_snapshot_free (&snap);
	return rc;
}

/*
 * Restore through sp_snapshot_decode (what the runtime does: construction
 * while validating), recording the largest allocation as parse_tracked does.
 * The objects it made are freed again (the fake model's registry stays small).
 */
static int
decode_tracked (const uint8_t *data, size_t size, SpError *err)
{
	SpSnapshot snap;
	void **objects = NULL;
	size_t mark = fake_object_mark ();
	largest_request = 0;
	tracking = true;
	int rc = fake_decode (data, size, &snap, &objects, err);
	tracking = false;
	fake_free_objects_since (mark);
	if (ALLOCATIONS_TRACKED && largest_request > allocation_bound (size)) {
		print_error ("decoding %zu bytes asked for %zu bytes at once\n", size, largest_request);
		fail ();
	}
	free (objects);
	sp_snapshot_free (&snap);
	return rc;
}

/* ---- crafting snapshots ----------------------------------------------------- */

/* Recompute the trailer's CRC-32C, so that only the structure is wrong. */
static void
patch_crc (uint8_t *data, size_t size)
{
	sp_put_le (data + size - 4, sp_crc32c (0, data, size - 4), 4);
}

static void
craft_header (SpBuf *b, uint16_t version, uint16_t header_size, uint16_t required_flags)
{
	uint8_t h [SP_FORMAT_HEADER_MAX];
	SpSnapHeader hdr = { .sequence = 7, .time_ns = 123 };
	sp_format_write_header (h, &hdr);
	sp_put_le (h + 8, version, 2);
	sp_put_le (h + 10, header_size, 2);
	sp_put_le (h + 12, required_flags, 2);
	sp_buf_put_bytes (b, h, SP_FORMAT_HEADER_SIZE);
}

static void
craft_trailer (SpBuf *b, uint32_t nclasses, uint32_t nobjects, uint32_t nroots)
{
	uint8_t t [SP_FORMAT_TRAILER_SIZE];
	SpSnapTrailer tr = { .nclasses = nclasses, .nobjects = nobjects, .nroots = nroots };
	sp_format_write_trailer (t, &tr);
	sp_buf_put_bytes (b, t, sizeof t);
	patch_crc (b->data, b->len);
}

/*
 * Each defect changes the baseline in one way only, so that a failure can
 * only come from that defect (the baseline itself must parse and restore).
 */
typedef enum Defect {
	OK = 0,
	OK_HEADER_LARGER,         /* header_size 48: a future header, skipped */
	OK_EXTENSION,             /* unknown extension records, skipped */
	BAD_MAGIC,
	VERSION_3,
	REQUIRED_FLAG_DELTA,
	REQUIRED_FLAG_UNKNOWN,
	HEADER_SIZE_SMALL,
	HEADER_SIZE_HUGE,
	COUNT_OBJECTS_HUGE,
	COUNT_CLASSES_HUGE,
	COUNT_ROOTS_HUGE,
	COUNT_ALL_HUGE,
	LID_ZERO,
	LID_BEYOND,
	LID_DUPLICATE,
	REF_BEYOND,
	NEVER_DEFINED,
	CLASS_ID_ZERO,
	CLASS_OUT_OF_ORDER,
	CLASS_DEFINED_TWICE,
	CLASS_USED_BEFORE_DEFINED,
	CLASS_ID_UNDEFINED,
	OBJECT_OF_ARRAY_CLASS,
	ARRAY_OF_OBJECT_CLASS,
	CLASS_KIND_STRING,
	CLASS_KIND_ZERO,
	FIELD_KIND_ZERO,
	FIELD_KIND_BEYOND,
	NAME_WITH_NUL,
	NAME_TOO_LONG,
	NFIELDS_HUGE,
	ARRAY_CLASS_NO_FIELDS,
	ARRAY_LENGTH_7FFFFFFF,
	ARRAY_LENGTH_MAX_FEW_BYTES,
	ARRAY_PIECE_HUGE,
	ARRAY_INCOMPLETE,
	STRING_PIECE_TOO_LONG,
	STRING_PIECE_COUNT_WRAPS,
	STRING_LENGTH_HUGE,
	STRING_ENCODING_UNKNOWN,
	STRING_INCOMPLETE,
	ELEMS_OUT_OF_ORDER,
	ELEMS_OVERLAP,
	ELEMS_FOR_OBJECT,
	ELEMS_BEFORE_ITS_OBJECT,
	ELEMS_LID_BEYOND,
	ELEMS_PAST_LENGTH,
	ROOT_DUPLICATE,
	ROOT_ID_ZERO,
	ROOT_LID_BEYOND,
	TRAILER_MORE_CLASSES,
	TRAILER_FEWER_CLASSES,
	TRAILER_MORE_ROOTS,
	TRAILER_FEWER_ROOTS,
	TRAILER_FEWER_OBJECTS,
	TRAILER_MORE_OBJECTS,
	PATCH_IN_FULL,
	TAG_UNKNOWN_00,
	TAG_UNKNOWN_7E,
	TAG_END_IN_BODY,
	EXTENSION_PAST_END,
	VARINT_OVERLONG,
	RECORD_CUT,
	TRAILER_TAG_WRONG,
	DEFECT_COUNT
} Defect;

static const char *const defect_names [DEFECT_COUNT] = {
#define N(x) [x] = #x
	N(OK), N(OK_HEADER_LARGER), N(OK_EXTENSION), N(BAD_MAGIC), N(VERSION_3), N(REQUIRED_FLAG_DELTA),
	N(REQUIRED_FLAG_UNKNOWN), N(HEADER_SIZE_SMALL), N(HEADER_SIZE_HUGE), N(COUNT_OBJECTS_HUGE),
	N(COUNT_CLASSES_HUGE), N(COUNT_ROOTS_HUGE), N(COUNT_ALL_HUGE), N(LID_ZERO), N(LID_BEYOND),
	N(LID_DUPLICATE), N(REF_BEYOND), N(NEVER_DEFINED), N(CLASS_ID_ZERO), N(CLASS_OUT_OF_ORDER),
	N(CLASS_DEFINED_TWICE), N(CLASS_USED_BEFORE_DEFINED), N(CLASS_ID_UNDEFINED), N(OBJECT_OF_ARRAY_CLASS),
	N(ARRAY_OF_OBJECT_CLASS), N(CLASS_KIND_STRING), N(CLASS_KIND_ZERO), N(FIELD_KIND_ZERO),
	N(FIELD_KIND_BEYOND), N(NAME_WITH_NUL), N(NAME_TOO_LONG), N(NFIELDS_HUGE), N(ARRAY_CLASS_NO_FIELDS),
	N(ARRAY_LENGTH_7FFFFFFF), N(ARRAY_LENGTH_MAX_FEW_BYTES), N(ARRAY_PIECE_HUGE), N(ARRAY_INCOMPLETE),
	N(STRING_PIECE_TOO_LONG), N(STRING_PIECE_COUNT_WRAPS), N(STRING_LENGTH_HUGE), N(STRING_ENCODING_UNKNOWN), N(STRING_INCOMPLETE),
	N(ELEMS_OUT_OF_ORDER), N(ELEMS_OVERLAP), N(ELEMS_FOR_OBJECT), N(ELEMS_BEFORE_ITS_OBJECT),
	N(ELEMS_LID_BEYOND), N(ELEMS_PAST_LENGTH), N(ROOT_DUPLICATE), N(ROOT_ID_ZERO), N(ROOT_LID_BEYOND),
	N(TRAILER_MORE_CLASSES), N(TRAILER_FEWER_CLASSES), N(TRAILER_MORE_ROOTS), N(TRAILER_FEWER_ROOTS),
	N(TRAILER_FEWER_OBJECTS), N(TRAILER_MORE_OBJECTS), N(PATCH_IN_FULL), N(TAG_UNKNOWN_00),
	N(TAG_UNKNOWN_7E), N(TAG_END_IN_BODY), N(EXTENSION_PAST_END), N(VARINT_OVERLONG), N(RECORD_CUT),
	N(TRAILER_TAG_WRONG),
#undef N
};

/*
 * The baseline (4 objects, 2 classes, 3 roots, with chunked pieces):
 *   class 1 App.Node { value: int, next: App.Node }   class 2 System.Int32[]
 *   1: Node { 7, -> 2 }   2: Node { 8, -> 1 }
 *   3: "ab" + chunk [2, 3): U+263A
 *   4: int[4] = { 1, 2 } + chunk [2, 4): { 3, 4 }
 *   roots: 1 -> 1, 2 -> null, 3 -> 3
 */
static void
craft (SpBuf *b, Defect d)
{
	sp_buf_init (b);
	uint16_t version = d == VERSION_3 ? 3 : SP_FORMAT_VERSION;
	uint16_t header_size = d == OK_HEADER_LARGER ? SP_FORMAT_HEADER_SIZE + 8 :
		d == HEADER_SIZE_SMALL ? SP_FORMAT_HEADER_SIZE - 1 : d == HEADER_SIZE_HUGE ? 0xffff : SP_FORMAT_HEADER_SIZE;
	uint16_t flags = d == REQUIRED_FLAG_DELTA ? SP_FLAG_DELTA : d == REQUIRED_FLAG_UNKNOWN ? 0x8000 : 0;
	craft_header (b, version, header_size, flags);
	if (d == BAD_MAGIC)
		b->data [1] = 'X';
	if (d == OK_HEADER_LARGER)
		sp_buf_put_bytes (b, "\x01\x02\x03\x04\x05\x06\x07\xff", 8);   /* future header fields: not records */
	if (d == OK_EXTENSION) {
		sp_buf_put_u8 (b, 0x80);
		sp_buf_put_varint (b, 0);
	}

	/* Classes. */
	if (d == CLASS_OUT_OF_ORDER) {
		put_class_ints (b, 2);
		put_class_node (b, 1);
	} else if (d == CLASS_USED_BEFORE_DEFINED) {
		/* Defined in order, but object 1 (class 1) comes first. */
	} else {
		put_class_node (b, d == CLASS_ID_ZERO ? 0 : 1);
		if (d == CLASS_DEFINED_TWICE)
			put_class_node (b, 1);
		if (d == CLASS_KIND_STRING || d == CLASS_KIND_ZERO || d == FIELD_KIND_ZERO || d == FIELD_KIND_BEYOND ||
		    d == NAME_WITH_NUL || d == NAME_TOO_LONG || d == NFIELDS_HUGE || d == ARRAY_CLASS_NO_FIELDS) {
			sp_buf_put_u8 (b, SP_REC_CLASS);
			sp_buf_put_varint (b, 2);
			sp_buf_put_u8 (b, d == CLASS_KIND_STRING ? SP_CLASS_STRING : d == CLASS_KIND_ZERO ? 0 : SP_CLASS_ARRAY);
			sp_buf_put_str (b, "mscorlib");
			if (d == NAME_WITH_NUL) {
				sp_buf_put_varint (b, 9);
				sp_buf_put_bytes (b, "System\0In", 9);
			} else if (d == NAME_TOO_LONG) {
				char name [SP_MAX_NAME + 2];
				memset (name, 'N', sizeof name - 1);
				name [sizeof name - 1] = '\0';
				sp_buf_put_str (b, name);
			} else {
				sp_buf_put_str (b, "System.Int32[]");
			}
			if (d == ARRAY_CLASS_NO_FIELDS) {
				sp_buf_put_varint (b, 0);
			} else {
				sp_buf_put_varint (b, d == NFIELDS_HUGE ? 0xffffffffull : 1);
				sp_buf_put_str (b, "");
				sp_buf_put_u8 (b, d == FIELD_KIND_ZERO ? 0 : d == FIELD_KIND_BEYOND ? SP_KIND_LAST + 1 : SP_KIND_I4);
			}
		} else {
			put_class_ints (b, 2);
		}
	}

	/* Objects 1 and 2. */
	uint64_t lid1 = d == LID_ZERO ? 0 : d == LID_BEYOND ? 5 : 1;
	uint64_t class1 = d == OBJECT_OF_ARRAY_CLASS ? 2 : d == CLASS_ID_UNDEFINED ? 3 : 1;
	if (d == VARINT_OVERLONG) {
		sp_buf_put_u8 (b, SP_REC_OBJECT);
		sp_buf_put_bytes (b, "\x81\x80\x80\x80\x80\x80\x80\x80\x80\x80\x00", 11);   /* lid 1, in 11 bytes */
		sp_buf_put_varint (b, 1);
		sp_buf_put_le (b, 7, 4);
		sp_buf_put_varint (b, 2);
	} else {
		put_node (b, lid1, class1, 7, 2);
	}
	if (d == CLASS_USED_BEFORE_DEFINED) {
		put_class_node (b, 1);
		put_class_ints (b, 2);
	}
	put_node (b, d == LID_DUPLICATE ? 1 : 2, 1, 8, d == REF_BEYOND ? 5 : 1);
	if (d == LID_DUPLICATE)
		put_node (b, 2, 1, 9, 0);   /* all four lids still defined */

	/* Object 3: a string in two pieces. */
	if (d == ELEMS_BEFORE_ITS_OBJECT) {
		sp_buf_put_u8 (b, SP_REC_ELEMS);
		sp_buf_put_varint (b, 3);
		sp_buf_put_varint (b, 0);
		sp_buf_put_varint (b, 0);
		sp_buf_put_u8 (b, SP_STR_LATIN1);
	}
	sp_buf_put_u8 (b, SP_REC_STRING);
	sp_buf_put_varint (b, 3);
	sp_buf_put_varint (b, d == STRING_LENGTH_HUGE ? 0x7fffffc7ull : d == STRING_INCOMPLETE ? 4 : 3);
	if (d == STRING_PIECE_TOO_LONG) {
		sp_buf_put_varint (b, 4);
		sp_buf_put_u8 (b, SP_STR_LATIN1);
		sp_buf_put_bytes (b, "abcd", 4);
	} else if (d == STRING_PIECE_COUNT_WRAPS) {
		/*
		 * Counts whose byte sizes wrap around 2^64 (2 units -> 4 bytes, then
		 * 1 unit -> 2 bytes) and whose sum wraps back to the length, 3: only the
		 * per-piece check (a piece is at most what is left) stops it, and
		 * without it the restore would write 2^63 units into a 3-unit string.
		 */
		sp_buf_put_varint (b, (1ull << 63) + 2);
		sp_buf_put_u8 (b, SP_STR_UTF16LE);
		sp_buf_put_bytes (b, "a\0b\0", 4);
		sp_buf_put_u8 (b, SP_REC_ELEMS);
		sp_buf_put_varint (b, 3);
		sp_buf_put_varint (b, (1ull << 63) + 2);
		sp_buf_put_varint (b, (1ull << 63) + 1);
		sp_buf_put_u8 (b, SP_STR_UTF16LE);
		sp_buf_put_le (b, 0x263a, 2);
	} else {
		sp_buf_put_varint (b, 2);
		if (d == STRING_ENCODING_UNKNOWN) {
			sp_buf_put_u8 (b, 2);
			sp_buf_put_bytes (b, "a\0b\0", 4);   /* would be fine as UTF-16: the tag is what's wrong */
		} else {
			sp_buf_put_u8 (b, SP_STR_LATIN1);
			sp_buf_put_bytes (b, "ab", 2);
		}
	}
	if (d != STRING_PIECE_TOO_LONG && d != STRING_PIECE_COUNT_WRAPS) {
		sp_buf_put_u8 (b, SP_REC_ELEMS);
		sp_buf_put_varint (b, 3);
		sp_buf_put_varint (b, 2);
		sp_buf_put_varint (b, 1);
		sp_buf_put_u8 (b, SP_STR_UTF16LE);
		sp_buf_put_le (b, 0x263a, 2);
	}

	/* Object 4: int[4] in two pieces. */
	if (d == ARRAY_CLASS_NO_FIELDS) {
		/* Elements of no bytes each: a million of them from a few bytes of input. */
		sp_buf_put_u8 (b, SP_REC_ARRAY);
		sp_buf_put_varint (b, 4);
		sp_buf_put_varint (b, 2);
		sp_buf_put_varint (b, 1000000);
		sp_buf_put_varint (b, 1000000);
		goto roots;
	}
	sp_buf_put_u8 (b, SP_REC_ARRAY);
	sp_buf_put_varint (b, 4);
	sp_buf_put_varint (b, d == ARRAY_OF_OBJECT_CLASS ? 1 : 2);
	uint64_t length = d == ARRAY_LENGTH_7FFFFFFF ? 0x7fffffffull : d == ARRAY_LENGTH_MAX_FEW_BYTES ? SP_MAX_LENGTH :
		d == ARRAY_INCOMPLETE ? 5 : 4;
	sp_buf_put_varint (b, length);
	if (d == ARRAY_PIECE_HUGE) {
		sp_buf_put_varint (b, 0x7fffffc0ull);   /* more than the length, and than the input */
	} else {
		sp_buf_put_varint (b, 2);
	}
	sp_buf_put_le (b, 1, 4);
	sp_buf_put_le (b, 2, 4);
	sp_buf_put_u8 (b, SP_REC_ELEMS);
	sp_buf_put_varint (b, d == ELEMS_FOR_OBJECT ? 1 : d == ELEMS_LID_BEYOND ? 9 : 4);
	sp_buf_put_varint (b, d == ELEMS_OUT_OF_ORDER ? 3 : d == ELEMS_OVERLAP ? 1 : 2);
	sp_buf_put_varint (b, d == ELEMS_PAST_LENGTH ? 3 : 2);
	sp_buf_put_le (b, 3, 4);
	sp_buf_put_le (b, 4, 4);
	if (d == ELEMS_PAST_LENGTH)
		sp_buf_put_le (b, 5, 4);

	/* Roots. */
roots:
	put_root (b, d == ROOT_ID_ZERO ? 0 : 1, d == ROOT_LID_BEYOND ? 5 : 1);
	put_root (b, d == ROOT_DUPLICATE ? 1 : 2, 0);
	put_root (b, 3, 3);

	if (d == PATCH_IN_FULL || d == TAG_UNKNOWN_00 || d == TAG_UNKNOWN_7E || d == TAG_END_IN_BODY) {
		sp_buf_put_u8 (b, d == PATCH_IN_FULL ? 0x07 : d == TAG_UNKNOWN_00 ? 0x00 : d == TAG_UNKNOWN_7E ? 0x7e : SP_REC_END);
		sp_buf_put_varint (b, 0);   /* what an extension would look like: still not one */
	}
	if (d == OK_EXTENSION) {
		sp_buf_put_u8 (b, 0xc3);
		sp_buf_put_varint (b, 5);
		sp_buf_put_bytes (b, "\x02\x01\x01\x01\x7f", 5);   /* looks like records: must be skipped whole */
		sp_buf_put_u8 (b, 0xff);
		sp_buf_put_varint (b, 200);
		for (int i = 0; i < 200; i++)
			sp_buf_put_u8 (b, (uint8_t)i);
	}
	if (d == EXTENSION_PAST_END) {
		sp_buf_put_u8 (b, 0x80);
		sp_buf_put_varint (b, 1000);
		sp_buf_put_bytes (b, "abc", 3);
	}
	if (d == RECORD_CUT) {
		sp_buf_put_u8 (b, SP_REC_OBJECT);
		sp_buf_put_varint (b, 300);   /* a two-byte varint, then nothing */
		b->len--;
	}

	uint32_t nclasses = d == TRAILER_MORE_CLASSES ? 3 : d == TRAILER_FEWER_CLASSES ? 1 : 2;
	uint32_t nobjects = d == TRAILER_MORE_OBJECTS || d == NEVER_DEFINED ? 5 : d == TRAILER_FEWER_OBJECTS ? 3 : 4;
	uint32_t nroots = d == TRAILER_MORE_ROOTS ? 4 : d == TRAILER_FEWER_ROOTS ? 2 : 3;
	if (d == COUNT_OBJECTS_HUGE || d == COUNT_ALL_HUGE)
		nobjects = 0xffffffffu;
	if (d == COUNT_CLASSES_HUGE || d == COUNT_ALL_HUGE)
		nclasses = 0xffffffffu;
	if (d == COUNT_ROOTS_HUGE || d == COUNT_ALL_HUGE)
		nroots = 0xffffffffu;
	craft_trailer (b, nclasses, nobjects, nroots);
	if (d == TRAILER_TAG_WRONG) {
		b->data [b->len - SP_FORMAT_TRAILER_SIZE] = SP_REC_ROOT;
		patch_crc (b->data, b->len);
	}
}


/* The baseline and its benign variants parse and restore to the intended objects. */
static void
check_baseline_restores (Defect d)
{
	SpBuf b;
	craft (&b, d);
	SpSnapshot snap;
	SpError err = { 0 };
	assert_int_equal (parse_tracked (b.data, b.len, &err), 0);
	assert_ok (sp_snapshot_parse (b.data, b.len, &snap, &err), &err);
	assert_int_equal (snap.header.header_size, d == OK_HEADER_LARGER ? 48 : 40);
	assert_true (snap.header.sequence == 7);
	craft_register_classes ();
	void **objects;
	assert_ok (fake_restore (&snap, &objects, &err), &err);
	bool found;
	void *n1 = fake_restored_root (&snap, objects, 1, &found);
	assert_true (found);
	assert_null (fake_restored_root (&snap, objects, 2, &found));
	assert_true (found);
	void *s = fake_restored_root (&snap, objects, 3, &found);
	assert_true (found);
	int32_t v;
	fake_get (n1, "value", &v, 4);
	assert_int_equal (v, 7);
	void *n2 = fake_get_ref (n1, "next");
	fake_get (n2, "value", &v, 4);
	assert_int_equal (v, 8);
	assert_ptr_equal (fake_get_ref (n2, "next"), n1);
	/* The string from its two pieces: Latin-1, then UTF-16. */
	assert_int_equal (fake_length (s), 3);
	assert_int_equal (fake_string_units (s) [0], 'a');
	assert_int_equal (fake_string_units (s) [1], 'b');
	assert_int_equal (fake_string_units (s) [2], 0x263a);
	/* The array from its two pieces. */
	void *arr = objects [4];
	assert_int_equal (fake_length (arr), 4);
	for (int32_t i = 0; i < 4; i++) {
		memcpy (&v, fake_elem (arr, i), 4);
		assert_int_equal (v, i + 1);
	}
	free (objects);
	sp_snapshot_free (&snap);
	sp_buf_free (&b);
}

static void
test_baseline_parses (void **state)
{
	(void)state;
	check_baseline_restores (OK);
}

/* (d) Unknown extension records are skipped; a longer header is skipped. */
static void
test_extensions_and_longer_header_are_skipped (void **state)
{
	(void)state;
	check_baseline_restores (OK_EXTENSION);
	check_baseline_restores (OK_HEADER_LARGER);
}

/* (c) Every crafted defect, with a valid checksum, fails with a message. */
static void
test_crafted_defects_fail (void **state)
{
	(void)state;
	craft_register_classes ();
	for (int d = BAD_MAGIC; d < DEFECT_COUNT; d++) {
		SpBuf b;
		craft (&b, (Defect)d);
		SpError err = { 0 };
		/* Decoding builds objects as it validates: the same input is refused as damaged, whatever was built. */
		int drc = decode_tracked (b.data, b.len, &err);
		if (drc != SP_DECODE_DAMAGED || !err.msg [0]) {
			print_error ("defect %s: decode returned %d (%s)\n", defect_names [d], drc, err.msg);
			sp_buf_free (&b);
			fail ();
		}
		err.msg [0] = '\0';
		int rc = parse_tracked (b.data, b.len, &err);
		if (rc != -1 || !err.msg [0]) {
			print_error ("defect %s: parse returned %d (%s)\n", defect_names [d], rc, err.msg);
			sp_buf_free (&b);
			fail ();
		}
		/* The checksum was right: the message must be about the structure, not damage. */
		if (d != BAD_MAGIC && d != TRAILER_TAG_WRONG && strstr (err.msg, "checksum")) {
			print_error ("defect %s: reported as a checksum error: %s\n", defect_names [d], err.msg);
			sp_buf_free (&b);
			fail ();
		}
		sp_buf_free (&b);
	}
}

/* Huge counts in the trailer are refused before anything of their size is allocated. */
static void
test_huge_counts_allocate_nothing_big (void **state)
{
	(void)state;
	const Defect huge [] = { COUNT_OBJECTS_HUGE, COUNT_CLASSES_HUGE, COUNT_ROOTS_HUGE, COUNT_ALL_HUGE,
				 ARRAY_LENGTH_MAX_FEW_BYTES, ARRAY_PIECE_HUGE, STRING_LENGTH_HUGE, NFIELDS_HUGE };
	for (size_t i = 0; i < sizeof huge / sizeof huge [0]; i++) {
		SpBuf b;
		craft (&b, huge [i]);
		SpError err = { 0 };
		assert_int_equal (parse_tracked (b.data, b.len, &err), -1);
		/* A few hundred bytes of input: nothing near a gigabyte, nor even a megabyte. */
		if (largest_request > (1u << 20)) {
			print_error ("%s: largest allocation %zu bytes\n", defect_names [huge [i]], largest_request);
			fail ();
		}
		/* Nor when objects are created as the records are read (a huge array is refused before). */
		craft_register_classes ();
		assert_int_equal (decode_tracked (b.data, b.len, &err), SP_DECODE_DAMAGED);
		if (largest_request > (1u << 20)) {
			print_error ("%s: decode's largest allocation %zu bytes\n", defect_names [huge [i]], largest_request);
			fail ();
		}
		fake_reset ();
		sp_buf_free (&b);
	}
}

/* ---- the sample graph's snapshot, damaged ------------------------------------ */

static void
sample_snapshot (SpBuf *b)
{
	SampleGraph g;
	sample_graph_build (&g);
	sp_buf_init (b);
	sample_graph_serialize (&g, SIZE_MAX, b);
	SpError err = { 0 };
	assert_int_equal (parse_tracked (b->data, b->len, &err), 0);
}

/* (a) Every truncation fails. */
static void
test_every_truncation_fails (void **state)
{
	(void)state;
	SpBuf b;
	sample_snapshot (&b);
	for (size_t len = 0; len < b.len; len++) {
		/* An exact-size copy, so that a read past `len` is a read past the allocation. */
		uint8_t *copy = malloc (len ? len : 1);
		memcpy (copy, b.data, len);
		SpSnapshot snap;
		SpError err = { 0 };
		if (sp_snapshot_parse (copy, len, &snap, &err) != -1 || !err.msg [0]) {
			print_error ("truncated to %zu of %zu bytes: parsed\n", len, b.len);
			free (copy);
			fail ();
		}
		err.msg [0] = '\0';
		if (decode_tracked (copy, len, &err) != SP_DECODE_DAMAGED || !err.msg [0]) {
			print_error ("truncated to %zu of %zu bytes: decoded\n", len, b.len);
			free (copy);
			fail ();
		}
		free (copy);
	}
	sp_buf_free (&b);
}

/* (b) Every single-bit flip fails (the checksum covers every byte). */
static void
test_every_bit_flip_fails (void **state)
{
	(void)state;
	SpBuf b;
	sample_snapshot (&b);
	for (size_t bit = 0; bit < 8 * b.len; bit++) {
		b.data [bit / 8] ^= (uint8_t)(1u << (bit % 8));
		SpSnapshot snap;
		SpError err = { 0 };
		if (sp_snapshot_parse (b.data, b.len, &snap, &err) != -1) {
			print_error ("bit %zu flipped: parsed\n", bit);
			fail ();
		}
		if (decode_tracked (b.data, b.len, &err) != SP_DECODE_DAMAGED) {
			print_error ("bit %zu flipped: decoded\n", bit);
			fail ();
		}
		b.data [bit / 8] ^= (uint8_t)(1u << (bit % 8));
	}
	sp_buf_free (&b);
}

/* The sample, cut between records and closed with a valid trailer and CRC: refused as incomplete. */
static void
test_cut_with_valid_trailer_fails (void **state)
{
	(void)state;
	SpBuf b;
	sample_snapshot (&b);
	SpSnapHeader h;
	SpSnapTrailer t;
	SpError err = { 0 };
	assert_ok (sp_snapshot_check (b.data, b.len, &h, &t, &err), &err);
	size_t body_end = b.len - SP_FORMAT_TRAILER_SIZE;
	for (size_t cut = SP_FORMAT_HEADER_SIZE; cut < body_end; cut += 1 + cut / 64) {
		SpBuf c;
		sp_buf_init (&c);
		sp_buf_put_bytes (&c, b.data, cut);
		craft_trailer (&c, t.nclasses, t.nobjects, t.nroots);
		if (parse_tracked (c.data, c.len, &err) != -1) {
			print_error ("body cut at byte %zu of %zu, counts kept: parsed\n", cut, body_end);
			fail ();
		}
		sp_buf_free (&c);
	}
	sp_buf_free (&b);
}

/* ---- random damage with a valid checksum --------------------------------------- */

static uint64_t rng = 0x853c49e6748fea9bull;

static uint32_t
rnd (void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return (uint32_t)(rng >> 16);
}

/* What a successful parse promises the restorer. */
static void
check_parse_postconditions (const SpSnapshot *s)
{
	for (uint32_t lid = 1; lid <= s->trailer.nobjects; lid++) {
		const SpSnapObject *o = &s->objects [lid];
		assert_true (o->kind == SP_CLASS_OBJECT || o->kind == SP_CLASS_STRING || o->kind == SP_CLASS_ARRAY);
		if (o->kind != SP_CLASS_STRING) {
			assert_in_range (o->class_id, 1, s->trailer.nclasses);
			assert_int_equal (s->classes [o->class_id].kind, o->kind);
		}
		assert_true (o->body < s->size);
		assert_true (o->length <= SP_MAX_LENGTH);
	}
	for (uint32_t i = 0; i < s->trailer.nroots; i++) {
		assert_true (s->roots [i].lid <= s->trailer.nobjects);
		for (uint32_t j = 0; j < i; j++)
			assert_int_not_equal (s->roots [i].id, s->roots [j].id);
	}
}

static void
fuzz_one (const SpBuf *orig, uint8_t *buf, unsigned *parsed)
{
	size_t len = orig->len;
	memcpy (buf, orig->data, len);
	int nmut = 1 + (int)(rnd () % 4);
	for (int m = 0; m < nmut; m++) {
		size_t at = SP_FORMAT_HEADER_SIZE + rnd () % (len - SP_FORMAT_HEADER_SIZE - SP_FORMAT_TRAILER_SIZE);
		switch (rnd () % 4) {
		case 0: buf [at] ^= (uint8_t)(1u << (rnd () % 8)); break;
		case 1: buf [at] = (uint8_t)rnd (); break;
		case 2: buf [at] = (uint8_t)(rnd () % 2 ? 0xff : 0x00); break;
		default: buf [at] = (uint8_t)(buf [at] + (rnd () % 2 ? 1 : -1)); break;
		}
	}
	if (rnd () % 8 == 0) {
		/* Sometimes also a wrong count in the trailer. */
		size_t field = len - SP_FORMAT_TRAILER_SIZE + 1 + 4 * (rnd () % 3);
		sp_put_le (buf + field, sp_get_le (buf + field, 4) + (rnd () % 2 ? 1 : -1), 4);
	}
	patch_crc (buf, len);
	SpSnapshot snap;
	SpError err = { 0 };
	largest_request = 0;
	tracking = true;
	int rc = sp_snapshot_parse (buf, len, &snap, &err);
	tracking = false;
	assert_true (largest_request <= allocation_bound (len));
	/*
	 * Decoding agrees: what does not parse does not decode; what parses
	 * decodes, or fails cleanly because it no longer fits the classes (a
	 * mutated name or kind), never as damaged.
	 */
	SpError derr = { 0 };
	int drc = decode_tracked (buf, len, &derr);
	if (rc != 0) {
		assert_int_equal (rc, -1);
		assert_true (err.msg [0] != '\0');
		assert_int_not_equal (drc, 0);
		assert_true (derr.msg [0] != '\0');
		return;
	}
	if (drc == SP_DECODE_DAMAGED) {
		print_error ("parsed, but decode found it damaged: %s\n", derr.msg);
		fail ();
	}
	(*parsed)++;
	check_parse_postconditions (&snap);
	sp_snapshot_free (&snap);
}

/* n mutations of orig (fuzz_one); some must be benign (values), so that the restore path ran. */
static void
fuzz_many (const SpBuf *orig, int n)
{
	uint8_t *buf = malloc (orig->len);
	assert_non_null (buf);
	unsigned parsed = 0;
	for (int i = 0; i < n; i++)
		fuzz_one (orig, buf, &parsed);
	assert_true (parsed > 0);
	free (buf);
}

/* 60 nodes of a binary tree with parent links, every reference typed: a restore links them all. */
static void
linked_tree_snapshot (SpBuf *b)
{
	FakeClass *c = fake_class_object ("App", "App.Tree");
	fake_class_add_field (c, "key", SP_KIND_I4, NULL);
	fake_class_add_field (c, "left", SP_KIND_REF, "App.Tree");
	fake_class_add_field (c, "right", SP_KIND_REF, "App.Tree");
	fake_class_add_field (c, "parent", SP_KIND_REF, "App.Tree");
	void *nodes [60];
	for (int i = 0; i < 60; i++) {
		nodes [i] = fake_new_object (c);
		FAKE_SET (nodes [i], "key", int32_t, i);
		if (i > 0) {
			fake_set_ref (nodes [(i - 1) / 2], i % 2 ? "left" : "right", nodes [i]);
			fake_set_ref (nodes [i], "parent", nodes [(i - 1) / 2]);
		}
	}
	SpError err = { 0 };
	uint32_t id = 1;
	sp_buf_init (b);
	assert_ok (fake_serialize (&id, nodes, 1, SIZE_MAX, 1, b, &err), &err);
	void **objects;
	SpSnapshot snap;
	assert_ok (fake_decode (b->data, b->len, &snap, &objects, &err), &err);
	assert_int_equal (fake_decode_counts.linked, 2 * 59);   /* the path the damage is to meet */
	sp_snapshot_free (&snap);
	free (objects);
}

static void
test_random_damage_with_valid_crc (void **state)
{
	(void)state;
	SpBuf base, sample, tree;
	craft (&base, OK);
	craft_register_classes ();
	fuzz_many (&base, 20000);
	/* The sample is mostly array data; mutations there parse, the structure around is checked. */
	fake_reset ();
	sample_snapshot (&sample);
	fuzz_many (&sample, 3000);
	/* A tree, whose restore links its references as it meets them (sp-decode.c): damage meets that path. */
	fake_reset ();
	linked_tree_snapshot (&tree);
	fuzz_many (&tree, 3000);
	sp_buf_free (&base);
	sp_buf_free (&sample);
	sp_buf_free (&tree);
}

/* ---- the class index ------------------------------------------------------------ */

typedef enum IndexCase {
	IX_STRIPPED,             /* no index, no flag: a snapshot of before the index (parses) */
	IX_FLAG_CLEARED,         /* the index kept, its flag cleared: an extension, skipped (parses) */
	IX_MISSING,              /* the flag, no index */
	IX_FEWER,                /* one class fewer than the trailer counts */
	IX_OFFSET_OFF_BY_ONE,    /* the first offset one byte on */
	IX_SIZE_WRONG,           /* the index's own size (its last 4 bytes) one more */
	IX_WRAPPED,              /* a whole index, but inside another extension record */
	IX_AT_A_COPY,            /* class 1 at a copy of its record inside an extension, not at the record the walk meets */
	IX_CASES
} IndexCase;

static const char *const index_case_names [IX_CASES] = {
	"stripped", "flag cleared", "missing", "fewer", "offset off by one", "size wrong", "wrapped", "at a copy",
};

/* b: the body (header and records), then the index of `at` [0, n) unless n is UINT32_MAX, the trailer t, sealed. */
static void
index_finish (SpBuf *b, const uint64_t *at, uint32_t n, const SpSnapTrailer *t)
{
	if (n != UINT32_MAX)
		sp_format_put_class_index (b, at, n);
	craft_trailer (b, t->nclasses, t->nobjects, t->nroots);
}

/* An extension record (tag 0x81, which no reader knows) around `bytes`. */
static void
put_wrapped (SpBuf *b, const uint8_t *bytes, size_t n)
{
	sp_buf_put_u8 (b, SP_REC_EXTENSION_FIRST + 1);
	sp_buf_put_varint (b, n);
	sp_buf_put_bytes (b, bytes, n);
}

/* The sample (its body up to index_at, its class offsets at [0, n)) with index case k. */
static void
index_craft (SpBuf *b, IndexCase k, const SpSnapshot *sample, size_t index_at, const uint64_t *at)
{
	const SpSnapTrailer *t = &sample->trailer;
	uint32_t n = t->nclasses;
	uint16_t flags = sample->header.optional_flags;
	sp_buf_init (b);
	if (k == IX_AT_A_COPY) {
		/* Class 1's record again, as the serializer writes it, wrapped just after the header. */
		const SpSnapClass *c = &sample->classes [1];
		SpBuf copy;
		sp_buf_init (&copy);
		sp_format_put_class (&copy, 1, c->kind, c->assembly, c->name, c->nfields, c->fields);
		assert_memory_equal (copy.data, sample->data + at [0], copy.len);
		size_t header = sample->header.header_size;
		sp_buf_put_bytes (b, sample->data, header);
		put_wrapped (b, copy.data, copy.len);
		size_t shift = b->len - header;
		sp_buf_put_bytes (b, sample->data + header, index_at - header);
		uint64_t moved [64];
		assert_true (n <= 64);
		for (uint32_t i = 0; i < n; i++)
			moved [i] = at [i] + shift;
		moved [0] = shift - copy.len + header;   /* the copy, inside the extension */
		index_finish (b, moved, n, t);
		sp_buf_free (&copy);
		return;
	}
	sp_buf_put_bytes (b, sample->data, index_at);
	if (k == IX_STRIPPED || k == IX_FLAG_CLEARED)
		flags &= ~SP_OPT_CLASS_INDEX;
	sp_put_le (b->data + 14, flags, 2);
	if (k == IX_WRAPPED) {
		SpBuf index;
		sp_buf_init (&index);
		sp_format_put_class_index (&index, at, n);
		put_wrapped (b, index.data, index.len);
		sp_buf_free (&index);
		index_finish (b, NULL, UINT32_MAX, t);
		return;
	}
	uint64_t off [64];
	assert_true (n <= 64);
	memcpy (off, at, n * sizeof *off);
	if (k == IX_OFFSET_OFF_BY_ONE)
		off [0]++;
	index_finish (b, off, k == IX_STRIPPED || k == IX_MISSING ? UINT32_MAX : k == IX_FEWER ? n - 1 : n, t);
	if (k == IX_SIZE_WRONG) {
		uint8_t *size = b->data + b->len - SP_FORMAT_TRAILER_SIZE - 4;
		sp_put_le (size, sp_get_le (size, 4) + 1, 4);
		patch_crc (b->data, b->len);
	}
}

/*
 * A full snapshot's class index is checked against its records: each way it
 * can disagree with them is refused as a malformed snapshot that says so;
 * without it (or with its flag cleared) the same records parse and restore.
 */
static void
test_class_index_defects_fail (void **state)
{
	(void)state;
	SpBuf b;
	sample_snapshot (&b);
	SpSnapshot sample;
	SpError err = { 0 };
	assert_ok (sp_snapshot_parse (b.data, b.len, &sample, &err), &err);
	assert_true (sample.header.optional_flags & SP_OPT_CLASS_INDEX);
	assert_true (sample.trailer.nclasses >= 2);
	uint64_t at [64];
	size_t index_at;
	assert_true (sample.trailer.nclasses <= 64);
	assert_ok (sp_format_read_class_index (b.data, b.len, &sample.header, &sample.trailer, at, &index_at, &err), &err);
	for (int k = 0; k < IX_CASES; k++) {
		SpBuf c;
		index_craft (&c, (IndexCase)k, &sample, index_at, at);
		err.msg [0] = '\0';
		int rc = parse_tracked (c.data, c.len, &err), drc = decode_tracked (c.data, c.len, &err);
		bool fine = k == IX_STRIPPED || k == IX_FLAG_CLEARED;
		if (fine ? rc != 0 || drc != 0 : rc != -1 || drc != SP_DECODE_DAMAGED || !strstr (err.msg, "class index")) {
			print_error ("class index %s: parse %d, decode %d (%s)\n", index_case_names [k], rc, drc, err.msg);
			fail ();
		}
		sp_buf_free (&c);
	}
	/* What the runtime's tests use to make old snapshots (class-index.h): the stripped file, byte for byte. */
	SpBuf stripped;
	index_craft (&stripped, IX_STRIPPED, &sample, index_at, at);
	assert_true (class_index_strip (b.data, &b.len));
	assert_int_equal (b.len, stripped.len);
	assert_memory_equal (b.data, stripped.data, b.len);
	assert_false (class_index_strip (b.data, &b.len));
	sp_buf_free (&stripped);
	sp_snapshot_free (&sample);
	sp_buf_free (&b);
}

/* ---- cost ---------------------------------------------------------------------- */

/*
 * Run sp_snapshot_parse in a child process with a deadline, so that a parse
 * that takes far too long fails the test quickly instead of stalling it.
 * Returns the child's parse result (0 or 1), or -1 when it ran out of time.
 */
static int
parse_with_deadline (const uint8_t *data, size_t size, double seconds, double *took)
{
	fflush (NULL);
	struct timespec t0, t1;
	clock_gettime (CLOCK_MONOTONIC, &t0);
	pid_t pid = fork ();
	assert_true (pid >= 0);
	if (pid == 0) {
		SpSnapshot snap;
		SpError err;
		_exit (sp_snapshot_parse (data, size, &snap, &err) == 0 ? 0 : 1);
	}
	int status = 0;
	for (;;) {
		pid_t r = waitpid (pid, &status, WNOHANG);
		assert_true (r >= 0);
		clock_gettime (CLOCK_MONOTONIC, &t1);
		*took = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
		if (r == pid)
			break;
		if (*took > seconds) {
			kill (pid, SIGKILL);
			waitpid (pid, &status, 0);
			return -1;
		}
		nanosleep (&(struct timespec){ .tv_nsec = 2000000 }, NULL);
	}
	assert_true (WIFEXITED (status));
	return WEXITSTATUS (status);
}

/*
 * Parse time must grow with the input's size, not its square: 200k distinct
 * roots (a megabyte) parse in well under a second (a linear parse takes a few
 * milliseconds; comparing each root id with every earlier one takes minutes).
 */
static void
test_many_roots_parse_in_linear_time (void **state)
{
	(void)state;
	const uint32_t n = 200000;
	SpBuf b;
	sp_buf_init (&b);
	craft_header (&b, SP_FORMAT_VERSION, SP_FORMAT_HEADER_SIZE, 0);
	for (uint32_t i = 1; i <= n; i++)
		put_root (&b, i, 0);
	craft_trailer (&b, 0, 0, n);
	double took;
	int rc = parse_with_deadline (b.data, b.len, 1.0, &took);
	if (rc < 0) {
		print_error ("parsing %u roots (%zu bytes) did not finish in %.1f s\n", n, b.len, took);
		sp_buf_free (&b);
		fail ();
	}
	assert_int_equal (rc, 0);
	/* A duplicate at the very end must still be found. */
	b.len -= SP_FORMAT_TRAILER_SIZE;
	put_root (&b, n / 2, 0);
	craft_trailer (&b, 0, 0, n + 1);
	rc = parse_with_deadline (b.data, b.len, 1.0, &took);
	sp_buf_free (&b);
	assert_int_equal (rc, 1);
}

/*
 * A delta names how many objects its chain holds before it (prior_objects),
 * which its own size does not bound: parsing or decoding it alone must still
 * allocate by its size, not by that count.
 */
static void
test_delta_with_huge_prior_allocates_little (void **state)
{
	(void)state;
	craft_register_classes ();
	SpBuf b;
	sp_buf_init (&b);
	SpSnapHeader h = { .required_flags = SP_FLAG_DELTA, .sequence = 9, .base_sequence = 1, .prev_sequence = 8,
			   .prior_objects = 0xfffffff0u };
	uint8_t hdr [SP_FORMAT_HEADER_MAX];
	sp_format_write_header (hdr, &h);
	sp_buf_put_bytes (&b, hdr, sp_format_header_size (&h));
	put_class_node (&b, 1);
	put_node (&b, 0xfffffff1u, 1, 5, 0xfffffff0u);   /* one new object, pointing at a prior one */
	put_node (&b, 0xfffffff0u, 1, 6, 0xfffffff1u);   /* a prior object given again */
	put_root (&b, 1, 0xfffffff1u);
	craft_trailer (&b, 1, 0xfffffff1u, 1);
	SpError err = { 0 };
	assert_int_equal (parse_tracked (b.data, b.len, &err), 0);
	assert_int_not_equal (decode_tracked (b.data, b.len, &err), 0);   /* alone, a delta does not restore */
	sp_buf_free (&b);
}

int
main (void)
{
	const struct CMUnitTest tests [] = {
		cmocka_unit_test_teardown (test_baseline_parses, fake_teardown),
		cmocka_unit_test_teardown (test_extensions_and_longer_header_are_skipped, fake_teardown),
		cmocka_unit_test_teardown (test_crafted_defects_fail, fake_teardown),
		cmocka_unit_test_teardown (test_huge_counts_allocate_nothing_big, fake_teardown),
		cmocka_unit_test_teardown (test_every_truncation_fails, fake_teardown),
		cmocka_unit_test_teardown (test_every_bit_flip_fails, fake_teardown),
		cmocka_unit_test_teardown (test_cut_with_valid_trailer_fails, fake_teardown),
		cmocka_unit_test_teardown (test_class_index_defects_fail, fake_teardown),
		cmocka_unit_test_teardown (test_random_damage_with_valid_crc, fake_teardown),
		cmocka_unit_test_teardown (test_many_roots_parse_in_linear_time, fake_teardown),
		cmocka_unit_test_teardown (test_delta_with_huge_prior_allocates_little, fake_teardown),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
