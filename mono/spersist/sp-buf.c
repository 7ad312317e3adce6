/* sp-buf.c: see sp-buf.h. */
#include "sp-buf.h"

#include <stdlib.h>

void
sp_buf_init (SpBuf *b)
{
	b->data = NULL;
	b->len = b->cap = 0;
	b->oom = false;
}

void
sp_buf_free (SpBuf *b)
{
	free (b->data);
	sp_buf_init (b);
}

void
sp_buf_reset (SpBuf *b)
{
	b->len = 0;
	b->oom = false;
}

uint8_t *
sp_buf_reserve_slow (SpBuf *b, size_t n)
{
	if (b->oom)
		return NULL;
	if (b->cap - b->len < n) {
		size_t cap = b->cap ? b->cap : 4096;
		while (cap - b->len < n) {
			if (cap > SIZE_MAX / 2) {
				b->oom = true;
				return NULL;
			}
			cap *= 2;
		}
		uint8_t *data = realloc (b->data, cap);
		if (!data) {
			b->oom = true;
			return NULL;
		}
		b->data = data;
		b->cap = cap;
	}
	return b->data + b->len;
}

int
sp_buf_prepare (SpBuf *b, size_t size)
{
	if (b->cap < size) {
		uint8_t *data = realloc (b->data, size);
		if (!data)
			return -1;
		b->data = data;
		b->cap = size;
	}
	/*
	 * Fault the pages in by writing them, never by reading first: a read
	 * maps the shared zero page, and the write after it replaces that
	 * mapping, which flushes it from every other CPU running one of the
	 * process's threads (an interrupt each).  Faulting 3 MB in that way
	 * cost an application on the other CPU 600 interrupts of 6-7 us here,
	 * 4-5 ms in the first 12 ms of its first cycle (session 31).  Bytes
	 * beyond those in use are free to overwrite.
	 */
	volatile uint8_t *page = b->data;
	for (size_t i = (b->len + 4095) & ~(size_t)4095; i < size; i += 4096)
		page [i] = 0;
	if (size > b->len)
		page [size - 1] = 0;             /* the last page, when data is not page-aligned */
	return 0;
}

void
sp_buf_put_str (SpBuf *b, const char *s)
{
	size_t n = strlen (s);
	sp_buf_put_varint (b, n);
	sp_buf_put_bytes (b, s, n);
}

uint64_t
sp_reader_varint_slow (SpReader *r)
{
	uint64_t v = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		uint8_t byte = sp_reader_u8 (r);
		if (r->bad)
			return 0;
		/* The 10th byte may only carry the top bit of a 64-bit value. */
		if (shift == 63 && byte > 1)
			break;
		v |= (uint64_t)(byte & 0x7f) << shift;
		if (!(byte & 0x80))
			return v;
	}
	r->bad = true;
	return 0;
}

void
sp_reader_str (SpReader *r, char *dst, size_t cap)
{
	uint64_t n = sp_reader_varint (r);
	if (r->bad || n >= cap) {
		r->bad = true;
		dst [0] = '\0';
		return;
	}
	const uint8_t *p = sp_reader_take (r, (size_t)n);
	if (!p || memchr (p, 0, (size_t)n)) {
		r->bad = true;
		dst [0] = '\0';
		return;
	}
	memcpy (dst, p, (size_t)n);
	dst [n] = '\0';
}
