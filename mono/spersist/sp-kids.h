/*
 * sp-kids.h: the children's LIDs that marking found, kept for the writing
 * steps (the incremental mode's two passes over the graph).
 *
 * Marking gives every child of an object its LID: it reads each reference,
 * then the child's class and identity slot (or its identity hash, to look it
 * up in the LID map).  Writing the object's record later needs the same LIDs.
 * Looking them up again touched every child a second time, in a
 * graph too large for the caches a memory miss per reference, and made the
 * incremental cycle cost several times the stop-the-world serializer.  So
 * marking records them here, and the record is used instead.
 *
 * Why a record stays true: marking reads an object's references only while
 * the object is not written; from then until its record is written, every
 * store into it meets the barrier, which writes the record before the store
 * lands.  So when its record is written, whoever writes it, its references
 * are those marking read.  (A store no barrier saw is caught as before: the
 * record is checked against the log of such stores, sp-storelog.h, and
 * refused.)
 *
 * Layout: two tables of fixed-size chunks, allocated as needed and kept from
 * one cycle to the next, so that recording never copies a table (a copy of
 * megabytes inside an increment would break its pause bound):
 *   at   [lid]   1 + the index in `log` of lid's first child; 0: none recorded
 *   log  [i]     children's LIDs, each object's in field order, contiguous
 *                (a record never straddles two chunks).
 * Only objects are recorded (not arrays: their elements are marked in
 * pieces); recording stops silently when memory or the 32-bit index runs out,
 * and the writer then looks the children up as before.
 *
 * Protocol: sp_kids_reserve, fill, sp_kids_commit (a record is not visible
 * until committed, so a marking step that fails half-way leaves nothing);
 * sp_kids_of when writing; sp_kids_reset between snapshots (costs in
 * proportion to the LIDs the snapshot used).  One thread at a time (the
 * holder of the cycle's lock).
 */
#ifndef SP_KIDS_H
#define SP_KIDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_KIDS_AT_BITS 12      /* 4,096 LIDs a chunk of `at` (16 KiB) */
#define SP_KIDS_LOG_BITS 16     /* 65,536 children a chunk of `log` (256 KiB) */
#define SP_KIDS_AT_CHUNK (1u << SP_KIDS_AT_BITS)
#define SP_KIDS_LOG_CHUNK (1u << SP_KIDS_LOG_BITS)

typedef struct SpKids {
	uint32_t **at;
	size_t nat;             /* chunks of `at` allocated */
	uint32_t **log;
	size_t nlog;            /* chunks of `log` allocated */
	uint64_t len;           /* entries of `log` committed (indexes below, chunk gaps included) */
	uint64_t reserved;      /* where the slots last reserved start */
	uint32_t max_lid;       /* the largest LID with a record since the last reset */
} SpKids;

void sp_kids_init (SpKids *k);
void sp_kids_free (SpKids *k);
/* The growth of the tables, a chunk at a time (sp-kids.c): slots i..i+n-1 of `log` reserved, and `at` up to lid. */
uint32_t *sp_kids_reserve_new_chunk (SpKids *k, uint64_t i, uint32_t n);
bool sp_kids_grow_at (SpKids *k, uint32_t lid);

/*
 * Room for n children's LIDs, not yet anybody's; NULL: not recorded (n too
 * large, out of memory).  Inline, as sp_kids_commit: marking calls both for
 * every object, and as calls into sp-kids.c they took 12% of an incremental
 * cycle's time (25,000 tree nodes: a cycle's increments 1.55 ms against
 * 1.61, minimums of 200 cycles, 3 runs each side by side).
 */
static inline uint32_t *
sp_kids_reserve (SpKids *k, uint32_t n)
{
	if (n == 0 || n > SP_KIDS_LOG_CHUNK)
		return NULL;
	uint64_t i = k->len;
	if ((i & (SP_KIDS_LOG_CHUNK - 1)) + n > SP_KIDS_LOG_CHUNK)
		i = (i | (SP_KIDS_LOG_CHUNK - 1)) + 1;          /* a record never straddles chunks */
	if (i + n >= UINT32_MAX)                            /* `at` holds 1 + the index in 32 bits */
		return NULL;
	if ((size_t)((i + n - 1) >> SP_KIDS_LOG_BITS) >= k->nlog)
		return sp_kids_reserve_new_chunk (k, i, n);
	k->reserved = i;
	return &k->log [i >> SP_KIDS_LOG_BITS][i & (SP_KIDS_LOG_CHUNK - 1)];
}

/* The n slots last reserved are object lid's children; 0, or -1 when `at` cannot grow (then not recorded). */
static inline int
sp_kids_commit (SpKids *k, uint32_t lid, uint32_t n)
{
	if ((size_t)(lid >> SP_KIDS_AT_BITS) >= k->nat && !sp_kids_grow_at (k, lid))
		return -1;
	k->at [lid >> SP_KIDS_AT_BITS][lid & (SP_KIDS_AT_CHUNK - 1)] = (uint32_t)(k->reserved + 1);
	k->len = k->reserved + n;
	if (lid > k->max_lid)
		k->max_lid = lid;
	return 0;
}
/* Object lid's recorded children, NULL when it has no record. */
static inline const uint32_t *
sp_kids_of (const SpKids *k, uint32_t lid)
{
	size_t chunk = lid >> SP_KIDS_AT_BITS;
	if (chunk >= k->nat)
		return NULL;
	uint32_t at = k->at [chunk][lid & ((1u << SP_KIDS_AT_BITS) - 1)];
	if (!at)
		return NULL;
	uint64_t i = at - 1;
	return &k->log [i >> SP_KIDS_LOG_BITS][i & ((1u << SP_KIDS_LOG_BITS) - 1)];
}
/* Forget every record (the chunks stay allocated for the next snapshot). */
void sp_kids_reset (SpKids *k);
/* The same in parts: begin returns how many chunks of `at` to zero, one sp_kids_reset_chunk each, before the next use. */
size_t sp_kids_reset_begin (SpKids *k);
void sp_kids_reset_chunk (SpKids *k, size_t c);

#endif
