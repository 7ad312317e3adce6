/* sp-cards.c: see sp-cards.h. */
#include "sp-cards.h"

#include <limits.h>
#include <stdlib.h>

#include <isa-l/crc64.h>

static uint64_t
sp_cards_crc (uint64_t crc, const uint8_t *bytes, size_t n)
{
	return crc64_ecma_refl (crc, bytes, (uint64_t)n);
}

SpCards *
sp_cards_new (uint64_t bytes)
{
	uint64_t n = (bytes + SP_CARD_BYTES - 1) / SP_CARD_BYTES;
	if (n > UINT32_MAX)
		return NULL;
	SpCards *c = calloc (1, sizeof *c + (size_t)n * sizeof c->crc [0]);
	if (!c)
		return NULL;
	c->bytes = bytes;
	c->ncards = (uint32_t)n;
	return c;
}

void
sp_cards_feed (SpCards *c, uint64_t offset, const uint8_t *bytes, size_t n)
{
	while (n > 0 && offset < c->bytes) {
		uint64_t card = offset / SP_CARD_BYTES, within = offset % SP_CARD_BYTES;
		size_t take = SP_CARD_BYTES - within < n ? (size_t)(SP_CARD_BYTES - within) : n;
		c->crc [card] = sp_cards_crc (within ? c->crc [card] : 0, bytes, take);
		offset += take;
		bytes += take;
		n -= take;
	}
}

/* Does card k differ from the chain's?  `card`: its first byte now, in the array or a copy of it. */
bool
sp_cards_card_differs (const SpCards *c, uint32_t k, const uint8_t *card)
{
	uint64_t at = (uint64_t)k * SP_CARD_BYTES;
	size_t len = c->bytes - at < SP_CARD_BYTES ? (size_t)(c->bytes - at) : SP_CARD_BYTES;
	return sp_cards_crc (0, card, len) != c->crc [k];
}
