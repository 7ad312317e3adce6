/*
 * sp-buf.h: byte buffers with little-endian and LEB128 varint encoding.
 *
 * SpBuf is the growable output of the serializer.  SpReader is a bounds-checked
 * cursor over untrusted input: every read past the end (or a varint longer than
 * 10 bytes) sets a sticky `bad` flag and yields 0, so a decoder can read a whole
 * record and check once, and can never read outside [start, end).
 */
#ifndef SP_BUF_H
#define SP_BUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct SpBuf {
	uint8_t *data;
	size_t len;
	size_t cap;
	bool oom;              /* an allocation failed; contents are incomplete */
} SpBuf;

struct SpError;
/* Where a stream of bytes goes (a store's file being written): 0, or -1 with err set. */
typedef int (*SpWriteFn) (void *ctx, const uint8_t *data, size_t size, struct SpError *err);

void sp_buf_init (SpBuf *b);
void sp_buf_free (SpBuf *b);
void sp_buf_reset (SpBuf *b);
/* sp_buf_reserve when the room is short (or b is out of memory). */
uint8_t *sp_buf_reserve_slow (SpBuf *b, size_t n);

/* Make room for n more bytes; returns the write position or NULL (and sets oom).  Inline: once per record. */
static inline uint8_t *
sp_buf_reserve (SpBuf *b, size_t n)
{
	if (__builtin_expect (!b->oom && b->cap - b->len >= n, 1))
		return b->data + b->len;
	return sp_buf_reserve_slow (b, n);
}
/*
 * Capacity for `size` bytes from the start, every page of it written once, so
 * that filling it later takes no page fault (nor a realloc) on the way: the
 * incremental mode prepares its two chunk buffers when its tasks start.
 * Keeps the contents.  -1 when memory runs out.
 */
int sp_buf_prepare (SpBuf *b, size_t size);

static inline void
sp_buf_put_bytes (SpBuf *b, const void *p, size_t n)
{
	uint8_t *dst = sp_buf_reserve (b, n);
	if (dst) {
		memcpy (dst, p, n);
		b->len += n;
	}
}

static inline void
sp_buf_put_u8 (SpBuf *b, uint8_t v)
{
	uint8_t *dst = sp_buf_reserve (b, 1);
	if (dst) {
		*dst = v;
		b->len++;
	}
}

/* Little-endian fixed width, whatever the host. */
static inline void
sp_put_le (uint8_t *dst, uint64_t v, unsigned nbytes)
{
	for (unsigned i = 0; i < nbytes; i++)
		dst [i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t
sp_get_le (const uint8_t *src, unsigned nbytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < nbytes; i++)
		v |= (uint64_t)src [i] << (8 * i);
	return v;
}

static inline void
sp_buf_put_le (SpBuf *b, uint64_t v, unsigned nbytes)
{
	uint8_t *dst = sp_buf_reserve (b, nbytes);
	if (dst) {
		sp_put_le (dst, v, nbytes);
		b->len += nbytes;
	}
}

/* Unsigned LEB128: 7 bits a byte, low group first, high bit = more follows. */
static inline void
sp_buf_put_varint (SpBuf *b, uint64_t v)
{
	uint8_t *dst = sp_buf_reserve (b, 10);
	if (!dst)
		return;
	size_t n = 0;
	while (v >= 0x80) {
		dst [n++] = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	dst [n++] = (uint8_t)v;
	b->len += n;
}

/* Length-prefixed UTF-8 text (class and field names). */
void sp_buf_put_str (SpBuf *b, const char *s);

typedef struct SpReader {
	const uint8_t *start;
	const uint8_t *pos;
	const uint8_t *end;
	bool bad;
} SpReader;

static inline void
sp_reader_init (SpReader *r, const uint8_t *data, size_t size)
{
	r->start = r->pos = data;
	r->end = data + size;
	r->bad = false;
}

static inline size_t
sp_reader_left (const SpReader *r)
{
	return (size_t)(r->end - r->pos);
}

static inline size_t
sp_reader_offset (const SpReader *r)
{
	return (size_t)(r->pos - r->start);
}

/* Returns a pointer to n bytes and advances, or NULL (and sets bad). */
static inline const uint8_t *
sp_reader_take (SpReader *r, size_t n)
{
	if (r->bad || sp_reader_left (r) < n) {
		r->bad = true;
		return NULL;
	}
	const uint8_t *p = r->pos;
	r->pos += n;
	return p;
}

static inline uint64_t
sp_reader_le (SpReader *r, unsigned nbytes)
{
	const uint8_t *p = sp_reader_take (r, nbytes);
	return p ? sp_get_le (p, nbytes) : 0;
}

static inline uint8_t
sp_reader_u8 (SpReader *r)
{
	const uint8_t *p = sp_reader_take (r, 1);
	return p ? *p : 0;
}

uint64_t sp_reader_varint_slow (SpReader *r);

/*
 * A varint of at most four bytes at p: its length, and its value in *v; 0
 * when it is longer (the caller's general path reads it).  Reads a byte only
 * if the one before it says the varint goes on.  The fast path of every
 * varint reader: LIDs below 268,435,456 (a tree of 25,000 nodes needs three
 * bytes, of 10,000,000 four), class ids, most lengths.  (At three bytes, a
 * restore of 10,000,000 nodes spent 23% of its instructions in the general
 * path: 727 a node against 440 at 1,000,000.)
 */
#define SP_VARINT_SHORT_MAX 4
static inline unsigned
sp_varint_short (const uint8_t *p, uint32_t *v)
{
	if (p [0] < 0x80) {
		*v = p [0];
		return 1;
	}
	if (p [1] < 0x80) {
		*v = (p [0] & 0x7fu) | (uint32_t)p [1] << 7;
		return 2;
	}
	if (p [2] < 0x80) {
		*v = (p [0] & 0x7fu) | (uint32_t)(p [1] & 0x7f) << 7 | (uint32_t)p [2] << 14;
		return 3;
	}
	if (p [3] < 0x80) {
		*v = (p [0] & 0x7fu) | (uint32_t)(p [1] & 0x7f) << 7 | (uint32_t)(p [2] & 0x7f) << 14 | (uint32_t)p [3] << 21;
		return 4;
	}
	return 0;
}

static inline uint64_t
sp_reader_varint (SpReader *r)
{
	uint32_t v;
	unsigned n;
	if (!r->bad && r->end - r->pos >= SP_VARINT_SHORT_MAX && (n = sp_varint_short (r->pos, &v))) {
		r->pos += n;
		return v;
	}
	return sp_reader_varint_slow (r);
}
/*
 * A length-prefixed string, copied into `dst` (capacity `cap`, NUL-terminated).
 * Strings longer than cap-1 bytes or containing NUL bytes make the reader bad.
 */
void sp_reader_str (SpReader *r, char *dst, size_t cap);

#endif
