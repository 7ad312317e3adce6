/*
 * sp-queue.h: the FIFO of objects awaiting serialization (breadth-first order).
 * It holds LIDs, not addresses: an object's current address comes from the
 * client's LID table, so a moving GC cannot leave the queue stale.
 */
#ifndef SP_QUEUE_H
#define SP_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct SpQueue {
	uint32_t *items;
	size_t head;           /* index of the oldest item */
	size_t count;
	size_t cap;            /* power of two */
} SpQueue;

void sp_queue_init (SpQueue *q);
void sp_queue_free (SpQueue *q);
static inline void sp_queue_clear (SpQueue *q) { q->head = q->count = 0; }
/* -1 when memory runs out (the queue is unchanged). */
int sp_queue_push (SpQueue *q, uint32_t item);
/* false when empty. */
bool sp_queue_pop (SpQueue *q, uint32_t *item);
static inline size_t sp_queue_count (const SpQueue *q) { return q->count; }

/* The item `k` places from the front, without removing it; false if the queue is shorter. */
static inline bool
sp_queue_peek (const SpQueue *q, size_t k, uint32_t *item)
{
	if (k >= q->count)
		return false;
	*item = q->items [(q->head + k) & (q->cap - 1)];
	return true;
}

#endif
