/* sp-queue.c: see sp-queue.h. */
#include "sp-queue.h"

#include <stdlib.h>

void
sp_queue_init (SpQueue *q)
{
	q->items = NULL;
	q->head = q->count = q->cap = 0;
}

void
sp_queue_free (SpQueue *q)
{
	free (q->items);
	sp_queue_init (q);
}

static int
sp_queue_grow (SpQueue *q)
{
	size_t cap = q->cap ? q->cap * 2 : 256;
	uint32_t *items = malloc (cap * sizeof *items);
	if (!items)
		return -1;
	/* Unwrap the ring into the new array. */
	for (size_t i = 0; i < q->count; i++)
		items [i] = q->items [(q->head + i) & (q->cap - 1)];
	free (q->items);
	q->items = items;
	q->head = 0;
	q->cap = cap;
	return 0;
}

int
sp_queue_push (SpQueue *q, uint32_t item)
{
	if (q->count == q->cap && sp_queue_grow (q) < 0)
		return -1;
	q->items [(q->head + q->count) & (q->cap - 1)] = item;
	q->count++;
	return 0;
}

bool
sp_queue_pop (SpQueue *q, uint32_t *item)
{
	if (q->count == 0)
		return false;
	*item = q->items [q->head];
	q->head = (q->head + 1) & (q->cap - 1);
	q->count--;
	return true;
}
