/* sp-queue.c: see sp-queue.h. */
#include "sp-queue.h"

#include <stdlib.h>
#include <string.h>

void
sp_queue_init (SpQueue *q)
{
	memset (q, 0, sizeof *q);
}

void
sp_queue_free (SpQueue *q)
{
	for (size_t i = 0; i < q->nchunks; i++)
		free (q->chunks [i]);
	free (q->chunks);
	sp_queue_init (q);
}

/*
 * Double the ring of chunk pointers.  Each chunk in use moves to the slot its
 * positions map to in the larger ring; the chunks not in use come along as
 * spares.
 */
static int
sp_queue_grow (SpQueue *q)
{
	size_t n = q->nchunks ? q->nchunks * 2 : 4;
	uint32_t **ring = calloc (n, sizeof *ring);
	if (!ring)
		return -1;
	uint64_t first = q->head >> SP_QUEUE_CHUNK_BITS;
	uint64_t used = q->tail > q->head ? ((q->tail - 1) >> SP_QUEUE_CHUNK_BITS) - first + 1 : 0;
	bool *taken = calloc (q->nchunks ? q->nchunks : 1, sizeof *taken);
	if (!taken) {
		free (ring);
		return -1;
	}
	for (uint64_t c = first; c < first + used; c++) {
		size_t from = c & (q->nchunks - 1);
		ring [c & (n - 1)] = q->chunks [from];
		taken [from] = true;
	}
	/* Spares go where no chunk in use went. */
	size_t at = 0;
	for (size_t i = 0; i < q->nchunks; i++) {
		if (taken [i] || !q->chunks [i])
			continue;
		while (ring [at])
			at++;
		ring [at] = q->chunks [i];
	}
	free (taken);
	free (q->chunks);
	q->chunks = ring;
	q->nchunks = n;
	return 0;
}

int
sp_queue_push_slow (SpQueue *q, uint32_t item)
{
	/* The tail's chunk would take the slot of the head's: the ring holds nchunks chunks at most. */
	if (!q->nchunks || (q->tail >> SP_QUEUE_CHUNK_BITS) - (q->head >> SP_QUEUE_CHUNK_BITS) >= q->nchunks) {
		if (sp_queue_grow (q) < 0)
			return -1;
	}
	uint32_t **chunk = &q->chunks [(q->tail >> SP_QUEUE_CHUNK_BITS) & (q->nchunks - 1)];
	if (!*chunk && !(*chunk = malloc (SP_QUEUE_CHUNK * sizeof **chunk)))
		return -1;
	(*chunk) [q->tail & (SP_QUEUE_CHUNK - 1)] = item;
	q->tail++;
	return 0;
}
