/*
 * sp-cards.h: where a long primitive array changed since the last snapshot of
 * a delta chain, found by comparing its 4 KiB cards with what that snapshot
 * wrote (docs/FORMAT.md, PATCH records).
 *
 * The store barrier says which arrays a program stored into since the last
 * snapshot, not where: its slow path runs once per array and period (the
 * thread remembers the array), and the JIT's inline test has no element.  So
 * for a long array of primitives, each card of the array gets a CRC-64 of
 * the bytes the chain's snapshot holds for it, computed from the very bytes
 * written (sp_cards_feed, as the serializer copies them out); a delta
 * compares each card of a changed array with it, and patches the cards that
 * differ only.  The cost of a delta then follows the arrays stored into and
 * the cards changed, not the state.
 *
 * Why a hash, not a copy: a copy doubles the memory of the program's largest
 * objects.  CRC-64 (ECMA-182, ISA-L's crc64_ecma_refl) detects every change
 * of up to 64 bits and misses another with probability 2^-64 per card; a
 * card the hash calls unchanged is one whose 4 KiB hash the same as before.
 *
 * Shorter arrays, and arrays of references or structs (whose bytes are not
 * what is written: LIDs, leaves), are patched whole.
 */
#ifndef SP_CARDS_H
#define SP_CARDS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_CARD_BYTES 4096u
/* Arrays of fewer bytes are patched whole: comparing would save less than it costs. */
#define SP_CARDS_MIN_BYTES (64u << 10)

typedef struct SpCards {
	uint64_t bytes;          /* of the array's elements */
	uint32_t ncards;
	uint64_t crc [];         /* per card, of the bytes the chain holds */
} SpCards;

/* The cards of an array of `bytes` bytes, every CRC 0 until fed; NULL when out of memory. */
SpCards *sp_cards_new (uint64_t bytes);
/*
 * The chain now holds `n` bytes from byte `offset` of the array, as written:
 * they update the cards they fall into.  Bytes reach each card in order from
 * its start (a card is fed whole, or in pieces that follow each other).
 */
void sp_cards_feed (SpCards *c, uint64_t offset, const uint8_t *bytes, size_t n);
/* Do card k's bytes now (`card`: its first byte, in the array or a copy) differ from the chain's? */
bool sp_cards_card_differs (const SpCards *c, uint32_t k, const uint8_t *card);

#endif
