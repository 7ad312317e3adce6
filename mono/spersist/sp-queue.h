/*
 * sp-queue.h: the FIFO of objects awaiting serialization (breadth-first order).
 * A growable ring of pointers; the caller keeps what it points to from moving.
 */
#ifndef SP_QUEUE_H
#define SP_QUEUE_H

#include <stdbool.h>
#include <stddef.h>

typedef struct SpQueue {
	void **items;
	size_t head;           /* index of the oldest item */
	size_t count;
	size_t cap;            /* power of two */
} SpQueue;

void sp_queue_init (SpQueue *q);
void sp_queue_free (SpQueue *q);
/* -1 when memory runs out (the queue is unchanged). */
int sp_queue_push (SpQueue *q, void *item);
/* false when empty. */
bool sp_queue_pop (SpQueue *q, void **item);
static inline size_t sp_queue_count (const SpQueue *q) { return q->count; }

#endif
