/*
 * sp-queue.h: the FIFO of objects awaiting serialization (breadth-first order).
 * It holds LIDs, not addresses: an object's current address comes from the
 * client's LID table, so a moving GC cannot leave the queue stale.
 *
 * The items live in chunks of SP_QUEUE_CHUNK, found through a ring of chunk
 * pointers; growing doubles that ring (a copy of pointers, not of items) and
 * a chunk is allocated when the queue first reaches it.  So no push costs in
 * proportion to the queue: a million objects queued in an increment of the
 * SP task never copy a 4 MB array in one unit of work.
 */
#ifndef SP_QUEUE_H
#define SP_QUEUE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SP_QUEUE_CHUNK_BITS 14          /* 16,384 items (64 KiB) a chunk */
#define SP_QUEUE_CHUNK (1u << SP_QUEUE_CHUNK_BITS)

typedef struct SpQueue {
	uint32_t **chunks;     /* a ring of nchunks chunk pointers (NULL: not allocated yet) */
	size_t nchunks;        /* a power of two, or 0 */
	uint64_t head;         /* position of the oldest item (positions only grow) */
	uint64_t tail;         /* position after the newest */
} SpQueue;

void sp_queue_init (SpQueue *q);
void sp_queue_free (SpQueue *q);
/* Empty it, keeping its chunks for the next snapshot. */
static inline void sp_queue_clear (SpQueue *q) { q->head = q->tail = 0; }

static inline size_t sp_queue_count (const SpQueue *q) { return (size_t)(q->tail - q->head); }

static inline uint32_t *
sp_queue_slot (const SpQueue *q, uint64_t pos)
{
	return &q->chunks [(pos >> SP_QUEUE_CHUNK_BITS) & (q->nchunks - 1)][pos & (SP_QUEUE_CHUNK - 1)];
}

/* sp_queue_push when the tail's chunk is full or missing. */
int sp_queue_push_slow (SpQueue *q, uint32_t item);

/*
 * -1 when memory runs out (the queue is unchanged).  Inline: the serializer
 * pushes every object once, and the call was 4% of a snapshot.
 */
static inline int
sp_queue_push (SpQueue *q, uint32_t item)
{
	if ((q->tail & (SP_QUEUE_CHUNK - 1)) == 0)
		return sp_queue_push_slow (q, item);    /* a new chunk: its turn to be allocated, or the ring to grow */
	*sp_queue_slot (q, q->tail) = item;
	q->tail++;
	return 0;
}

/* false when empty. */
static inline bool
sp_queue_pop (SpQueue *q, uint32_t *item)
{
	if (q->head == q->tail)
		return false;
	*item = *sp_queue_slot (q, q->head);
	q->head++;
	return true;
}

/* The item `k` places from the front, without removing it; false if the queue is shorter. */
static inline bool
sp_queue_peek (const SpQueue *q, size_t k, uint32_t *item)
{
	if (k >= sp_queue_count (q))
		return false;
	*item = *sp_queue_slot (q, q->head + k);
	return true;
}

#endif
