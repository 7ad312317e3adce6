/*
 * sp-reserve.h: an array that grows in place, without copying, zeroing or
 * faulting its pages in all at once.
 *
 * A per-object table of the serializer (the states, one byte a LID) grew by
 * doubling: realloc copied it and memset zeroed the new half, in the unit
 * that handed out the LID past its end.  At 1,000,000 objects that was one
 * unit faulting in and zeroing 1 MB, 0.5-1 ms of an increment bounded to
 * 500 us (issue 16: "state-array growth").  Here the address space for the
 * largest size is reserved once, inaccessible (it costs no memory and, being
 * neither writable nor committed, counts against no overcommit limit); growing
 * makes the next part readable and writable, and the kernel gives each page
 * zeroed when it is first touched: one fault of a few microseconds per 4 KiB,
 * spread over the units that reach it, and nothing ever moves, so a pointer
 * into the array stays valid as it grows.
 *
 * Invariants: bytes [0, cap) are readable, writable and zero until written;
 * cap only grows, in steps of whole pages, up to the reservation.
 */
#ifndef SP_RESERVE_H
#define SP_RESERVE_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
	uint8_t *base;          /* the reservation; NULL until the first growth */
	size_t cap;             /* bytes usable from base */
	size_t reserved;        /* bytes of address space reserved */
} SpReserve;

/* Usable for at least `need` bytes (at most `max`, the reservation's size, fixed at the first call); -1 when the system refuses. */
int sp_reserve_grow (SpReserve *r, size_t need, size_t max);
/* Gives the reservation back. */
void sp_reserve_free (SpReserve *r);

#endif
